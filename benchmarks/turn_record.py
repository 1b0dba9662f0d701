"""What recording a turn before the reply returns costs: the p50 of one agent turn.

    python benchmarks/turn_record.py [--turns 40]
    # the code before the record, for the same figure in the same run:
    git worktree add /tmp/before 83844c2 && PYTHONPATH=/tmp/before python benchmarks/turn_record.py

``create_memory_agent`` with a scripted model (no model time), an in-memory checkpointer and
a ``ChromaStore`` folder on tmpfs with fake 64-d embeddings; ``--turns`` turns over 4 profiles
and 8 threads, each telling one fact; the first 5 are warm-up. The post-turn jobs run in the
background meanwhile, as they do in a service. Prints the median turn in milliseconds and the
load average.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

from langgraph.checkpoint.memory import InMemorySaver

from langmem_edge import AgentMemory, ChromaStore, create_memory_agent
from langmem_edge.testing import FakeEmbeddings, ScriptedChatModel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=40)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    try:
        store = ChromaStore.from_path(folder, index={"dims": 64, "embed": FakeEmbeddings(64),
                                                     "fields": ["text"]})
        agent = create_memory_agent(ScriptedChatModel(responses=["Noted."] * args.turns),
                                    memory=AgentMemory(store), checkpointer=InMemorySaver(),
                                    memory_tools=False)
        times = []
        for i in range(args.turns):
            start = time.perf_counter()
            agent.invoke({"messages": [("user", f"My favourite number is {i}.")]},
                         {"configurable": {"thread_id": f"t{i % 8}"}},
                         context={"profile": f"user:{i % 4}"})
            times.append(time.perf_counter() - start)
        agent.memory_middleware.close()
        store.close()
        print(f"turn p50 {statistics.median(times[5:]) * 1000:.1f} ms over {args.turns - 5} "
              f"turns; load average {os.getloadavg()[0]:.2f}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
