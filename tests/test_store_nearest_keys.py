"""``ChromaStore.nearest_keys``: the vector ranking alone, without reading values.

Its names come from a per-process map learned from item rows (``store/names.py``), so the
tests check it against ``search`` on a fresh store, after another client's writes, and after
deletes, on a folder and on the server.
"""

from __future__ import annotations

from typing import Any

import pytest
from chroma_calls import Calls

from langmem_edge import ChromaStore, ConfigurationError, EmbeddingError, InvalidInputError
from langmem_edge.store.ranking import KeyHit
from langmem_edge.testing import FakeEmbeddings

DIMS = 32
TOPICS = [
    "dark mode theme",
    "coffee every morning",
    "hiking in the alps",
    "jazz records",
    "python type hints",
    "sourdough bread",
    "chess openings",
    "tea ceremony",
]


def index(emb: Any = None) -> dict[str, Any]:
    return {"dims": DIMS, "embed": emb or FakeEmbeddings(DIMS), "fields": ["text"]}


@pytest.fixture
def filled(chroma_store_factory: Any) -> Any:
    """A store with 8 topics x 5 namespaces ``("u", "user<n>")`` and a decoy prefix."""
    store = chroma_store_factory("a", index=index())
    for n in range(5):
        for i, topic in enumerate(TOPICS):
            store.put(("u", f"user{n}"), f"k{i}", {"text": f"{topic} {n}"})
    store.put(("decoy",), "k0", {"text": "dark mode theme 0"})
    return store


def as_pairs(hits: list[KeyHit]) -> list[tuple[tuple[str, ...], str]]:
    return [(h.namespace, h.key) for h in hits]


def test_ranks_as_search_does(filled: ChromaStore) -> None:
    for prefix in [("u", "user3"), ("u",), ()]:
        found = filled.search(prefix, query="dark theme", limit=6)
        keys = filled.nearest_keys(prefix, "dark theme", limit=6)
        assert as_pairs(keys) == [(i.namespace, i.key) for i in found]
        assert [k.score for k in keys] == pytest.approx([i.score for i in found])


def test_only_items_under_the_prefix(filled: ChromaStore) -> None:
    keys = filled.nearest_keys(("u", "user1"), "dark mode theme 0", limit=20)
    assert len(keys) == len(TOPICS)
    assert {k.namespace for k in keys} == {("u", "user1")}
    assert filled.nearest_keys(("nobody",), "dark mode", limit=5) == []


def test_a_fresh_store_learns_the_names(filled: ChromaStore, chroma_store_factory: Any) -> None:
    warm = filled.nearest_keys(("u", "user2"), "jazz", limit=4)
    cold = chroma_store_factory("a", index=index())  # a second client: nothing learned yet
    assert len(cold._names) == 0
    assert cold.nearest_keys(("u", "user2"), "jazz", limit=4) == warm


def test_another_clients_writes_and_deletes(filled: ChromaStore, chroma_store_factory: Any) -> None:
    other = chroma_store_factory("a", index=index())
    filled.nearest_keys(("u", "user0"), "chess", limit=3)  # learn the old names
    other.put(("u", "user0"), "new", {"text": "chess openings chess openings"})
    other.delete(("u", "user0"), "k6")
    keys = as_pairs(filled.nearest_keys(("u", "user0"), "chess openings", limit=3))
    assert keys[0] == (("u", "user0"), "new")
    assert (("u", "user0"), "k6") not in keys


def test_limit_zero_and_bad_arguments(filled: ChromaStore) -> None:
    assert filled.nearest_keys(("u",), "tea", limit=0) == []
    with pytest.raises(InvalidInputError):
        filled.nearest_keys(("u",), "tea", limit=-1)
    with pytest.raises(InvalidInputError):
        filled.nearest_keys(("u",), "", limit=3)
    with pytest.raises(InvalidInputError):
        filled.nearest_keys(("u", 3), "tea", limit=3)  # type: ignore[arg-type]


def test_needs_an_index(chroma_store_factory: Any) -> None:
    store = chroma_store_factory("plain")
    with pytest.raises(ConfigurationError):
        store.nearest_keys(("u",), "tea")


def test_embedding_failure_is_an_embedding_error(chroma_store_factory: Any) -> None:
    emb = FakeEmbeddings(DIMS)
    store = chroma_store_factory("e", index=index(emb))
    store.put(("u",), "k", {"text": "tea"})

    def broken(text: str) -> list[float]:
        raise RuntimeError("model down")

    emb.embed_query = broken  # type: ignore[method-assign]
    with pytest.raises(EmbeddingError):
        store.nearest_keys(("u",), "tea")


async def test_async_twin(filled: ChromaStore) -> None:
    assert await filled.anearest_keys(("u",), "bread", limit=5) == filled.nearest_keys(
        ("u",), "bread", limit=5
    )


def test_rare_prefix_among_many_neighbours(chroma_store_factory: Any) -> None:
    """The prefix holds 3 of 300 near-identical items: all 3 come back (a prefix this small
    is ranked exactly in process, whatever HNSW would have found)."""
    store = chroma_store_factory("r", index=index())
    from langgraph.store.base import PutOp

    store.batch([PutOp(("bulk",), f"k{i}", {"text": f"sourdough bread {i}"}) for i in range(300)])
    for i in range(3):
        store.put(("rare",), f"r{i}", {"text": f"sourdough bread rare {i}"})
    keys = store.nearest_keys(("rare",), "sourdough bread", limit=10)
    assert sorted(k.key for k in keys) == ["r0", "r1", "r2"]
    assert ("rare",) not in store._large_prefixes
    assert store.nearest_keys(("rare",), "sourdough bread", limit=10) == keys
    assert [r.key for r in store.search(("rare",), query="sourdough bread", limit=10)] == [
        k.key for k in keys
    ]


def _same_ranking(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> bool:
    """Equal scores (to float32 rounding) rank by id in both, the same ids above the cut-off
    score (items tied at it may be either side of the cut)."""
    if len(a) != len(b) or any(abs(x - y) > 1e-5 for (_, x), (_, y) in zip(a, b, strict=True)):
        return False
    cut = a[-1][1] + 1e-5 if a else 0.0

    def above(hits: list[tuple[str, float]]) -> list[tuple[float, str]]:
        return sorted((-round(s, 5), i) for i, s in hits if s > cut)

    return above(a) == above(b)


def test_a_small_prefix_is_ranked_in_process_as_chroma_ranks_it(
    chroma_store_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A filtered round on a prefix of at most ``LOCAL_RANK_ROWS`` vector rows reads them and
    scores them in process (Chroma's filtered query scans the whole collection); the hits,
    their order and scores are Chroma's own. A larger prefix goes to Chroma, and is
    remembered as large."""
    from langgraph.store.base import PutOp, SearchOp

    from langmem_edge.retrieval.vectors import cosine_distances
    from langmem_edge.store.search import LOCAL_RANK_ROWS

    store = chroma_store_factory("l", index=index())
    store.batch([PutOp(("big",), f"b{i}", {"text": f"{TOPICS[i % 8]} {i}"})
                 for i in range(LOCAL_RANK_ROWS + 20)])
    store.batch([PutOp(("small", "x"), f"s{i}", {"text": f"{TOPICS[i % 8]} small {i}"})
                 for i in range(40)])
    queried: list[Any] = []
    real_query = type(store._vectors).query
    monkeypatch.setattr(type(store._vectors), "query",
                        lambda self, **kw: queried.append(kw["where"]) or real_query(self, **kw))
    vector = FakeEmbeddings(DIMS).embed_query("chess openings")

    def rounds(prefix: tuple[str, ...], n: int) -> list[tuple[str, float]]:
        hits, _ = store._vector_round(SearchOp(prefix, query="q"), vector, n, filtered=True)
        return [(h.item_id, h.score) for h in hits]

    for prefix in (("small",), ("small", "x")):
        local = rounds(prefix, 25)
        assert queried == [] and len(local) == 25
        store._large_prefixes[prefix] = 0  # the same round by Chroma's filtered query
        by_chroma = rounds(prefix, 25)
        assert queried and _same_ranking(local, by_chroma)
        del store._large_prefixes[prefix]
        queried.clear()
    assert rounds(("small",), 100)[-1:] and len(rounds(("small",), 100)) == 40
    assert rounds(("nothing",), 10) == [] and queried == []
    big = rounds(("big",), 10)
    # Chroma's query of the item rows and of the later texts' rows
    assert len(big) == 10 and len(queried) == 2 and ("big",) in store._large_prefixes
    assert rounds(("big",), 10) == big and len(queried) == 4  # straight to Chroma
    # through search: the small prefix's answer is the exact ranking of its items
    texts = {f"s{i}": f"{TOPICS[i % 8]} small {i}" for i in range(40)}
    vectors = dict(zip(texts, FakeEmbeddings(DIMS).embed_documents(list(texts.values())),
                       strict=True))
    exact = sorted((round(1.0 - cosine_distances([v], vector)[0], 5) for v in vectors.values()),
                   reverse=True)
    found = store.search(("small",), query="chess openings", limit=5)
    assert [round(r.score or 0.0, 5) for r in found] == exact[:5]
    assert all(round(1.0 - cosine_distances([vectors[r.key]], vector)[0], 5)
               == round(r.score or 0.0, 5) for r in found)


def test_an_item_that_gets_vectors_is_ranked_by_a_process_that_saw_it_without(
    chroma_store_factory: Any,
) -> None:
    """Process b read an item while it had no vectors (its row held a placeholder); a then
    gave it a text: b's ``nearest_keys`` ranks it by that text, not by what b saw."""
    a = chroma_store_factory("shared", index=index())
    b = chroma_store_factory("shared", index=index())
    a.put(("n",), "x", {"other": 1})
    a.put(("n",), "y", {"text": "unrelated words"})
    assert [h.key for h in b.nearest_keys(("n",), "red apples", limit=5)] == ["y"]
    assert b.get(("n",), "x") is not None  # b learns that x has no vectors
    a.put(("n",), "x", {"text": "red apples"})
    best = b.nearest_keys(("n",), "red apples", limit=1)[0]
    assert (best.key, best.score) == ("x", pytest.approx(1.0, abs=1e-4))
    b._large_prefixes[("n",)] = 0  # the same through Chroma's query
    best = b.nearest_keys(("n",), "red apples", limit=1)[0]
    assert (best.key, best.score) == ("x", pytest.approx(1.0, abs=1e-4))


@pytest.mark.parametrize("rows", [20, 400])  # ranked in process; asked of Chroma
def test_first_text_only_ranks_by_the_first_text_in_one_call_a_round(
        chroma_store_factory: Any, rows: int) -> None:
    """One-text items rank alike either way, with one Chroma call a round instead of two; an
    item with a second indexed text is then found by its first only."""
    store = chroma_store_factory("first", index={
        "dims": DIMS, "embed": FakeEmbeddings(DIMS), "fields": ["text", "note"]})
    for i in range(rows):
        store.put(("m",), f"k{i}", {"text": f"{TOPICS[i % len(TOPICS)]} {i}"}, index=["text"])
    store.put(("m",), "two", {"text": "unrelated words", "note": "sourdough bread 3"})
    both = store.nearest_keys(("m",), "sourdough bread 3", limit=5)
    assert both[0].key == "two"  # by its second text
    calls = Calls(store)
    first = store.nearest_keys(("m",), "sourdough bread 3", limit=5, first_text_only=True)
    assert calls.names in (["get"], ["query"])  # one collection asked
    with pytest.raises(InvalidInputError, match="first_text_only"):
        store.nearest_keys(("m",), "bread", first_text_only="yes")  # type: ignore[arg-type]
    assert first[0].key != "two"  # by its first text only
    rest = [h.key for h in both if h.key != "two"]
    ones = [h.key for h in first if h.key != "two"]
    assert ones[:len(rest)] == rest[:len(ones)]
