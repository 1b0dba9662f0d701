"""A worker process of the outage suite (``test_outage_memory.py``, long variant).

``python -m reliability.outage_worker --url U --proc N --turns T --gap S --close-after F``:
one
``create_memory_agent`` (rule-based extraction, turn resume on, an in-memory checkpointer)
on a ``ChromaStore`` at ``U``; ``T`` turns, ``S`` seconds apart, each on a thread and profile
of its own, each teaching one fact ("My favourite colour is ..."). The parent kills and
restarts the server meanwhile. A turn that raises is said again a second later (as a user
would) until it answers. The process then lives on until the file ``F`` exists (the parent
writes it once its last outage is over: a service does not stop because its database
blinked), then ``close()``, and one ``RESULT {json}`` line: the facts said (by
profile), how many turns had to be said again, and the executor's counters.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from langmem_edge import create_memory_agent
from langmem_edge.testing import ScriptedChatModel

from .helpers import open_memory, open_store

COLOURS = ["teal", "amber", "crimson", "olive", "navy", "coral", "ivory", "plum", "indigo",
           "khaki", "lilac", "ochre", "azure", "beige", "cyan", "mauve", "sepia", "umber",
           "jade", "rust"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--proc", type=int, required=True)
    parser.add_argument("--turns", type=int, required=True)
    parser.add_argument("--gap", type=float, default=0.5)
    parser.add_argument("--close-after", required=True)
    args = parser.parse_args()
    store = open_store(args.url, retry={"attempts": 2, "initial_wait": 0.05, "max_wait": 0.2})
    memory = open_memory(store)
    agent = create_memory_agent(ScriptedChatModel(responses=["Noted."] * (4 * args.turns)),
                                memory=memory, checkpointer=InMemorySaver(),
                                memory_tools=False)
    said: dict[str, str] = {}
    again = 0
    for i in range(args.turns):
        profile, colour = f"user:w{args.proc}-{i}", COLOURS[(i + args.proc) % len(COLOURS)]
        message = {"messages": [("user", f"My favourite colour is {colour}.")]}
        config: dict[str, Any] = {"configurable": {"thread_id": f"w{args.proc}-t{i}"}}
        while True:
            try:
                agent.invoke(message, config, context={"profile": profile})
                break
            except Exception:  # the turn itself failed (a crashed turn's record unreadable)
                again += 1
                time.sleep(1.0)
        said[profile] = colour
        time.sleep(args.gap)
    while not os.path.exists(args.close_after):
        time.sleep(0.2)
    stats = agent.memory_middleware.close()
    print("RESULT " + json.dumps({"said": said, "again": again,
                                  "stats": stats.__dict__}), flush=True)
    store.close()


if __name__ == "__main__":
    main()
