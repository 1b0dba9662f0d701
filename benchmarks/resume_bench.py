"""Turn-resume overhead: one agent turn with and without ``TurnResumeMiddleware``.

A turn is ``create_agent`` with a scripted model: one tool round of three quick tools, then
the final answer, on a new thread each time. With the middleware the turn also reads the turn
record before the run, writes one row per tool call, stamps the round and deletes the record
after the final answer; a middleware with the same hooks doing nothing measures what the
extra graph nodes (checkpoints) cost by themselves. The agents run round-robin inside each
round, on InMemoryStore + InMemorySaver and on ChromaStore + ChromaSaver (folders). Prints the
medians in milliseconds and the ratios.

Usage::

    python benchmarks/resume_bench.py            # 30 turns per agent and backend
    python benchmarks/resume_bench.py --n 10
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median, table, timed  # noqa: E402
from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import AgentMiddleware  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402

from langmem_edge import AgentMemory, ChromaSaver, ChromaStore  # noqa: E402
from langmem_edge.graphs.resume import TurnResumeMiddleware  # noqa: E402
from langmem_edge.testing import FakeEmbeddings, ScriptedChatModel  # noqa: E402
from langmem_edge.tools import MemoryContext  # noqa: E402

TOOLS_PER_ROUND = 3
KINDS = ("none", "hooks", "resume")


@tool
def lookup(item: int) -> str:
    """Look an item up."""
    return f"item {item}: ok"


def round_of_tools() -> AIMessage:
    return AIMessage(content="", tool_calls=[
        {"name": "lookup", "args": {"item": i}, "id": f"call_{i}"}
        for i in range(TOOLS_PER_ROUND)])


class HooksOnly(AgentMiddleware):  # type: ignore[type-arg]
    """The same hooks doing nothing: what the extra graph nodes cost by themselves."""

    def before_agent(self, state: Any, runtime: Any) -> None:
        return None

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return handler(request)

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        return handler(request)


def agent(store: Any, saver: Any, kind: str) -> Any:
    def respond(messages: Any) -> Any:  # a tool round after the user, the answer after tools
        return round_of_tools() if messages[-1].type == "human" else "done"

    middleware = {"none": [], "hooks": [HooksOnly()],
                  "resume": [TurnResumeMiddleware(AgentMemory(store))]}[kind]
    return create_agent(ScriptedChatModel(respond=respond), [lookup], middleware=middleware,
                        context_schema=MemoryContext, checkpointer=saver, store=store)


def backends(folder: Path) -> dict[str, tuple[Any, Any]]:
    index = {"dims": 64, "embed": FakeEmbeddings(64), "fields": ["text"]}
    return {
        "InMemoryStore + InMemorySaver": (InMemoryStore(index=index), InMemorySaver()),
        "ChromaStore + ChromaSaver (folder)": (
            ChromaStore.from_path(str(folder / "store"), index=index),
            ChromaSaver.from_path(str(folder / "saver"))),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=30, help="turns per agent and backend")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name, (store, saver) in backends(Path(folder)).items():
            agents = {kind: agent(store, saver, kind) for kind in KINDS}
            samples: dict[str, list[float]] = {kind: [] for kind in KINDS}
            for i in range(args.n + 1):  # the first round warms up, uncounted
                for flag, graph in agents.items():
                    config = {"configurable": {"thread_id": f"t{uuid.uuid4().hex[:8]}"}}
                    took = timed(lambda g=graph, c=config: g.invoke(
                        {"messages": [("user", "go")]}, c, context={"profile": "bench"}))
                    if i:
                        samples[flag].append(took * 1000)
            p50 = {kind: median(samples[kind]) for kind in KINDS}
            rows.append([name, *(f"{p50[k]:.1f}" for k in KINDS),
                         f"{p50['resume'] / p50['none']:.2f}",
                         f"{p50['resume'] / p50['hooks']:.2f}"])
    print(table(["backend", "p50 ms, no middleware", "p50 ms, the same hooks doing nothing",
                 "p50 ms, TurnResumeMiddleware", "resume / none", "resume / hooks"], rows))


if __name__ == "__main__":
    main()
