"""Reply latency of an agent with MemoryMiddleware vs. the same agent without it, while the
post-turn extractor takes 1 s (it runs in the background, so the reply must not wait for it).

Both agents use a fake chat model that answers in ``MODEL_SECONDS`` (a stand-in for a real
LLM's latency); the memory's extraction model sleeps ``EXTRACTOR_SECONDS`` per call. Each
turn is a new user message on its own thread of one profile; turns of both agents alternate in
the same run, and the table gives medians and their ratio (target: at most 1.1x). On
ChromaStore it also prints the Chroma calls a reply makes (those of the reply's own thread:
background jobs are not counted).

    PYTHONPATH=. python benchmarks/agent_bench.py [--turns 20] [--store memory|chroma]
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _common import median, table, timed  # noqa: E402
from episodic_helpers import scripted, system_text  # noqa: E402  (the scripted extraction model)
from langchain.agents import create_agent  # noqa: E402
from langchain_core.messages import BaseMessage  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402

from langmem_edge import AgentMemory, MemoryMiddleware  # noqa: E402
from langmem_edge.graphs import BackgroundExecutor  # noqa: E402
from langmem_edge.testing import FakeEmbeddings, ScriptedChatModel  # noqa: E402

MODEL_SECONDS = 0.3
"""Seconds the fake agent model takes to answer."""
EXTRACTOR_SECONDS = 1.0
"""Seconds the fake extractor takes per call."""
TARGET_RATIO = 1.1
"""Reply latency with the middleware over without it, at most."""


def _slow_model(seconds: float, reply: Any) -> ScriptedChatModel:
    def respond(messages: list[BaseMessage]) -> Any:
        time.sleep(seconds)
        return reply(messages) if callable(reply) else reply

    return ScriptedChatModel(respond=respond)


def _extractor() -> ScriptedChatModel:
    """The memory's model: extraction takes ``EXTRACTOR_SECONDS``; every other call (checks,
    summaries, and whatever recall would ask of it) ``MODEL_SECONDS``, as a real model's."""

    def propose(messages: list[BaseMessage]) -> list[dict[str, Any]]:
        time.sleep(EXTRACTOR_SECONDS)
        return [{"text": "The user likes benchmarks.", "fact_type": "preference",
                 "message_numbers": [1]}]

    answer = scripted(propose).respond
    assert answer is not None

    def respond(messages: list[BaseMessage]) -> Any:
        if not system_text(messages).startswith("You extract"):
            time.sleep(MODEL_SECONDS)
        return answer(messages)

    return ScriptedChatModel(respond=respond)


class CallCounter:
    """Counts the Chroma calls a ChromaStore makes on one thread (wraps its caller)."""

    def __init__(self, store: Any) -> None:
        self.calls = 0
        self.thread = threading.get_ident()
        self._real = store._call
        store._call = self

    def __call__(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        if threading.get_ident() == self.thread:
            self.calls += 1
        return self._real(fn, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--store", choices=["memory", "chroma"], default="memory",
                        help="InMemoryStore, or an embedded ChromaStore in a temporary folder")
    parser.add_argument("--delay", type=float, default=None,
                        help="the executor's debounce delay in seconds (default its own, 2 s); "
                        "a long one keeps every job waiting until close(), which isolates "
                        "the middleware's own cost on the reply's path")
    args = parser.parse_args()
    index = {"dims": 64, "embed": FakeEmbeddings(64), "fields": ["text"]}
    if args.store == "chroma":
        import tempfile

        from langmem_edge import ChromaStore

        store: Any = ChromaStore.from_path(tempfile.mkdtemp(prefix="agent-bench-"), index=index)
    else:
        store = InMemoryStore(index=index)
    memory = AgentMemory(store, model=_extractor(),
                         config={"verification": {"enabled": False}})
    background = None if args.delay is None else BackgroundExecutor(
        {"delay_seconds": args.delay})
    mw = MemoryMiddleware(memory, background=background)
    with_mw = create_agent(_slow_model(MODEL_SECONDS, "ok"), [], middleware=[mw],
                           checkpointer=InMemorySaver())
    without = create_agent(_slow_model(MODEL_SECONDS, "ok"), [], checkpointer=InMemorySaver())
    memory.profile("bench").remember("The user likes short answers.", key="preference.style")
    counter = CallCounter(store) if args.store == "chroma" else None
    plain, memo, per_reply = [], [], []
    for i in range(args.turns):
        turn = {"messages": [("user", f"I like benchmark number {i}. How fast is this?")]}
        run = {"configurable": {"thread_id": f"t{i}"}}
        for agent, samples in ((without, plain), (with_mw, memo)):
            before = counter.calls if counter else 0
            samples.append(timed(lambda a=agent, t=turn, r=run: a.invoke(
                t, r, context={"profile": "bench"})))
            if counter and agent is with_mw:
                per_reply.append(counter.calls - before)
    pending = mw.stats().pending
    close_s = timed(mw.close if background is None else background.close)
    stats = mw.stats()
    ratio = median(memo) / median(plain)
    print(table(["agent", "reply p50 (ms)"],
                [["without middleware", f"{median(plain) * 1000:.1f}"],
                 ["with MemoryMiddleware", f"{median(memo) * 1000:.1f}"]]))
    print(f"\nratio {ratio:.3f} (target <= {TARGET_RATIO}); extractor {EXTRACTOR_SECONDS} s a "
          f"call, model {MODEL_SECONDS} s; {args.turns} turns; store {args.store}; executor delay "
          f"{'default' if args.delay is None else args.delay} s")
    if per_reply:
        print(f"Chroma calls per reply with the middleware: median {median(per_reply):g}, "
              f"max {max(per_reply)}")
    print(f"jobs pending when the last reply returned: {pending}; close() ran them in "
          f"{close_s:.1f} s; completed {stats.completed}, failed {stats.failed}")


if __name__ == "__main__":
    main()
