"""The working tier (L1) through the Profile API, on InMemoryStore and ChromaStore."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

from langmem_edge import AgentMemory, ChromaStore
from langmem_edge.errors import InvalidInputError, InvalidNamespaceError, LimitExceededError
from langmem_edge.memory.config import WorkingConfig
from langmem_edge.testing import FakeEmbeddings


@pytest.fixture(params=["memory", "chroma", pytest.param("server", marks=pytest.mark.server)])
def memory(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[AgentMemory]:
    """InMemoryStore, ChromaStore on a folder, ChromaStore on the session's server."""
    index = {"dims": 64, "embed": FakeEmbeddings(64), "fields": ["text"]}
    if request.param == "memory":
        yield AgentMemory(InMemoryStore(index=index))
        return
    if request.param == "chroma":
        store = ChromaStore.from_path(str(tmp_path / "w"), index=index)
    else:
        url = request.getfixturevalue("chroma_server_url")
        store = ChromaStore.from_url(url, collection_prefix=f"w{uuid.uuid4().hex[:10]}",
                                     index=index)
    yield AgentMemory(store)
    store.close()


class Clock:
    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_config_defaults_are_the_design_numbers() -> None:
    cfg = WorkingConfig()
    assert (cfg.preview_chars, cfg.max_turn_rows) == (3000, 40)
    assert (cfg.resume_after_seconds, cfg.expire_after_seconds) == (45.0, 86400.0)


def test_notes_replace_append_clear(memory: AgentMemory) -> None:
    w = memory.profile("alice").working
    assert w.get_context("t1") == ""
    assert w.set_context("t1", "wants a PDF") == "wants a PDF"
    assert w.set_context("t1", "in A4", mode="append") == "wants a PDF\nin A4"
    assert memory.profile("alice").working.get_context("t1") == "wants a PDF\nin A4"
    assert w.get_context("t2") == "" and memory.profile("bob").working.get_context("t1") == ""
    assert w.set_context("t1", mode="clear") == "" and w.get_context("t1") == ""
    with pytest.raises(InvalidInputError, match="mode"):
        w.set_context("t1", "x", mode="prepend")  # type: ignore[arg-type]


def test_ongoing_task_set_get_clear(memory: AgentMemory) -> None:
    w = memory.profile("alice").working
    assert w.get_ongoing_task("t1") is None and not w.clear_ongoing_task("t1")
    w.set_ongoing_task("t1", "book a flight", steps=["search", "pay"])
    task = memory.profile("alice").working.get_ongoing_task("t1")
    assert task is not None and task.description == "book a flight"
    assert task.steps == ("search", "pay") and task.status == "in_progress"
    w.set_ongoing_task("t1", "book a flight", steps=["search", "pay"], status="blocked")
    assert w.get_ongoing_task("t1").status == "blocked"  # type: ignore[union-attr]
    assert memory.profile("bob").working.get_ongoing_task("t1") is None
    assert w.clear_ongoing_task("t1") and w.get_ongoing_task("t1") is None
    with pytest.raises(InvalidInputError, match="status"):
        w.set_ongoing_task("t1", "x", status="someday")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="steps"):
        w.set_ongoing_task("t1", "x", steps="not a list")


def test_turn_record_previews_resources_and_finish(memory: AgentMemory) -> None:
    clock = Clock()
    w = memory.profile("alice").working.with_clock(clock)
    assert w.unfinished_turn("t1") is None
    w.record_tool_call("t1", "c1", "browse", {"url": "x"}, "y" * 5000, ["browser:1"])
    clock.now += 10
    w.record_tool_call("t1", "c2", "open", {}, "ok", ["file:a", "browser:1"])
    turn = memory.profile("alice").working.with_clock(clock).unfinished_turn("t1")
    assert turn is not None and [r.call_id for r in turn.rows] == ["c1", "c2"]
    assert len(turn.rows[0].result_preview) == 3000 and turn.rows[0].truncated
    assert turn.rows[1].result_preview == "ok" and not turn.rows[1].truncated
    assert turn.open_resources == ("browser:1", "file:a")
    assert turn.rows[0].args == {"url": "x"}
    assert turn.touched_within(1) and not turn.stale
    clock.now += 46
    assert not turn.touched_within(45) and turn.stale
    assert memory.profile("bob").working.unfinished_turn("t1") is None
    assert w.unfinished_turn("t2") is None
    assert w.finish_turn("t1") == 2 and w.unfinished_turn("t1") is None


def test_a_turn_keeps_its_newest_40_rows(memory: AgentMemory) -> None:
    clock = Clock()
    w = memory.profile("alice").working.with_clock(clock)
    for i in range(45):
        clock.now += 1
        w.record_tool_call("t1", f"c{i:02d}", "step", {"i": i}, str(i))
    turn = w.unfinished_turn("t1")
    assert turn is not None and len(turn.rows) == 40
    assert turn.rows[0].call_id == "c05" and turn.rows[-1].call_id == "c44"


def test_concurrent_tool_calls_keep_every_row(memory: AgentMemory) -> None:
    w = memory.profile("alice").working
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def call(i: int) -> None:
        try:
            barrier.wait()
            w.record_tool_call("t1", f"call_{i}", "fetch", {"i": i}, f"result {i}")
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    turn = w.unfinished_turn("t1")
    assert turn is not None
    assert sorted(r.call_id for r in turn.rows) == [f"call_{i}" for i in range(8)]


async def test_concurrent_async_tool_calls_keep_every_row(memory: AgentMemory) -> None:
    w = memory.profile("alice").working
    await asyncio.gather(*(w.arecord_tool_call("t1", f"call_{i}", "fetch", {"i": i},
                                               f"result {i}", [f"job:{i % 3}"])
                           for i in range(8)),
                         *(w.aset_context("t1", f"line {i}", mode="append") for i in range(4)))
    turn = await w.aunfinished_turn("t1")
    assert turn is not None
    assert sorted(r.call_id for r in turn.rows) == [f"call_{i}" for i in range(8)]
    assert sorted(turn.open_resources) == ["job:0", "job:1", "job:2"]
    assert sorted((await w.aget_context("t1")).split("\n")) == [f"line {i}" for i in range(4)]


def test_turn_rows_expire_after_24_hours(memory: AgentMemory) -> None:
    clock = Clock()
    w = memory.profile("alice").working.with_clock(clock)
    w.record_tool_call("t1", "c1", "fetch", {}, "a")
    w.record_tool_call("t2", "c1", "fetch", {}, "b")
    clock.now += 23 * 3600
    assert w.unfinished_turn("t1") is not None
    clock.now += 3600
    assert w.unfinished_turn("t1") is None  # expired on read, and deleted
    assert w.sweep() == 1  # t2's row
    clock.now -= 24 * 3600  # even seen from the past, the rows are gone
    assert w.unfinished_turn("t1") is None and w.unfinished_turn("t2") is None


def test_store_ttl_is_set_where_the_store_has_it() -> None:
    seen: list[Any] = []

    class TTLStore(InMemoryStore):
        supports_ttl = True

        def batch(self, ops: Any) -> Any:
            ops = list(ops)
            seen.extend(ops)
            return super().batch(ops)

    AgentMemory(TTLStore()).profile("a").working.record_tool_call("t", "c", "n", {}, "r")
    puts = [op for op in seen if isinstance(op, PutOp) and op.value]
    assert puts and puts[0].ttl == 24 * 60  # minutes


@pytest.mark.parametrize("deleter", ["profile", "session"])
def test_delete_profile_and_delete_session_remove_working_memory(
        memory: AgentMemory, deleter: str) -> None:
    alice = memory.profile("alice")
    for thread in ("s1", "s2"):
        alice.working.set_context(thread, "notes")
        alice.working.set_ongoing_task(thread, "task")
        alice.working.record_tool_call(thread, "c1", "fetch", {}, "r")
    memory.profile("alice2").working.set_context("s1", "keep me")
    if deleter == "profile":
        memory.delete_profile("alice")
        gone, kept = ["s1", "s2"], []
    else:
        alice.delete_session("s1")
        gone, kept = ["s1"], ["s2"]
    for thread in gone:
        assert alice.working.get_context(thread) == ""
        assert alice.working.get_ongoing_task(thread) is None
        assert alice.working.unfinished_turn(thread) is None
    for thread in kept:
        assert alice.working.get_context(thread) == "notes"
        assert alice.working.unfinished_turn(thread) is not None
    assert memory.profile("alice2").working.get_context("s1") == "keep me"


@pytest.mark.parametrize("call", [
    lambda w: w.set_context("a.b", "x"),
    lambda w: w.set_context("a\x1fb", "x"),
    lambda w: w.record_tool_call("", "c", "n", {}, "r"),
])
def test_bad_thread_ids_are_refused(call: Callable[[Any], Any]) -> None:
    with pytest.raises(InvalidNamespaceError, match="thread_id"):
        call(AgentMemory(InMemoryStore()).profile("a").working)


def test_bad_turn_input_is_refused() -> None:
    w = AgentMemory(InMemoryStore()).profile("a").working
    with pytest.raises(InvalidInputError, match="call_id"):
        w.record_tool_call("t", "", "n", {}, "r")
    with pytest.raises(InvalidInputError, match="args"):
        w.record_tool_call("t", "c", "n", {"x": object()}, "r")
    with pytest.raises(InvalidInputError, match="open_resources"):
        w.record_tool_call("t", "c", "n", {}, "r", "job")  # type: ignore[arg-type]
    with pytest.raises(LimitExceededError, match="notes"):
        w.set_context("t", "x" * 10_001)
    assert w.unfinished_turn("t") is None


async def test_async_twins(memory: AgentMemory) -> None:
    w = memory.profile("alice").working
    assert await w.aset_context("t1", "n") == "n" and await w.aget_context("t1") == "n"
    await w.aset_ongoing_task("t1", "task", steps=["a"])
    assert (await w.aget_ongoing_task("t1")).steps == ("a",)  # type: ignore[union-attr]
    await w.arecord_tool_call("t1", "c1", "fetch", {}, "r")
    assert len((await w.aunfinished_turn("t1")).rows) == 1  # type: ignore[union-attr]
    assert await w.afinish_turn("t1") == 1 and await w.aunfinished_turn("t1") is None
    assert await w.aclear_ongoing_task("t1") and await w.asweep() == 0
    assert await w.adelete_thread("t1") == 1


def test_concurrent_appends_to_the_notes_keep_every_line(memory: AgentMemory) -> None:
    w = memory.profile("alice").working
    w.set_context("t1", "start")
    barrier = threading.Barrier(8)

    def append(i: int) -> None:
        barrier.wait()
        w.set_context("t1", f"line {i}", mode="append")

    threads = [threading.Thread(target=append, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = w.get_context("t1").split("\n")
    assert lines[0] == "start" and sorted(lines[1:]) == [f"line {i}" for i in range(8)]
    assert w.set_context("t1", "fresh") == "fresh" and w.get_context("t1") == "fresh"
    w.set_context("t1", "more", mode="append")
    assert w.set_context("t1", mode="clear") == "" and w.get_context("t1") == ""


class Batches:
    """Counts the store batches the tier runs, and the ops in each."""

    def __init__(self, memory: AgentMemory, monkeypatch: pytest.MonkeyPatch) -> None:
        self.ops: list[list[str]] = []
        kind = type(memory.store)  # some stores have __slots__: patch the class
        real, areal = kind.batch, kind.abatch

        self.nested = False  # an abatch that runs batch in a thread counts once

        def batch(store: Any, ops: Any) -> Any:
            ops = list(ops)
            if not self.nested:
                self.ops.append([type(op).__name__ for op in ops])
            return real(store, ops)

        async def abatch(store: Any, ops: Any) -> Any:
            ops = list(ops)
            self.ops.append([type(op).__name__ for op in ops])
            self.nested = True
            try:
                return await areal(store, ops)
            finally:
                self.nested = False

        monkeypatch.setattr(kind, "batch", batch)
        monkeypatch.setattr(kind, "abatch", abatch)


def test_thread_state_reads_notes_task_and_turn_in_one_search(
        memory: AgentMemory, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    w = memory.profile("alice").working.with_clock(clock)
    w.set_context("t1", "wants a PDF")
    w.set_context("t1", "in A4", mode="append")
    w.set_ongoing_task("t1", "book a flight", steps=["search", "pay"])
    w.record_tool_call("t1", "c1", "search", {"q": "LIS"}, "3 flights", ["browser:7"])
    memory.profile("bob").working.set_context("t1", "not alice's")
    counted = Batches(memory, monkeypatch)
    state = w.thread_state("t1")
    assert counted.ops == [["SearchOp"]]
    assert state.notes == "wants a PDF\nin A4" == w.get_context("t1")
    assert state.task == w.get_ongoing_task("t1") and state.task is not None
    assert state.task.steps == ("search", "pay")
    assert state.turn is not None and [r.call_id for r in state.turn.rows] == ["c1"]
    assert state.turn.open_resources == ("browser:7",)
    empty = memory.profile("carol").working.thread_state("t1")
    assert (empty.notes, empty.task, empty.turn) == ("", None, None)


async def test_athread_state_matches_and_cuts_the_turn_to_its_newest_rows(
        memory: AgentMemory, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    w = memory.profile("alice").working.with_clock(clock)
    counted = Batches(memory, monkeypatch)
    for i in range(42):
        clock.now += 1
        await w.arecord_tool_call("t1", f"c{i:02d}", "step", {"i": i}, str(i))
    assert counted.ops == [["PutOp"]] * 42  # one write a call, no read
    state = await w.athread_state("t1")
    assert state.turn is not None and len(state.turn.rows) == 40
    assert state.turn.rows[0].call_id == "c02"
    turn = await w.aunfinished_turn("t1")  # the two surplus rows were deleted on the read
    assert turn is not None and turn.rows == state.turn.rows
    assert await w.afinish_turn("t1") == 40


def test_finish_turn_with_the_record_seen_deletes_it_in_one_write(
        memory: AgentMemory, monkeypatch: pytest.MonkeyPatch) -> None:
    w = memory.profile("alice").working
    w.record_tool_call("t1", "c1", "search", {}, "ok")
    w.record_tool_call("t1", "c2", "fetch", {}, "ok")
    w.set_context("t1", "kept")
    seen = w.thread_state("t1").turn
    counted = Batches(memory, monkeypatch)
    assert w.finish_turn("t1", seen=seen) == 2
    assert counted.ops == [["PutOp", "PutOp"]]
    assert w.unfinished_turn("t1") is None and w.get_context("t1") == "kept"
    counted.ops.clear()
    assert w.finish_turn("t1", seen=None) == 0 and counted.ops == []
