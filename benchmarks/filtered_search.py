"""What a filtered vector search costs ChromaStore: p50 and Chroma calls (issue 33).

    python benchmarks/filtered_search.py [--items 10000] [--namespaces 10] [--queries 60]
    PYTHONPATH=/tmp/before python benchmarks/filtered_search.py   # another tree's code

A ``ChromaStore`` folder (tmpfs when there is one) with ``--items`` items in ``--namespaces``
namespaces, values ``{"text", "kind", "flag", "n"}`` (``kind`` one of four), deterministic
fake 384-d embeddings. Then ``--queries`` searches ``search(ns, query=..., filter={"kind":
...}, limit=10)`` over the namespaces, once to warm up and ``--rounds`` times measured: the
p50 milliseconds and the Chroma calls per search (every ``Collection`` method counted). Run
it once per tree (``PYTHONPATH``) to compare; the load average is printed.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from _common import CHROMA_CALLS, count_chroma_calls  # noqa: E402
from langgraph.store.base import PutOp  # noqa: E402

import langmem_edge  # noqa: E402
from langmem_edge import ChromaStore  # noqa: E402
from langmem_edge.testing import FakeEmbeddings  # noqa: E402

KINDS = ["a", "b", "c", "d"]
COLOURS = ["red", "blue", "green"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--namespaces", type=int, default=10)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--folder", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    args = parser.parse_args()
    rng = random.Random(1)
    store = ChromaStore.from_path(tempfile.mkdtemp(prefix="filtered-", dir=args.folder),
                                  index={"dims": 384, "embed": FakeEmbeddings(384),
                                         "fields": ["text"]})
    ops = [PutOp(("bench", f"ns{i % args.namespaces}"), f"item{i}",
                 {"text": f"item {i} about {rng.choice(COLOURS)} things {i % 97}",
                  "kind": KINDS[i % 4], "flag": i % 2 == 0, "n": i})
           for i in range(args.items)]
    for start in range(0, len(ops), 500):
        store.batch(ops[start:start + 500])
    queries = [f"query {i} about {rng.choice(COLOURS)}" for i in range(args.queries)]
    count_chroma_calls()

    def one_round() -> tuple[list[float], int]:
        times = []
        before = sum(CHROMA_CALLS.values())
        for i, q in enumerate(queries):
            start = time.perf_counter()
            store.search(("bench", f"ns{i % args.namespaces}"), query=q,
                         filter={"kind": KINDS[i % 4]}, limit=10)
            times.append((time.perf_counter() - start) * 1000)
        return times, sum(CHROMA_CALLS.values()) - before

    load = os.getloadavg()
    one_round()  # warm-up
    times: list[float] = []
    calls = 0
    for _ in range(args.rounds):
        t, c = one_round()
        times += t
        calls += c
    print(f"{langmem_edge.__file__}: {args.items:,} items, filtered search p50 "
          f"{statistics.median(times):.2f} ms, {calls / len(times):.2f} Chroma calls a search; "
          f"load average {load[0]:.2f} before, {os.getloadavg()[0]:.2f} after")
    store.close()


if __name__ == "__main__":
    main()
