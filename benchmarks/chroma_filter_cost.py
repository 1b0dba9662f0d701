"""What Chroma charges for a read by metadata filter against a read by id, as a collection grows.

Why it matters: a read that a sync makes on every recall must not grow with the store. On
chromadb 1.5.9 (embedded) a ``get(where={"p4": value})`` that matches 3 rows costs in
proportion to the rows in the collection (its metadata filter is a scan), while a
``get(ids=[...])`` stays flat. ``docs/architecture.md`` ("Reading the markers by key") says what
the change protocol does about it.

The same holds for a vector query filtered to a namespace: ``--vectors`` compares Chroma's
filtered ``query`` with what ``ChromaStore`` does for a prefix of at most
``store.search.LOCAL_RANK_ROWS`` vector rows (read them with ``get(where=...)`` and rank them
by cosine distance in process), for namespaces of several sizes in a growing collection.

And several listings in one batch: ``--in`` compares three filtered reads, one per namespace,
with the one read ``ChromaStore`` makes for them (``{"p4": {"$in": [...]}}``, split in
process; ``store/listing.py`` ``_list_together``).

And what SQLite's planner statistics change: ``--analyze`` times the same reads on one folder
without statistics (as Chroma leaves a folder) and after ``ANALYZE`` (as ``ChromaStore`` and
``ChromaSaver`` keep an embedded folder: ``langmem_edge/_sqlite_stats.py``).

Run: ``python benchmarks/chroma_filter_cost.py [--sizes 1000,5000,20000,80000] [--reads 100]``.
Prints, for each size, the median milliseconds of a read by id and of two filtered reads
matching the same 3 rows (one equality, one ``$and`` of two).
``python benchmarks/chroma_filter_cost.py --vectors [--sizes 20000,60000] [--dims 384]``
prints, for each size and namespace size, the median milliseconds of a filtered query for 40
neighbours and of the in-process ranking.
``python benchmarks/chroma_filter_cost.py --in [--sizes 20000,60000]`` prints the median
milliseconds of the three reads and of the one.
``python benchmarks/chroma_filter_cost.py --analyze [--sizes 20000,60000]`` prints, for each
size and read, the median milliseconds without and with statistics.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from typing import Any

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import chromadb  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _common import median, table, timed  # noqa: E402

from langmem_edge._sqlite_stats import refresh  # noqa: E402
from langmem_edge.retrieval.vectors import cosine_distances  # noqa: E402

BATCH = 1_000
RARE = [{"p4": "meta", "k": "a"}, {"p4": "meta", "k": "b"}, {"p4": "meta", "k": "c"}]


def median_ms(fn: Callable[[], Any], reads: int) -> float:
    return median([timed(fn) for _ in range(reads)]) * 1000


NAMESPACES = (20, 200, 1000)
"""Vector rows of the namespaces ``--vectors`` ranks (the rest of the collection: 100 others)."""


def filtered_query(col: Any, where: dict[str, str], query: list[float]) -> Any:
    """Chroma's answer: a query for 40 neighbours with the namespace's ``where``."""
    return col.query(query_embeddings=[query], n_results=40, where=where, include=["distances"])


def ranked_in_process(col: Any, where: dict[str, str], query: list[float]) -> list[float]:
    """ChromaStore's answer for a small prefix: its vectors read by ``where``, ranked here."""
    got = col.get(where=where, include=["embeddings"])
    return sorted(cosine_distances(got["embeddings"], query))[:40]


def vector_rows(rows: list[list[str]], sizes: list[int], dims: int, reads: int,
                statistics: bool = False) -> None:
    """``--vectors``: a filtered query against reading the namespace's vectors and ranking them
    (with ``statistics``, on a folder whose planner statistics were taken, as the store keeps
    an embedded folder)."""
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as folder:
        client = chromadb.PersistentClient(folder, settings=chromadb.Settings(
            anonymized_telemetry=False))
        col = client.create_collection("vector-cost", embedding_function=None,
                                       metadata={"hnsw:space": "cosine"})
        for k in NAMESPACES:
            for i in range(0, k, BATCH):
                m = min(BATCH, k - i)
                col.add(ids=[f"s{k}-{j}" for j in range(i, i + m)],
                        embeddings=rng.random((m, dims)).tolist(),
                        metadatas=[{"p1": f"small{k}"}] * m)
        n = 0
        for size in sizes:
            while n < size:
                col.add(ids=[f"i{i}" for i in range(n, n + BATCH)],
                        embeddings=rng.random((BATCH, dims)).tolist(),
                        metadatas=[{"p1": f"ns{i % 100}"} for i in range(n, n + BATCH)])
                n += BATCH
            if statistics:
                refresh(folder, min_rows=1, growth=1.0)
            query = rng.random(dims).tolist()
            for k in NAMESPACES:
                where = {"p1": f"small{k}"}
                chroma = median_ms(partial(filtered_query, col, where, query), reads)
                own = median_ms(partial(ranked_in_process, col, where, query), reads)
                rows.append([f"{n:,}", f"{k:,}", f"{chroma:.1f}", f"{own:.1f}",
                             f"{chroma / own:.1f}x"])


def listing_rows(rows: list[list[str]], sizes: list[int], reads: int) -> None:
    """``--in``: three namespaces read one by one against one ``$in`` read."""
    with tempfile.TemporaryDirectory() as folder:
        client = chromadb.PersistentClient(folder, settings=chromadb.Settings(
            anonymized_telemetry=False))
        col = client.create_collection("listing-cost", embedding_function=None)
        names = ["writers", "access", "image"]
        for name in names:
            col.add(ids=[f"{name}{i}" for i in range(10)], embeddings=[[0.1, 0.2]] * 10,
                    metadatas=[{"p4": name, "k": str(i)} for i in range(10)])
        n = 0
        for size in sizes:
            while n < size:
                col.add(ids=[f"i{i}" for i in range(n, n + BATCH)],
                        embeddings=[[0.1, 0.2]] * BATCH,
                        metadatas=[{"p4": f"ns{i % 100}", "k": str(i)}
                                   for i in range(n, n + BATCH)])
                n += BATCH
            apart = median_ms(lambda: [col.get(where={"p4": name}, include=["metadatas"])
                                       for name in names], reads)
            together = median_ms(lambda: col.get(where={"p4": {"$in": names}},
                                                 include=["metadatas"]), reads)
            rows.append([f"{n:,}", f"{apart:.1f}", f"{together:.1f}",
                         f"{apart / together:.1f}x"])


_DROP = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("DROP TABLE IF EXISTS sqlite_stat1")
db.commit()
"""


def drop_statistics(folder: str) -> None:
    """Remove a folder's planner statistics (in a child: see ``_sqlite_stats``)."""
    subprocess.run([sys.executable, "-c", _DROP, os.path.join(folder, "chroma.sqlite3")],
                   check=True)


def analyze_rows(rows: list[list[str]], sizes: list[int], reads: int) -> None:
    """``--analyze``: reads by filter without planner statistics, then with them."""
    with tempfile.TemporaryDirectory() as folder:
        client = chromadb.PersistentClient(folder, settings=chromadb.Settings(
            anonymized_telemetry=False))
        col = client.create_collection("analyze-cost", embedding_function=None)
        col.add(ids=["r1", "r2", "r3"], embeddings=[[0.1, 0.2]] * 3,
                metadatas=[{**m, "g": float(i)} for i, m in enumerate(RARE)])
        names = ["writers", "access", "image"]
        for name in names:
            col.add(ids=[f"{name}{i}" for i in range(10)], embeddings=[[0.1, 0.2]] * 10,
                    metadatas=[{"p4": name, "k": str(i), "g": float(i)} for i in range(10)])
        reads_of: dict[str, Callable[[], Any]] = {
            "3 rows, where p4 equal": lambda: col.get(where={"p4": "meta"},
                                                      include=["metadatas"]),
            "3 rows, p4 and a range": lambda: col.get(
                where={"$and": [{"p4": "meta"}, {"g": {"$lt": 2.0}}]}, include=["metadatas"]),
            "30 rows, p4 $in three": lambda: col.get(where={"p4": {"$in": names}},
                                                     include=["metadatas"]),
            "1% of the rows, where p4 equal": lambda: col.get(where={"p4": "ns7"},
                                                              include=["metadatas"]),
            "every row, a range (ids only)": lambda: col.get(where={"g": {"$gt": -1.0}},
                                                             include=[]),
        }
        n = 0
        for size in sizes:
            while n < size:
                col.add(ids=[f"i{i}" for i in range(n, n + BATCH)],
                        embeddings=[[0.1, 0.2]] * BATCH,
                        metadatas=[{"p4": f"ns{i % 100}", "k": str(i), "g": float(i)}
                                   for i in range(n, n + BATCH)])
                n += BATCH
            drop_statistics(folder)
            without = {name: median_ms(fn, reads) for name, fn in reads_of.items()}
            refresh(folder, min_rows=1, growth=1.0)
            for name, fn in reads_of.items():
                with_ = median_ms(fn, reads)
                rows.append([f"{n:,}", name, f"{without[name]:.2f}", f"{with_:.2f}",
                             f"{without[name] / with_:.1f}x"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,5000,20000,80000",
                        help="rows in the collection at each measurement, ascending")
    parser.add_argument("--reads", type=int, default=100, help="reads timed per measurement")
    parser.add_argument("--vectors", action="store_true",
                        help="filtered vector queries against ranking in process")
    parser.add_argument("--in", dest="listings", action="store_true",
                        help="three filtered reads against one $in read")
    parser.add_argument("--analyze", action="store_true",
                        help="filtered reads without and with SQLite's planner statistics")
    parser.add_argument("--statistics", action="store_true",
                        help="--vectors on a folder with planner statistics (as the store keeps)")
    parser.add_argument("--dims", type=int, default=384, help="vector dimensions (--vectors)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows: list[list[str]] = []
    if args.analyze:
        analyze_rows(rows, sizes, args.reads)
        print(f"\n### Filtered reads without and with planner statistics (chromadb "
              f"{chromadb.__version__}, embedded, median of {args.reads})\n")
        print(table(["rows in the collection", "read", "without statistics (ms)",
                     "with statistics (ms)", "without / with"], rows))
        return
    if args.listings:
        listing_rows(rows, sizes, args.reads)
        print(f"\n### Three namespaces of 10 rows read (chromadb {chromadb.__version__}, "
              f"embedded, median of {args.reads})\n")
        print(table(["rows in the collection", "three reads (ms)", "one $in read (ms)",
                     "three / one"], rows))
        return
    if args.vectors:
        vector_rows(rows, sizes, args.dims, args.reads, statistics=args.statistics)
        print(f"\n### A query for 40 neighbours in one namespace (chromadb "
              f"{chromadb.__version__}, embedded, {args.dims} dims, median of {args.reads}"
              f"{', planner statistics taken' if args.statistics else ''})\n")
        print(table(["rows in the collection", "rows in the namespace",
                     "Chroma filtered query (ms)", "read and rank in process (ms)",
                     "query / in process"], rows))
        return
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
