"""Nothing a user said is lost to an outage: agent turns against a Chroma server that is
SIGKILLed and started again while they run.

One process runs ``create_memory_agent`` turns (rule-based extraction, turn resume on, an
in-memory checkpointer) on a ``ChromaStore`` over a server the test owns. Each turn teaches
one fact ("My favourite colour is ..."); the server is killed after some of them, stays down
while more are said (recall and turn resume cannot read: the model is called without memory),
and is started again. The post-turn jobs of the turns said during the outage fail, wait in
the executor and are retried with backoff until the server answers; afterwards every fact is
in memory, each once, and nothing is pending once the middleware is closed.

Quick: one outage of :data:`DOWN_SECONDS`; long (``--long``): :data:`LONG_OUTAGES`, and
:func:`test_two_processes_through_random_outages`: two worker processes
(``outage_worker.py``) say :data:`WORKER_TURNS` facts each while the server is killed at
random points and kept down 5-30 s each time; the workers live on through the outages and
close their middleware after the last; then every fact is in memory once and no session
owes anything (``pending`` is empty).
"""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from langmem_edge import create_memory_agent
from langmem_edge.memory.transfer import list_sessions
from langmem_edge.testing import ScriptedChatModel

from .helpers import ChromaProcess, lines, long_size, open_memory, open_store, spawn

DOWN_SECONDS = 5.0
"""How long the server stays dead in each outage."""

LONG_OUTAGES = 4
"""Outages of the long variant (the quick one has one)."""

TURNS_UP, TURNS_DOWN = 2, 2
"""Turns said before each outage and during it."""

COLOURS = ["teal", "amber", "crimson", "olive", "navy", "coral", "ivory", "plum", "indigo",
           "khaki", "lilac", "ochre", "azure", "beige", "cyan", "mauve", "sepia", "umber",
           "jade", "rust"]


def _say(agent: Any, profile: str, thread: str, text: str) -> None:
    agent.invoke({"messages": [("user", text)]}, {"configurable": {"thread_id": thread}},
                 context={"profile": profile})


def test_facts_said_during_an_outage_are_remembered(tmp_path: Path, long_run: bool) -> None:
    outages = long_size(LONG_OUTAGES) if long_run else 1
    server = ChromaProcess(tmp_path / "server")
    server.start()
    try:
        store = open_store(server.url, retry={"attempts": 2, "initial_wait": 0.05,
                                             "max_wait": 0.2})
        memory = open_memory(store)
        model = ScriptedChatModel(responses=["Noted."] * 200)
        agent = create_memory_agent(model, memory=memory, checkpointer=InMemorySaver(),
                                    memory_tools=False,
                                    background=None)
        mw = agent.memory_middleware
        said: list[str] = []
        turn = 0
        for _ in range(outages):
            for _ in range(TURNS_UP):
                colour = COLOURS[turn % len(COLOURS)]
                _say(agent, f"user:p{turn}", f"t{turn}", f"My favourite colour is {colour}.")
                said.append(colour)
                turn += 1
            server.kill()
            down_at = time.monotonic()
            for _ in range(TURNS_DOWN):
                colour = COLOURS[turn % len(COLOURS)]
                _say(agent, f"user:p{turn}", f"t{turn}", f"My favourite colour is {colour}.")
                said.append(colour)
                turn += 1
            time.sleep(max(0.0, DOWN_SECONDS - (time.monotonic() - down_at)))
            server.start()
        stats = mw.close()
        assert (stats.failed, stats.set_aside, stats.pending) == (0, 0, 0), stats
        assert stats.retried >= outages * TURNS_DOWN
        for i, colour in enumerate(said):
            found = [m.text for m in memory.profile(f"user:p{i}").list()]
            assert found == [f"The user's favourite colour is {colour}."], (i, found)
        store.close()
    finally:
        server.stop()


WORKER_TURNS = 30
"""Facts each worker of the two-process run says."""

RANDOM_OUTAGES = 3
"""Outages of the two-process run, each 5-30 s at a random point."""


def test_two_processes_through_random_outages(tmp_path: Path, long_run: bool) -> None:
    if not long_run:
        pytest.skip("the two-process run is long: --long or LANGMEM_EDGE_LONG=1")
    rng = random.Random(35)
    server = ChromaProcess(tmp_path / "server")
    server.start()
    downs: list[float] = []
    stop = threading.Event()

    def outages() -> None:
        for _ in range(RANDOM_OUTAGES):
            if stop.wait(rng.uniform(3.0, 12.0)):
                return
            server.kill()
            down = rng.uniform(5.0, 30.0)
            time.sleep(down)
            server.start()
            downs.append(round(down, 1))

    try:
        over = tmp_path / "outages-over"
        workers = [spawn("reliability.outage_worker", "--url", server.url, "--proc", str(p),
                         "--turns", str(WORKER_TURNS), "--close-after", str(over))
                   for p in range(2)]
        chaos = threading.Thread(target=outages, daemon=True)
        chaos.start()
        chaos.join()
        over.touch()
        results = []
        for worker in workers:
            assert worker.stdout is not None
            found = [json.loads(line[len("RESULT "):]) for line in lines(worker.stdout)
                     if line.startswith("RESULT ")]
            assert worker.wait(timeout=900) == 0 and len(found) == 1
            results.append(found[0])
        store = open_store(server.url)
        memory = open_memory(store)
        said = {p: c for r in results for p, c in r["said"].items()}
        missing = []
        for profile, colour in said.items():
            texts = [m.text for m in memory.profile(profile).list()]
            if texts != [f"The user's favourite colour is {colour}."]:
                missing.append((profile, texts))
        pending = [s for p in said for s in list_sessions(memory, p) if s.pending]
        print(json.dumps({"outages_s": downs, "facts": len(said), "wrong": len(missing),
                          "pending": len(pending), "again": [r["again"] for r in results],
                          "stats": [r["stats"] for r in results]}))
        assert missing == [] and pending == []
        assert all(r["stats"]["failed"] == 0 and r["stats"]["pending"] == 0 for r in results)
        store.close()
    finally:
        stop.set()
        server.stop()
