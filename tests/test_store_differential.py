"""Differential, stateful property test: ChromaStore against InMemoryStore (the reference).

A hypothesis state machine puts (with ``index=False`` and per-put index lists), deletes,
gets, searches (with and without a query, with filters) and lists namespaces, in single
calls and in mixed batches, with adversarial labels, keys and values, on the reference and
on a ``ChromaStore`` (an embedded folder, and the test session's server). Both embed with the
same ``FakeEmbeddings``, so scores must agree too (within ``SCORE_TOL``).

Cost decides the shape: here a write batch takes ~20-60 ms (embedded; more on the server),
a read a few. So there is one ChromaStore per backend per test function, seeded once with a
shared data set (``h.fixture_batches``: three batches of adversarial items, updates and
deletes under the root ``fx``, mirrored in a shared reference), and each example either only
reads that data set (95 % of them) or writes and reads under a fresh root label of its own
(``r<n>``), with one seed batch and at most 4 steps. Those examples stay under their roots;
3 % of the examples run on a second store without roots (empty prefixes, listings of
everything), each deleting what it wrote when it ends and checking it starts empty. A fresh
store per example would add its opening (~0.3 s embedded, measured) to each.

Compared up to the orders the docs name: search without a query is newest-updated first on
ChromaStore (then namespace, then key), so the reference's items are put in that order from
which batch wrote each last; ranked search compares scores position by position and lets
tied items come in any order. Documented differences, expected as such:

- labels with control characters (U+0000-U+001F, U+007F): ChromaStore raises
  ``langmem_edge.errors.InvalidNamespaceError``; the op is applied to neither;
- values that are not JSON with ``allow_nan=False`` (NaN, infinities): ``InvalidInputError``
  and nothing of the batch written; applied to neither;
- ``created_at`` survives updates on ChromaStore (InMemoryStore resets it on every put):
  checked on ChromaStore alone, with ``updated_at`` moving exactly when the item is written;
- dotted filter keys (a ChromaStore extension) are not generated.

InMemoryStore quirks stepped around (``tests/differential_helpers.py``), each documented
nowhere::

    s = InMemoryStore(index={"dims": 32, "embed": FakeEmbeddings(32), "fields": ["text"]})
    s.put(("m",), "x", {"a": 1}); s.put(("m",), "y", {"n": 6})
    s.search(("m",), filter={"n": {"$gt": 5}})    # TypeError: float(None) (Chroma/Sqlite: [y])
    s.put(("v",), "x", {"text": "zebra"}); s.put(("v",), "x", {"other": 1})
    s.search(("v",), query="zebra")[0].score      # 1.0: the old text's vector survived
    s.get(("ghost",), "k"); s.list_namespaces()   # [("ghost",), ...]: only read, never written
    s.put(("d",), "x", {"text": "a b"}, index=["$"])  # "$" is a literal key here: no vector

Found on the code of issue 10 (each the first failure once the ones before it are left out
with ``LANGMEM_EDGE_DIFF_EXCLUDE``; all ChromaStore bugs, InMemoryStore being the reference):

- ``wide``: a filter on a field past a value's 64th leaf misses the item
  (``filters.MAX_FILTER_FIELDS``: the field is not mirrored, yet the filter is pushed down);
- ``empty_keys``: the same for a field under an empty-string key (``{"": 1}``, ``{"a": {"":
  1}}``): mirrored fields skip ``""`` keys, pushed-down filters do not;
- ``empty_item_key``: ``put(ns, "", value)`` (and a delete of key ``""``) raises
  ``InvalidInputError``; InMemoryStore and SqliteStore accept the key;
- ``huge_ints``: an int past float range (``10**400``) raises ``OverflowError`` from a put,
  and from a search whose filter holds one (InMemoryStore stores it; equality works);
- ``numeric_strings``: ``{"n": "inf"}`` (or ``"1e400"``) is missed by ``{"n": {"$gt": 5}}``
  (``float("inf") > 5``): the numeric mirror skips non-finite values, the pushdown does not;
- ``dollar_filter_keys``: a top-level ``$`` key in a filter (``{"$x": 1}``) raises
  ``InvalidInputError``; InMemoryStore matches it as a field name (SqliteStore refuses it).

Set ``LANGMEM_EDGE_LONG_PROPERTIES=1`` for the long profile (20,000 examples);
``LANGMEM_EDGE_DIFF_EXCLUDE`` leaves out features (see ``differential_helpers.EXCLUDE``).
"""

from __future__ import annotations

import itertools
import os
from typing import Any

import differential_helpers as h
import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    precondition,
    rule,
    run_state_machine_as_test,
)
from langgraph.store.base import GetOp, ListNamespacesOp, PutOp, SearchOp
from langgraph.store.base import InvalidNamespaceError as LanggraphNamespaceError

from langmem_edge import ChromaStore
from langmem_edge.errors import InvalidInputError

pytestmark = pytest.mark.slow  # randomized differential runs against InMemoryStore (over a minute)

settings.register_profile(
    "differential-ci",
    derandomize=True,
    database=None,
    deadline=None,
    stateful_step_count=4,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    phases=[Phase.explicit, Phase.generate],  # no shrinking in CI: see the docstring
    print_blob=True,
)
settings.register_profile(
    "differential-long",
    settings.get_profile("differential-ci"),
    stateful_step_count=20,
    phases=[Phase.explicit, Phase.generate, Phase.shrink],
)
LONG = os.environ.get("LANGMEM_EDGE_LONG_PROPERTIES") == "1"
PROFILE = settings.get_profile("differential-long" if LONG else "differential-ci")
EXAMPLES = {"chroma": 15_000, "server": 5_000} if LONG else {"chroma": 1_500, "server": 500}
"""Examples per backend: 2,000 in CI, 20,000 in the long profile."""

_roots = itertools.count()

READ_ONLY_PERCENT = 95
"""Share of the scoped examples that only read the shared data set (``h.fixture_batches``)
instead of writing their own: a write costs ~20-60 ms here, a read a few."""


class StoreMachine(RuleBasedStateMachine):
    """One example: the same random ops on the reference and on ``chroma``."""

    chroma: ChromaStore  # set on the class by the test function
    scoped: bool = True
    """Scoped: every op stays under the example's root (no empty prefix, listings under the
    root), and nothing is deleted at the end: later examples never look there. Unscoped:
    empty prefixes and listings of everything, and the example deletes what it wrote."""

    shared: h.Reference  # the reference of the shared data set under h.FIXTURE_ROOT

    def __init__(self) -> None:
        super().__init__()
        self.ref = h.Reference()
        self.root = f"r{next(_roots)}"
        self.readonly = False
        self.written: set[h.Name] = set()
        self.seen: dict[h.Name, tuple[Any, Any, int]] = {}  # created_at, updated_at, seq

    @initialize(data=st.data())
    def seed(self, data: st.DataObject) -> None:
        """Check that no earlier example left anything where this one looks, then write the
        first items in one batch (a write costs ~20 ms; reads a few ms)."""
        if not self.scoped:
            left = self.chroma.list_namespaces(limit=5)
            assert left == [], f"a previous example left namespaces behind: {h.shown(left)}"
        elif data.draw(st.integers(0, 99), label="reads_shared_data") < READ_ONLY_PERCENT:
            self.ref, self.root, self.readonly = self.shared, h.FIXTURE_ROOT, True
            return
        self.batch(data, reads=False)

    def teardown(self) -> None:
        names = list(self.written)
        if names and not self.scoped:
            self.chroma.batch([PutOp(ns, key, None) for ns, key in names])

    # -- drawing -----------------------------------------------------------------------------

    def namespace(self, data: st.DataObject) -> tuple[str, ...]:
        rest = data.draw(st.lists(h.labels, max_size=2), label="labels")
        return (self.root, *rest)

    def name(self, data: st.DataObject) -> h.Name:
        live = sorted(self.ref.seq)
        if live and data.draw(st.integers(0, 3), label="pick_live"):
            return data.draw(st.sampled_from(live), label="live_name")
        return self.namespace(data), data.draw(h.item_keys, label="key")

    def prefix(self, data: st.DataObject) -> tuple[str, ...]:
        live = sorted({ns for ns, _ in self.ref.seq})
        choice = data.draw(st.integers(0, 5), label="prefix_kind")
        if live and choice >= 2:
            ns = data.draw(st.sampled_from(live), label="prefix_of")
            return ns[: data.draw(st.integers(int(self.scoped), len(ns)), label="prefix_len")]
        if choice == 1:
            return () if not self.scoped else (self.root,)
        return self.namespace(data)

    def filter(self, data: st.DataObject) -> dict[str, Any] | None:
        kind = data.draw(st.integers(0, 4), label="filter_kind")
        if kind == 0:
            return None
        live = sorted(self.ref.seq)
        if kind >= 3 and live:
            item = self.ref.store.get(*data.draw(st.sampled_from(live), label="filter_from"))
            paths = [(p, v) for p, v in h.leaf_paths(item.value) if h.derivable(p)]
            if paths:
                path, leaf = data.draw(st.sampled_from(paths), label="filter_path")
                number = data.draw(h.numbers, label="filter_number")
                cond = data.draw(
                    st.sampled_from(
                        [
                            leaf,
                            {"$eq": leaf},
                            {"$ne": leaf},
                            {"$gte": leaf},
                            {"$lt": leaf},
                            {"$gt": number},
                            {"$lte": number},
                        ]  # fmt: skip
                    ),
                    label="filter_condition",
                )
                return h.filter_from(path, cond)
        return data.draw(h.random_filters, label="filter")

    # -- writes ------------------------------------------------------------------------------

    @precondition(lambda self: not self.readonly)
    @rule(data=st.data())
    def put(self, data: st.DataObject) -> None:
        ns, key = self.name(data)
        value = data.draw(h.values(), label="value")
        index = data.draw(st.sampled_from(h.INDEXES), label="index")
        if h.langgraph_refuses(ns):
            with pytest.raises(LanggraphNamespaceError):
                self.ref.store.put(ns, key, value, index=index)
            with pytest.raises(LanggraphNamespaceError):
                self.chroma.put(ns, key, value, index=index)
            return
        if h.chroma_refuses_value(value):
            with pytest.raises(InvalidInputError):
                self.chroma.put(ns, key, value, index=index)
            return
        self.written.add((ns, key))
        self.chroma.put(ns, key, value, index=index)
        self.ref.apply_puts([(ns, key, value, index)])

    @precondition(lambda self: not self.readonly)
    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        ns, key = self.name(data)
        if h.langgraph_refuses(ns):
            with pytest.raises(LanggraphNamespaceError):
                self.chroma.delete(ns, key)
            return
        self.chroma.delete(ns, key)
        self.ref.apply_puts([(ns, key, None, None)])
        self.seen.pop((ns, key), None)

    @rule(root=st.sampled_from([(), ("langgraph",), ("langgraph", "x")]))
    def put_refused_by_both(self, root: tuple[str, ...]) -> None:
        for store in (self.ref.store, self.chroma):
            with pytest.raises((LanggraphNamespaceError, ValueError)):
                store.put(root, "k", {"text": "cat"})

    @precondition(lambda self: not self.readonly)
    @rule(data=st.data())
    def batch(self, data: st.DataObject, reads: bool = True) -> None:
        """Puts, deletes and reads in one batch: reads see the state before its writes and
        the last write to a key wins; a refused value writes nothing of the batch."""
        puts = []
        for _ in range(data.draw(st.integers(1, 6), label="n_puts")):
            ns, key = self.name(data)
            if h.langgraph_refuses(ns):
                continue
            value = data.draw(st.one_of(h.values(), h.values(), st.none()), label="batch_value")
            puts.append((ns, key, value, data.draw(st.sampled_from(h.INDEXES), label="index")))
        n_gets = data.draw(st.integers(0, 2), label="n_gets") if reads else 0
        gets = [self.name(data) for _ in range(n_gets)]
        gets = [n for n in gets if not h.langgraph_refuses(n[0])]
        query = data.draw(st.one_of(st.none(), h.words), label="batch_query") if reads else None
        prefix = (self.root,)
        ops: list[Any] = [PutOp(ns, key, value, index=index) for ns, key, value, index in puts]
        ops[len(ops) // 2 : len(ops) // 2] = [GetOp(ns, key) for ns, key in gets]
        if reads:
            ops.append(SearchOp(prefix, None, h.EVERYTHING, 0, query))
        if not ops:
            return
        expected_gets = [self.ref.store.get(ns, key) for ns, key in gets]
        expected_search = self.ref.search_all(prefix, query, None)
        self.written.update((ns, key) for ns, key, _, _ in puts)
        last = {(ns, key): v for ns, key, v, _ in puts}  # the last write to a key wins
        if any(v is not None and h.chroma_refuses_value(v) for v in last.values()):
            with pytest.raises(InvalidInputError):
                self.chroma.batch(ops)
            return
        results = self.chroma.batch(ops)
        got_gets = [r for op, r in zip(ops, results, strict=True) if isinstance(op, GetOp)]
        for (ns, key), got, want in zip(gets, got_gets, expected_gets, strict=True):
            h.same_item(got, want, f"batch get {h.shown((ns, key))}")
        if reads:
            self._check_search(results[-1], expected_search, 0, h.EVERYTHING, query, "batch")
        assert all(r is None for op, r in zip(ops, results, strict=True) if isinstance(op, PutOp))
        self.ref.apply_puts(puts)
        for ns, key, _, _ in puts:
            if (ns, key) not in self.ref.seq:
                self.seen.pop((ns, key), None)

    # -- reads -------------------------------------------------------------------------------

    @rule(data=st.data())
    def get(self, data: st.DataObject) -> None:
        ns, key = self.name(data)
        if h.langgraph_refuses(ns):
            with pytest.raises(LanggraphNamespaceError):
                self.chroma.get(ns, key)
            return
        got = self.chroma.get(ns, key)
        h.same_item(got, self.ref.store.get(ns, key), f"get {h.shown((ns, key))}")
        if got is not None:
            self._check_timestamps((ns, key), got)

    def _check_timestamps(self, name: h.Name, item: Any) -> None:
        seq = self.ref.seq[name]
        assert item.created_at <= item.updated_at, f"{h.shown(name)}: created after updated"
        if name in self.seen:
            created, updated, seen_seq = self.seen[name]
            assert item.created_at == created, f"{h.shown(name)}: created_at moved on update"
            if seq == seen_seq:
                assert item.updated_at == updated, f"{h.shown(name)}: updated_at moved"
            else:
                assert item.updated_at > updated, f"{h.shown(name)}: updated_at did not move"
        self.seen[name] = (item.created_at, item.updated_at, seq)

    @rule(data=st.data())
    def search(self, data: st.DataObject) -> None:
        query = data.draw(
            st.one_of(st.none(), st.just(""), h.words, h.words, h.strings), label="query"
        )
        self._search(data, query)

    @rule(data=st.data())
    def search_ranked(self, data: st.DataObject) -> None:
        self._search(data, data.draw(h.words, label="query"))

    def _search(self, data: st.DataObject, query: str | None) -> None:
        prefix = self.prefix(data)
        filter = self.filter(data)
        limit = data.draw(st.one_of(st.just(h.EVERYTHING), st.integers(0, 6)), label="limit")
        offset = data.draw(st.one_of(st.just(0), st.integers(0, 4)), label="offset")
        what = f"search {h.shown((prefix, query, filter, limit, offset), 400)}"
        if h.langgraph_refuses(prefix):
            with pytest.raises(LanggraphNamespaceError):
                self.chroma.search(prefix, query=query, filter=filter, limit=limit, offset=offset)
            return
        full = self.ref.search_all(prefix, query, filter)
        got = self.chroma.search(prefix, query=query, filter=filter, limit=limit, offset=offset)
        self._check_search(got, full, offset, limit, query, what)

    def _check_search(
        self, got: list[Any], full: list[Any], offset: int, limit: int, query: Any, what: str
    ) -> None:
        if query:
            h.compare_ranked(got, full, self.ref, offset, limit, what)
        else:
            expected = self.ref.newest_first(full)[offset : offset + limit]
            h.compare_unranked(got, expected, what)

    @rule(data=st.data())
    def list_namespaces(self, data: st.DataObject) -> None:
        live = sorted({ns for ns, _ in self.ref.seq}) or [(self.root,)]

        def path(label: str) -> tuple[str, ...] | None:
            if not data.draw(st.booleans(), label=f"has_{label}"):
                return None
            if data.draw(st.integers(0, 4), label=f"{label}_random") == 0:
                return tuple(data.draw(st.lists(h.labels, min_size=1, max_size=3)))
            ns = data.draw(st.sampled_from(live), label=f"{label}_of")
            n = data.draw(st.integers(1, len(ns)), label=f"{label}_len")
            cut = ns[:n] if label == "prefix" else ns[-n:]
            stars = data.draw(st.lists(st.booleans(), min_size=n, max_size=n), label="stars")
            return tuple("*" if s else x for s, x in zip(stars, cut, strict=True))

        prefix, suffix = path("prefix"), path("suffix")
        if self.scoped:  # other examples' namespaces are in the store: stay under the root
            prefix = (self.root, *(prefix or ("*",))[1:])
        max_depth = data.draw(st.one_of(st.none(), st.integers(1, 4)), label="max_depth")
        limit = data.draw(st.one_of(st.just(100), st.integers(1, 4)), label="list_limit")
        offset = data.draw(st.one_of(st.just(0), st.integers(0, 3)), label="list_offset")
        kwargs = dict(prefix=prefix, suffix=suffix, max_depth=max_depth, limit=limit, offset=offset)
        labels = (prefix or ()) + (suffix or ())
        if h.langgraph_refuses(labels):
            with pytest.raises(LanggraphNamespaceError):
                self.chroma.list_namespaces(**kwargs)
            return
        op = ListNamespacesOp(h.match_conditions(prefix, suffix), max_depth, limit, offset)
        expected = self.ref.list_namespaces(op)
        got = self.chroma.list_namespaces(**kwargs)
        assert got == expected, (
            f"list_namespaces {h.shown(kwargs, 400)}: got {h.shown(got, 600)}, "
            f"expected {h.shown(expected, 600)}"
        )


def test_differential(chroma_store_factory: Any, request: pytest.FixtureRequest) -> None:
    """2,000 examples in CI: 1,500 on an embedded folder, 500 on the session's server (97 %
    of them under a root, most of those reading the shared data set; 3 % unscoped)."""
    backend = request.node.callspec.params["chroma_store_factory"]
    shared = h.Reference()
    for scoped, share in ((True, 0.97), (False, 0.03)):
        store = chroma_store_factory(f"differential-{scoped}", index=h.make_index())
        if scoped:
            for puts in h.fixture_batches():
                store.batch([PutOp(ns, key, value, index=index) for ns, key, value, index in puts])
                shared.apply_puts(puts)
        attrs = {"chroma": store, "scoped": scoped, "shared": shared}
        machine = type("Machine", (StoreMachine,), attrs)
        examples = max(1, round(EXAMPLES[backend] * share))
        run_state_machine_as_test(machine, settings=settings(PROFILE, max_examples=examples))
