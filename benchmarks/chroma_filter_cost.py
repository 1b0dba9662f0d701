"""What Chroma charges for a read by metadata filter against a read by id, as a collection grows.

Why it matters: a read that a sync makes on every recall must not grow with the store. On
chromadb 1.5.9 (embedded) a ``get(where={"p4": value})`` that matches 3 rows costs in
proportion to the rows in the collection (its metadata filter is a scan), while a
``get(ids=[...])`` stays flat. ``docs/architecture.md`` ("Reading the markers by key") says what
the change protocol does about it.

Run: ``python benchmarks/chroma_filter_cost.py [--sizes 1000,5000,20000,80000] [--reads 100]``.
Prints, for each size, the median milliseconds of a read by id and of two filtered reads
matching the same 3 rows (one equality, one ``$and`` of two).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from typing import Any

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import chromadb  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from _common import median, table, timed  # noqa: E402

BATCH = 1_000
RARE = [{"p4": "meta", "k": "a"}, {"p4": "meta", "k": "b"}, {"p4": "meta", "k": "c"}]


def median_ms(fn: Callable[[], Any], reads: int) -> float:
    return median([timed(fn) for _ in range(reads)]) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,5000,20000,80000",
                        help="rows in the collection at each measurement, ascending")
    parser.add_argument("--reads", type=int, default=100, help="reads timed per measurement")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        client = chromadb.PersistentClient(folder, settings=chromadb.Settings(
            anonymized_telemetry=False))
        col = client.create_collection("filter-cost", embedding_function=None)
        col.add(ids=["r1", "r2", "r3"], embeddings=[[0.1, 0.2]] * 3, metadatas=RARE)
        n = 0
        for size in sizes:
            while n < size:
                ids = [f"i{i}" for i in range(n, n + BATCH)]
                col.add(ids=ids, embeddings=[[0.1, 0.2]] * BATCH,
                        metadatas=[{"p4": f"ns{i % 100}", "k": str(i)}
                                   for i in range(n, n + BATCH)])
                n += BATCH
            by_id = median_ms(lambda: col.get(ids=["r1", "r2", "r3"], include=["metadatas"]),
                              args.reads)
            equal = median_ms(lambda: col.get(where={"p4": "meta"}, include=["metadatas"]),
                              args.reads)
            both = median_ms(lambda: col.get(where={"$and": [{"p4": "meta"}, {"k": "a"}]},
                                             include=["metadatas"]), args.reads)
            rows.append([f"{n:,}", f"{by_id:.2f}", f"{equal:.2f}", f"{both:.2f}",
                         f"{equal / by_id:.1f}x"])
    print(f"\n### Chroma reads of 3 rows (chromadb {chromadb.__version__}, embedded, "
          f"median of {args.reads})\n")
    print(table(["rows in the collection", "by id (ms)", "where equal (ms)",
                 "where $and (ms)", "equal / by id"], rows))


if __name__ == "__main__":
    main()
