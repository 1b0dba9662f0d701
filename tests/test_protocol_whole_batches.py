"""The change protocol on a store that applies a batch of puts whole (``ChromaStore``,
``memory/core/stores.py`` ``atomic_put_limit``): a write of puts alone is one batch, its rows,
entry and settled marker together; a running reader sees it at its next read; a write that
fails at any Chroma call is seen whole or not at all, by running readers and fresh ones alike.
The three-batch protocol keeps its own tests (``test_episodic_protocol.py``,
``test_memory_index.py``: their wrappers promise nothing)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from faults import FaultyCaller, InjectedFault
from langgraph.store.base import BaseStore, Op, PutOp, Result
from test_episodic_hybrid_recall import TALK

from langmem_edge import ChromaStore
from langmem_edge.memory import AgentMemory
from langmem_edge.memory.core.stores import atomic_put_limit
from langmem_edge.testing import FakeEmbeddings

DIMS = 32
MORE = [{"role": "user", "content": "The lake was freezing but the camping was great"},
        {"role": "assistant", "content": "Next time bring the pottery to the mountains"}]


class Counted(BaseStore):
    """Forwards to a store, promising what it promises, and keeps every batch."""

    def __init__(self, inner: ChromaStore) -> None:
        self.inner = inner
        self.index_config = inner.index_config
        self.atomic_put_limit = inner.atomic_put_limit
        self.batches: list[list[Op]] = []

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        self.batches.append(list(ops))
        return self.inner.batch(self.batches[-1])

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return self.batch(ops)

    def markers(self) -> list[dict[str, Any]]:
        """Every marker put, in order."""
        return [op.value for b in self.batches for op in b
                if isinstance(op, PutOp) and op.value is not None and "settled" in op.value]


@pytest.fixture
def open_store(chroma_store_factory: Any) -> Callable[[str], ChromaStore]:
    def open_(name: str = "a") -> ChromaStore:
        index = {"dims": DIMS, "embed": FakeEmbeddings(DIMS), "fields": ["text"]}
        return chroma_store_factory(name, index=index)

    return open_


def test_chroma_store_promises_whole_batches(open_store: Any) -> None:
    assert atomic_put_limit(open_store()) == 2_000
    assert atomic_put_limit(BaseStore.__new__(Counted)) == 0  # nothing until it says so


def test_an_ingest_and_a_remember_are_one_write_batch_each(open_store: Any) -> None:
    store = Counted(open_store())
    alice = AgentMemory(store).profile("alice")
    alice.ingest(TALK, session_id="s1")
    store.batches.clear()
    alice.ingest(MORE, session_id="s1")
    writes = [b for b in store.batches if any(isinstance(op, PutOp) for op in b)]
    assert len(writes) == 1  # the messages, the session record, the entry, the marker
    assert [m["settled"] for m in store.markers()] == [True]
    store.batches.clear()
    alice.remember("Prefers window seats", key="preference.seat")
    writes = [b for b in store.batches if any(isinstance(op, PutOp) for op in b)]
    assert len(writes) == 1 and [m["settled"] for m in store.markers()] == [True]
    assert any(m.session_id == "s1" for m in alice.recall_conversation("freezing lake"))
    assert alice.recall("window seat").answer == "Prefers window seats"


def _views(open_store: Any, name: str) -> tuple[ChromaStore, AgentMemory, AgentMemory]:
    """A writer's store, and a reader's memory that has read the profile, each its own
    store object on the same data (another process's view)."""
    writer_store = open_store(name)
    writer = AgentMemory(writer_store)
    writer.profile("alice").ingest(TALK, session_id="s1")
    writer.profile("alice").remember("Lives in Lisbon", key="home")
    reader = AgentMemory(open_store(name))
    reader.profile("alice").recall_conversation("camping", scope="all")
    reader.profile("alice").recall("where does alice live?")
    return writer_store, writer, reader


def _seen(memory: AgentMemory) -> tuple[list[str], list[str]]:
    """What a memory shows of alice: the messages recall finds, the memories it recalls."""
    alice = memory.profile("alice")
    messages = sorted(m.id for m in alice.recall_conversation(
        "freezing lake camping pottery mountains", scope="all", limit=50))
    memories = sorted(c.text for c in alice.recall("where does alice live now?").candidates)
    return messages, memories


@pytest.mark.parametrize("what", ["ingest", "remember"])
def test_a_write_failing_at_any_chroma_call_is_seen_whole_or_not_at_all(
        open_store: Any, what: str) -> None:
    """Each Chroma write call of the write fails in turn (``remember`` answers a failed
    embedded write by storing the memory as pending, so it may not raise)."""
    def write(memory: AgentMemory) -> None:
        if what == "ingest":
            memory.profile("alice").ingest(MORE, session_id="s1")
        else:
            memory.profile("alice").remember("Moved to Porto", key="home")

    store, writer, _ = _views(open_store, "count")
    counter = FaultyCaller(store._call)
    store._call = counter
    write(writer)
    calls = counter.count
    assert calls >= 2
    for n in range(1, calls + 1):
        store, writer, reader = _views(open_store, f"{what}{n}")
        store._call = FaultyCaller(store._call, fail_at=n)
        with contextlib.suppress(InjectedFault):
            write(writer)
        fresh = AgentMemory(open_store(f"{what}{n}"))
        assert _seen(reader) == _seen(fresh), n  # the running reader misses nothing
        alice = fresh.profile("alice")
        if what == "ingest":  # every message of the write, or none
            assert len(alice.messages("s1")) in (len(TALK), len(TALK) + len(MORE)), n
        else:  # one active memory under the key, its chain whole
            chain = alice.history("home")
            assert [m.status for m in chain].count("active") == 1, n
