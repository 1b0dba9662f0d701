"""ChromaStore's keyword channel in the database (``keyword_search``), its rows, the calls a
put makes, ``put_existing``, and the upgrade from the layout of the change protocol."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import pytest
from langgraph.store.base import PutOp

from langmem_edge import ChromaStore, errors
from langmem_edge.errors import InvalidInputError
from langmem_edge.memory.core.stores import KeywordSearch, NearestKeys, PutExisting, PutNew
from langmem_edge.retrieval.bm25 import rank_fields
from langmem_edge.retrieval.keywords import MAX_ROW_TERMS, TERMS_FIELD
from langmem_edge.retrieval.text import default_analyzer
from langmem_edge.store import filters, keyword, layout
from langmem_edge.testing import FakeEmbeddings

DIMS = 16
WORDS = ("apple banana cherry lisbon flight window peanut allergy theme dark coffee tea "
         "garden river mountain report budget meeting travel hotel").split()


def index(fields: list[str] | None = None) -> dict[str, Any]:
    return {"dims": DIMS, "embed": FakeEmbeddings(DIMS), "fields": fields or ["text"]}


class Calls:
    """Records ``(collection part, method)`` of every Chroma call a store makes (the item
    rows collection, ``rows<dims>``, as ``items``)."""

    def __init__(self, store: ChromaStore) -> None:
        self.inner, self.seen = store._call, []
        store._call = self

    def __call__(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        owner = getattr(getattr(fn, "__self__", None), "name", "client")
        part = owner.rsplit("-", 1)[-1]
        self.seen.append(("items" if part.startswith("rows") else part, fn.__name__))
        return self.inner(fn, *args, **kwargs)


def corpus(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12))) for _ in range(n)]


def reference(texts: dict[str, str], query: str, limit: int, *, b: float = 0.75,
              ns: tuple[str, ...] = ("u", "a")) -> list[tuple[str, float]]:
    """The in-process BM25 of the package over ``texts`` (the old index's ranking: ties by
    item id), as ``(key, score)``."""
    analyzer = default_analyzer()
    keys = {layout.item_id(ns, key): key for key in texts}
    docs = {iid: {"text": terms} for iid, key in keys.items()
            if (terms := analyzer.terms(texts[key]))}
    return [(keys[h.id], h.score)
            for h in rank_fields(docs, analyzer.query_terms(query), b=b, limit=limit)]


def fill(store: ChromaStore, texts: dict[str, str], ns: tuple[str, ...] = ("u", "a")) -> None:
    store.batch([PutOp(ns, key, {"text": text}) for key, text in texts.items()])


@pytest.mark.parametrize("scan_rows", [keyword.KEYWORD_SCAN_ROWS, 5])
def test_keyword_search_ranks_as_the_in_process_index(
    chroma_store_factory: Any, monkeypatch: pytest.MonkeyPatch, scan_rows: int
) -> None:
    """Both routes (the scope read whole, and the rows holding a term) rank as the package's
    BM25 over the same texts; the second with its average length taken from the rows it
    fetched, so the scores are compared with length normalisation off there (b = 0)."""
    monkeypatch.setattr(keyword, "KEYWORD_SCAN_ROWS", scan_rows)
    b = 0.75 if scan_rows > 40 else 0.0
    store = chroma_store_factory(index=index(), hybrid={"keyword": {"b": b}})
    texts = {f"k{i}": t for i, t in enumerate(corpus(1, 40))}
    fill(store, texts)
    fill(store, {"other": "apple apple apple banana"}, ns=("u", "b"))  # another scope
    for query in ["apple", "lisbon flight", "dark coffee and tea", "the", "river budget hotel"]:
        want = reference(texts, query, 10, b=b)
        got = store.keyword_search(("u", "a"), query, limit=10)
        assert [h.key for h in got] == [k for k, _ in want], query
        assert [h.score for h in got] == pytest.approx([s for _, s in want], rel=1e-12)
        assert all(h.namespace == ("u", "a") for h in got)


def test_hybrid_keyword_channel_agrees_with_keyword_search(chroma_store_factory: Any) -> None:
    store = chroma_store_factory(index=index())
    texts = {f"k{i}": t for i, t in enumerate(corpus(2, 30))}
    fill(store, texts)
    query = "garden river"
    explained = store.explain_search(("u",), query=query, limit=30)
    by_rank = sorted((e.channels["keyword"]["rank"], e.item.key) for e in explained
                     if e.channels["keyword"]["rank"] is not None)
    assert [k for _, k in by_rank][:10] == [k for k, _ in reference(texts, query, 10)]
    assert [h.key for h in store.keyword_search(("u",), query)] == [k for _, k in by_rank][:10]


def test_a_small_scope_costs_one_get_and_a_large_one_a_get_per_term_and_two(
    chroma_store_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = chroma_store_factory(index=index())
    fill(store, {f"k{i}": t for i, t in enumerate(corpus(3, 12))})
    store.keyword_search(("u", "a"), "apple")  # names learnt
    calls = Calls(store)
    store.keyword_search(("u", "a"), "apple banana")
    assert calls.seen == [("items", "get")]
    monkeypatch.setattr(keyword, "KEYWORD_SCAN_ROWS", 4)
    store.keyword_search(("u", "a"), "apple banana")  # learns the scope is large
    calls.seen.clear()
    store.keyword_search(("u", "a"), "apple banana")
    # the count, each term's rows (ids), the candidates' documents
    assert calls.seen == [("items", "get")] * 4
    calls.seen.clear()
    many = " ".join(f"word{i}" for i in range(keyword.MAX_POSTING_TERMS + 5))
    store.keyword_search(("u", "a"), many)
    assert len(calls.seen) <= keyword.MAX_POSTING_TERMS + 2


def test_filter_limit_and_bad_input(chroma_store_factory: Any) -> None:
    store = chroma_store_factory(index=index())
    for i in range(6):
        store.put(("f",), f"k{i}", {"text": f"apple {'apple ' * i}", "n": i})
    assert [h.key for h in store.keyword_search(("f",), "apple", filter={"n": {"$gte": 4}})] \
        == ["k5", "k4"]
    assert len(store.keyword_search(("f",), "apple", limit=2)) == 2
    assert store.keyword_search(("f",), "apple", limit=0) == []
    assert store.keyword_search(("f",), "the of and") == []
    with pytest.raises(InvalidInputError):
        store.keyword_search(("f",), "apple", limit=-1)
    with pytest.raises(InvalidInputError):
        store.keyword_search(("f",), "apple", filter={"n": {"$bogus": 1}})


async def test_async_twins(chroma_store_factory: Any) -> None:
    store = chroma_store_factory(index=index())
    store.put(("a",), "x", {"text": "peanut allergy"})
    assert [h.key for h in await store.akeyword_search(("a",), "peanuts")] == ["x"]
    assert await store.aput_existing([(("a",), "x", {"text": "peanut allergy", "n": 1})]) == [
        True]
    assert store.get(("a",), "x").value["n"] == 1


def test_capabilities_are_detected_by_duck_typing(chroma_store_factory: Any) -> None:
    store = chroma_store_factory(index=index())
    assert isinstance(store, KeywordSearch)
    assert isinstance(store, PutExisting)
    assert isinstance(store, NearestKeys)


def test_the_row_carries_its_terms_and_the_cap(chroma_store_factory: Any,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    store = chroma_store_factory(index=index())
    store.put(("c",), "pref.ui_theme", {"text": "Running runners run; the dark theme"})
    got = store._items.get(include=["metadatas", "documents"])
    meta, doc = got["metadatas"][0], json.loads(got["documents"][0])
    assert meta[TERMS_FIELD] == ["run", "runner", "dark", "theme"]
    assert meta["ky"] == ["pref", "ui", "theme"] and meta["kl"] == 5
    row = doc.pop("m")
    assert doc == {"f": {"text": "run runner run dark theme"}, "k": ["pref", "ui", "theme"]}
    assert row["k"] == "pref.ui_theme" and json.loads(row["v"])["text"].startswith("Running")
    assert row["fk"] == [filters.STRINGS_FIELD] and meta[filters.STRINGS_FIELD] == [
        filters.string_entry("text", "Running runners run; the dark theme")]
    assert not set(layout.DOCUMENT_ONLY) & meta.keys()  # schema 6
    assert "kw" not in meta and "ks" not in meta
    many = " ".join(f"w{i}x" for i in range(MAX_ROW_TERMS + 10))
    store.put(("c",), "long", {"text": many})
    row = store._items.get(ids=[layout.item_id(("c",), "long")], include=["metadatas"])
    assert len(row["metadatas"][0][TERMS_FIELD]) == MAX_ROW_TERMS
    late = f"w{MAX_ROW_TERMS + 5}x"
    assert [h.key for h in store.keyword_search(("c",), late)] == ["long"]  # read whole
    monkeypatch.setattr(keyword, "KEYWORD_SCAN_ROWS", 1)
    assert store.keyword_search(("c",), late) == []  # past the cap: documented


def test_a_new_items_put_is_one_read_and_one_row(chroma_store_factory: Any) -> None:
    """An item of one indexed text is one row, its vector in it; the rows of texts after the
    first go to ``-vectors`` first, and a changed text's old ones are deleted last."""
    store = chroma_store_factory(index=index())
    store.put(("p",), "warm", {"text": "warm up"})
    calls = Calls(store)
    store.put(("p",), "new", {"text": "a brand new fact"})
    assert calls.seen == [("items", "get"), ("items", "upsert")]
    calls.seen.clear()
    store.put(("p",), "new", {"text": "a brand new fact", "n": 2})  # same text
    assert calls.seen == [("items", "get"), ("items", "upsert")]
    calls.seen.clear()
    store.put(("p",), "new", {"text": "another fact"})  # new text: the row's vector changes
    assert calls.seen == [("items", "get"), ("items", "upsert")]
    calls.seen.clear()
    two = {"text": "first text", "more": "second text"}
    store.put(("p",), "two", two, index=["text", "more"])
    assert calls.seen == [("items", "get"), ("vectors", "upsert"), ("items", "upsert")]
    calls.seen.clear()
    store.put(("p",), "two", {**two, "more": "changed"}, index=["text", "more"])
    assert calls.seen == [("items", "get"), ("vectors", "get"), ("vectors", "upsert"),
                          ("items", "upsert"), ("vectors", "delete")]
    assert store.search(("p",), query="changed", limit=1)[0].key == "two"
    assert store.search(("p",), query="first text", limit=1)[0].key == "two"
    assert len(store._vectors.get(include=[])["ids"]) == 1  # the second text's row


# ------------------------------------------------------------------------------ put_new


def test_put_new_writes_its_rows_without_a_read(chroma_store_factory: Any) -> None:
    store = chroma_store_factory(index=index())
    assert isinstance(store, PutNew)
    store.put(("p",), "warm", {"text": "warm up"})
    calls = Calls(store)
    store.put_new([(("p",), "a", {"text": "lisbon flight"}, None),
                   (("p",), "b", {"text": "dark coffee"}, False)])
    assert calls.seen == [("items", "upsert")]
    assert store.get(("p",), "a").value == {"text": "lisbon flight"}
    assert store.search(("p",), query="lisbon flight", limit=1)[0].key == "a"
    assert store.get(("p",), "b").value == {"text": "dark coffee"}
    assert store.keyword_search(("p",), "coffee") == []  # index=False: as a put, not indexed
    assert asyncio.run(store.aput_new([])) is None


def test_put_new_over_an_existing_item_replaces_it(chroma_store_factory: Any) -> None:
    """The promise broken (the item existed): the new value and texts win, its old vector
    rows are ignored by every search, its created_at restarts."""
    store = chroma_store_factory(index=index())
    store.put(("p",), "a", {"text": "garden river"})
    before = store.get(("p",), "a")
    store.put_new([(("p",), "a", {"text": "hotel budget"}, None)])
    after = store.get(("p",), "a")
    assert after.value == {"text": "hotel budget"} and after.created_at >= before.created_at
    old = store.search(("p",), query="garden river", limit=5)
    new = store.search(("p",), query="hotel budget", limit=5)
    assert [h.key for h in old] == [h.key for h in new] == ["a"]  # once, not twice
    assert new[0].score == pytest.approx(1.0) and old[0].score < 0.99  # its current text
    assert store.keyword_search(("p",), "garden") == []


def test_put_new_refuses_bad_input_before_writing(chroma_store_factory: Any) -> None:
    store = chroma_store_factory(index=index())
    for bad in ([(("p",), "k", {"text": "x"})], [(("p",), "k", "not a dict", None)],
                [(("p",), 5, {"text": "x"}, None)], [((), "k", {"text": "x"}, None)]):
        with pytest.raises((InvalidInputError, errors.InvalidNamespaceError)):
            store.put_new([(("p",), "ok", {"text": "fine"}, None), *bad])
    assert store.get(("p",), "ok") is None


# ------------------------------------------------------------------------- put_existing


def test_put_existing_rewrites_only_what_exists(chroma_store_factory: Any) -> None:
    store = chroma_store_factory(index=index())
    store.put(("m",), "a", {"text": "likes tea", "status": "active", "old": "gone soon"})
    store.put(("m",), "b", {"text": "likes coffee"})
    store.delete(("m",), "b")
    calls = Calls(store)
    assert store.put_existing([(("m",), "a", {"text": "likes tea", "status": "retired"}),
                               (("m",), "b", {"text": "likes coffee", "n": 1}),
                               (("m",), "c", {"text": "never written"})]) == [True, False, False]
    assert ("vectors", "upsert") not in calls.seen  # the indexed text is unchanged
    assert store.get(("m",), "b") is None and store.get(("m",), "c") is None
    assert store.get(("m",), "a").value == {"text": "likes tea", "status": "retired"}
    assert [i.key for i in store.search(("m",), filter={"status": "retired"})] == ["a"]
    assert store.search(("m",), filter={"status": "active"}) == []
    assert store.search(("m",), filter={"old": "gone soon"}) == []
    meta = store._items.get(ids=[layout.item_id(("m",), "a")])["metadatas"][0]
    assert sorted(meta[filters.STRINGS_FIELD]) == [filters.string_entry("status", "retired"),
                                                   filters.string_entry("text", "likes tea")]
    assert [h.key for h in store.keyword_search(("m",), "tea")] == ["a"]
    assert store.search(("m",), query="likes tea")[0].key == "a"


def test_put_existing_across_two_store_objects(chroma_store_factory: Any) -> None:
    """Two "processes" on one folder: one deletes, the other's rewrite brings nothing back."""
    one = chroma_store_factory("shared", index=index())
    two = chroma_store_factory("shared", index=index())
    one.put(("m",), "x", {"text": "a fact", "count": 1})
    assert two.get(("m",), "x").value["count"] == 1
    one.delete(("m",), "x")
    assert two.put_existing([(("m",), "x", {"text": "a fact", "count": 2})]) == [False]
    assert one.get(("m",), "x") is None and two.get(("m",), "x") is None
    assert two.keyword_search(("m",), "fact") == []
    assert one.search(("m",), filter={"count": 2}) == []


def test_put_existing_with_changed_text_replaces_the_vectors(chroma_store_factory: Any) -> None:
    store = chroma_store_factory(index=index())
    store.put(("m",), "x", {"text": "green tea"})
    assert store.put_existing([(("m",), "x", {"text": "black coffee"})]) == [True]
    assert store.search(("m",), query="black coffee")[0].score == pytest.approx(1.0, abs=1e-4)
    assert [h.key for h in store.keyword_search(("m",), "coffee")] == ["x"]
    assert store.keyword_search(("m",), "green") == []
    assert store._vectors.get(include=[])["ids"] == []  # one text: its vector is in the row


def test_put_existing_counts_an_expired_item_as_gone(chroma_store_factory: Any) -> None:
    store = chroma_store_factory(index=index())
    store.put(("m",), "x", {"text": "short lived"}, ttl=1)
    store.put(("m",), "y", {"text": "kept"}, ttl=10)
    later = store._clock() + 120
    store._clock = lambda: later
    assert store.put_existing([(("m",), "x", {"text": "short lived", "n": 1}),
                               (("m",), "y", {"text": "kept", "n": 1})]) == [False, True]
    assert store.get(("m",), "x") is None
    assert store.get(("m",), "y").value == {"text": "kept", "n": 1}


def test_put_existing_refuses_bad_input_before_writing(chroma_store_factory: Any) -> None:
    store = chroma_store_factory(index=index())
    store.put(("m",), "x", {"text": "kept"})
    with pytest.raises(InvalidInputError):
        store.put_existing([(("m",), "x", {"text": "new"}), (("m",), "y", None)])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError):
        store.put_existing([(("m",), "x")])  # type: ignore[list-item]
    assert store.get(("m",), "x").value == {"text": "kept"}
    assert store.put_existing([]) == []




def reference_fields(docs: dict[str, dict[str, str]], query: str, limit: int,
                     weights: dict[str, float], *, b: float = 0.75,
                     ns: tuple[str, ...] = ("u", "a")) -> list[tuple[str, float]]:
    """The package's in-process BM25F over ``docs`` (key -> field -> text), unnamed fields 0."""
    analyzer = default_analyzer()
    keys = {layout.item_id(ns, key): key for key in docs}
    fields = {iid: {f: analyzer.terms(t) for f, t in docs[key].items()}
              for iid, key in keys.items()}
    return [(keys[h.id], h.score)
            for h in rank_fields(fields, analyzer.query_terms(query), b=b, limit=limit,
                                 field_weights=weights, default_field_weight=0.0)]


@pytest.mark.parametrize("embedded", [True, False])
def test_keyword_only_paths_are_analysed_not_embedded(chroma_store_factory: Any,
                                                      embedded: bool) -> None:
    """``index=["text", "keyword:name"]``: ``text`` gets a vector row and is analysed,
    ``name`` is analysed alone; a store without an embedding model still analyses the
    keyword-only paths; other stores find no such field."""
    store = chroma_store_factory(index=index() if embedded else None)
    ns = ("u", "a")
    store.batch([PutOp(ns, "k1", {"text": "garden river", "name": "Lisbon"},
                       index=["text", "keyword:name"]),
                 PutOp(ns, "k2", {"text": "lisbon flight", "name": "Tea"},
                       index=["text", "keyword:name"])])
    row = store._items.get(ids=[layout.item_id(ns, "k1")], include=["metadatas"])
    meta = row["metadatas"][0]
    assert int(meta["nv"]) == (1 if embedded else 0)  # only "text" is embedded
    assert "lisbon" in meta[TERMS_FIELD]
    only_name = store.keyword_search(ns, "lisbon", field_weights={"name": 1.0})
    assert [h.key for h in only_name] == ["k1"]
    only_text = store.keyword_search(ns, "lisbon", field_weights={"text": 1.0})
    assert [h.key for h in only_text] == ["k2"] if embedded else only_text == []
    from langmem_edge.memory.core.stores import KEYWORD_ONLY
    assert KEYWORD_ONLY == layout.KEYWORD_ONLY


@pytest.mark.parametrize("scan_rows", [keyword.KEYWORD_SCAN_ROWS, 5])
def test_field_weights_rank_as_the_in_process_bm25f(
    chroma_store_factory: Any, monkeypatch: pytest.MonkeyPatch, scan_rows: int
) -> None:
    """Per-call field weights (BM25F, unnamed fields 0) rank as the package's BM25F over the
    same fields, on both routes (length normalisation off on the second, as above; its
    candidates here are every row holding a term, so frequencies are counted per field)."""
    monkeypatch.setattr(keyword, "KEYWORD_SCAN_ROWS", scan_rows)
    b = 0.75 if scan_rows > 40 else 0.0
    store = chroma_store_factory(index=index(), hybrid={"keyword": {"b": b}})
    rng = random.Random(5)
    texts = corpus(6, 40)
    docs = {f"k{i}": {"text": t, "context": rng.choice(texts), "name": rng.choice(WORDS)}
            for i, t in enumerate(texts)}
    store.batch([PutOp(("u", "a"), k, v, index=["text", "keyword:context", "keyword:name"])
                 for k, v in docs.items()])
    for weights in ({"text": 1.0, "context": 0.5, "name": 2.0}, {"context": 1.0}):
        for query in ["apple", "lisbon flight", "dark coffee and tea", "river budget hotel"]:
            want = reference_fields(docs, query, 10, weights, b=b)
            got = store.keyword_search(("u", "a"), query, limit=10, field_weights=weights)
            assert [h.key for h in got] == [k for k, _ in want], (weights, query)
            assert [h.score for h in got] == pytest.approx([s for _, s in want], rel=1e-9)


def test_bad_field_weights_are_refused(chroma_store_factory: Any) -> None:
    store = chroma_store_factory(index=index())
    fill(store, {"k": "apple"})
    for bad in ({"text": -1.0}, {"text": "1"}, {1: 1.0}, ["text"], {"text": True}):
        with pytest.raises(InvalidInputError):
            store.keyword_search(("u", "a"), "apple", field_weights=bad)
