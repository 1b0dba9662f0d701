"""The episodic tier's message writes on the writer id + sequence change protocol
(``memory/episodic/writes.py``, ``docs/architecture.md``): a running reader in another
process-view sees every message write at its first recall after it, reading only what the
log names, with no clock; a writer that dies mid-write is seen too; old stores are read
whole once; an ingest costs the batches it cost before."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest
from episodic_helpers import BACKENDS, Plain, store_fixture
from langgraph.store.base import BaseStore, Op, PutOp, Result, SearchOp
from test_episodic_hybrid_recall import TALK

from langmem_edge.memory import AgentMemory
from langmem_edge.memory.transfer import export_jsonl, import_jsonl

ROOT = ("langmem_edge", "profiles", "alice")
MORE = [
    {"role": "user", "content": "The lake was freezing but the camping was great"},
    {"role": "assistant", "content": "Next time bring the pottery to the mountains"},
]
QUERIES = ["where did Mel go camping?", "pottery class", "freezing lake", "Caro May 2023"]
SCAN = {"episodic": {"recall_index": False}}


class Killed(Exception):
    """The simulated death of a writer."""


class View(BaseStore):
    """Another process's view of the same store: its own object (so its own per-process
    caches and writers), counting its batches and its listings (searches without a query),
    and optionally running ``during`` in the middle of its next batch that writes messages,
    then dying (raising) at the batch after that one."""

    atomic_put_limit = 0
    """It can split a batch (``during``), so it promises no batch is applied whole: message
    writes take the three-batch protocol here, on every backend."""

    def __init__(self, inner: BaseStore) -> None:
        self.inner = inner
        self.batches: list[list[Op]] = []
        self.listed: list[tuple[str, ...]] = []
        self.during: Callable[[], None] | None = None
        self._dying = False

    def __getattr__(self, name: str) -> Any:  # index_config, nearest_keys, ...
        return getattr(self.inner, name)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        self.batches.append(ops)
        self.listed += [op.namespace_prefix for op in ops
                        if isinstance(op, SearchOp) and op.query is None]
        if self._dying:
            self._dying = False
            raise Killed("the writer died before this batch")
        if self.during is not None and any(
                isinstance(op, PutOp) and "messages" in op.namespace and op.value is not None
                for op in ops):
            during, self.during, self._dying = self.during, None, True
            head = self.inner.batch(ops[:1])  # half of the write is in the store
            during()
            return [*head, *self.inner.batch(ops[1:])]
        return self.inner.batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return self.batch(ops)


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[BaseStore]:
    yield from store_fixture(request, tmp_path)


def _views(store: BaseStore) -> tuple[View, View, AgentMemory, AgentMemory, AgentMemory]:
    """Writer and reader views, their AgentMemory objects, and a reference that scans every
    message at every recall (no per-process index)."""
    wv, rv = View(store), View(store)
    return wv, rv, AgentMemory(wv), AgentMemory(rv), AgentMemory(View(Plain(store)), config=SCAN)


def _exact(reader: AgentMemory, reference: AgentMemory) -> None:
    """The reader's recall ranks and scores as a scan of every message does."""
    for q in QUERIES:
        got = reader.profile("alice").episodic.search(q, limit=8, scope="all")
        want = reference.profile("alice").episodic.search(q, limit=8, scope="all")
        assert [(m.id, m.score) for m in got] == [(m.id, m.score) for m in want], q


def _no_listing(view: View) -> None:
    """The view did not list the session records (it read the log and records by key)."""
    assert (*ROOT, "sessions") not in view.listed


def test_a_second_view_sees_a_write_at_its_first_recall_after_it(store: BaseStore) -> None:
    _, rv, writer, reader, reference = _views(store)
    writer.profile("alice").ingest(TALK, session_id="s1")
    writer.profile("alice").ingest(TALK[:3], session_id="s2")
    _exact(reader, reference)
    rv.listed.clear()
    writer.profile("alice").ingest(MORE, session_id="s2")
    _exact(reader, reference)
    _no_listing(rv)
    assert rv.listed[0] == (*ROOT, "meta")  # the generation and the markers


def test_a_writer_killed_mid_write_is_seen_at_the_next_recall(store: BaseStore) -> None:
    wv, rv, writer, reader, reference = _views(store)
    writer.profile("alice").ingest(TALK, session_id="s1")
    _exact(reader, reference)
    # the reader recalls while the write is half in the store; the writer then dies
    # before it settles its marker
    wv.during = lambda: reader.profile("alice").episodic.search("freezing", scope="all")
    with contextlib.suppress(Killed):
        writer.profile("alice").ingest(MORE, session_id="s1")
    assert wv.during is None  # the reader did recall in the middle
    rv.listed.clear()
    _exact(reader, reference)  # no clock advanced
    _no_listing(rv)
    (marker,) = store.search((*ROOT, "meta", "message-writers"), limit=10)
    assert marker.value["settled"] is False  # until a pruner settles it
    _exact(reader, reference)  # and again: its entries are re-read at every recall


def test_an_old_store_without_markers_is_read_whole_then_followed(store: BaseStore) -> None:
    wv, rv, writer, reader, reference = _views(store)
    writer.profile("alice").ingest(TALK, session_id="s1")
    writer.profile("alice").ingest(TALK[:2], session_id="s2")
    for prefix in ((*ROOT, "meta", "message-writers"), (*ROOT, "message-changes")):
        for it in store.search(prefix, limit=100):
            store.delete(tuple(it.namespace), it.key)  # as a library from before the log
    assert store.search((*ROOT, "meta", "message-writers"), limit=10) == []
    _exact(reader, reference)  # its first recall lists every session record
    assert (*ROOT, "sessions") in rv.listed
    rv.listed.clear()
    writer.profile("alice").ingest(MORE, session_id="s2")
    _exact(reader, reference)
    _no_listing(rv)


def test_deletions_and_imports_are_seen_by_a_running_reader(
        store: BaseStore, tmp_path: Any) -> None:
    _, rv, writer, reader, reference = _views(store)
    alice = writer.profile("alice")
    alice.ingest(TALK, session_id="s1")
    alice.ingest(MORE, session_id="s2")
    _exact(reader, reference)
    (gone,) = [m for m in alice.episodic.messages("s1") if m.content.startswith("Up in")]
    rv.listed.clear()
    alice._episodic().delete_messages("s1", [gone.id])
    _exact(reader, reference)
    _no_listing(rv)
    alice.delete_session("s2")
    _exact(reader, reference)
    _no_listing(rv)
    assert not [m for q in QUERIES for m in reader.profile("alice").episodic.search(
        q, scope="all") if m.session_id == "s2" or m.id == gone.id]
    # an export of another profile's sessions, imported into alice's by the writer
    source = AgentMemory(View(store), namespace=("elsewhere",))
    source.profile("alice").ingest(MORE, session_id="s3")
    export_jsonl(source, tmp_path / "out.jsonl")
    import_jsonl(writer, tmp_path / "out.jsonl")
    _exact(reader, reference)
    _no_listing(rv)
    assert any(m.session_id == "s3" for m in reader.profile("alice").episodic.search(
        "freezing lake", scope="all"))


def test_an_ingest_costs_the_batches_it_cost_before(store: BaseStore) -> None:
    """Today's ingest: the read of the session record and of the messages' ids, the write,
    and one batch after it (it carried the old mark; now the settled marker)."""
    wv, _, writer, _, _ = _views(store)
    tier = writer.profile("alice")._episodic()
    for session, talk in (("s1", TALK), ("s1", MORE), ("s2", TALK[:3])):
        wv.batches.clear()
        tier.add_messages(talk, session)
        assert len(wv.batches) == 3, session
        first, write, last = wv.batches
        assert [op.value["settled"] for op in first if isinstance(op, PutOp)] == [False]
        assert any(isinstance(op, PutOp) and op.namespace[:-1] == (*ROOT, "message-changes")
                   for op in write)
        assert [op.value["settled"] for op in last] == [True]
    wv.batches.clear()
    tier.add_messages(MORE, "s1")  # nothing new: the read, and the marker settled
    assert len(wv.batches) == 2


def test_an_ingest_that_extracts_nothing_moves_the_mark_in_its_write(
        store: BaseStore) -> None:
    """A turn the extraction finds nothing in leaves no memory to wait for: the session's
    extraction mark moves in the messages' write, and no confirming write follows (a turn
    with memories still confirms after writing them: tests/test_memory_defects.py)."""
    wv, _, writer, _, _ = _views(store)
    profile = writer.profile("alice")
    chatter = [{"role": "user", "content": "hello there"},
               {"role": "assistant", "content": "hi, how can I help?"}]
    assert profile.ingest(chatter, session_id="s9").memories_written == []
    wv.batches.clear()
    more = [{"role": "user", "content": "just saying hi again"},
            {"role": "assistant", "content": "hi again!"}]
    assert profile.ingest(more, session_id="s9").memories_written == []
    records = [op.value for b in wv.batches for op in b
               if isinstance(op, PutOp) and op.namespace == (*ROOT, "sessions")]
    assert len(records) == 1  # with the messages, not after them
    assert records[0]["extracted_to"] == records[0]["next_seq"] == 4
    assert profile.ingest(more, session_id="s9").messages_added == 0


def test_a_deleted_profile_is_seen_by_a_running_reader(store: BaseStore) -> None:
    _, _, writer, reader, reference = _views(store)
    writer.profile("alice").ingest(TALK, session_id="s1")
    _exact(reader, reference)
    writer.delete_profile("alice")
    assert reader.profile("alice").episodic.search("pottery", scope="all") == []
    writer.profile("alice").ingest(MORE, session_id="s1")  # made again
    _exact(reader, reference)


def test_a_pruning_writer_settles_a_dead_writers_marker(
        store: BaseStore, monkeypatch: pytest.MonkeyPatch) -> None:
    from langmem_edge.memory.config import IndexCacheConfig
    from langmem_edge.memory.episodic import writes

    wv, rv, writer, reader, reference = _views(store)
    writer.profile("alice").ingest(TALK, session_id="s1")
    _exact(reader, reference)
    wv.during = lambda: None  # die before settling
    with contextlib.suppress(Killed):
        writer.profile("alice").ingest(MORE, session_id="s1")
    (dead,) = [m for m in store.search((*ROOT, "meta", "message-writers"), limit=10)
               if not m.value["settled"]]
    # another process prunes at its next write (settle and prune ages made tiny)
    monkeypatch.setattr(writes, "LOG_CONFIG", IndexCacheConfig(
        settle_after_seconds=1e-6, prune_interval_seconds=1e-6))
    other = AgentMemory(View(store))
    other.profile("alice").ingest(TALK[:2], session_id="s2")
    markers = {m.key: m.value for m in store.search((*ROOT, "meta", "message-writers"), limit=10)}
    assert markers[dead.key]["settled"] is True and markers[dead.key]["seq"] == (
        dead.value["seq"])
    rv.listed.clear()
    _exact(reader, reference)
    _no_listing(rv)
    rv.listed.clear()  # settled and applied: its entries are no longer read
    reader.profile("alice").episodic.search("pottery", scope="all")
    assert rv.listed == [(*ROOT, "meta")]
