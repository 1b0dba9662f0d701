"""Turn resume through ``create_agent`` + ``TurnResumeMiddleware`` with a scripted model: on
InMemoryStore + InMemorySaver and ChromaStore + ChromaSaver (a folder, a server), sync and
async, and a crash test with real processes (a child SIGKILLed inside a tool round).

The three tools of ``resume_child`` count their calls in files; "not re-run" is read there.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ExtendedModelResponse, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import ToolException, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command
from resume_child import (
    BLOCKED,
    CONFIG,
    CONTEXT,
    PROFILE,
    THREAD,
    Crash,
    build_agent,
    calls_of,
    first_round,
    keys_of,
    make_tools,
    open_backend,
)
from test_tools import backend as tools_backend

from langmem_edge import AgentMemory
from langmem_edge.errors import (
    ConfigurationError,
    InvalidInputError,
    TurnInProgressError,
    UnsupportedDurabilityError,
)
from langmem_edge.graphs.resume import (
    NOT_COMPLETED_TEMPLATE,
    TurnResume,
    TurnResumeMiddleware,
    TurnResumeState,
    _with_update,
    dangling_tool_calls,
    idempotency_key,
    run_identity,
    tool_idempotency_key,
)
from langmem_edge.testing import ScriptedChatModel
from langmem_edge.tools import MemoryContext

TOOLS = ("lookup_weather", "open_booking", "write_report")
LATER = 46.0
"""Seconds after the crash the next message arrives: past the 45 s of a running turn."""
CHILD = Path(__file__).with_name("resume_child.py")
CHILD_START_SECONDS = 120.0
"""How long the crash test waits for the child to block inside its tool round."""


backend = tools_backend
"""The fixture of (AgentMemory, checkpointer) backends, shared with ``test_tools``."""


def unpack(backend: tuple[AgentMemory, Any]) -> tuple[Any, Any]:
    """(store, checkpointer) of ``test_tools``'s ``backend`` fixture: InMemoryStore +
    InMemorySaver, or ChromaStore + ChromaSaver on folders or on the session's server."""
    memory, saver = backend
    return memory.store, saver


class Clock:
    """A settable clock: real time plus an offset."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


def working(store: Any) -> Any:
    return AgentMemory(store).profile(PROFILE).working


def counts(counters: Path) -> dict[str, int]:
    return {name: calls_of(counters, name) for name in TOOLS}


def assert_answered(messages: list[Any]) -> None:
    """No tool call is unanswered, and every answer directly follows its AIMessage's group."""
    assert dangling_tool_calls(messages) == []
    for i, m in enumerate(messages):
        if isinstance(m, AIMessage) and m.tool_calls:
            ids = [c["id"] for c in m.tool_calls]
            group = messages[i + 1: i + 1 + len(ids)]
            assert [t.tool_call_id for t in group if isinstance(t, ToolMessage)] == ids


def assert_resumed(out: dict[str, Any], model: ScriptedChatModel, *,
                   replayed: set[str]) -> None:
    """The resumed turn: the model saw the replayed results and a "did not complete" for the
    report, the open booking was named, the history has no unanswered call."""
    seen = {m.tool_call_id: m for m in model.calls[0] if isinstance(m, ToolMessage)}
    assert set(seen) == {"call_weather", "call_booking", "call_report"}
    assert seen["call_weather"].content == "Sunny in Lisbon, 24 C"
    assert seen["call_booking"].content.startswith("Booking 42 opened for 2")
    resumed = {i for i, m in seen.items() if (m.artifact or {}).get("resumed")}
    assert resumed == {*replayed, "call_report"}  # answered by the resume, not re-run
    report = seen["call_report"]
    assert report.status == "error"
    assert report.content.startswith(NOT_COMPLETED_TEMPLATE.format(name="write_report"))
    assert "booking:42" in seen["call_report"].content  # the open resource, to reuse
    assert isinstance(model.calls[0][-1], HumanMessage)
    assert model.calls[0][-1].content == "Anything else?"
    assert out["messages"][-1].content == "All set"
    assert_answered(out["messages"])


# -- in process: a crash stands in as a BaseException from the third tool -------------------------


def crash_first_turn(store: Any, saver: Any, counters: Path) -> None:
    """Turn 1: the model calls the three tools; the third raises Crash after the two others
    finished (their results are in the turn record)."""
    model = ScriptedChatModel(responses=[first_round(), "never reached"])
    agent = build_agent(store, saver, model, counters, block=False)
    with pytest.raises(Crash):
        agent.invoke({"messages": [("user", "Plan my trip")]}, CONFIG, context=CONTEXT)


def test_tool_calls_are_recorded_as_they_finish(backend: tuple[AgentMemory, Any],
                                                tmp_path: Path) -> None:
    store, saver = unpack(backend)
    crash_first_turn(store, saver, tmp_path)
    turn = working(store).unfinished_turn(THREAD)
    assert turn is not None and not turn.stale
    rows = {r.call_id: r for r in turn.rows}
    assert set(rows) == {"call_weather", "call_booking"}
    assert (rows["call_weather"].name, rows["call_weather"].args,
            rows["call_weather"].result_preview) == (
        "lookup_weather", {"city": "Lisbon"}, "Sunny in Lisbon, 24 C")
    assert rows["call_booking"].open_resources == ("booking:42",)
    assert turn.open_resources == ("booking:42",)
    # each tool got its idempotency key through its runtime: distinct per call
    keys = [k for name in TOOLS for k in keys_of(tmp_path, name)]
    assert len(keys) == 3 and len(set(keys)) == 3 and all(len(k) == 32 for k in keys)


def test_after_45_s_the_dangling_calls_are_answered_from_the_record(
        backend: tuple[AgentMemory, Any], tmp_path: Path) -> None:
    store, saver = unpack(backend)
    crash_first_turn(store, saver, tmp_path)
    before = counts(tmp_path)
    clock = Clock()
    clock.offset = LATER
    model = ScriptedChatModel(responses=["All set"])
    agent = build_agent(store, saver, model, tmp_path, clock=clock, block=False)
    out = agent.invoke({"messages": [("user", "Anything else?")]}, CONFIG, context=CONTEXT)
    assert counts(tmp_path) == before == {name: 1 for name in TOOLS}  # nothing re-run
    assert_resumed(out, model, replayed={"call_weather", "call_booking"})
    assert working(store).with_clock(clock).unfinished_turn(THREAD) is None


async def test_async_run_records_and_resumes(backend: tuple[AgentMemory, Any],
                                             tmp_path: Path) -> None:
    store, saver = unpack(backend)
    model = ScriptedChatModel(responses=[first_round(), "never reached"])
    agent = build_agent(store, saver, model, tmp_path, block=False)
    with pytest.raises(Crash):
        await agent.ainvoke({"messages": [("user", "Plan my trip")]}, CONFIG,
                            context=CONTEXT)
    turn = await working(store).aunfinished_turn(THREAD)
    assert turn is not None and {r.call_id for r in turn.rows} == {"call_weather",
                                                                  "call_booking"}
    with pytest.raises(TurnInProgressError):
        await TurnResume(AgentMemory(store)).acheck_turn(agent, CONFIG, context=CONTEXT)
    with pytest.raises(TurnInProgressError):
        await agent.ainvoke({"messages": [("user", "Anything else?")]}, CONFIG,
                            context=CONTEXT)
    clock = Clock()
    clock.offset = LATER
    model = ScriptedChatModel(responses=["All set"])
    agent = build_agent(store, saver, model, tmp_path, clock=clock, block=False)
    out = await agent.ainvoke({"messages": [("user", "Anything else?")]}, CONFIG,
                              context=CONTEXT)
    assert counts(tmp_path) == {name: 1 for name in TOOLS}
    assert_resumed(out, model, replayed={"call_weather", "call_booking"})
    assert await working(store).with_clock(clock).aunfinished_turn(THREAD) is None


def killed_state(agent: Any, store: Any, clock: Callable[[], float]) -> None:
    """The state a SIGKILL inside the tool round leaves when new input comes: the AIMessage
    with three calls and no ToolMessage in the history; two calls in the turn record."""
    agent.update_state(CONFIG, {"messages": [HumanMessage("Plan my trip"), first_round()]},
                       as_node="model")
    w = working(store).with_clock(clock)
    w.record_tool_call(THREAD, "call_weather", "lookup_weather", {"city": "Lisbon"},
                       "Sunny in Lisbon, 24 C")
    w.record_tool_call(THREAD, "call_booking", "open_booking", {"guests": 2},
                       "Booking 42 opened for 2", open_resources=["booking:42"])


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_every_dangling_call_is_answered_in_place(backend: tuple[AgentMemory, Any],
                                                        tmp_path: Path, mode: str) -> None:
    store, saver = unpack(backend)
    clock = Clock()
    model = ScriptedChatModel(responses=["All set"])
    agent = build_agent(store, saver, model, tmp_path, clock=clock, block=False)
    killed_state(agent, store, clock)
    clock.offset = LATER
    message = {"messages": [("user", "Anything else?")]}
    out = (agent.invoke(message, CONFIG, context=CONTEXT) if mode == "sync"
           else await agent.ainvoke(message, CONFIG, context=CONTEXT))
    assert counts(tmp_path) == {name: 0 for name in TOOLS}  # answered, never run
    assert_resumed(out, model, replayed={"call_weather", "call_booking"})
    assert [type(m).__name__ for m in out["messages"]] == [
        "HumanMessage", "AIMessage", "ToolMessage", "ToolMessage", "ToolMessage",
        "HumanMessage", "AIMessage"]
    assert out["turn_round_at"] is None


def test_a_tool_that_failed_is_replayed_as_a_failure(tmp_path: Path) -> None:
    """A tool that answered with an error before the crash is recorded with its status, and
    the resume answers it as an error again (not as a success the model could trust)."""

    @tool
    def charge_card(amount: int) -> str:
        """Charge the card."""
        raise ToolException(f"card declined for {amount}")

    charge_card.handle_tool_error = True
    store, saver = InMemoryStore(), InMemorySaver()
    round_ = AIMessage(content="", tool_calls=[
        {"name": "charge_card", "args": {"amount": 5}, "id": "call_charge"},
        {"name": "write_report", "args": {"title": "trip"}, "id": "call_report"}])
    clock = Clock()

    def agent(model: ScriptedChatModel) -> Any:
        middleware = TurnResumeMiddleware(AgentMemory(store), clock=clock)
        return create_agent(model, [charge_card, make_tools(tmp_path, block=False)[2]],
                            middleware=[middleware], context_schema=MemoryContext,
                            checkpointer=saver, store=store)

    with pytest.raises(Crash):
        agent(ScriptedChatModel(responses=[round_, "never reached"])).invoke(
            {"messages": [("user", "Pay")]}, CONFIG, context=CONTEXT)
    (row,) = working(store).unfinished_turn(THREAD).rows
    assert (row.call_id, row.status) == ("call_charge", "error")
    assert "card declined for 5" in row.result_preview
    clock.offset = LATER
    model = ScriptedChatModel(responses=["The card was declined"])
    agent(model).invoke({"messages": [("user", "Did it work?")]}, CONFIG, context=CONTEXT)
    seen = {m.tool_call_id: m for m in model.calls[0] if isinstance(m, ToolMessage)}
    assert seen["call_charge"].status == "error"
    assert (seen["call_charge"].artifact or {}).get("resumed")
    assert "card declined for 5" in seen["call_charge"].content


def test_record_tool_call_checks_its_status(tmp_path: Path) -> None:
    w = working(InMemoryStore())
    assert w.record_tool_call(THREAD, "c1", "t", {}, "ok").status == "success"
    assert w.record_tool_call(THREAD, "c2", "t", {}, "no", status="error").status == "error"
    assert [r.status for r in w.unfinished_turn(THREAD).rows] == ["success", "error"]
    with pytest.raises(InvalidInputError, match="status must be one of"):
        w.record_tool_call(THREAD, "c3", "t", {}, "?", status="maybe")


def test_a_round_with_no_finished_call_is_timed_by_its_stamp(tmp_path: Path) -> None:
    store, saver = InMemoryStore(), InMemorySaver()
    report_only = AIMessage(content="", tool_calls=[
        {"name": "write_report", "args": {"title": "trip"}, "id": "call_report"}])
    model = ScriptedChatModel(responses=[report_only, "never reached"])
    agent = build_agent(store, saver, model, tmp_path, block=False)
    with pytest.raises(Crash):
        agent.invoke({"messages": [("user", "Write it")]}, CONFIG, context=CONTEXT)
    assert working(store).unfinished_turn(THREAD) is None  # nothing finished
    assert isinstance(agent.get_state(CONFIG).values["turn_round_at"], float)
    with pytest.raises(TurnInProgressError):  # the round started just now: still running
        agent.invoke({"messages": [("user", "Done?")]}, CONFIG, context=CONTEXT)
    clock = Clock()
    clock.offset = LATER
    model = ScriptedChatModel(responses=["Sorry, again?"])
    agent = build_agent(store, saver, model, tmp_path, clock=clock, block=False)
    out = agent.invoke({"messages": [("user", "Done?")]}, CONFIG, context=CONTEXT)
    [answer] = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert answer.status == "error" and "did not complete" in answer.content
    assert_answered(out["messages"])
    assert calls_of(tmp_path, "write_report") == 1


def test_a_stale_record_with_nothing_dangling_is_dropped(tmp_path: Path) -> None:
    store, saver = InMemoryStore(), InMemorySaver()
    clock = Clock()
    working(store).with_clock(clock).record_tool_call(
        THREAD, "call_old", "lookup_weather", {"city": "Porto"}, "Rainy")
    clock.offset = LATER
    model = ScriptedChatModel(responses=["Hello"])
    agent = build_agent(store, saver, model, tmp_path, clock=clock)
    out = agent.invoke({"messages": [("user", "Hi")]}, CONFIG, context=CONTEXT)
    assert [m.type for m in out["messages"]] == ["human", "ai"]
    assert working(store).with_clock(clock).unfinished_turn(THREAD) is None


def test_the_memory_defaults_to_the_graphs_store(tmp_path: Path) -> None:
    store, saver = InMemoryStore(), InMemorySaver()
    model = ScriptedChatModel(responses=[first_round(), "never reached"])
    agent = create_agent(model, make_tools(tmp_path, block=False, saver=saver),
                         middleware=[TurnResumeMiddleware()], checkpointer=saver, store=store)
    with pytest.raises(Crash):
        agent.invoke({"messages": [("user", "Plan my trip")]}, CONFIG, context=CONTEXT)
    turn = working(store).unfinished_turn(THREAD)
    assert turn is not None and len(turn.rows) == 2


def test_within_45_s_the_turn_is_in_progress(backend: tuple[AgentMemory, Any],
                                             tmp_path: Path) -> None:
    store, saver = unpack(backend)
    crash_first_turn(store, saver, tmp_path)
    turn = working(store).unfinished_turn(THREAD)
    assert turn is not None
    touched = turn.touched_at.timestamp()

    def clock() -> float:  # 30 s after the last call finished, frozen
        return touched + 30.0

    model = ScriptedChatModel(responses=["All set"])
    agent = build_agent(store, saver, model, tmp_path, clock=clock, block=False)
    resume = TurnResume(AgentMemory(store), clock=clock)
    with pytest.raises(TurnInProgressError) as refused:
        resume.check_turn(agent, CONFIG, context=CONTEXT)  # before the run: writes nothing
    assert refused.value.code == "turn_in_progress" and refused.value.thread == THREAD
    assert refused.value.retry_after == pytest.approx(15.0)
    assert refused.value.touched_at == pytest.approx(touched)
    assert "45 s" in str(refused.value)
    with pytest.raises(TurnInProgressError):
        agent.invoke({"messages": [("user", "Anything else?")]}, CONFIG, context=CONTEXT)
    assert model.calls == [] and counts(tmp_path) == {name: 1 for name in TOOLS}
    assert working(store).with_clock(clock).unfinished_turn(THREAD) is not None


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_wait_waits_for_the_turn_to_go_quiet(tmp_path: Path, mode: str) -> None:
    store, saver = InMemoryStore(), InMemorySaver()
    crash_first_turn(store, saver, tmp_path)
    ticks = itertools.count(0, 10)
    start = time.time()

    def clock() -> float:  # ten seconds pass at each read: the wait ends after a few polls
        return start + next(ticks)

    model = ScriptedChatModel(responses=["All set"])
    agent = build_agent(store, saver, model, tmp_path, clock=clock, block=False, wait=True,
                        poll_seconds=0.001)
    message = {"messages": [("user", "Anything else?")]}
    out = (agent.invoke(message, CONFIG, context=CONTEXT) if mode == "sync"
           else await agent.ainvoke(message, CONFIG, context=CONTEXT))
    assert_resumed(out, model, replayed={"call_weather", "call_booking"})
    short = build_agent(store, saver, model, tmp_path, block=False, wait=True,
                        poll_seconds=0.001, max_wait_seconds=0.0)
    killed_state(short, store, time.time)
    with pytest.raises(TurnInProgressError):  # waited its longest, still running
        if mode == "sync":
            short.invoke(message, CONFIG, context=CONTEXT)
        else:
            await short.ainvoke(message, CONFIG, context=CONTEXT)


def test_the_record_goes_with_the_final_message(backend: tuple[AgentMemory, Any],
                                                tmp_path: Path) -> None:
    store, saver = unpack(backend)
    model = ScriptedChatModel(responses=[first_round(), "Here is your trip"])
    agent = build_agent(store, saver, model, tmp_path, block=False)
    (tmp_path / "write_report.count").write_text("earlier\n")  # so the report returns
    out = agent.invoke({"messages": [("user", "Plan my trip")]}, CONFIG, context=CONTEXT)
    assert out["messages"][-1].content == "Here is your trip"
    assert working(store).unfinished_turn(THREAD) is None
    assert out["turn_round_at"] is None
    # the next message on the thread is handled at once: nothing is unfinished
    model.responses.append("Anything else")
    agent.invoke({"messages": [("user", "Thanks")]}, CONFIG, context=CONTEXT)
    assert len(model.calls) == 3


def test_after_24_h_the_record_has_expired(backend: tuple[AgentMemory, Any],
                                           tmp_path: Path) -> None:
    store, saver = unpack(backend)
    crash_first_turn(store, saver, tmp_path)
    clock = Clock()
    clock.offset = 24 * 3600.0 + 1
    assert working(store).with_clock(clock).unfinished_turn(THREAD) is None
    model = ScriptedChatModel(responses=["All set"])
    agent = build_agent(store, saver, model, tmp_path, clock=clock, block=False)
    out = agent.invoke({"messages": [("user", "Anything else?")]}, CONFIG, context=CONTEXT)
    assert_answered(out["messages"])
    assert counts(tmp_path) == {name: 1 for name in TOOLS}


def test_a_run_without_a_profile_is_left_alone(tmp_path: Path) -> None:
    store, saver = InMemoryStore(), InMemorySaver()
    model = ScriptedChatModel(responses=[first_round(), "never reached"])
    agent = build_agent(store, saver, model, tmp_path, block=False)
    with pytest.raises(Crash):
        agent.invoke({"messages": [("user", "Plan my trip")]}, CONFIG, context={})
    assert store.search(("langmem_edge",)) == []  # nothing recorded
    model = ScriptedChatModel(responses=["All set"])
    agent = build_agent(store, saver, model, tmp_path, block=False)
    out = agent.invoke({"messages": [("user", "Anything else?")]}, CONFIG, context={},
                       durability="exit")  # not refused either: no resume for this run
    assert out["messages"][-1].content == "All set"
    assert not any(isinstance(m, ToolMessage) and m.tool_call_id == "call_report"
                   for m in out["messages"])  # the dangling call was not touched


class FailingWrites(InMemoryStore):
    """An InMemoryStore whose writes fail (a store that went away mid-turn)."""

    def batch(self, ops: Any) -> list[Any]:
        if any(type(op).__name__ == "PutOp" for op in ops):
            raise RuntimeError("the store went away")
        return super().batch(ops)


def test_a_tool_whose_call_cannot_be_recorded_still_answers(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = FailingWrites()
    model = ScriptedChatModel(responses=[first_round(), "All set"])
    agent = build_agent(store, InMemorySaver(), model, tmp_path, block=False)
    (tmp_path / "write_report.count").write_text("earlier\n")  # so the report returns
    with caplog.at_level("ERROR", logger="langmem_edge.graphs.resume"):
        out = agent.invoke({"messages": [("user", "Plan my trip")]}, CONFIG,
                           context=CONTEXT)
    answers = {m.tool_call_id: m for m in out["messages"] if isinstance(m, ToolMessage)}
    assert answers["call_weather"].content == "Sunny in Lisbon, 24 C"
    assert all(m.status == "success" for m in answers.values())
    assert counts(tmp_path) == {"lookup_weather": 1, "open_booking": 1, "write_report": 2}
    missed = [r for r in caplog.records if "not in the turn record" in r.getMessage()]
    assert len(missed) == 3 and "crash-thread" in missed[0].getMessage()


def test_the_profile_comes_from_the_context_then_configurable() -> None:
    class Ctx:
        profile = "bob"
        contact = "carol"
        thread_id = None

    config = {"configurable": {"thread_id": "t9", "profile": "alice"}}
    assert run_identity({"profile": "alice", "thread_id": "t1"}, {}) is not None
    who = run_identity(Ctx(), config)
    assert who is not None and (who.profile, who.contact, who.thread) == ("bob", "carol", "t9")
    who = run_identity(None, config)
    assert who is not None and (who.profile, who.thread) == ("alice", "t9")
    assert run_identity(None, {"configurable": {"thread_id": "t9"}}) is None
    assert run_identity({"profile": "alice"}, {}) is None  # no thread: nothing to resume


def test_durability_exit_is_refused(tmp_path: Path) -> None:
    store, saver = InMemoryStore(), InMemorySaver()
    model = ScriptedChatModel(responses=["hi"])
    agent = build_agent(store, saver, model, tmp_path)
    with pytest.raises(UnsupportedDurabilityError) as refused:
        agent.invoke({"messages": [("user", "hi")]}, CONFIG, context=CONTEXT,
                     durability="exit")
    assert refused.value.code == "unsupported_durability"
    assert refused.value.durability == "exit" and "durability='sync'" in str(refused.value)
    assert isinstance(refused.value, ConfigurationError) and model.calls == []
    for durability in ("sync", "async"):
        out = agent.invoke({"messages": [("user", "hi")]}, CONFIG, context=CONTEXT,
                           durability=durability)
        assert out["messages"][-1].content == "hi"


def test_a_re_run_of_the_same_call_gets_the_same_idempotency_key(tmp_path: Path) -> None:
    store, saver = InMemoryStore(), InMemorySaver()
    crash_first_turn(store, saver, tmp_path)
    model = ScriptedChatModel(responses=["All set"])
    agent = build_agent(store, saver, model, tmp_path, block=False)
    out = agent.invoke(None, CONFIG, context=CONTEXT)  # LangGraph's own resume
    assert out["messages"][-1].content == "All set"
    first, again = keys_of(tmp_path, "write_report")
    assert first == again  # same thread, checkpoint and call: same key
    checkpoint = {s.config["configurable"]["checkpoint_id"]
                  for s in agent.get_state_history(CONFIG)}
    assert any(first == idempotency_key(THREAD, c, "call_report") for c in checkpoint)
    assert calls_of(tmp_path, "lookup_weather") == 1  # finished calls not re-run


def test_a_tool_reads_its_key_without_the_middleware_too() -> None:
    info = SimpleNamespace(thread_id="t1", checkpoint_id="cp1")
    bare = SimpleNamespace(config={}, execution_info=info, tool_call_id="call_1")
    assert tool_idempotency_key(bare) == idempotency_key("t1", "cp1", "call_1")
    given = SimpleNamespace(config={"configurable": {"idempotency_key": "k"}},
                            execution_info=None, tool_call_id="call_1")
    assert tool_idempotency_key(given) == "k"
    outside = SimpleNamespace(config={}, execution_info=None, tool_call_id="call_1")
    assert tool_idempotency_key(outside) is None  # no checkpointed run, no key
    assert idempotency_key("t1", "cp1", "call_1") != idempotency_key("t1", "cp2", "call_1")


def test_a_middleware_of_its_own_can_delegate_hook_by_hook(tmp_path: Path) -> None:
    class Delegating(AgentMiddleware):  # type: ignore[type-arg]
        state_schema = TurnResumeState

        def __init__(self, resume: TurnResume) -> None:
            super().__init__()
            self.resume = resume

        def before_agent(self, state: Any, runtime: Any) -> Any:
            return self.resume.before_agent(state, runtime)

        def after_model(self, state: Any, runtime: Any) -> Any:
            return self.resume.after_model(state, runtime)

        def wrap_tool_call(self, request: Any, handler: Any) -> Any:
            return self.resume.wrap_tool_call(request, handler)

    store, saver = InMemoryStore(), InMemorySaver()
    model = ScriptedChatModel(responses=[first_round(), "never reached"])
    agent = create_agent(model, make_tools(tmp_path, block=False, saver=saver),
                         middleware=[Delegating(TurnResume(AgentMemory(store)))],
                         checkpointer=saver, store=store)
    with pytest.raises(Crash):
        agent.invoke({"messages": [("user", "Plan my trip")]}, CONFIG, context=CONTEXT)
    assert isinstance(agent.get_state(CONFIG).values["turn_round_at"], float)
    clock = Clock()
    clock.offset = LATER
    model = ScriptedChatModel(responses=["All set"])
    agent = create_agent(model, make_tools(tmp_path, block=False, saver=saver),
                         middleware=[Delegating(TurnResume(AgentMemory(store), clock=clock))],
                         checkpointer=saver, store=store)
    out = agent.invoke({"messages": [("user", "Anything else?")]}, CONFIG, context=CONTEXT)
    assert_resumed(out, model, replayed={"call_weather", "call_booking"})
    assert out["turn_round_at"] is None
    assert working(store).with_clock(clock).unfinished_turn(THREAD) is None


def test_the_stamp_joins_an_inner_middlewares_command() -> None:
    reply = AIMessage(content="", tool_calls=[{"name": "x", "args": {}, "id": "c"}])
    inner = ExtendedModelResponse(model_response=ModelResponse(result=[reply]),
                                  command=Command(update={"notes": "kept"}))
    out = _with_update(inner, {"turn_round_at": 5.0})
    assert out.command.update == {"notes": "kept", "turn_round_at": 5.0}
    plain = _with_update(reply, {"turn_round_at": 5.0})
    assert plain.model_response.result == [reply]
    assert plain.command.update == {"turn_round_at": 5.0}
    assert _with_update(reply, None) is reply


def test_options_are_checked() -> None:
    with pytest.raises(ConfigurationError, match="AgentMemory"):
        TurnResume("alice")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="poll_seconds"):
        TurnResume(AgentMemory(InMemoryStore()), poll_seconds=0)


# -- the crash, with real processes -------------------------------------------------------------


def kill_in_tool_round(spec: str, counters: Path) -> None:
    """Start the child on ``spec``; once two of its three tools are in the turn record and
    the third blocks, SIGKILL it."""
    env = dict(os.environ)
    here = Path(__file__).resolve().parent
    env["PYTHONPATH"] = os.pathsep.join([str(here.parent), str(here),
                                         env.get("PYTHONPATH", "")])
    env.update(RESUME_BACKEND=spec, RESUME_COUNTERS=str(counters), HF_HUB_OFFLINE="1",
               ANONYMIZED_TELEMETRY="False")
    child = subprocess.Popen([sys.executable, str(CHILD)], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + CHILD_START_SECONDS
        while not (counters / BLOCKED).exists():
            if child.poll() is not None:
                output = child.stdout.read().decode(errors="replace") if child.stdout else ""
                pytest.fail(f"the child exited with {child.returncode}: {output[-3000:]}")
            assert time.monotonic() < deadline, "the child never reached its tool round"
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
        if child.stdout:
            child.stdout.close()


def crash_and_resume(spec: str, counters: Path) -> None:
    kill_in_tool_round(spec, counters)
    assert counts(counters) == {name: 1 for name in TOOLS}
    store, saver = open_backend(spec)
    try:
        state = build_agent(store, saver, ScriptedChatModel(), counters).get_state(CONFIG)
        assert "tools" in state.next  # the kill left the tool round unfinished
        assert "call_report" in [  # (get_state shows the finished calls' saved writes)
            c["id"] for _, c in dangling_tool_calls(state.values["messages"])]
        turn = working(store).unfinished_turn(THREAD)
        assert turn is not None and len(turn.rows) == 2
        touched = turn.touched_at.timestamp()  # when the child's second call finished
        # within 45 s of it: still running
        model = ScriptedChatModel(responses=["All set"])
        agent = build_agent(store, saver, model, counters, clock=lambda: touched + 44.0,
                            block=False)
        with pytest.raises(TurnInProgressError):
            TurnResume(AgentMemory(store), clock=lambda: touched + 44.0).check_turn(
                agent, CONFIG, context=CONTEXT)
        with pytest.raises(TurnInProgressError):
            agent.invoke({"messages": [("user", "Anything else?")]}, CONFIG,
                         context=CONTEXT)
        assert model.calls == []
        # 46 s after it: resumed from the record
        def clock() -> float:
            return touched + LATER

        agent = build_agent(store, saver, model, counters, clock=clock, block=False)
        out = agent.invoke({"messages": [("user", "Anything else?")]}, CONFIG,
                           context=CONTEXT)
        assert counts(counters) == {name: 1 for name in TOOLS}  # the counters did not move
        assert_resumed(out, model, replayed={"call_weather", "call_booking"})
        assert working(store).with_clock(clock).unfinished_turn(THREAD) is None
    finally:
        saver.close()
        store.close()


def test_crash_in_a_tool_round_on_a_folder(tmp_path: Path) -> None:
    counters = tmp_path / "counters"
    counters.mkdir()
    crash_and_resume(f"path:{tmp_path / 'data'}", counters)


@pytest.mark.server
def test_crash_in_a_tool_round_on_a_server(tmp_path: Path, chroma_server_url: str) -> None:
    counters = tmp_path / "counters"
    counters.mkdir()
    crash_and_resume(f"url:{chroma_server_url} r{uuid.uuid4().hex[:10]}", counters)


def test_memory_middleware_resumes_a_crashed_turn_by_default(tmp_path: Path) -> None:
    """The one-line face: ``MemoryMiddleware`` (turn resume on by default) records the round
    and answers the dangling calls of the crashed turn, alongside recall and extraction."""
    from langmem_edge.graphs import MemoryMiddleware

    store, saver = InMemoryStore(), InMemorySaver()
    memory = AgentMemory(store)
    clock = Clock()

    def agent(model: ScriptedChatModel) -> Any:
        middleware = MemoryMiddleware(memory, resume=TurnResume(memory, clock=clock))
        return create_agent(model, make_tools(tmp_path, block=False, saver=saver),
                            middleware=[middleware], context_schema=MemoryContext,
                            checkpointer=saver, store=store), middleware

    first, mw1 = agent(ScriptedChatModel(responses=[first_round(), "never reached"]))
    with pytest.raises(Crash):
        first.invoke({"messages": [("user", "Plan my trip")]}, CONFIG, context=CONTEXT)
    mw1.close()
    assert working(store).unfinished_turn(THREAD) is not None
    with pytest.raises(TurnInProgressError):  # within 45 s the turn may still be running
        agent(ScriptedChatModel(responses=["x"]))[0].invoke(
            {"messages": [("user", "Anything else?")]}, CONFIG, context=CONTEXT)
    clock.offset = LATER
    model = ScriptedChatModel(responses=["All set"])
    second, mw2 = agent(model)
    out = second.invoke({"messages": [("user", "Anything else?")]}, CONFIG, context=CONTEXT)
    mw2.close()
    assert counts(tmp_path) == {name: 1 for name in TOOLS}
    assert out["messages"][-1].content == "All set"
    assert_answered(out["messages"])
    assert working(store).with_clock(clock).unfinished_turn(THREAD) is None


# -- the resumed turn's results in the memory block ---------------------------------------------


def memory_agent(store: Any, saver: Any, model: ScriptedChatModel, counters: Path,
                 clock: Callable[[], float]) -> tuple[Any, Any]:
    """``create_agent`` with ``MemoryMiddleware`` (recall, turn resume by ``clock``) and the
    three counting tools."""
    from langmem_edge.graphs import MemoryMiddleware

    memory = AgentMemory(store)
    middleware = MemoryMiddleware(memory, resume=TurnResume(memory, clock=clock))
    agent = create_agent(model, make_tools(counters, block=False, saver=saver),
                         middleware=[middleware], context_schema=MemoryContext,
                         checkpointer=saver, store=store)
    return agent, middleware


def memory_block_of(call: list[Any]) -> str:
    """The memory block the model was shown in one call (the injected HumanMessage)."""
    from langmem_edge.graphs.recall import BLOCK_OPEN

    blocks = [m.text for m in call if isinstance(m, HumanMessage) and
              m.text.startswith(BLOCK_OPEN)]
    assert len(blocks) == 1, call
    return blocks[0]


def assert_block_lists_the_resumed_turn(block: str) -> None:
    from langmem_edge.graphs.recall import RESUMED_NOT_COMPLETED, RESUMED_SECTION_TITLE

    assert RESUMED_SECTION_TITLE in block
    section = block[block.index(RESUMED_SECTION_TITLE):]
    assert ("- lookup_weather [call_weather]: finished (success): Sunny in Lisbon, 24 C"
            in section)
    assert "- open_booking [call_booking]: finished (success): Booking 42 opened for 2" \
        in section
    assert f"- write_report [call_report]: {RESUMED_NOT_COMPLETED}" in section
    assert "Still open from that turn, to reuse: booking:42" in section
    assert "This turn was interrupted" not in section  # the ToolMessage's note, not repeated


def test_the_memory_block_lists_a_crash_resumed_turns_results(tmp_path: Path) -> None:
    """A child SIGKILLed in its tool round after two of three calls; 46 s later, through
    ``MemoryMiddleware``, the block the model sees lists the two finished calls with their
    results, the third as not completed, and the open booking; nothing ran twice. The turn
    after that one shows no resumed section any more."""
    counters = tmp_path / "counters"
    counters.mkdir()
    spec = f"path:{tmp_path / 'data'}"
    kill_in_tool_round(spec, counters)
    store, saver = open_backend(spec)
    try:
        turn = working(store).unfinished_turn(THREAD)
        assert turn is not None and len(turn.rows) == 2
        touched = turn.touched_at.timestamp()
        model = ScriptedChatModel(responses=["All set", "Fine"])
        agent, mw = memory_agent(store, saver, model, counters, lambda: touched + LATER)
        out = agent.invoke({"messages": [("user", "Anything else?")]}, CONFIG,
                           context=CONTEXT)
        assert counts(counters) == {name: 1 for name in TOOLS}
        assert_answered(out["messages"])
        assert_block_lists_the_resumed_turn(memory_block_of(model.calls[0]))
        assert not any(m.text.startswith("<memory>") for m in out["messages"]
                       if isinstance(m, HumanMessage))  # the block is never checkpointed
        agent.invoke({"messages": [("user", "Thanks")]}, CONFIG, context=CONTEXT)
        later = [m for m in model.calls[1] if isinstance(m, HumanMessage)
                 and m.text.startswith("<memory>")]
        assert all("Resumed turn" not in m.text for m in later)
        mw.close()
    finally:
        saver.close()
        store.close()


async def test_the_memory_block_lists_the_resumed_turn_async(tmp_path: Path) -> None:
    """The same in process and async (the third tool raises in place of a kill), on
    InMemoryStore; the block keeps the resumed section within its token budget."""
    store, saver = InMemoryStore(), InMemorySaver()
    clock = Clock()
    first, mw1 = memory_agent(store, saver,
                              ScriptedChatModel(responses=[first_round(), "never reached"]),
                              tmp_path, clock)
    with pytest.raises(Crash):
        await first.ainvoke({"messages": [("user", "Plan my trip")]}, CONFIG,
                            context=CONTEXT)
    mw1.close()
    clock.offset = LATER
    model = ScriptedChatModel(responses=["All set"])
    second, mw2 = memory_agent(store, saver, model, tmp_path, clock)
    await second.ainvoke({"messages": [("user", "Anything else?")]}, CONFIG,
                         context=CONTEXT)
    await mw2.aclose()
    assert counts(tmp_path) == {name: 1 for name in TOOLS}
    block = memory_block_of(model.calls[0])
    assert_block_lists_the_resumed_turn(block)
    from langmem_edge.graphs.options import DEFAULT_RECALL_BUDGET_TOKENS
    from langmem_edge.memory.core.tokens import estimate_tokens
    assert estimate_tokens(block) <= DEFAULT_RECALL_BUDGET_TOKENS
    assert await working(store).with_clock(clock).aunfinished_turn(THREAD) is None


# -- the three ways a user meets a crashed turn ------------------------------------------------


@pytest.mark.parametrize("resend", ["at 5 s", "at 40 s", "after 60 s", "check_turn first"])
def test_sending_the_message_again_after_a_crash_resumes_the_turn(tmp_path: Path,
                                                                   resend: str) -> None:
    """A child SIGKILLed in its tool round; the user sends a message within the 45 s (refused,
    as the error says: "send the message again in N s") or after it, or checks with
    ``check_turn()`` first. Whatever the way, the message sent again is in the history once,
    the model sees the resume block, and no tool ran twice. (Before: a refused message stayed
    in the checkpoint, the resend added it again, and the block found nothing to list.)"""
    counters = tmp_path / "counters"
    counters.mkdir()
    spec = f"path:{tmp_path / 'data'}"
    kill_in_tool_round(spec, counters)
    store, saver = open_backend(spec)
    message = {"messages": [("user", "Did my booking go through?")]}
    try:
        turn = working(store).unfinished_turn(THREAD)
        assert turn is not None
        touched = turn.touched_at.timestamp()
        now = [touched]
        model = ScriptedChatModel(responses=["Yes, booking 42"])
        agent, mw = memory_agent(store, saver, model, counters, lambda: now[0])
        early = {"at 5 s": 5.0, "at 40 s": 40.0, "check_turn first": 5.0}.get(resend)
        if early is not None:
            now[0] = touched + early
            with pytest.raises(TurnInProgressError, match="send the message again"):
                if resend == "check_turn first":
                    TurnResume(AgentMemory(store), clock=lambda: now[0]).check_turn(
                        agent, CONFIG, context=CONTEXT)
                else:
                    agent.invoke(message, CONFIG, context=CONTEXT)
        now[0] = touched + (60.0 if resend == "after 60 s" else LATER)
        if resend == "check_turn first":
            TurnResume(AgentMemory(store), clock=lambda: now[0]).check_turn(
                agent, CONFIG, context=CONTEXT)
        out = agent.invoke(message, CONFIG, context=CONTEXT)
        mw.close()
        assert counts(counters) == {name: 1 for name in TOOLS}
        said = [m.text for m in out["messages"] if isinstance(m, HumanMessage)]
        assert said == ["Plan my trip", "Did my booking go through?"]
        assert_answered(out["messages"])
        assert_block_lists_the_resumed_turn(memory_block_of(model.calls[0]))
        assert out["messages"][-1].content == "Yes, booking 42"
    finally:
        saver.close()
        store.close()


def test_only_repeats_of_the_latest_message_after_the_turn_are_dropped() -> None:
    from langmem_edge.graphs.resume_history import without_refused_repeats

    ai = AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": "c1"}])
    history = [HumanMessage("Plan my trip"), ai, HumanMessage("Is it done?"),
               HumanMessage("Also book a taxi"), HumanMessage("Is it done?"),
               HumanMessage("Is it done?")]
    kept = without_refused_repeats(history, ai)
    assert [m.text for m in kept] == ["Plan my trip", "", "Also book a taxi", "Is it done?"]
    assert kept[-1] is history[-1]
    assert without_refused_repeats([HumanMessage("Plan my trip"), ai,
                                    HumanMessage("Plan my trip")], ai)[-1].text == "Plan my trip"


def test_a_middleware_without_a_memory_makes_one_a_store_for_hooks_and_turn_resume() -> None:
    """One ``AgentMemory`` per graph store, whichever part asks: two would keep two access
    writers (two count rows) and two size hints for every profile."""
    from langmem_edge import MemoryMiddleware

    middleware = MemoryMiddleware()
    store = InMemoryStore()
    assert middleware.resume is not None
    made = middleware.hooks.resolver.memory_for(store)
    assert middleware.resume.resolver.memory_for(store) is made
    assert middleware.resume.resolver.memory_for(InMemoryStore()) is not made
