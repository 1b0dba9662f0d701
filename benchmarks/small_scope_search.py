"""What a search of a small namespace costs ChromaStore: p50 and Chroma calls (issues 33, 34).

    python benchmarks/small_scope_search.py [--sizes 25,110,300] [--queries 60]
    PYTHONPATH=/tmp/before python benchmarks/small_scope_search.py   # another tree's code

Namespaces small enough to be ranked in process (at most ``LOCAL_RANK_ROWS``, 300, rows), as
an agent's per-user data is: for each size, a ``ChromaStore`` folder (tmpfs when there is one)
holds 30 namespaces of that many items (deterministic fake 384-d embeddings; ``--filler``
more items in 1,000 namespaces of another root, as other users' data), and
``--queries`` searches (limit 5) go to one of them, once to warm up and ``--rounds`` times
measured, by ``hybrid_search``, by a vector ``search`` and by ``keyword_search``: the p50
milliseconds and the Chroma calls per search (every ``Collection`` method counted). Run it
once per tree (``PYTHONPATH``) to compare, trees alternating; the load average is printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from _common import CHROMA_CALLS, count_chroma_calls  # noqa: E402
from langgraph.store.base import PutOp  # noqa: E402

import langmem_edge  # noqa: E402
from langmem_edge import ChromaStore  # noqa: E402
from langmem_edge.testing import FakeEmbeddings  # noqa: E402

NAMESPACES = 30


def searches(store: ChromaStore, target: tuple[str, ...]) -> dict[str, Callable[[str], object]]:
    """The three kinds of search of ``target``, by name."""
    return {
        "hybrid_search": lambda q: store.hybrid_search(target, query=q, limit=5),
        "vector search": lambda q: store.search(target, query=q, limit=5),
        "keyword_search": lambda q: store.keyword_search(target, q, limit=5),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="25,110,300", help="items a namespace holds")
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--filler", type=int, default=0,
                        help="items in other namespaces (another root) beside them")
    parser.add_argument("--folder", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    args = parser.parse_args()
    count_chroma_calls()
    load = os.getloadavg()
    print(langmem_edge.__file__)
    for size in (int(s) for s in args.sizes.split(",")):
        store = ChromaStore.from_path(
            tempfile.mkdtemp(prefix="small-scope-", dir=args.folder),
            index={"dims": 384, "embed": FakeEmbeddings(384), "fields": ["text"]})
        for c in range(NAMESPACES):
            store.batch([PutOp(("soak", f"w{c}"), f"w{c}-{i}", {"text": f"item w{c}-{i} amber"})
                         for i in range(size)])
        for start in range(0, args.filler, 500):
            store.batch([PutOp(("other", f"u{i % 1000}"), f"f{i}", {"text": f"filler {i} cedar"})
                         for i in range(start, min(start + 500, args.filler))])
        queries = [f"item w3-{i % size}" for i in range(args.queries)]
        for name, search in searches(store, ("soak", "w3")).items():
            for q in queries:  # warm-up
                search(q)
            times: list[float] = []
            before = sum(CHROMA_CALLS.values())
            for _ in range(args.rounds):
                for q in queries:
                    start = time.perf_counter()
                    search(q)
                    times.append((time.perf_counter() - start) * 1000)
            calls = (sum(CHROMA_CALLS.values()) - before) / len(times)
            print(f"{size} items a namespace (+{args.filler:,}), {name}: p50 "
                  f"{statistics.median(times):.2f} ms, {calls:.2f} Chroma calls", flush=True)
        store.close()
    print(f"load average {load[0]:.2f} before, {os.getloadavg()[0]:.2f} after")


if __name__ == "__main__":
    main()
