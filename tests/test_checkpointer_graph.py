"""ChromaSaver under real compiled LangGraph graphs: multi-step runs, interrupt and resume,
state history and time travel, DeltaChannel state through prune and copy, async runs, and a
second process reading and continuing a thread from the same folder."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from checkpointer_graphs import (
    build_chat_graph,
    build_delta_graph,
    build_interrupt_graph,
    contents,
)
from checkpointer_helpers import server_saver
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from langmem_edge.checkpointers import ChromaSaver

TESTS_DIR = Path(__file__).resolve().parent
REPO_DIR = TESTS_DIR.parent


@pytest.fixture(params=["embedded", pytest.param("server", marks=pytest.mark.server)])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ChromaSaver]:
    if request.param == "embedded":
        with ChromaSaver.from_path(str(tmp_path / "chroma")) as s:
            yield s
    else:
        with server_saver(request.getfixturevalue("chroma_server_url")) as s:
            yield s


def cfg(thread_id: str, **extra: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, **extra}}


def test_multi_step_run_accumulates_state(saver: ChromaSaver) -> None:
    graph = build_chat_graph(saver)
    config = cfg(str(uuid.uuid4()))
    graph.invoke({"messages": [HumanMessage(content="hi")]}, config)
    out = graph.invoke({"messages": [HumanMessage(content="again")]}, config)
    assert contents(out) == [
        "hi",
        "thinking about hi",
        "answer #1",
        "again",
        "thinking about again",
        "answer #2",
    ]
    state = graph.get_state(config)
    assert state.values["turns"] == 2 and state.next == ()
    history = [
        (h.metadata["step"], h.metadata["source"], h.next, contents(h.values))
        for h in graph.get_state_history(config)
    ]
    # the same run on InMemorySaver (the reference) gives the same history
    reference = build_chat_graph(InMemorySaver())
    reference.invoke({"messages": [HumanMessage(content="hi")]}, config)
    reference.invoke({"messages": [HumanMessage(content="again")]}, config)
    expected = [
        (h.metadata["step"], h.metadata["source"], h.next, contents(h.values))
        for h in reference.get_state_history(config)
    ]
    assert len(history) == 8 and history == expected


def test_interrupt_and_resume(saver: ChromaSaver) -> None:
    graph = build_interrupt_graph(saver)
    config = cfg(str(uuid.uuid4()))
    first = graph.invoke({"messages": [HumanMessage(content="start")]}, config)
    assert first["__interrupt__"][0].value == "What is your name?"
    paused = graph.get_state(config)
    assert paused.next == ("ask_name",)
    assert paused.tasks[0].interrupts[0].value == "What is your name?"
    done = graph.invoke(Command(resume="Ada"), config)
    assert contents(done)[-2:] == ["My name is Ada", "Hello Ada"]
    assert graph.get_state(config).next == ()


def summary(graph: Any, config: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The history without ids: (step, source, next, message contents), newest first."""
    return [
        (h.metadata["step"], h.metadata["source"], h.next, contents(h.values))
        for h in graph.get_state_history(config)
    ]


def time_travel(graph: Any, tid: str) -> dict[str, Any]:
    """Two turns, a replay from before turn 2's "think", then a fork from the end of turn 1."""
    graph.invoke({"messages": [HumanMessage(content="one")]}, cfg(tid))
    graph.invoke({"messages": [HumanMessage(content="two")]}, cfg(tid))
    history = list(graph.get_state_history(cfg(tid)))
    before_think = next(h for h in history if h.next == ("think",))
    replayed = graph.invoke(None, before_think.config)
    after_first = next(h for h in history if h.values.get("turns") == 1 and not h.next)
    forked = graph.update_state(
        after_first.config, {"messages": [HumanMessage(content="three")]}, as_node="__start__"
    )
    forked_next = graph.get_state(forked).next
    out = graph.invoke(None, forked)
    return {
        "before_think": contents(before_think.values),
        "replayed": contents(replayed),
        "forked_next": forked_next,
        "out": contents(out),
        "latest": contents(graph.get_state(cfg(tid)).values),
        "old_branch": contents(graph.get_state(history[0].config).values),
        "history": summary(graph, cfg(tid)),
    }


def test_time_travel_resumes_from_an_older_checkpoint(saver: ChromaSaver) -> None:
    tid = str(uuid.uuid4())
    got = time_travel(build_chat_graph(saver), tid)
    assert got["before_think"][-1] == "two"
    assert got["replayed"][-2:] == ["thinking about two", "answer #2"]
    assert got["forked_next"] == ("think",)
    assert (
        got["out"]
        == got["latest"]
        == [
            "one",
            "thinking about one",
            "answer #1",
            "three",
            "thinking about three",
            "answer #2",
        ]
    )
    assert got["old_branch"][3] == "two"  # the abandoned branch stays readable by id
    assert got == time_travel(build_chat_graph(InMemorySaver()), tid)


async def test_async_graph_run(saver: ChromaSaver) -> None:
    graph = build_chat_graph(saver)
    config = cfg(str(uuid.uuid4()))
    await graph.ainvoke({"messages": [HumanMessage(content="hi")]}, config)
    steps = [c async for c in graph.astream({"messages": [HumanMessage("more")]}, config)]
    assert [list(s) for s in steps] == [["think"], ["answer"]]
    state = await graph.aget_state(config)
    assert state.values["turns"] == 2
    assert len([h async for h in graph.aget_state_history(config)]) == 8


def test_delta_channel_state_survives_prune_and_copy(saver: ChromaSaver) -> None:
    graph = build_delta_graph(saver)
    tid = str(uuid.uuid4())
    for i in range(7):
        graph.invoke({"items": [f"in {i}"]}, cfg(tid))
    expected = graph.get_state(cfg(tid)).values["items"]
    assert len(expected) == 14
    before = len(list(saver.list(cfg(tid, checkpoint_ns=""))))
    saver.prune([tid], strategy="keep_latest")
    after = len(list(saver.list(cfg(tid, checkpoint_ns=""))))
    assert after < before
    assert graph.get_state(cfg(tid)).values["items"] == expected
    copy = str(uuid.uuid4())
    saver.copy_thread(tid, copy)
    assert graph.get_state(cfg(copy)).values["items"] == expected
    graph.invoke({"items": ["in 7"]}, cfg(tid))
    assert graph.get_state(cfg(tid)).values["items"] == [*expected, "in 7", "seen 15"]


SUBPROCESS = textwrap.dedent(
    """
    import json, sys
    sys.path[:0] = [{tests!r}, {repo!r}]
    from langchain_core.messages import HumanMessage
    from checkpointer_graphs import build_chat_graph, contents
    from langmem_edge.checkpointers import ChromaSaver

    with ChromaSaver.from_path({folder!r}) as saver:
        graph = build_chat_graph(saver)
        config = {{"configurable": {{"thread_id": {thread!r}}}}}
        seen = contents(graph.get_state(config).values)
        graph.invoke({{"messages": [HumanMessage(content="from the child")]}}, config)
        print(json.dumps(seen))
    """
)


def test_a_second_process_reads_and_continues_the_thread(tmp_path: Path) -> None:
    folder = str(tmp_path / "shared")
    tid = str(uuid.uuid4())
    with ChromaSaver.from_path(folder) as saver:
        graph = build_chat_graph(saver)
        graph.invoke({"messages": [HumanMessage(content="from the parent")]}, cfg(tid))
        code = SUBPROCESS.format(
            tests=str(TESTS_DIR), repo=str(REPO_DIR), folder=folder, thread=tid
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-3000:]
        seen = json.loads(done.stdout.strip().splitlines()[-1])
        assert seen == ["from the parent", "thinking about from the parent", "answer #1"]
        # this process still has the open client and a head hint; it must see the child's turn
        state = graph.get_state(cfg(tid))
        assert contents(state.values)[-3:] == [
            "from the child",
            "thinking about from the child",
            "answer #2",
        ]


def _two_question_graph(saver: Any) -> Any:
    """One node that asks two questions (two interrupts in one node, resumed one by one)."""
    from typing import TypedDict

    from langgraph.graph import START, StateGraph
    from langgraph.types import interrupt

    class State(TypedDict, total=False):
        answers: list[str]

    def ask(state: State) -> State:
        first = interrupt("first?")
        second = interrupt("second?")
        return {"answers": [first, second]}

    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    return builder.compile(checkpointer=saver)


def _answer_two_questions(saver: Any) -> list[Any]:
    graph = _two_question_graph(saver)
    config = cfg(str(uuid.uuid4()))
    seen = [graph.invoke({"answers": []}, config)["__interrupt__"][0].value]
    seen.append(graph.invoke(Command(resume="one"), config)["__interrupt__"][0].value)
    seen.append(graph.invoke(Command(resume="two"), config)["answers"])
    seen.append(graph.get_state(config).next)
    return seen


def test_several_interrupts_in_one_node_resume_as_with_in_memory_saver(
    saver: ChromaSaver,
) -> None:
    expected = _answer_two_questions(InMemorySaver())
    assert expected == ["first?", "second?", ["one", "two"], ()]
    assert _answer_two_questions(saver) == expected
