"""How many access-count items a process leaves when its profiles are loaded again and again.

Why it matters: a full load of a profile reads every access-count item it has
(``index/changes.py`` ``plan_reload``), and an application with more active profiles than
``MemoryConfig.index.cached_profiles`` loads them again all the time. Each process writes one
item per memory it counted (``memory/index/access.py``); if that writer changed with every
load, the items (and every later load's read) would grow with the loads, not the memories.

The mix is the growing soak's memory part (``tests/reliability/test_soak.py``): 40 profiles
over 16 cached indexes, 80 % recalls (5 results) and 20 % ``remember`` under ~100 keys, words
drawn from 2,500, seed 17, on an ``InMemoryStore`` with fake embeddings (the count does not
depend on the store). At the end the pending bumps are flushed.

Run: ``python benchmarks/access_count_items.py [--operations 20000] [--profiles 40]``.
Prints the count items, the distinct writers among them and the records.
"""

from __future__ import annotations

import argparse
import random
import time

from langgraph.store.memory import InMemoryStore

from langmem_edge import AgentMemory
from langmem_edge.testing import FakeEmbeddings

DIMS = 64
WORDS = 2_500


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--operations", type=int, default=20_000)
    parser.add_argument("--profiles", type=int, default=40)
    args = parser.parse_args()
    store = InMemoryStore(index={"dims": DIMS, "embed": FakeEmbeddings(DIMS),
                                 "fields": ["text"]})
    memory = AgentMemory(store, namespace=("bench",), embeddings=FakeEmbeddings(DIMS))
    rng = random.Random(17)
    began = time.monotonic()
    for _ in range(args.operations):
        profile = memory.profile(f"user{rng.randrange(args.profiles)}")
        word = f"w{rng.randrange(WORDS)}"
        if rng.random() < 0.2:
            profile.remember(f"fact {word} cedar", key=f"topic.{word[:3]}")
        else:
            profile.recall(f"fact {word}", limit=5)
    memory.flush()
    items = store.search(("bench",), limit=10**7)
    counts = [it for it in items if "access" in it.namespace]
    records = sum(1 for it in items if "memories" in it.namespace)
    print(f"{args.operations} operations over {args.profiles} profiles "
          f"({memory.config.index.cached_profiles} cached): {len(counts)} access-count items, "
          f"{len({it.key for it in counts})} writers, {records} records "
          f"({time.monotonic() - began:.0f} s)")


if __name__ == "__main__":
    main()
