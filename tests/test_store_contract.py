"""The store contract: the same tests against InMemoryStore (the reference), ChromaStore on an
embedded folder, and ChromaStore on a real Chroma server. Sync and async."""

from __future__ import annotations

import asyncio
import math
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from langmem_edge import ChromaStore
from langmem_edge.testing import FakeEmbeddings

DIMS = 64
BACKENDS = ["memory", "chroma", pytest.param("server", marks=pytest.mark.server)]

MakeStore = Callable[..., BaseStore]


@pytest.fixture(params=BACKENDS)
def make_store(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[MakeStore]:
    """A factory of fresh, isolated stores of one backend: ``make_store(index=..., **kw)``."""
    made: list[BaseStore] = []

    def make(*, index: Any = "default", **kwargs: Any) -> BaseStore:
        if index == "default":
            index = {"dims": DIMS, "embed": FakeEmbeddings(DIMS), "fields": ["text"]}
        if request.param == "memory":
            store: BaseStore = InMemoryStore(index=index)
        elif request.param == "chroma":
            store = ChromaStore.from_path(str(tmp_path / f"db{len(made)}"), index=index, **kwargs)
        else:
            url = request.getfixturevalue("chroma_server_url")
            prefix = kwargs.pop("collection_prefix", f"t{uuid.uuid4().hex[:12]}")
            store = ChromaStore.from_url(url, index=index, collection_prefix=prefix, **kwargs)
        made.append(store)
        return store

    make.backend = request.param  # type: ignore[attr-defined]
    yield make
    for store in made:
        close = getattr(store, "close", None)
        if close:
            close()


@pytest.fixture
def store(make_store: MakeStore) -> BaseStore:
    return make_store()


def keys(results: list[Any]) -> list[str]:
    return [r.key for r in results]


# -- items ------------------------------------------------------------------------------------


def test_put_get_delete(store: BaseStore) -> None:
    ns = ("users", "alice")
    assert store.get(ns, "missing") is None
    store.put(ns, "k", {"text": "hello"})
    item = store.get(ns, "k")
    assert item is not None
    assert (item.namespace, item.key, item.value) == (ns, "k", {"text": "hello"})
    assert item.created_at <= item.updated_at
    store.put(ns, "k", {"text": "bye"})
    assert store.get(ns, "k").value == {"text": "bye"}
    store.delete(ns, "k")
    assert store.get(ns, "k") is None
    store.delete(ns, "never-there")  # deleting nothing is fine


VALUES = [
    {"s": "plain", "i": 42, "f": 3.25, "b": True, "n": None},
    {"unicode": "héllo wörld 日本語 🚀", "nested": {"a": {"b": [1, 2, {"c": "d"}]}}},
    {"empty_list": [], "empty_dict": {}, "big": 2**53, "neg": -0.5, "false": False},
    {},
]


@pytest.mark.parametrize("value", VALUES)
def test_values_round_trip_exactly(store: BaseStore, value: dict[str, Any]) -> None:
    store.put(("v",), "k", value)
    got = store.get(("v",), "k").value
    assert got == value
    assert {k: type(v) for k, v in got.items()} == {k: type(v) for k, v in value.items()}


@pytest.mark.parametrize(
    "namespace",
    [(), ("a.b",), ("langgraph", "x"), ("",), ("ok", 1)],
)
def test_invalid_namespaces_are_rejected(store: BaseStore, namespace: tuple[Any, ...]) -> None:
    with pytest.raises((InvalidNamespaceError, ValueError)):
        store.put(namespace, "k", {"x": 1})


def test_namespaces_are_isolated_and_case_sensitive(store: BaseStore) -> None:
    store.put(("a", "b"), "k", {"text": "one"})
    store.put(("a", "bc"), "k", {"text": "two"})
    store.put(("A", "b"), "k", {"text": "three"})
    assert store.get(("a", "b"), "k").value == {"text": "one"}
    assert sorted(r.value["text"] for r in store.search(("a", "b"))) == ["one"]
    assert sorted(r.value["text"] for r in store.search(("a",))) == ["one", "two"]
    assert len(store.search(())) == 3


def test_batch_returns_results_in_op_order(store: BaseStore) -> None:
    store.put(("b",), "x", {"text": "x"})
    results = store.batch(
        [
            GetOp(("b",), "x"),
            PutOp(("b",), "y", {"text": "y"}),
            SearchOp(("b",)),
            ListNamespacesOp(match_conditions=None, limit=10),
            GetOp(("b",), "nope"),
        ]
    )
    assert results[0].value == {"text": "x"}
    assert results[1] is None
    assert keys(results[2]) == ["x"]  # reads run before the batch's writes
    assert results[3] == [("b",)]
    assert results[4] is None
    assert store.get(("b",), "y").value == {"text": "y"}


# -- search without a query ------------------------------------------------------------------


@pytest.fixture
def docs(store: BaseStore) -> BaseStore:
    rows = {
        "a": {"text": "apples", "color": "red", "n": 1, "meta": {"tier": "gold", "x": 5}},
        "b": {"text": "bananas", "color": "yellow", "n": 2, "meta": {"tier": "silver"}},
        "c": {"text": "cherries", "color": "red", "n": 3, "flag": True},
        "d": {"text": "dates", "color": "brown", "n": 4.5, "flag": False},
    }
    for k, v in rows.items():
        store.put(("fruit",), k, v)
    store.put(("veg",), "e", {"text": "eggplant", "color": "purple", "n": 9})
    return store


@pytest.mark.parametrize(
    ("filter", "expected"),
    [
        ({"color": "red"}, {"a", "c"}),
        ({"color": {"$eq": "red"}}, {"a", "c"}),
        ({"color": {"$ne": "red"}}, {"b", "d"}),
        ({"n": {"$gt": 2}}, {"c", "d"}),
        ({"n": {"$gte": 2}}, {"b", "c", "d"}),
        ({"n": {"$lt": 2}}, {"a"}),
        ({"n": {"$lte": 3, "$gt": 1}}, {"b", "c"}),
        ({"meta": {"tier": "gold"}}, {"a"}),
        ({"flag": True}, {"c"}),
        ({"flag": False}, {"d"}),
        ({"color": "red", "n": {"$gt": 1}}, {"c"}),
        ({"color": "green"}, set()),
    ],
)
def test_search_filters(docs: BaseStore, filter: dict[str, Any], expected: set[str]) -> None:
    assert set(keys(docs.search(("fruit",), filter=filter, limit=10))) == expected


def test_search_limit_offset_pages_cover_everything_once(docs: BaseStore) -> None:
    pages = [docs.search(("fruit",), limit=2, offset=o) for o in (0, 2, 4)]
    assert [len(p) for p in pages] == [2, 2, 0]
    assert sorted(k for p in pages for k in keys(p)) == ["a", "b", "c", "d"]


def test_search_results_have_no_score_without_query(docs: BaseStore) -> None:
    assert all(r.score is None for r in docs.search(("fruit",)))


def test_search_empty_prefix_is_unconstrained(docs: BaseStore) -> None:
    assert set(keys(docs.search((), limit=10))) == {"a", "b", "c", "d", "e"}


# -- vector search ----------------------------------------------------------------------------


def test_vector_search_scores_are_cosine(make_store: MakeStore) -> None:
    emb = FakeEmbeddings(DIMS)
    store = make_store(index={"dims": DIMS, "embed": emb, "fields": ["text"]})
    texts = {"d1": "the cat sat on the mat", "d2": "dogs chase cats", "d3": "quarterly revenue"}
    for k, t in texts.items():
        store.put(("s",), k, {"text": t})
    results = store.search(("s",), query="cat on a mat")
    q = emb.embed_query("cat on a mat")
    expected = {k: _cos(q, emb.embed_query(t)) for k, t in texts.items()}
    assert keys(results) == sorted(expected, key=lambda k: -expected[k])
    for r in results:
        assert r.score == pytest.approx(expected[r.key], abs=1e-5)


def _cos(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def test_vector_search_with_filter_and_prefix(docs: BaseStore) -> None:
    results = docs.search(("fruit",), query="red apples", filter={"color": "red"})
    assert set(keys(results)) == {"a", "c"}
    assert results[0].key == "a"
    assert all(r.score is not None for r in results)


def test_vector_search_pagination(store: BaseStore) -> None:
    for i in range(7):
        store.put(("p",), f"doc{i}", {"text": f"test document number {i}"})
    everything = store.search(("p",), query="test document", limit=10)
    assert len(everything) == 7
    scores = [r.score for r in everything]
    assert scores == sorted(scores, reverse=True)
    page1 = store.search(("p",), query="test document", limit=3)
    page2 = store.search(("p",), query="test document", limit=3, offset=3)
    assert not set(keys(page1)) & set(keys(page2))
    assert min(r.score for r in page1) >= max(r.score for r in page2)


def test_index_false_items_are_returned_without_score(store: BaseStore) -> None:
    store.put(("i",), "vec", {"text": "indexed text"})
    store.put(("i",), "plain", {"text": "indexed text"}, index=False)
    results = store.search(("i",), query="indexed text", limit=5)
    assert keys(results) == ["vec", "plain"]
    assert results[0].score is not None and results[1].score is None


def test_per_put_index_override_and_max_pooling(make_store: MakeStore) -> None:
    store = make_store(index={"dims": DIMS, "embed": FakeEmbeddings(DIMS), "fields": ["k9"]})
    store.put(("o",), "doc3", {"k0": "aaa", "k1": "bbb", "k2": "ccc"}, index=["k0", "k1"])
    store.put(("o",), "doc4", {"k0": "eee", "k1": "bbb", "k3": "ggg"}, index=["k1", "k3"])
    assert keys(store.search(("o",), query="aaa"))[0] == "doc3"
    assert keys(store.search(("o",), query="ggg"))[0] == "doc4"
    both = store.search(("o",), query="bbb")
    assert both[0].score == pytest.approx(1.0) and both[1].score == pytest.approx(1.0)
    assert all(r.score < 0.9 for r in store.search(("o",), query="ccc"))


def test_list_paths_index_one_vector_per_element(make_store: MakeStore) -> None:
    store = make_store(
        index={"dims": DIMS, "embed": FakeEmbeddings(DIMS), "fields": ["items[*].name"]}
    )
    store.put(("l",), "x", {"items": [{"name": "alpha"}, {"name": "omega"}]})
    store.put(("l",), "y", {"items": [{"name": "beta"}]})
    for query in ("alpha", "omega"):
        top = store.search(("l",), query=query)[0]
        assert (top.key, round(top.score, 5)) == ("x", 1.0)


def test_update_reindexes(store: BaseStore) -> None:
    store.put(("u",), "k", {"text": "red apples"})
    store.put(("u",), "other", {"text": "green pears"})
    store.put(("u",), "k", {"text": "blue whales"})
    top = store.search(("u",), query="blue whales")[0]
    assert top.key == "k" and top.score == pytest.approx(1.0)
    assert store.search(("u",), query="red apples")[0].score < 0.5


@pytest.mark.parametrize("query", ["", None])
def test_empty_query_is_a_plain_listing(store: BaseStore, query: str | None) -> None:
    store.put(("e",), "k", {"text": "test document"})
    results = store.search(("e",), query=query)
    assert keys(results) == ["k"] and results[0].score is None


def test_search_without_index_ignores_query(make_store: MakeStore) -> None:
    store = make_store(index=None)
    store.put(("n",), "k", {"text": "anything"})
    assert keys(store.search(("n",), query="anything")) == ["k"]


# -- list namespaces ----------------------------------------------------------------------------


@pytest.fixture
def tree(store: BaseStore) -> BaseStore:
    for ns in [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "settings"),
    ]:
        store.put(ns, "k", {"text": "x"})
    return store


def test_list_namespaces_all_sorted(tree: BaseStore) -> None:
    got = tree.list_namespaces(limit=100)
    assert got == sorted(got) and len(got) == 8


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        (
            {"prefix": ("a", "b")},
            [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f")],
        ),
        ({"suffix": ("f",)}, [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]),
        ({"prefix": ("a", "*", "f")}, [("a", "b", "f"), ("a", "c", "f")]),
        ({"suffix": ("*", "f")}, [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]),
        ({"prefix": ("a",), "suffix": ("f",)}, [("a", "b", "f"), ("a", "c", "f")]),
        (
            {"prefix": ("a", "b"), "max_depth": 3},
            [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")],
        ),
        ({"max_depth": 1}, [("a",), ("b",), ("users",)]),
        ({"prefix": ("users",), "limit": 1, "offset": 1}, [("users", "456", "settings")]),
        ({"prefix": ("nope",)}, []),
    ],
)
def test_list_namespaces_conditions(
    tree: BaseStore, kwargs: dict[str, Any], expected: list[tuple[str, ...]]
) -> None:
    assert tree.list_namespaces(**kwargs) == expected


def test_list_namespaces_batch_op(tree: BaseStore) -> None:
    op = ListNamespacesOp(
        match_conditions=(MatchCondition("prefix", ("users",)),), max_depth=None, limit=5
    )
    assert tree.batch([op])[0] == [("users", "123"), ("users", "456", "settings")]


# -- async ------------------------------------------------------------------------------------


async def test_async_twins(store: BaseStore) -> None:
    ns = ("async", "x")
    await store.aput(ns, "k1", {"text": "async hello"})
    await store.aput(ns, "k2", {"text": "something else"})
    assert (await store.aget(ns, "k1")).value == {"text": "async hello"}
    found = await store.asearch(("async",), query="async hello")
    assert found[0].key == "k1"
    assert await store.alist_namespaces(prefix=("async",)) == [ns]
    await store.adelete(ns, "k1")
    assert await store.aget(ns, "k1") is None
    results = await store.abatch([GetOp(ns, "k2"), SearchOp(("async",))])
    assert results[0].key == "k2" and keys(results[1]) == ["k2"]


async def test_one_object_serves_sync_and_async(store: BaseStore) -> None:
    store.put(("mix",), "s", {"text": "written sync"})
    await store.aput(("mix",), "a", {"text": "written async"})
    assert (await store.aget(("mix",), "s")).value["text"] == "written sync"
    assert store.get(("mix",), "a").value["text"] == "written async"


class SlowEmbeddings(FakeEmbeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        import time

        time.sleep(0.3)
        return super().embed_documents(texts)


async def test_async_does_not_block_the_event_loop(make_store: MakeStore) -> None:
    if make_store.backend == "memory":  # type: ignore[attr-defined]
        pytest.skip("InMemoryStore embeds on the loop; the property is ours")
    store = make_store(index={"dims": DIMS, "embed": SlowEmbeddings(DIMS), "fields": ["text"]})
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    await store.aput(("slow",), "k", {"text": "takes a while to embed"})
    task.cancel()
    assert ticks >= 5, "the event loop was blocked while the store embedded"


def test_range_filters_convert_like_python(store: BaseStore) -> None:
    """Ranges compare float(value): numeric strings and bools count (InMemoryStore's rule)."""
    rows = {
        "int": 5,
        "float": 5.5,
        "str": "6",
        "bool": True,
        "big": 2**60,
        "tiny": 0.1 + 0.2,
    }
    for k, v in rows.items():
        store.put(("r",), k, {"x": v})

    def found(**flt: Any) -> set[str]:
        return {r.key for r in store.search(("r",), filter={"x": flt}, limit=20)}

    assert found(**{"$gt": 5}) == {"float", "str", "big"}
    assert found(**{"$lte": 1}) == {"bool", "tiny"}
    assert found(**{"$gte": 0.30000000000000004, "$lt": 0.31}) == {"tiny"}
    assert {r.key for r in store.search(("r",), filter={"x": 5})} == {"int"}
    assert {r.key for r in store.search(("r",), filter={"x": 1})} == {"bool"}
    assert {r.key for r in store.search(("r",), filter={"x": 2**60})} == {"big"}


def test_index_false_update_keeps_the_items_vectors(store: BaseStore) -> None:
    """Re-putting with index=False changes the value but not what it was indexed as."""
    store.put(("k",), "a", {"text": "red apples", "status": "active"})
    store.put(("k",), "b", {"text": "green pears", "status": "active"})
    store.put(("k",), "a", {"text": "red apples", "status": "done", "n": 2}, index=False)
    top = store.search(("k",), query="red apples", limit=1)[0]
    assert (top.key, top.value["status"]) == ("a", "done")
    assert top.score == pytest.approx(1.0)
    hits = store.search(("k",), query="red apples", filter={"status": "done"})
    assert [h.key for h in hits] == ["a"]
    assert [h.key for h in store.search(("k",), query="red", filter={"status": "active"})] == [
        "b"
    ]
