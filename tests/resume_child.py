"""The agent of the turn-resume crash test, and (run as a script) the child that dies in it.

Three tools, each counting its calls in a file of the counters folder (one line per call):
``lookup_weather`` and ``open_booking`` return at once (``open_booking`` reports the resource
it left open, ``booking:42``); ``write_report`` counts its call, waits until the round's other
calls are in the turn record, writes ``blocked`` in the counters folder and sleeps until the
test kills the process (in process: raises :class:`Crash`); its later calls return. The first
model reply calls all three in one tool round.

Run as ``python resume_child.py`` with ``RESUME_BACKEND`` (see :func:`open_backend`) and
``RESUME_COUNTERS`` (a folder) in the environment; it never returns on its own.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, tool

from langmem_edge import AgentMemory, ChromaSaver, ChromaStore
from langmem_edge.graphs.resume import (
    IDEMPOTENCY_KEY,
    TurnResumeMiddleware,
    tool_idempotency_key,
)
from langmem_edge.testing import FakeEmbeddings, ScriptedChatModel
from langmem_edge.tools import MemoryContext

PROFILE = "alice"
THREAD = "crash-thread"
CONTEXT = {"profile": PROFILE}
CONFIG = {"configurable": {"thread_id": THREAD}}
BLOCKED = "blocked"
"""The file ``write_report`` writes once the two other calls are recorded."""
RECORD_POLL_SECONDS = 0.05
OTHERS_TIMEOUT_SECONDS = 60.0
"""How long the first ``write_report`` waits for the round's other calls to finish."""
BLOCK_SECONDS = 600.0
"""How long ``write_report`` sleeps (the test kills the process long before)."""



def first_round() -> AIMessage:
    """The model's first reply: the three tools in one round (a new message each time, so
    no message id is shared between runs)."""
    return AIMessage(content="", tool_calls=[
        {"name": "lookup_weather", "args": {"city": "Lisbon"}, "id": "call_weather"},
        {"name": "open_booking", "args": {"guests": 2}, "id": "call_booking"},
        {"name": "write_report", "args": {"title": "trip"}, "id": "call_report"},
    ])


def index() -> dict[str, Any]:
    """The store's index: fake embeddings, so no model runs in either process."""
    return {"dims": 64, "embed": FakeEmbeddings(64), "fields": ["text"]}


def open_backend(spec: str) -> tuple[ChromaStore, ChromaSaver]:
    """``"path:<folder>"``: a store and a saver in subfolders; ``"url:<url> <prefix>"``: both
    on a Chroma server, their collections named from ``prefix``."""
    kind, _, rest = spec.partition(":")
    if kind == "path":
        return (ChromaStore.from_path(str(Path(rest) / "store"), index=index()),
                ChromaSaver.from_path(str(Path(rest) / "saver")))
    url, _, prefix = rest.partition(" ")
    return (ChromaStore.from_url(url, collection_prefix=f"{prefix}s", index=index()),
            ChromaSaver.from_url(url, collection_prefix=f"{prefix}c"))


def calls_of(counters: Path, name: str) -> int:
    """How many times tool ``name`` was called (lines of its counter file)."""
    path = counters / f"{name}.count"
    return len(path.read_text().splitlines()) if path.exists() else 0


def keys_of(counters: Path, name: str) -> list[str]:
    """The idempotency keys tool ``name`` was called with, one per call."""
    path = counters / f"{name}.count"
    return path.read_text().splitlines() if path.exists() else []


def _count(counters: Path, name: str, runtime: ToolRuntime) -> None:
    """One line per call: the idempotency key the middleware gave the tool (as a tool reads
    it), checked against :func:`tool_idempotency_key`."""
    key = runtime.config["configurable"][IDEMPOTENCY_KEY]
    assert key == tool_idempotency_key(runtime)
    with open(counters / f"{name}.count", "a") as f:
        f.write(f"{key}\n")


def _saved_answers(saver: Any) -> set[str]:
    """The tool call ids whose ToolMessages the checkpointer already holds as pending writes
    of the thread's latest checkpoint (a finished task's writes, saved by ``put_writes``)."""
    saved = saver.get_tuple({"configurable": {"thread_id": THREAD}})
    found: set[str] = set()
    for _task, _channel, value in (saved.pending_writes or []) if saved else []:
        for m in value if isinstance(value, list) else [value]:
            if isinstance(m, ToolMessage):
                found.add(m.tool_call_id)
    return found


def _wait_for_the_others(runtime: ToolRuntime, saver: Any | None) -> None:
    """Until the round's other tool calls are in the turn record (when the run has a
    profile: without one nothing is recorded) and, with ``saver``, their results are saved
    by the checkpointer: a crash then comes strictly after two finished calls, whatever the
    machine's load (LangGraph commits a finished task's writes just after it returns)."""
    ai = runtime.state["messages"][-1]
    others = {c["id"] for c in ai.tool_calls} - {runtime.tool_call_id}
    recorded = bool((runtime.context or {}).get("profile"))
    working = AgentMemory(runtime.store).profile(PROFILE).working
    deadline = time.monotonic() + OTHERS_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        turn = working.unfinished_turn(THREAD) if recorded else None
        if ((not recorded or others <= {r.call_id for r in (turn.rows if turn else ())})
                and (saver is None or others <= _saved_answers(saver))):
            return
        time.sleep(RECORD_POLL_SECONDS)
    raise AssertionError(f"the round's other calls {sorted(others)} did not finish in time")


class Crash(BaseException):
    """What ``write_report`` raises in place of blocking (``make_tools(block=False)``): the
    in-process stand-in for a kill (a ``BaseException``, so no tool error handler takes
    it)."""


def make_tools(counters: Path, *, block: bool = True, saver: Any | None = None
               ) -> list[BaseTool]:
    """The three counting tools over the ``counters`` folder. ``block=False``: the first
    ``write_report`` call raises :class:`Crash` instead of blocking. With ``saver``, the first
    ``write_report`` waits for the other two results to be checkpointed first."""

    @tool
    def lookup_weather(city: str, runtime: ToolRuntime) -> str:
        """The weather in a city."""
        _count(counters, "lookup_weather", runtime)
        return f"Sunny in {city}, 24 C"

    @tool(response_format="content_and_artifact")
    def open_booking(guests: int, runtime: ToolRuntime) -> tuple[str, dict[str, Any]]:
        """Open a booking for some guests."""
        _count(counters, "open_booking", runtime)
        return f"Booking 42 opened for {guests}", {"resources": ["booking:42"]}

    @tool
    def write_report(title: str, runtime: ToolRuntime) -> str:
        """Write a report (in the crash test: blocks until the process is killed)."""
        _count(counters, "write_report", runtime)
        if calls_of(counters, "write_report") > 1:
            return f"Report {title!r} written"  # a later call: the crash is over
        _wait_for_the_others(runtime, saver)
        if not block:
            raise Crash("killed inside the tool round")
        (counters / BLOCKED).write_text("ok")
        time.sleep(BLOCK_SECONDS)
        return f"Report {title!r} written"

    return [lookup_weather, open_booking, write_report]


def build_agent(store: Any, saver: Any, model: Any, counters: Path, *,
                clock: Callable[[], float] | None = None, block: bool = True,
                **options: Any) -> Any:
    """``create_agent`` with the three tools and ``TurnResumeMiddleware`` over ``store``
    (``options`` go to the middleware)."""
    middleware = TurnResumeMiddleware(AgentMemory(store), clock=clock, **options)
    return create_agent(model, make_tools(counters, block=block, saver=saver),
                        middleware=[middleware],
                        context_schema=MemoryContext, checkpointer=saver, store=store)


def main() -> None:
    """The child: run the first turn until ``write_report`` blocks and the test kills it."""
    store, saver = open_backend(os.environ["RESUME_BACKEND"])
    counters = Path(os.environ["RESUME_COUNTERS"])
    model = ScriptedChatModel(responses=[first_round(), "never reached"])
    agent = build_agent(store, saver, model, counters)
    agent.invoke({"messages": [("user", "Plan my trip")]}, CONFIG, context=CONTEXT)
    raise SystemExit("the first turn returned: write_report should have blocked")


if __name__ == "__main__":
    main()
