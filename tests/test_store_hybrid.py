"""Hybrid search in ChromaStore: keyword (BM25) and exact-key channels fused with vectors."""

from __future__ import annotations

import time
from typing import Any

import pytest
from chroma_calls import Calls

from langmem_edge import ChromaStore, ConfigurationError
from langmem_edge.store.names import Generations, ItemNames
from langmem_edge.testing import FakeEmbeddings

DIMS = 32


class BlindEmbeddings(FakeEmbeddings):
    """Every text gets the same vector: the vector channel cannot tell items apart."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[1.0] + [0.0] * (self.dims - 1) for _ in texts]


class BrokenQueryEmbeddings(FakeEmbeddings):
    def embed_query(self, text: str) -> list[float]:
        raise RuntimeError("embedding service down")


@pytest.fixture
def open_store(chroma_store_factory: Any) -> Any:
    def open_(name: str = "a", *, embed: Any = None, **kwargs: Any) -> ChromaStore:
        kwargs.setdefault(
            "index", {"dims": DIMS, "embed": embed or FakeEmbeddings(DIMS), "fields": ["text"]}
        )
        kwargs.setdefault("ranking", "hybrid")
        return chroma_store_factory(name, **kwargs)

    return open_


def fill(store: ChromaStore) -> None:
    store.put(("u", "alice"), "note1", {"text": "Booked a flight to Lisbon for the conference"})
    store.put(("u", "alice"), "note2", {"text": "Prefers window seats on long flights"})
    store.put(("u", "alice"), "preference.ui_theme", {"text": "Likes dark colours"})
    store.put(("u", "alice"), "note3", {"text": "Allergic to peanuts", "kind": "health"})
    store.put(("u", "bob"), "note1", {"text": "Flying to Lisbon next week"})


def test_keyword_channel_finds_what_vectors_cannot(open_store: Any) -> None:
    store = open_store(embed=BlindEmbeddings(DIMS))
    fill(store)
    results = store.explain_search(("u", "alice"), query="lisbon conference", limit=3)
    top = results[0]
    assert top.item.key == "note1"
    assert top.channels["keyword"]["rank"] == 1
    assert top.channels["vector"]["rank"] is not None
    assert set(top.channels) == {"vector", "keyword", "key"}
    assert top.item.score == pytest.approx(sum(c["contribution"] for c in top.channels.values()))


def test_stemming_matches_word_forms(open_store: Any) -> None:
    store = open_store(embed=BlindEmbeddings(DIMS))
    fill(store)
    top = store.explain_search(("u", "alice"), query="bookings of seating", limit=2)
    assert {r.item.key for r in top} == {"note1", "note2"}  # booked/bookings, seats/seating
    assert all(r.channels["keyword"]["rank"] is not None for r in top)


def test_exact_key_channel(open_store: Any) -> None:
    store = open_store(embed=BlindEmbeddings(DIMS))
    fill(store)
    top = store.explain_search(("u", "alice"), query="ui theme", limit=1)[0]
    assert top.item.key == "preference.ui_theme"
    assert top.channels["key"]["rank"] == 1
    assert top.channels["keyword"]["rank"] is None


def test_prefix_and_filter_apply_inside_every_channel(open_store: Any) -> None:
    store = open_store()
    fill(store)
    results = store.explain_search(("u", "alice"), query="lisbon flight note1", limit=10)
    assert {r.item.namespace for r in results} == {("u", "alice")}
    filtered = store.explain_search(
        ("u",), query="lisbon peanuts note1", filter={"kind": "health"}, limit=10
    )
    assert [r.item.key for r in filtered] == ["note3"]
    for channel in filtered[0].channels.values():
        assert channel["rank"] in (None, 1)  # ranks are counted after the filter


def test_expired_and_deleted_items_never_appear(open_store: Any) -> None:
    store = open_store()
    now = time.time()
    store._clock = lambda: now
    store.put(("t",), "gone", {"text": "ephemeral lisbon note"}, ttl=1)
    store.put(("t",), "deleted", {"text": "deleted lisbon note"})
    store.put(("t",), "kept", {"text": "permanent lisbon note"})
    store.delete(("t",), "deleted")
    store._clock = lambda: now + 61
    assert [r.key for r in store.search(("t",), query="lisbon note")] == ["kept"]


def test_store_wide_ranking_and_per_call_weights(open_store: Any) -> None:
    store = open_store(ranking="vector", embed=BlindEmbeddings(DIMS))
    fill(store)
    vector_scores = [r.score for r in store.search(("u", "alice"), query="lisbon")]
    assert vector_scores == pytest.approx([1.0] * 4)  # blind vectors: all equal cosine
    keyword_only = store.hybrid_search(
        ("u", "alice"), query="lisbon", hybrid={"weights": {"vector": 0, "key": 0}}
    )
    assert [r.key for r in keyword_only] == ["note1"]
    assert keyword_only[0].score == pytest.approx(1 / 61)
    with pytest.raises(ConfigurationError, match="store-wide"):
        store.hybrid_search(("u",), query="x", hybrid={"keyword": {"k1": 2.0}})
    with pytest.raises(ConfigurationError):
        store.hybrid_search(("u",), query="x", hybrid={"weights": {"bogus": 1}})


def test_failed_query_embedding_degrades_to_keyword(open_store: Any) -> None:
    store = open_store(embed=BrokenQueryEmbeddings(DIMS))
    fill(store)
    results = store.explain_search(("u", "alice"), query="peanuts", limit=2)
    assert results[0].item.key == "note3"
    assert results[0].channels["vector"]["rank"] is None


def test_failed_keyword_channel_degrades_to_vector(open_store: Any, caplog: Any) -> None:
    store = open_store()
    fill(store)

    def boom(*args: Any) -> None:
        raise RuntimeError("index unavailable")

    store._keyword_rankings = boom
    results = store.search(("u", "alice"), query="allergic to peanuts", limit=1)
    assert results[0].key == "note3"
    assert "keyword channels failed" in caplog.text


def test_stopword_only_query_gets_vector_results(open_store: Any) -> None:
    store = open_store()
    fill(store)
    results = store.explain_search(("u", "alice"), query="the and of", limit=2)
    assert len(results) == 2
    assert all(r.channels["keyword"]["rank"] is None for r in results)


def test_ties_are_deterministic(open_store: Any) -> None:
    store = open_store(embed=BlindEmbeddings(DIMS))
    for i in range(6):
        store.put(("d",), f"k{i}", {"text": "identical words"})
    orders = {
        tuple(r.key for r in store.search(("d",), query="identical", limit=6)) for _ in range(3)
    }
    assert len(orders) == 1


def test_another_clients_writes_reach_the_next_search(open_store: Any) -> None:
    writer, reader = open_store("shared"), open_store("shared")
    reader.put(("s",), "seed", {"text": "unrelated seed text"})
    assert reader.search(("s",), query="zanzibar") != []  # loads the index
    writer.put(("s",), "new", {"text": "trip to zanzibar"})
    assert reader.search(("s",), query="zanzibar", limit=1)[0].key == "new"
    writer.delete(("s",), "new")
    assert all(r.key != "new" for r in reader.search(("s",), query="zanzibar"))


class SyncWrites:
    """A caller that records which collections a store writes to (wraps ``store._call``);
    ``before_write()`` runs before each write call."""

    def __init__(self, store: ChromaStore, before_write: Any = None) -> None:
        self.inner, self.writes, self.before_write = store._call, [], before_write
        store._call = self

    def __call__(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        if fn.__name__ in ("upsert", "update", "delete"):
            part = getattr(fn.__self__, "name", "?").rsplit("-", 1)[-1]
            self.writes.append("items" if part.startswith("rows") else part)
            if self.before_write is not None:
                self.before_write()
        return self.inner(fn, *args, **kwargs)


def keyword_rank(store: ChromaStore, query: str, key: str) -> int | None:
    """The keyword channel's rank of ``key`` for ``query`` in ``("s",)``."""
    for e in store.explain_search(("s",), query=query, limit=10):
        if e.item.key == key:
            return e.channels["keyword"]["rank"]
    return None


def test_a_rewrite_that_keeps_the_indexed_text_writes_the_item_row_alone(open_store: Any) -> None:
    """A put that leaves an item's indexed text as it is (a new value beside the same text,
    or ``index=False``) writes the item row alone: no vector rows, and readers see the new
    value and still find the item by the text it is indexed by."""
    writer = open_store("shared", embed=BlindEmbeddings(DIMS))
    reader = open_store("shared", embed=BlindEmbeddings(DIMS))
    writer.put(("s",), "x", {"text": "trip to zanzibar", "n": 1})
    writer.put(("s",), "y", {"text": "unrelated seed text"})
    assert keyword_rank(reader, "zanzibar", "x") == 1
    seen = SyncWrites(writer)
    writer.put(("s",), "x", {"text": "trip to zanzibar", "n": 2})
    writer.put(("s",), "x", {"text": "walk in the park", "n": 3}, index=False)
    assert seen.writes == ["items", "items"]  # the item rows alone
    assert keyword_rank(reader, "zanzibar", "x") == 1  # index=False keeps what x is found by
    assert reader.get(("s",), "x").value == {"text": "walk in the park", "n": 3}
    writer.put(("s",), "x", {"text": "walk in the park", "n": 4})  # the text changes
    assert seen.writes == ["items", "items", "items"]  # one text: its vector is in the row
    assert keyword_rank(reader, "park", "x") == 1
    assert keyword_rank(reader, "zanzibar", "x") is None


def test_a_put_existing_racing_a_delete_leaves_the_item_deleted(open_store: Any) -> None:
    """Another process deletes the item between ``put_existing``'s read and its write: the
    rewrite reports False and nothing comes back."""
    writer = open_store("shared", embed=BlindEmbeddings(DIMS))
    other = open_store("shared", embed=BlindEmbeddings(DIMS))
    writer.put(("s",), "x", {"text": "trip to zanzibar", "n": 1})
    other.put(("s",), "y", {"text": "unrelated seed text"})
    assert keyword_rank(other, "zanzibar", "x") == 1
    SyncWrites(writer, before_write=lambda: other.delete(("s",), "x"))
    assert writer.put_existing([(("s",), "x", {"text": "trip to zanzibar", "n": 2})]) == [False]
    assert writer.get(("s",), "x") is None and other.get(("s",), "x") is None
    assert keyword_rank(other, "zanzibar", "x") is None
    assert all(r.key != "x" for r in other.search(("s",), query="zanzibar"))


async def test_async_twins(open_store: Any) -> None:
    store = open_store()
    fill(store)
    found = await store.ahybrid_search(("u", "alice"), query="peanuts", limit=1)
    assert found[0].key == "note3"
    explained = await store.aexplain_search(("u", "alice"), query="peanuts", limit=1)
    assert explained[0].channels["keyword"]["rank"] == 1


def test_a_small_namespace_is_read_once_for_both_channels(open_store: Any) -> None:
    """A namespace small enough to rank in process has its item rows read once, documents
    and vectors together, for both channels and the results (the later texts' rows are the
    only other read), and a later text is still found."""
    store = open_store(index={"dims": DIMS, "embed": FakeEmbeddings(DIMS),
                              "fields": ["text", "note"]})
    fill(store)
    store.put(("u", "alice"), "note4", {"text": "Unrelated words", "note": "sourdough bread 3"})
    store._names, store._gens = ItemNames(), Generations()  # as a new process (or evicted)
    calls = Calls(store)
    hits = store.search(("u", "alice"), query="flight to Lisbon", limit=2)
    assert calls.names == ["get", "get"]
    assert hits[0].key == "note1"
    assert hits[0].value == {"text": "Booked a flight to Lisbon for the conference"}
    assert [h.key for h in store.search(("u", "alice"), query="sourdough bread 3",
                                        limit=1)] == ["note4"]
    calls.stop()
    store.delete(("u", "alice"), "note1")
    assert "note1" not in [h.key for h in store.search(("u", "alice"), query="Lisbon")]


def test_bad_ranking_is_a_configuration_error(tmp_path: Any) -> None:
    with pytest.raises(ConfigurationError, match="ranking"):
        ChromaStore.from_path(str(tmp_path), ranking="bm25")


def test_conversation_preset_is_a_valid_store_config(tmp_path: Any) -> None:
    from langmem_edge.retrieval import CONVERSATION_HYBRID

    store = ChromaStore.from_path(
        str(tmp_path),
        ranking="hybrid",
        hybrid=CONVERSATION_HYBRID,
        index={"dims": DIMS, "embed": FakeEmbeddings(DIMS), "fields": ["text", "context"]},
    )
    assert store.hybrid_config["rrf_k"] == 5.0
    store.put(("c",), "t1", {"text": "we adopted a puppy", "context": "talking about pets"})
    store.put(("c",), "t2", {"text": "the weather is nice", "context": "we adopted a puppy"})
    assert [r.key for r in store.search(("c",), query="adopted puppy", limit=2)] == ["t1", "t2"]
