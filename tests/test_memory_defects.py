"""Regression tests of issue 11's three defects (each failed before its fix).

Two ``AgentMemory`` objects over one store stand for two processes.
"""

# ruff: noqa: F811 - pytest fixtures imported from test_memory_support are redefined as parameters

from __future__ import annotations

import time
from typing import Any

import pytest
from langgraph.store.base import PutOp
from test_memory_support import embed, make_store, memory, store, texts  # noqa: F401 - fixtures

from langmem_edge.memory import AgentMemory
from langmem_edge.memory.transfer import list_sessions


def two(make_store: Any, **kw: Any) -> tuple[AgentMemory, AgentMemory, Any]:
    store = make_store(path="shared")
    other = make_store(path="shared")
    return AgentMemory(store, **kw), AgentMemory(other, **kw), store


def test_a_deleted_memory_never_comes_back_through_the_access_count_flush(
        make_store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, store = two(make_store)
    pa, pb = a.profile("p"), b.profile("p")
    rec = pa.remember("Builds model railways")
    pa.recall("model railways")  # a pending access bump in process a
    # process b deletes the memory while process a flushes: right after the flush's first
    # store call, its read of the profile (before the fix, the read of the record it would
    # write back), whichever read a store offers
    armed = [True]

    def deleting_after(original: Any) -> Any:
        def call(self: Any, ops: Any) -> Any:
            out = original(self, ops)
            if armed[0]:
                armed[0] = False
                assert pb.delete(rec.id)
            return out
        return call

    with monkeypatch.context() as patched:
        for name in ("batch", "batch_vectors"):
            if hasattr(type(store), name):
                patched.setattr(type(store), name, deleting_after(getattr(type(store), name)))
        a.flush()
    assert not armed[0]  # the delete did land during the flush
    fresh = AgentMemory(make_store(path="shared")).profile("p")  # a new process
    assert fresh.get(rec.id) is None
    assert fresh.list(status="all").memories == []
    assert fresh.recall("model railways").count == 0


def test_a_writer_whose_clock_is_behind_is_seen_by_running_readers(
        make_store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, _ = two(make_store)
    pa, pb = a.profile("p"), b.profile("p")
    pa.remember("First note")
    assert [m.text for m in pb.list().memories] == ["First note"]  # b is a running reader
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() - 70)  # a's clock is 70 s behind
    late = pa.remember("Sails a wooden boat", key="hobby.boat")
    monkeypatch.setattr(time, "time", real)
    assert [m.text for m in pb.list().memories] == ["First note", late.text]
    assert [m.id for m in pb.history("hobby.boat")] == [late.id]
    pa.remember("Third note")
    assert [m.text for m in pb.list().memories] == ["First note", late.text, "Third note"]


CONVERSATION = [
    {"role": "user", "content": "Hi, I live in Singapore and I prefer dark mode."},
    {"role": "assistant", "content": "Noted!"},
    {"role": "user", "content": "My sister is called Mia. Please always answer in French."},
]


def test_an_ingest_that_failed_after_storing_its_messages_extracts_on_reingest(
        memory: AgentMemory, monkeypatch: pytest.MonkeyPatch) -> None:
    cls = type(memory.store)
    original = cls.batch

    def failing(self: Any, ops: Any) -> Any:  # the store fails when memories are written
        if any(isinstance(op, PutOp) and op.namespace[-1] == "memories" for op in ops):
            raise RuntimeError("store down")
        return original(self, ops)

    def failing_new(self: Any, items: Any) -> Any:  # ChromaStore writes new records so
        raise RuntimeError("store down")

    p = memory.profile("p")
    monkeypatch.setattr(cls, "batch", failing)
    # no batch applied whole: the memories cannot ride in the messages' write
    monkeypatch.setattr(cls, "atomic_put_limit", 0, raising=False)
    if hasattr(cls, "put_new"):
        monkeypatch.setattr(cls, "put_new", failing_new)
    with pytest.raises(RuntimeError, match="store down"):
        p.ingest(CONVERSATION, session_id="s")
    monkeypatch.undo()
    assert p.list().memories == []
    assert len(p.episodic.messages("s")) == 3
    again = p.ingest(CONVERSATION, session_id="s")
    assert again.messages_added == 0
    assert again.memories_written
    assert {m.id for m in p.list().memories} == {m.id for m in again.memories_written}
    third = p.ingest(CONVERSATION, session_id="s")  # done now: nothing more to extract
    assert (third.messages_added, third.memories_written) == (0, [])


def test_an_ingests_memories_ride_in_its_messages_write(
        memory: AgentMemory, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a store that applies a batch whole, the extracted memories are written in the batch
    of the messages and the session record: a failure of it leaves nothing, and a good one
    needs no write of their own or confirmation after it."""
    cls = type(memory.store)
    if not getattr(memory.store, "atomic_put_limit", 0):
        pytest.skip("the store applies no batch whole: memories are written after messages")
    # a write is a batch, or on ChromaStore a put_new (the keys were read absent first)
    writers = [name for name in ("batch", "put_new") if hasattr(cls, name)]
    originals = {name: getattr(cls, name) for name in writers}
    batches: list[list[Any]] = []

    def puts(name: str, ops: Any) -> list[PutOp]:
        if name == "put_new":
            return [PutOp(ns, key, value, index=ix) for ns, key, value, ix in ops]
        return [op for op in ops if isinstance(op, PutOp)]

    def recorded(name: str) -> Any:
        def call(self: Any, ops: Any) -> Any:
            batches.append(puts(name, ops))
            return originals[name](self, ops)
        return call

    def failing(name: str) -> Any:
        def call(self: Any, ops: Any) -> Any:
            if any(op.namespace[-1] == "memories" for op in puts(name, ops)):
                raise RuntimeError("store down")
            return originals[name](self, ops)
        return call

    p = memory.profile("p")
    for name in writers:
        monkeypatch.setattr(cls, name, failing(name))
    with pytest.raises(RuntimeError, match="store down"):
        p.ingest(CONVERSATION, session_id="s")
    assert p.list().memories == [] and p.episodic.messages("s") == []
    for name in writers:
        monkeypatch.setattr(cls, name, recorded(name))
    done = p.ingest(CONVERSATION, session_id="s")
    monkeypatch.undo()
    assert done.messages_added == 3 and done.memories_written
    writes = [ops for ops in batches if ops]
    assert len(writes) == 1  # messages, session record and memories: one write
    kinds = {op.namespace[-1] if op.namespace[-2] != "messages" else "messages"
             for op in writes[0]}
    assert {"messages", "sessions", "memories"} <= kinds
    assert {m.id for m in p.list().memories} == {m.id for m in done.memories_written}
    (info,) = list_sessions(memory, "p")
    assert info.pending == 0  # the mark moved in the same write
    third = p.ingest(CONVERSATION, session_id="s")
    assert (third.messages_added, third.memories_written) == (0, [])


def test_an_ingest_whose_memory_supersedes_one_writes_it_after_its_messages(
        memory: AgentMemory) -> None:
    """A memory that supersedes a stored one by key rides in the messages' write and the
    store then marks the old one (``ChromaStore``), or is written by remember's path after
    the messages (other stores): either way the old one ends superseded, one stays active."""
    p = memory.profile("p")
    first = p.ingest([{"role": "user", "content": "My name is Ana."}], session_id="s1")
    second = p.ingest([{"role": "user", "content": "My name is Bea."}], session_id="s2")
    keyed = [m for m in (*first.memories_written, *second.memories_written) if m.key]
    if len(keyed) < 2:
        pytest.skip("the rules extracted no keyed memory from these messages")
    active = [m for m in p.list().memories if m.key == keyed[-1].key]
    assert [m.text for m in active] == [keyed[-1].text]
    assert p.get(keyed[0].id).status == "superseded"
    assert [s.pending for s in list_sessions(memory, "p")] == [0, 0]


async def test_an_async_ingests_memories_ride_in_its_messages_write(memory: AgentMemory) -> None:
    if not getattr(memory.store, "atomic_put_limit", 0):
        pytest.skip("the store applies no batch whole: memories are written after messages")
    p = memory.profile("p")
    done = await p.aingest(CONVERSATION, session_id="s")
    assert done.messages_added == 3 and done.memories_written
    assert {m.id for m in p.list().memories} == {m.id for m in done.memories_written}
    (info,) = list_sessions(memory, "p")
    assert (info.messages, info.pending) == (3, 0)
    again = await p.aingest(CONVERSATION, session_id="s")
    assert (again.messages_added, again.memories_written) == (0, [])
