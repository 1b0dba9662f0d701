"""ChromaStore behaviour beyond InMemoryStore's: persistence, isolation, TTL, limits, errors,
embedding reuse, concurrency, server sharing."""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from typing import Any

import chromadb
import numpy as np
import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp

from langmem_edge import (
    BackendError,
    BackendUnavailableError,
    ChromaSaver,
    ChromaStore,
    ConfigurationError,
    EmbeddingError,
    InvalidInputError,
    LimitExceededError,
)
from langmem_edge._chroma import SCHEMA_KEY, SYNC_THRESHOLD, join_labels
from langmem_edge.store import filters, layout
from langmem_edge.testing import FakeEmbeddings

DIMS = 32


def index(emb: FakeEmbeddings | None = None) -> dict[str, Any]:
    return {"dims": DIMS, "embed": emb or FakeEmbeddings(DIMS), "fields": ["text"]}


@pytest.fixture
def open_store(chroma_store_factory: Any) -> Any:
    """``open_store(name="a", **kw)``: a ChromaStore; the same name reopens the same data."""

    def open_(name: str = "a", **kwargs: Any) -> ChromaStore:
        kwargs.setdefault("index", index())
        return chroma_store_factory(name, **kwargs)

    return open_


def test_reopening_keeps_everything(open_store: Any) -> None:
    store = open_store("a")
    store.put(("p", "q"), "k", {"text": "persisted", "n": [1, {"x": None}]})
    created = store.get(("p", "q"), "k").created_at
    store.close()
    again = open_store("a")
    item = again.get(("p", "q"), "k")
    assert item.value == {"text": "persisted", "n": [1, {"x": None}]}
    assert item.created_at == created
    assert again.search(("p",), query="persisted")[0].key == "k"
    assert again.list_namespaces() == [("p", "q")]


def test_two_stores_see_nothing_of_each_other(open_store: Any) -> None:
    one, two = open_store("one"), open_store("two")
    one.put(("shared",), "k", {"text": "only in one"})
    assert two.get(("shared",), "k") is None
    assert two.search(("shared",), query="only in one") == []
    assert two.list_namespaces() == []


def test_created_at_survives_updates(open_store: Any) -> None:
    store = open_store()
    store.put(("c",), "k", {"text": "v1"})
    first = store.get(("c",), "k")
    time.sleep(0.01)
    store.put(("c",), "k", {"text": "v2"})
    second = store.get(("c",), "k")
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at


def test_search_without_query_is_newest_first(open_store: Any) -> None:
    store = open_store()
    for k in ("a", "b", "c"):
        store.put(("o",), k, {"text": k})
        time.sleep(0.01)
    store.put(("o",), "a", {"text": "a again"})
    assert [r.key for r in store.search(("o",))] == ["a", "c", "b"]


def test_whole_listings_in_one_batch_share_one_read(
    open_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Query-less searches of whole prefixes (``offset + limit`` >= ``MIN_WHOLE_LISTING``)
    of one depth in one batch are one Chroma read (``p{d} $in``, and with a filter among
    them ``$and`` an ``$or`` of their ``where``s); each page is what it is alone, children
    and expired items included as ``search`` includes them."""
    from langgraph.store.base import SearchOp

    store = open_store()
    for ns, n in ((("u", "a"), 5), (("u", "b"), 3), (("u", "a", "deep"), 2), (("v", "x"), 4)):
        for i in range(n):
            store.put(ns, f"k{i}", {"text": f"{ns} {i}"}, index=False)
            time.sleep(0.002)
    store.put(("u", "b"), "gone", {"text": "short"}, index=False, ttl=0.0005)
    time.sleep(0.1)
    ops = [SearchOp(("u", "a"), limit=100), SearchOp(("u", "b"), limit=500),
           SearchOp(("v", "x"), limit=100, offset=1), SearchOp(("u", "a"), limit=10),
           SearchOp(("u",), limit=100), SearchOp(("u", "empty"), limit=100),
           SearchOp(("u", "b"), limit=100, filter={"text": "x"})]
    alone = [store.batch([op])[0] for op in ops]
    gets: list[Any] = []
    real_get = type(store._items).get
    monkeypatch.setattr(type(store._items), "get",
                        lambda self, **kw: gets.append(kw.get("where")) or real_get(self, **kw))
    together = store.batch(ops)
    keys = [[(r.namespace, r.key) for r in res] for res in together]
    assert keys == [[(r.namespace, r.key) for r in res] for res in alone]
    assert len(keys[0]) == 7 and keys[0][0] == (("u", "a", "deep"), "k1")
    assert [k for _, k in keys[1]] == ["k2", "k1", "k0"] and len(keys[2]) == 3
    assert keys[5] == [] and keys[6] == []
    # the five depth-2 listings (one filtered) in one read, the depth-1 and the short one
    # alone (reads by id, where None, are the expired item's)
    listings = [w for w in gets if w]
    assert len(listings) == 3
    together_where = next(w for w in listings if "$and" in w)["$and"]
    assert together_where[0] == {"p2": {"$in": sorted(join_labels(p) for p in (
        ("u", "a"), ("u", "b"), ("v", "x"), ("u", "empty")))}}
    assert len(together_where[1]["$or"]) == 5
    gets.clear()
    unfiltered = [op for op in ops[:3]] + [ops[5]]  # one depth, no filter: p2 $in
    assert store.batch(unfiltered) == [alone[0], alone[1], alone[2], alone[5]]
    assert [w for w in gets if w] == [{"p2": {"$in": sorted(join_labels(p) for p in (
        ("u", "a"), ("u", "b"), ("v", "x"), ("u", "empty")))}}]


def test_filtered_whole_listings_in_one_batch_keep_each_filter(open_store: Any) -> None:
    """As a profile's read does (its active records and its access counts): filtered
    whole listings of nested and sibling prefixes read together return what each returns
    alone, a filter Chroma cannot evaluate ($ne, a dotted key) included."""
    from langgraph.store.base import SearchOp

    from tests.chroma_calls import Calls

    store = open_store()
    for i in range(12):
        ns = ("r", "p", "mem") if i % 3 else ("r", "p", "acc")
        store.put(ns, f"k{i}", {"live": "u" if i % 2 else "old", "n": i, "m": {"t": i % 4}},
                  index=False)
    ops = [SearchOp(("r", "p", "mem"), filter={"live": "u"}, limit=500),
           SearchOp(("r", "p", "acc"), limit=500),
           SearchOp(("r", "p"), filter={"live": {"$ne": "u"}}, limit=500),
           SearchOp(("r",), filter={"m.t": 1, "n": {"$gte": 3}}, limit=500),
           SearchOp(("r", "p", "mem"), filter={"live": "u"}, limit=500, offset=2)]
    alone = [store.batch([op])[0] for op in ops]
    calls = Calls(store, keep_kwargs=True)
    assert store.batch(ops) == alone
    calls.stop()  # the three of depth 3 in one read, the others alone
    assert calls.names == ["get"] * 3
    assert [r.key for r in alone[0]] == [f"k{i}" for i in (11, 7, 5, 1)]
    assert {r.key for r in alone[2]} == {f"k{i}" for i in range(0, 12, 2)}
    assert [r.key for r in alone[3]] == ["k9", "k5"]


def test_dotted_filter_keys(open_store: Any) -> None:
    store = open_store()
    store.put(("f",), "x", {"meta": {"tier": "gold", "rank": 3}})
    store.put(("f",), "y", {"meta": {"tier": "silver", "rank": 1}})
    store.put(("f",), "z", {"meta.tier": "literal"})
    assert [r.key for r in store.search(("f",), filter={"meta.tier": "gold"})] == ["x"]
    assert [r.key for r in store.search(("f",), filter={"meta.rank": {"$gt": 2}})] == ["x"]
    assert [r.key for r in store.search(("f",), filter={"meta.tier": "literal"})] == ["z"]


def test_range_filters_skip_values_that_are_not_numbers(open_store: Any) -> None:
    """InMemoryStore raises ValueError here; a persistent store must not fail a whole search
    because one stored value is not a number, so those items simply do not match."""
    store = open_store()
    store.put(("r",), "num", {"x": 7})
    store.put(("r",), "word", {"x": "seven"})
    store.put(("r",), "nested", {"x": {"y": 1}})
    store.put(("r",), "missing", {"z": 1})
    assert [r.key for r in store.search(("r",), filter={"x": {"$gt": 1}})] == ["num"]
    assert [r.key for r in store.search(("r",), query="x", filter={"x": {"$lt": 100}})] == ["num"]


def test_unknown_filter_operator_is_a_clear_error(open_store: Any) -> None:
    store = open_store()
    with pytest.raises(InvalidInputError, match=r"\$regex"):
        store.search(("f",), filter={"a": {"$regex": "x"}})


def test_filtered_vector_search_finds_rare_matches_among_many(open_store: Any) -> None:
    store = open_store()
    store.batch(
        [
            PutOp(("many",), f"k{i}", {"text": f"common words here {i}", "tag": "bulk"})
            for i in range(300)
        ]
        + [PutOp(("many",), "rare", {"text": "completely different", "tag": "rare"})]
    )
    results = store.search(
        ("many",), query="common words here", filter={"n": {"$ne": 1}, "tag": "rare"}
    )
    assert [r.key for r in results] == ["rare"]


class RandomEmbeddings(Embeddings):
    """Seeded random unit vectors keyed by the text: the hard case for HNSW (no clusters)."""

    def __init__(self, dims: int) -> None:
        self.dims = dims

    def _one(self, text: str) -> list[float]:
        import zlib

        import numpy as np

        vec = np.random.default_rng(zlib.crc32(text.encode())).standard_normal(self.dims)
        return (vec / np.linalg.norm(vec)).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._one(text)


@pytest.mark.parametrize("ef_search", [10, None])
def test_vector_search_in_a_namespace_is_exact(open_store: Any, ef_search: int | None) -> None:
    """3,000 random 128-d vectors in 3 namespaces: each namespace's top ten is the exact one
    with the default ``ef_search``; a small one (10) misses some, which is what the default
    is there for (so this test can fail). (Chroma's own default, 100, missed some too until
    a namespace holding a third of the neighbours was searched with its ``where``.)"""
    import numpy as np

    emb = RandomEmbeddings(128)
    kwargs = {} if ef_search is None else {"ef_search": ef_search}
    store = open_store(f"exact-{ef_search}", index={"dims": 128, "embed": emb,
                                                    "fields": ["text"]}, **kwargs)
    texts = {(f"n{i % 3}",): [] for i in range(3)}
    ops = []
    for i in range(3000):
        ns = (f"n{i % 3}",)
        texts[ns].append(f"item {i}")
        ops.append(PutOp(ns, f"k{i}", {"text": f"item {i}"}))
    for start in range(0, len(ops), 500):
        store.batch(ops[start : start + 500])
    found = []
    for q in range(30):
        ns = (f"n{q % 3}",)
        query = f"question {q}"
        vectors = np.array(emb.embed_documents(texts[ns]))
        best = np.argsort(-(vectors @ np.array(emb.embed_query(query))))[:10]
        truth = {f"k{int(texts[ns][j].split()[1])}" for j in best}
        got = {r.key for r in store.search(ns, query=query, limit=10)}
        found.append(len(got & truth) / 10)
    recall = sum(found) / len(found)
    if ef_search is None:
        assert recall >= 0.99, recall
    else:
        assert recall < 0.99, recall


def test_the_first_search_of_a_small_namespace_is_answered_as_later_ones(
        open_store: Any) -> None:
    """A process's first vector search of a namespace holding a small share of the store
    asks Chroma without a ``where`` (it cannot know the share yet); once it sees the share,
    it asks again with the ``where`` and answers from that, as every later search of the
    namespace does: HNSW's neighbours of the whole store, kept to the namespace, are
    approximate where the filtered query is not (a small ``ef_search`` shows it here)."""
    emb = RandomEmbeddings(384)
    store = open_store("first", index={"dims": 384, "embed": emb, "fields": ["text"]},
                       ef_search=1)
    ops = [PutOp(("small",) if i % 6 == 0 else ("big",), f"k{i}", {"text": f"item {i}"})
           for i in range(2400)]
    for start in range(0, len(ops), 600):
        store.batch(ops[start : start + 600])
    first, later = [], []
    for q in range(12):
        store._prefix_share.clear()  # as a new process
        first.append([r.key for r in store.search(("small",), query=f"q {q}", limit=10)])
        assert store._prefix_share[("small",)] < 0.5
        later.append([r.key for r in store.search(("small",), query=f"q {q}", limit=10)])
    assert first == later


def test_hybrid_search_of_a_small_share_ranks_its_vector_channel_exactly(
        open_store: Any) -> None:
    """Hybrid search's vector channel, like ``search``, asks Chroma with the namespace's
    ``where`` when the namespace holds a small share of the store, the first search of a
    process included, so its ranking is the exact one rather than HNSW's neighbours of the
    whole store kept to the namespace."""
    import numpy as np

    from tests.chroma_calls import Calls

    emb = RandomEmbeddings(384)
    store = open_store("hybrid-share", index={"dims": 384, "embed": emb, "fields": ["text"]})
    texts = {f"k{i}": f"item {i}" for i in range(2400)}
    ops = [PutOp(("small",) if i % 6 == 0 else ("big",), f"k{i}", {"text": texts[f"k{i}"]})
           for i in range(2400)]
    for start in range(0, len(ops), 600):
        store.batch(ops[start : start + 600])
    small = [op.key for op in ops if op.namespace == ("small",)]
    vecs = np.array(emb.embed_documents([texts[k] for k in small]))
    vector_only = {"weights": {"vector": 1.0, "keyword": 0.0, "key": 0.0}}
    for q in range(6):
        query = f"q {q}"
        exact = [small[i] for i in np.argsort(-(vecs @ np.array(emb.embed_query(query))))[:10]]
        store._prefix_share.clear()  # as a new process
        calls = Calls(store, keep_kwargs=True)
        got = [r.key for r in store.hybrid_search(("small",), query=query, limit=10,
                                                  hybrid=vector_only)]
        calls.stop()
        asked = [kw.get("where") for name, kw in zip(calls.names, calls.kwargs, strict=True)
                 if name == "query"]
        assert asked and asked[-1] is not None  # the last round named the namespace
        assert got == exact


def test_each_item_written_has_an_update_time_of_its_own(open_store: Any) -> None:
    """The puts of one batch get update times in their order (a key put twice at its last
    put), each later than any the store gave before; a listing returns them newest first,
    as InMemoryStore does, and its window of recent rows holds one row per item."""
    store = open_store("stamps")
    store.batch([PutOp(("ns",), k, {"n": i}) for i, k in enumerate(["a", "b", "c", "a"])])
    store.batch([PutOp(("ns",), "d", {"n": 4})])
    items = {k: store.get(("ns",), k) for k in "abcd"}
    assert items["b"].updated_at < items["c"].updated_at < items["a"].updated_at
    assert items["a"].updated_at < items["d"].updated_at
    assert items["a"].value == {"n": 3}
    assert all(it.created_at == it.updated_at for it in items.values())
    assert [r.key for r in store.search(("ns",), limit=10)] == ["d", "a", "c", "b"]
    assert [r.key for r in store.search(("ns",), limit=2)] == ["d", "a"]


def test_a_deep_page_placed_by_counting_is_the_exact_page(open_store: Any) -> None:
    """Pages past ``MIN_OFFSET_BETWEEN`` are placed by id-only reads and read only their own
    rows: after items were rewritten, deleted, added and left to expire since the prefix was
    last read whole, each page is still the one the whole order gives."""
    from langmem_edge.store import listing

    store = open_store("deep")
    ns = ("deep",)
    for start in range(0, 700, 100):
        store.batch([PutOp(ns, f"k{i:03d}", {"n": i}) for i in range(start, start + 100)])
    store.batch([PutOp(("other",), f"o{i}", {"n": i}) for i in range(200)])
    assert len(store.search(ns, limit=1000)) == 700  # read whole: the times are remembered
    clock = store._clock()
    store.batch([PutOp(ns, f"k{i:03d}", {"n": -i}) for i in (5, 250, 333, 501, 650)])
    store.batch([PutOp(ns, f"k{i:03d}", None) for i in (1, 320, 444, 600, 699)])
    store.batch([PutOp(ns, f"new{i}", {"n": i}) for i in range(5)])
    store.batch([PutOp(ns, f"ttl{i}", {"n": i}, ttl=1.0) for i in range(3)])
    store._clock = lambda: clock + 3600  # the TTL items have expired, not yet swept
    keys = [f"k{i:03d}" for i in range(700)] + [f"new{i}" for i in range(5)]
    items = [it for it in (store.get(ns, k) for k in keys) if it is not None]
    exact = [it.key for it in sorted(items, key=lambda it: (-it.updated_at.timestamp(),
                                                             it.key))]
    placed = []
    original = store._page_between

    def counted(*args: Any, **kwargs: Any) -> Any:
        page = original(*args, **kwargs)
        placed.append(page is not None)
        return page

    store._page_between = counted
    for offset in range(listing.MIN_OFFSET_BETWEEN, 700, 30):
        got = [r.key for r in store.search(ns, limit=10, offset=offset)]
        assert got == exact[offset : offset + 10], offset
    assert placed and all(placed)


def test_a_vector_search_without_a_filter_is_two_chroma_calls(open_store: Any) -> None:
    """A namespace holding a small share of a large store (ranked by Chroma, not in process):
    once its share is known, a search without a filter is one query of the item rows, their
    documents with the distances, and one of the later texts' rows; nothing is read again."""
    from tests.chroma_calls import Calls

    emb = RandomEmbeddings(64)
    store = open_store("two-calls", index={"dims": 64, "embed": emb, "fields": ["text"]},
                       ranking="vector")
    ops = [PutOp(("small",) if i % 6 == 0 else ("big",), f"k{i}", {"text": f"item {i}"})
           for i in range(2400)]
    for start in range(0, len(ops), 600):
        store.batch(ops[start : start + 600])
    store.search(("small",), query="first", limit=10)  # learns the share
    calls = Calls(store, keep_kwargs=True)
    got = store.search(("small",), query="second", limit=10)
    calls.stop()
    assert len(got) == 10 and all(r.value["text"].startswith("item") for r in got)
    assert calls.names == ["query", "query"]
    assert "documents" in calls.kwargs[0]["include"]


def test_a_vector_search_with_a_filter_chroma_evaluates_is_two_chroma_calls(
    open_store: Any,
) -> None:
    """The same with a filter pushed down whole (an equality on a short string): the round
    names the filter, asks for about the page and reads its documents; exact against a
    ranking in Python. A filter Chroma cannot evaluate ($ne) still fills the page (the round
    asks for a multiple of it, and widens)."""
    from tests.chroma_calls import Calls

    emb = RandomEmbeddings(64)
    store = open_store("two-calls-filtered",
                       index={"dims": 64, "embed": emb, "fields": ["text"]}, ranking="vector")
    ops = [PutOp(("small",) if i % 6 == 0 else ("big",), f"k{i}",
                 {"text": f"item {i}", "kind": "even" if i % 4 == 0 else "odd"})
           for i in range(2400)]
    for start in range(0, len(ops), 600):
        store.batch(ops[start : start + 600])
    store.search(("small",), query="first", limit=10)  # learns the share
    calls = Calls(store, keep_kwargs=True)
    got = store.search(("small",), query="second", filter={"kind": "even"}, limit=10)
    calls.stop()
    assert calls.names == ["query", "query"]
    assert "documents" in calls.kwargs[0]["include"]
    assert calls.kwargs[0]["n_results"] <= 20
    qv = np.asarray(emb.embed_query("second"))
    exact = sorted(
        (op for op in ops if op.namespace == ("small",) and op.value["kind"] == "even"),
        key=lambda op: -float(np.dot(qv, emb.embed_query(op.value["text"]))
                              / np.linalg.norm(emb.embed_query(op.value["text"]))
                              / np.linalg.norm(qv)),
    )[:10]
    assert [r.key for r in got] == [op.key for op in exact]
    rest = store.search(("small",), query="second", filter={"kind": {"$ne": "odd"}}, limit=10)
    assert [r.key for r in rest] == [op.key for op in exact]


def test_ef_search_is_set_on_the_vectors_collection(open_store: Any) -> None:
    store = open_store("ef")
    assert store._vectors.configuration["hnsw"]["ef_search"] == 1000
    store.close()
    store = open_store("ef", ef_search=300)  # a store opened with another value changes it
    name = store._vectors.name
    assert store._client.get_collection(name).configuration["hnsw"]["ef_search"] == 300
    for bad in (0, -1, 1.5, True, "100"):
        with pytest.raises(ConfigurationError, match="ef_search"):
            open_store("ef", ef_search=bad)


CHROMA_DEFAULT_SYNC_THRESHOLD = 1000


def test_every_collection_saves_its_index_each_sync_threshold_writes(tmp_path: Any) -> None:
    """Chroma rereads its log since the index's last save on every write (the saw-tooth of
    ``benchmarks/sync_threshold.py``): the store's collections save each ``SYNC_THRESHOLD``
    writes, one made with Chroma's default (1,000) is changed when the store opens it, and
    the log holds no more rows than that after many single writes."""
    path = str(tmp_path / "chroma")
    client = chromadb.PersistentClient(path)
    assert SYNC_THRESHOLD < CHROMA_DEFAULT_SYNC_THRESHOLD
    client.create_collection("langmem_edge-vectors", embedding_function=None,
                             metadata={"hnsw:space": "cosine", SCHEMA_KEY: layout.SCHEMA_VERSION})
    del client
    store = ChromaStore.from_path(path, index=index())
    for collection in (store._items, store._vectors):
        name = collection.name
        assert store._client.get_collection(name).configuration["hnsw"]["sync_threshold"] == (
            SYNC_THRESHOLD), name
    store.close()
    store = ChromaStore.from_path(path, index=index())  # a new process loads the index anew
    for n in range(5 * SYNC_THRESHOLD):
        store.put(("ns",), f"k{n}", {"text": f"item {n}"})
    store.close()
    with sqlite3.connect(f"{path}/chroma.sqlite3") as db:
        (logged,) = db.execute("select count(*) from embeddings_queue").fetchone()
    assert logged <= SYNC_THRESHOLD
    saver = ChromaSaver.from_path(path)  # the checkpoints' collection too
    assert saver.collection.configuration["hnsw"]["sync_threshold"] == SYNC_THRESHOLD
    saver.close()


# -- TTL ----------------------------------------------------------------------------------


class Clock:
    """A settable wall clock for the store: TTL tests advance time instead of sleeping."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def with_clock(store: ChromaStore) -> Clock:
    clock = Clock()
    store._clock = clock
    return clock


def test_ttl_expired_items_are_never_returned_and_are_swept(open_store: Any) -> None:
    store = open_store()
    clock = with_clock(store)
    store.put(("t",), "short", {"text": "gone soon"}, ttl=1)  # minutes
    store.put(("t",), "long", {"text": "stays"}, ttl=60)
    store.put(("t",), "forever", {"text": "stays"})
    clock.advance(61)
    assert store.get(("t",), "short") is None
    assert {r.key for r in store.search(("t",))} == {"long", "forever"}
    assert {r.key for r in store.search(("t",), query="gone soon")} == {"long", "forever"}
    assert {r.key for r in store.hybrid_search(("t",), query="gone soon")} == {"long", "forever"}
    assert store.list_namespaces() == [("t",)]
    assert store.sweep_ttl() == 1
    assert store.sweep_ttl() == 0


def test_default_ttl_and_refresh_on_read(open_store: Any) -> None:
    store = open_store(ttl={"default_ttl": 1.0, "refresh_on_read": True})
    clock = with_clock(store)
    store.put(("t",), "k", {"text": "refreshed"})
    store.put(("t",), "cold", {"text": "not read"})
    for _ in range(3):
        clock.advance(45)
        assert store.get(("t",), "k") is not None  # each read pushes expiry 60 s out
    assert store.get(("t",), "cold") is None
    clock.advance(45)
    assert store.get(("t",), "k", refresh_ttl=False) is not None
    clock.advance(20)
    assert store.get(("t",), "k") is None


def test_sqlite_style_ttl_flow(open_store: Any) -> None:
    """The flow of langgraph's SQLite TTL tests: setup(), refresh by search, sweep counts."""
    store = open_store(ttl={"default_ttl": 1.0, "refresh_on_read": True})
    clock = with_clock(store)
    store.setup()
    store.put(("docs", "u1"), "item1", {"text": "content1", "id": 1})
    store.put(("docs", "u1"), "item2", {"text": "content2", "id": 2})
    clock.advance(40)
    assert [r.key for r in store.search(("docs", "u1"), filter={"id": 1})] == ["item1"]
    clock.advance(40)
    assert store.sweep_ttl() == 1  # item2 expired; item1 was refreshed by the search
    assert store.get(("docs", "u1"), "item1", refresh_ttl=False) is not None
    clock.advance(61)
    assert store.sweep_ttl() == 1
    assert store.search(("docs",)) == []


def test_refresh_disabled_by_config(open_store: Any) -> None:
    store = open_store(ttl={"default_ttl": 1.0, "refresh_on_read": False})
    clock = with_clock(store)
    store.put(("t",), "k", {"text": "x"})
    clock.advance(40)
    assert store.get(("t",), "k") is not None
    clock.advance(40)
    assert store.get(("t",), "k") is None


def test_a_write_resets_the_expiry(open_store: Any) -> None:
    store = open_store(ttl={"default_ttl": 1.0})
    clock = with_clock(store)
    store.put(("t",), "k", {"text": "v1"})
    clock.advance(50)
    store.put(("t",), "k", {"text": "v2"})
    clock.advance(50)
    assert store.get(("t",), "k").value == {"text": "v2"}


async def test_ttl_sweeper_thread(open_store: Any) -> None:
    store = open_store()
    store.put(("t",), "k", {"text": "x"}, ttl=0.2 / 60)
    future = store.start_ttl_sweeper(sweep_interval_minutes=0.3 / 60)
    deadline = time.monotonic() + 10
    while store._items.get(include=[])["ids"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert store._items.get(include=[])["ids"] == []
    assert store.stop_ttl_sweeper(timeout=5)
    assert future.done()
    assert await store.asweep_ttl() == 0


def test_ttl_must_be_positive(open_store: Any) -> None:
    with pytest.raises(InvalidInputError, match="ttl"):
        open_store().put(("t",), "k", {"x": 1}, ttl=-1)


# -- limits and errors -----------------------------------------------------------------------


def test_too_large_value_names_the_key_and_writes_nothing(open_store: Any) -> None:
    store = open_store(max_value_bytes=1000)
    ops = [PutOp(("l",), "ok", {"text": "fine"}), PutOp(("l",), "huge", {"text": "x" * 2000})]
    with pytest.raises(LimitExceededError, match="'huge'") as info:
        store.batch(ops)
    assert info.value.code == "limit_exceeded"
    assert store.get(("l",), "ok") is None


def test_unserialisable_value_is_a_clear_error(open_store: Any) -> None:
    store = open_store()
    with pytest.raises(InvalidInputError, match="'bad'") as info:
        store.put(("l",), "bad", {"when": object()})
    assert info.value.code == "invalid_input"
    with pytest.raises(InvalidInputError):
        store.put(("l",), "nan", {"x": float("nan")})


def test_several_megabyte_value_round_trips(open_store: Any) -> None:
    store = open_store(index=None)
    big = {"blob": "é" * 1_500_000, "list": list(range(50_000))}
    store.put(("big",), "k", big)
    assert store.get(("big",), "k").value == big


def test_wrong_dimensions_are_an_embedding_error(tmp_path: Any) -> None:
    store = ChromaStore.from_path(
        str(tmp_path), index={"dims": 8, "embed": FakeEmbeddings(16), "fields": ["text"]}
    )
    with pytest.raises(EmbeddingError, match="dims"):
        store.put(("e",), "k", {"text": "x"})
    assert store.get(("e",), "k") is None


def test_bad_config_is_a_configuration_error(tmp_path: Any) -> None:
    with pytest.raises(ConfigurationError):
        ChromaStore.from_path(str(tmp_path), index={"dims": 0})
    with pytest.raises(ConfigurationError):
        ChromaStore.from_path(str(tmp_path), collection_prefix="x")
    with pytest.raises(ConfigurationError):
        ChromaStore.from_url("not a url")


def test_unreachable_server_is_backend_unavailable() -> None:
    with pytest.raises(BackendUnavailableError) as info:
        ChromaStore.from_url("http://127.0.0.1:9", retry={"attempts": 2, "initial_wait": 0.01})
    assert info.value.code == "backend_unavailable"
    assert info.value.__cause__ is not None


def test_server_going_away_mid_session_is_retried_then_wrapped(chroma_server_url: str) -> None:
    store = ChromaStore.from_url(
        chroma_server_url,
        collection_prefix=f"t{uuid.uuid4().hex[:8]}",
        index=index(),
        retry={"attempts": 2, "initial_wait": 0.01},
    )
    store.put(("x",), "k", {"text": "x"})
    store._client._server._api_url = "http://127.0.0.1:9/api/v2"  # type: ignore[attr-defined]
    with pytest.raises(BackendUnavailableError):
        store.get(("x",), "k")


def test_chroma_errors_are_wrapped(tmp_path: Any) -> None:
    store = ChromaStore.from_path(str(tmp_path), index=index())
    with pytest.raises(BackendError) as info:
        store._call(store._items.get, where={"$bogus": 1})
    assert info.value.code == "backend"


def test_collections_record_the_schema_and_refuse_newer(tmp_path: Any) -> None:
    store = ChromaStore.from_path(str(tmp_path / "s"), index=index())
    assert store._items.metadata[SCHEMA_KEY] == layout.SCHEMA_VERSION
    store.close()
    client = chromadb.PersistentClient(path=str(tmp_path / "n"))
    client.create_collection(
        "langmem_edge-rows32", metadata={SCHEMA_KEY: 99}, embedding_function=None
    )
    with pytest.raises(ConfigurationError, match="newer"):
        ChromaStore(client, index=index())
    client.delete_collection("langmem_edge-rows32")
    client.create_collection(
        "langmem_edge-rows32", metadata={SCHEMA_KEY: layout.SCHEMA_VERSION - 1},
        embedding_function=None)
    with pytest.raises(ConfigurationError, match="reads schema 8"):
        ChromaStore(client, index=index())



def test_unchanged_text_is_never_embedded_twice(open_store: Any) -> None:
    emb = FakeEmbeddings(DIMS)
    store = open_store(index=index(emb))
    store.put(("c",), "k", {"text": "same text", "other": 1})
    assert emb.texts_embedded == 1
    store.put(("c",), "k", {"text": "same text", "other": 2})  # text unchanged
    assert emb.texts_embedded == 1
    store.put(("c",), "k", {"text": "new text"})
    assert emb.texts_embedded == 2
    assert store.search(("c",), query="new text")[0].score == pytest.approx(1.0)


def test_a_batch_of_gets_and_puts_reads_once_and_answers_from_before(open_store: Any
                                                                      ) -> None:
    """Reads go first (the gets see the values the puts replace), in one read by ids that
    also brings the rows the puts replace."""
    from langgraph.store.base import GetOp

    store = open_store()
    store.put(("c",), "a", {"text": "old a"})
    store.put(("c",), "b", {"text": "old b"}, index=False)
    reads: list[str] = []
    inner = store._call

    def caller(fn: Any, *args: Any, **kwargs: Any) -> Any:
        if fn.__name__ == "get":
            reads.append(getattr(fn.__self__, "name", ""))
        return inner(fn, *args, **kwargs)

    store._call = caller
    got = store.batch([GetOp(("c",), "a"), GetOp(("c",), "missing"),
                       PutOp(("c",), "a", {"text": "new a"}),
                       PutOp(("c",), "b", {"text": "new b"}, index=False)])
    assert [g and g.value for g in got[:2]] == [{"text": "old a"}, None]
    assert [r for r in reads if "-rows" in r] == [reads[0]]  # one read of item rows
    store._call = inner
    assert store.get(("c",), "a").value == {"text": "new a"}
    assert store.search(("c",), query="new a")[0].key == "a"
    assert store.get(("c",), "b").value == {"text": "new b"}


def test_four_threads_putting_lose_nothing(open_store: Any) -> None:
    store = open_store()
    errors: list[BaseException] = []

    def worker(t: int) -> None:
        try:
            for i in range(25):
                store.put(("threads", str(t)), f"k{i}", {"text": f"thread {t} item {i}"})
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert len(store.search(("threads",), limit=1000)) == 100
    assert len(store.list_namespaces(prefix=("threads",))) == 4


def test_another_clients_write_is_seen_at_once(chroma_server_url: str) -> None:
    prefix = f"t{uuid.uuid4().hex[:8]}"
    writer = ChromaStore.from_url(chroma_server_url, collection_prefix=prefix, index=index())
    reader = ChromaStore.from_url(chroma_server_url, collection_prefix=prefix, index=index())
    writer.put(("s",), "k", {"text": "shared memory"})
    assert reader.get(("s",), "k").value == {"text": "shared memory"}
    assert reader.search(("s",), query="shared memory")[0].key == "k"
    writer.delete(("s",), "k")
    assert reader.search(("s",), query="shared memory") == []


def test_context_manager_closes(tmp_path: Any) -> None:
    with ChromaStore.from_path(str(tmp_path), index=index()) as store:
        store.put(("x",), "k", {"text": "x"})
    with ChromaStore.from_path(str(tmp_path), index=index()) as again:
        assert again.get(("x",), "k") is not None


@pytest.mark.slow
def test_default_embeddings_run_offline(tmp_path: Any) -> None:
    store = ChromaStore.from_path(str(tmp_path), index={"dims": 384, "fields": ["text"]})
    store.put(("u",), "theme", {"text": "Alice prefers dark mode in every app"})
    store.put(("u",), "food", {"text": "Alice is allergic to peanuts"})
    store.put(("u",), "city", {"text": "Alice lives in Singapore"})
    assert store.search(("u",), query="which colour scheme does she like?")[0].key == "theme"
    assert store.search(("u",), query="where is her home?")[0].key == "city"


def test_scans_past_the_first_page(open_store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Scans read one page, then the remaining rows by id: every row once, filters and
    expiry applied, whatever the page size."""
    import langmem_edge.store.base as base

    monkeypatch.setattr(base, "GET_PAGE", 4)
    store = open_store()
    clock = with_clock(store)
    for i in range(11):
        store.put(("s", f"n{i % 3}"), f"k{i}", {"text": f"item {i}", "odd": i % 2 == 1})
        clock.advance(1)
    store.put(("s", "n0"), "brief", {"text": "short lived"}, ttl=1)
    clock.advance(120)
    found = store.search(("s",), limit=100)
    assert [r.key for r in found] == [f"k{i}" for i in reversed(range(11))]
    assert sorted(r.key for r in store.search(("s",), filter={"odd": True}, limit=100)) == sorted(
        f"k{i}" for i in range(1, 11, 2)
    )
    assert store.list_namespaces(prefix=("s",)) == [("s", "n0"), ("s", "n1"), ("s", "n2")]
    assert store.sweep_ttl() == 1


def test_a_delete_during_a_scan_skips_no_other_row(
    open_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: the scan listed the ids past its first page by ``offset``; a row of the
    first page deleted between the two reads shifted the rest back by one, and the row that
    moved into the first page's range was in neither read (a profile reload then missed a
    live memory until its next reload)."""
    import langmem_edge.store.base as base

    monkeypatch.setattr(base, "GET_PAGE", 4)
    store = open_store()
    for i in range(9):
        store.put(("s",), f"k{i}", {"text": f"item {i}"})
    first_page: list[str] = []
    get = store._items.get

    def get_then_delete(*args: Any, **kwargs: Any) -> Any:
        res = get(*args, **kwargs)
        if kwargs.get("limit") == 4 and not first_page:  # the first page: delete one of it
            first_page.extend(res["ids"])
            store._items.delete(ids=[first_page[0]])
        return res

    monkeypatch.setattr(store._items, "get", get_then_delete)
    found = {r.key for r in store.search(("s",), limit=100)}
    gone = {k for k in (f"k{i}" for i in range(9)) if store.get(("s",), k) is None}
    assert len(gone) == 1
    assert found - gone == {f"k{i}" for i in range(9)} - gone  # every live row was read


def test_pushed_whole_says_whether_chroma_evaluates_every_condition() -> None:
    """Only a hint for how many neighbours to ask (the Python check still decides), but it
    must name the filters a filtered round answers by itself."""
    whole = [None, {}, {"kind": "a"}, {"n": 3}, {"n": {"$gt": 1, "$lte": 5}},
             {"meta": {"lang": "en"}}, {"kind": {"$eq": "a"}, "flag": True}]
    partial = [{"kind": {"$ne": "a"}}, {"tags": ["a"]}, {"a.b": 1}, {"x": None},
               {"kind": "a" * (filters.MAX_FILTER_STRING + 1)}, {"n": {"$gt": "many"}},
               {"a": {"b": {"c": {"d": 1}}}}, {"kind": "a", "other": {"$ne": 2}}]
    assert all(filters.pushed_whole(f) for f in whole)
    assert not any(filters.pushed_whole(f) for f in partial)
    assert all(filters.pushdown_where(f) is not None for f in whole if f)
