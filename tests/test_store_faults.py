"""ChromaStore under faults and hostile input: issue 10's findings, each as a regression test.

Fault injection (``tests/faults.py``) fails the Nth Chroma write call of an operation; a
fresh store on the same data must then read a state one of the documented prefixes allows
(docs/store.md, "Crash safety"): the old value ranked by its old texts, or the new one by
its new texts, never a mix.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from faults import EXIT_CODE, FaultyCaller, InjectedFault, run_child
from langgraph.store.memory import InMemoryStore

from langmem_edge import errors
from langmem_edge.store import layout
from langmem_edge.testing import FakeEmbeddings

pytestmark = pytest.mark.slow  # faults at every write call, a writer killed in a subprocess

DIMS = 64
NS = ("users", "alice")


def index() -> dict[str, Any]:
    return {"dims": DIMS, "embed": FakeEmbeddings(DIMS), "fields": ["text"]}


def cosine(a: str, b: str) -> float:
    emb = FakeEmbeddings(DIMS)
    va, vb = emb.embed_query(a), emb.embed_query(b)
    return sum(x * y for x, y in zip(va, vb, strict=True))


# ----------------------------------------------------------------- 1. namespace escape


@pytest.mark.parametrize(
    "label", ["alice\x1fevil", "alice\x1f", "tab\there", "del\x7f", "alice\n",
              "esc\x1e1", "\x1e\x1f\x1e0"]
)
def test_any_label_round_trips_and_never_reaches_another_namespace(
    chroma_store_factory: Any, label: str
) -> None:
    """A LangGraph store takes any string label (langgraph's own store suite puts under
    ``("users", "alice\\n")``): it reads back exactly, and never matches a neighbour."""
    store = chroma_store_factory(index=index())
    ns = ("users", label)
    store.put(("users", "alice"), "k", {"text": "alice's own"})
    store.put(("users", "alice", "evil"), "k", {"text": "alice's child"})
    store.put(ns, "k", {"text": "planted"})
    item = store.get(ns, "k")
    assert item is not None and item.namespace == ns and item.value == {"text": "planted"}
    assert store.get(("users", "alice"), "k").value == {"text": "alice's own"}
    assert [i.namespace for i in store.search(ns, query="planted")] == [ns]
    assert [i.namespace for i in store.hybrid_search(ns, query="planted")] == [ns]
    assert {i.value["text"] for i in store.search(("users", "alice"))} == {
        "alice's own", "alice's child"}
    assert ns in store.list_namespaces(prefix=("users",))
    assert store.list_namespaces(prefix=ns) == [ns]
    assert ("users", "alice", "evil") in store.list_namespaces(prefix=("users", "alice"))
    store.delete_prefix(ns)
    assert store.get(ns, "k") is None
    assert store.get(("users", "alice"), "k") is not None


def test_a_list_namespace_works_as_its_tuple(chroma_store_factory: Any) -> None:
    """``put(["users", "alice"], ...)`` raised ``TypeError: unhashable type: 'list'``;
    SqliteStore and PostgresStore take a list, so ChromaStore does too."""
    store = chroma_store_factory(index=index())
    store.put(["users", "alice"], "k", {"text": "a list namespace"})
    item = store.get(("users", "alice"), "k")
    assert item is not None and tuple(item.namespace) == ("users", "alice")
    assert store.get(["users", "alice"], "k").value == {"text": "a list namespace"}
    assert [tuple(i.namespace) for i in store.search(["users"], query="list")] == [
        ("users", "alice")]
    assert store.list_namespaces(prefix=["users"]) == [("users", "alice")]
    store.delete(["users", "alice"], "k")
    assert store.get(("users", "alice"), "k") is None


@pytest.mark.parametrize("bad", ["users", None, 5, ("a", 3)])
def test_a_namespace_that_is_no_sequence_of_strings_is_refused(
    chroma_store_factory: Any, bad: Any
) -> None:
    store = chroma_store_factory()
    with pytest.raises(errors.InvalidNamespaceError):
        store.put(bad, "k", {"v": 1})


def test_langgraph_label_rules_raise_our_error_with_a_code(chroma_store_factory: Any) -> None:
    store = chroma_store_factory()
    for ns in [("a.b",), ("",), ("langgraph", "x"), ("a\x00b",)]:
        with pytest.raises(errors.InvalidNamespaceError) as info:
            store.put(ns, "k", {"v": 1})
        assert info.value.code == "invalid_namespace"


# ----------------------------------------------------------------- 2. filters drop nothing


def _filter_cases() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    wide = {f"f{i:02d}": i for i in range(70)} | {"kind": "target"}
    return [
        (wide, {"kind": "target"}),
        (wide, {"f69": {"$gte": 69}}),
        ({"": "empty", "kind": "x"}, {"": "empty"}),
        ({"n": {"": 1}}, {"n": {"": 1}}),
        ({"x": "inf"}, {"x": {"$gt": 5}}),
        ({"x": "-Infinity"}, {"x": {"$lt": 0}}),
    ]


@pytest.mark.parametrize(("value", "filter"), _filter_cases())
def test_filters_find_what_inmemorystore_finds(
    chroma_store_factory: Any, value: dict[str, Any], filter: dict[str, Any]
) -> None:
    ref = InMemoryStore()
    store = chroma_store_factory()
    for s in (ref, store):
        s.put(NS, "target", value)
        s.put(NS, "other", {"kind": "other", "f69": 0, "x": 0, "n": {"": 0}})
    expected = [i.key for i in ref.search(NS, filter=filter)]
    assert expected == ["target"]
    assert [i.key for i in store.search(NS, filter=filter)] == expected


# ----------------------------------------------------------------- 3. crash between calls


def _count_writes(make: Any, setup: Any, operation: Any) -> int:
    store = make("count")
    setup(store)
    counter = FaultyCaller(store._call)
    store._call = counter
    operation(store)
    return len(counter.calls)


def _faulted(make: Any, name: str, setup: Any, operation: Any, n: int) -> Any:
    store = make(name)
    setup(store)
    store._call = FaultyCaller(store._call, fail_at=n)
    with pytest.raises(InjectedFault):
        operation(store)
    return make(name)  # a fresh store object on the same data


OLD, NEW = "likes green tea", "prefers black coffee"


def test_an_update_cut_anywhere_ranks_the_value_it_holds(chroma_store_factory: Any) -> None:
    two = ["text", "parts[*]"]  # two texts: the second has a row in -vectors

    def setup(store: Any) -> None:
        store.put(NS, "drink", {"text": OLD, "parts": [OLD]}, index=two)
        store.put(NS, "other", {"text": "walks the dog"})

    def update(store: Any) -> None:
        store.put(NS, "drink", {"text": NEW, "parts": [NEW]}, index=two)

    make = lambda name: chroma_store_factory(name, index=index())  # noqa: E731
    total = _count_writes(make, setup, update)
    assert total == 3  # the new second text's row, the item row, the old second text's row
    for n in range(1, total + 1):
        fresh = _faulted(make, f"u{n}", setup, update, n)
        text = fresh.get(NS, "drink").value["text"]
        assert text in (OLD, NEW)
        for query in (OLD, NEW):
            hit = next(h for h in fresh.search(NS, query=query) if h.key == "drink")
            assert hit.score == pytest.approx(cosine(query, text), abs=1e-4), (n, query, text)
            near = {h.key: h.score for h in fresh.nearest_keys(NS, query, limit=5)}
            assert near["drink"] == pytest.approx(cosine(query, text), abs=1e-4)
        fresh.put(NS, "drink", {"text": NEW, "parts": [NEW]}, index=two)  # a retry completes
        assert fresh.search(NS, query=NEW)[0].key == "drink"


def test_a_delete_cut_anywhere_leaves_the_item_or_nothing(chroma_store_factory: Any) -> None:
    def setup(store: Any) -> None:
        store.put(NS, "drink", {"text": OLD})

    def delete(store: Any) -> None:
        store.delete(NS, "drink")

    make = lambda name: chroma_store_factory(name, index=index())  # noqa: E731
    total = _count_writes(make, setup, delete)
    for n in range(1, total + 1):
        fresh = _faulted(make, f"d{n}", setup, delete, n)
        item = fresh.get(NS, "drink")
        found = [h.key for h in fresh.search(NS, query=OLD)]
        near = [h.key for h in fresh.nearest_keys(NS, OLD)]
        keyword = [h.key for h in fresh.hybrid_search(NS, query=OLD)]
        if item is None:
            assert found == near == keyword == [], n
        else:
            assert found == near == keyword == ["drink"], n


def test_a_shrinking_update_leaves_no_vector_that_scores(chroma_store_factory: Any) -> None:
    """Vector rows past the item's count, left by a crash, were max-pooled into its score."""
    make = lambda name: chroma_store_factory(name, index={**index(), "fields": ["parts[*]"]})  # noqa: E731

    def setup(store: Any) -> None:
        store.put(NS, "doc", {"parts": ["alpha one", "beta two", "gamma three"]})

    def shrink(store: Any) -> None:
        store.put(NS, "doc", {"parts": ["alpha one"]})

    total = _count_writes(make, setup, shrink)
    for n in range(1, total + 1):
        fresh = _faulted(make, f"s{n}", setup, shrink, n)
        parts = fresh.get(NS, "doc").value["parts"]
        hit = fresh.search(NS, query="gamma three")[0]
        best = max(cosine("gamma three", p) for p in parts)
        assert hit.score == pytest.approx(best, abs=1e-4), (n, parts)
        fresh.put(NS, "doc", {"parts": ["delta four"]})  # the next change removes its rows
        assert fresh.search(NS, query="delta four")[0].score == pytest.approx(1.0, abs=1e-4)
        assert fresh.search(NS, query="gamma three")[0].score == pytest.approx(
            cosine("gamma three", "delta four"), abs=1e-4
        )


def test_a_writer_dying_mid_update_is_seen_by_running_readers(
    chroma_store_factory: Any,
) -> None:
    """A writer that dies at the last write call of an update (the old vectors' delete):
    processes already running see the new row at once (the keyword channel reads the
    database; once, each process kept an index that a lost change marker left stale)."""

    def keyword_keys(store: Any, query: str) -> list[str]:
        found = store.explain_search(NS, query=query)
        return [e.item.key for e in found if e.channels.get("keyword", {}).get("rank")]

    reader = chroma_store_factory("shared", index=index())
    writer = chroma_store_factory("shared", index=index())
    two = ["text", "more"]  # a second text: its old row is deleted last
    writer.put(NS, "probe", {"text": "first words", "more": "x"}, index=two)
    writer.put(NS, "dying", {"text": "plain words", "more": "x"}, index=two)
    assert keyword_keys(reader, "zeppelin") == []
    counter = FaultyCaller(writer._call)
    writer._call = counter
    writer.put(NS, "probe", {"text": "second words", "more": "y"}, index=two)  # same shape
    assert counter.calls[-1] == "delete"
    assert keyword_keys(reader, "second") == ["probe"]
    writer._call = FaultyCaller(counter.inner, fail_at=len(counter.calls))
    with pytest.raises(InjectedFault):
        writer.put(NS, "dying", {"text": "a zeppelin over the bay", "more": "y"}, index=two)
    assert reader.get(NS, "dying").value == {"text": "a zeppelin over the bay", "more": "y"}
    assert keyword_keys(reader, "zeppelin") == ["dying"]
    assert keyword_keys(reader, "plain") == []


def test_delete_prefix_is_literal_and_reads_no_values(chroma_store_factory: Any) -> None:
    store = chroma_store_factory(index=index())
    for ns in [("users", "*"), ("users", "*", "notes"), ("users", "bob"), ("users", "**")]:
        store.put(ns, "k", {"text": f"in {ns}"})
    store.put(("users", "*"), "two", {"text": "a", "more": "b"}, index=["text", "more"])
    counter = FaultyCaller(store._call)
    store._call = counter
    assert store.delete_prefix(("users", "*")) == 3
    assert sorted(store.list_namespaces(prefix=("users",))) == [("users", "**"), ("users", "bob")]
    assert [h.key for h in store.search(("users",), query="in")] == ["k", "k"]
    assert counter.calls == ["delete", "delete"]  # item rows, later texts' rows
    assert store._vectors.get(include=[])["ids"] == []


def test_more_puts_in_one_batch_than_chroma_takes_in_one_call(chroma_store_factory: Any) -> None:
    store = chroma_store_factory()
    limit = store._max_batch
    from langgraph.store.base import PutOp

    ops = [PutOp(NS, f"k{i}", {"i": i}) for i in range(limit + 100)]
    store.batch(ops)
    assert store.get(NS, f"k{limit + 99}").value == {"i": limit + 99}
    assert len(store.search(NS, limit=limit + 200)) == limit + 100


# ----------------------------------------------------------------- 4. listing reads little


def test_a_listing_reads_about_what_it_returns(chroma_store_factory: Any) -> None:
    store = chroma_store_factory()
    from langgraph.store.base import PutOp

    t0 = store._clock()
    for start in range(0, 2000, 500):
        store._clock = lambda s=start: t0 + s  # each batch later than the one before
        store.batch([PutOp(NS, f"k{i:04d}", {"i": i}) for i in range(start, start + 500)])
    store._clock = lambda: t0 + 5000
    store.put(NS, "k0007", {"i": 7, "moved": True})  # an update moves to the front
    rows_read: list[int] = []
    inner = store._call

    def counting(fn: Any, *args: Any, **kwargs: Any) -> Any:
        out = inner(fn, *args, **kwargs)
        if fn.__name__ == "get" and kwargs.get("include") == ["documents"]:
            rows_read.append(len(out["ids"]))
        return out

    first = [i.key for i in store.search(NS, limit=10)]  # reads the prefix once
    assert first[0] == "k0007"
    store._call = counting
    for offset in (0, 10, 90):
        page = [i.key for i in store.search(NS, limit=10, offset=offset)]
        # a batch's items newest first in the batch's order (each has its own time)
        expected = ["k0007", *[f"k{i:04d}" for i in range(1999, 1499, -1)]]
        assert page == expected[offset : offset + 10]
    assert max(rows_read) <= 150  # a window of about the rows asked for, never 2,000
    store._clock = lambda: t0 + 6000
    store.put(NS, "k1234", {"i": 1234, "moved": True})  # a write since the hint
    assert [i.key for i in store.search(NS, limit=2)] == ["k1234", "k0007"]


# ----------------------------------------------------------------- 5. TTL races


def test_a_ttl_refresh_never_overwrites_the_expiry_of_a_later_put(
    chroma_store_factory: Any,
) -> None:
    store = chroma_store_factory(ttl={"default_ttl": 10.0, "refresh_on_read": True})
    store.put(NS, "k", {"v": 1})
    epoch = store._write_epoch
    row = store._get_items(ids=[layout.item_id(NS, "k")])
    store.put(NS, "k", {"v": 2}, ttl=1000.0)  # a put between the read and its refresh
    after_put = store._get_items(ids=[layout.item_id(NS, "k")])[layout.item_id(NS, "k")]["exp"]
    store._refresh_ttl(row, store._clock(), read_at=epoch)
    now = store._get_items(ids=[layout.item_id(NS, "k")])[layout.item_id(NS, "k")]
    assert now["exp"] == after_put
    assert json_value(now) == {"v": 2}


def test_a_put_racing_the_sweep_keeps_its_item(chroma_store_factory: Any) -> None:
    store = chroma_store_factory(ttl={"default_ttl": 1.0})
    store.put(NS, "k", {"v": 1})
    t0 = store._clock()
    store._clock = lambda: t0 + 120.0  # expired
    scan = store._scan_items

    def scan_then_put(*args: Any, **kwargs: Any) -> Any:
        rows = scan(*args, **kwargs)
        store.put(NS, "k", {"v": 2})  # lands between the sweep's scan and its delete
        return rows

    store._scan_items = scan_then_put
    assert store.sweep_ttl() == 0
    store._scan_items = scan
    assert store.get(NS, "k").value == {"v": 2}
    assert store.sweep_ttl() == 0  # nothing expired is left to report again


def json_value(meta: dict[str, Any]) -> Any:
    import json

    return json.loads(meta["v"])


def test_fake_cosine_helper_is_a_cosine() -> None:
    assert cosine(OLD, OLD) == pytest.approx(1.0)
    assert not math.isclose(cosine(OLD, NEW), 1.0)


def test_listing_pages_stay_exact_under_updates_deletes_and_expiry(
    chroma_store_factory: Any,
) -> None:
    """Hints go stale as other writes land; every page must still be the reference's (the
    model's update time of an item: the clock, then the order of the writes at that time)."""
    import itertools
    import random

    from langgraph.store.base import PutOp

    rng = random.Random(5)
    store = chroma_store_factory(ttl={"refresh_on_read": False})
    t = [1_000_000.0]
    store._clock = lambda: t[0]
    written = itertools.count()
    model: dict[str, tuple[float, int]] = {}
    for i in range(0, 360, 40):
        store.batch([PutOp(NS, f"k{j:03d}", {"j": j}) for j in range(i, i + 40)])
        model.update({f"k{j:03d}": (t[0], next(written)) for j in range(i, i + 40)})
        t[0] += 1
    for _ in range(12):
        for _ in range(rng.randint(1, 8)):
            k = f"k{rng.randrange(370):03d}"
            if rng.random() < 0.25:
                store.delete(NS, k)
                model.pop(k, None)
            else:
                expiring = rng.random() < 0.2
                store.put(NS, k, {"r": rng.random()}, ttl=0.01 if expiring else None)
                model[k] = (t[0], next(written))
                if expiring:
                    model[k] = (-1.0, 0)  # gone once the clock moves past its minute
        t[0] += 2
        model = {k: ua for k, ua in model.items() if ua[0] >= 0}
        live = sorted(model, key=lambda k: (-model[k][0], -model[k][1]))
        for offset in (0, 10, 30, 50, 90, 115, 200, 210, 300, 310):
            got = [i.key for i in store.search(NS, limit=10, offset=offset)]
            assert got == live[offset : offset + 10], (offset, len(live))


KILL_CHILD = """
import os
from faults import FaultyCaller
from langmem_edge import ChromaStore
from langmem_edge.testing import FakeEmbeddings

index = {"dims": 64, "embed": FakeEmbeddings(64), "fields": ["text"]}
store = ChromaStore.from_path(os.environ["FOLDER"], index=index)
ns = ("users", "alice")
store.put(ns, "drink", {"text": "likes green tea"})
store.put(ns, "gone", {"text": "to be deleted"})
store._call = FaultyCaller(store._call, fail_at=int(os.environ["FAIL_AT"]), mode="exit")
from langgraph.store.base import PutOp
store.batch([
    PutOp(ns, "drink", {"text": "prefers black coffee"}),
    PutOp(ns, "new", {"text": "a brand new fact"}),
    PutOp(ns, "gone", None),
])
print("finished")
"""


@pytest.mark.parametrize("fail_at", [1, 2, 3, 4, 5])
def test_a_writer_killed_at_any_call_leaves_a_state_a_fresh_process_reads_right(
    tmp_path: Any, fail_at: int
) -> None:
    """SIGKILL-like exits (os._exit, no cleanup) at each write call of a batch that updates,
    adds and deletes: a fresh store on the folder sees each item whole, old or new, and
    ranks it by the texts it holds."""
    folder = tmp_path / "store"
    child = run_child(KILL_CHILD, env={"FOLDER": str(folder), "FAIL_AT": str(fail_at)})
    if "finished" in child.stdout:
        assert child.returncode == 0  # the batch makes fewer write calls than fail_at
    else:
        assert child.returncode == EXIT_CODE, child.stderr[-2000:]
    from langmem_edge import ChromaStore

    with ChromaStore.from_path(str(folder), index=index()) as fresh:
        drink = fresh.get(NS, "drink").value["text"]
        assert drink in (OLD, NEW)
        new, gone = fresh.get(NS, "new"), fresh.get(NS, "gone")
        for query in (OLD, NEW):
            hit = next(h for h in fresh.search(NS, query=query) if h.key == "drink")
            assert hit.score == pytest.approx(cosine(query, drink), abs=1e-4)
        keys = {h.key for h in fresh.search(NS, query="fact deleted", limit=10)}
        assert ("new" in keys) == (new is not None)
        assert ("gone" in keys) == (gone is not None)
        hybrid = {e.item.key for e in fresh.explain_search(NS, query="brand new fact")}
        assert ("new" in hybrid) == (new is not None)
