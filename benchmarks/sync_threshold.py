"""What Chroma's ``hnsw:sync_threshold`` does to the cost of writes (issues 33 and 34).

Chroma's local and single-node modes keep each write in a log (SQLite) and save a collection's
vector index every ``sync_threshold`` writes (Chroma's default 1,000). Until the save, every
new write rereads the log since the last save, so a write's cost climbs with that backlog and
drops after each save: the soak's puts and remembers showed this saw-tooth, 9 -> 41 ms.
``langmem_edge._chroma.SYNC_THRESHOLD`` sets the threshold of every collection the store and
the saver open.

Candidates: one ``ChromaStore`` folder per threshold, each filled with ``--items`` items (10
namespaces, 384-d seeded random vectors, never a model); then, in blocks of ``--block``
operations taken in turn across the candidates, a put (half new keys, half changed texts) and a
vector search (k=10 in one namespace) each. ``--writes`` puts a candidate in all: at least two
of the largest threshold's cycles, so each figure covers whole saw-teeth. Reported: p50, mean
and p99 of the puts (the mean carries the saves), p50 of the searches, and the Chroma log's
rows left after the run.

Run (a few minutes on 2 cores; folders on ``/dev/shm`` when it exists)::

    python benchmarks/sync_threshold.py                       # 2,000 and 20,000 items
    python benchmarks/sync_threshold.py --sizes 2000 --thresholds 1000,100 --writes 2000
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median, percentile, table  # noqa: E402
from langgraph.store.base import PutOp  # noqa: E402
from store_peers import LookupEmbeddings, make_value  # noqa: E402

from langmem_edge import ChromaStore, _chroma  # noqa: E402

NAMESPACES = 10
DIMS = 384
LOAD_BATCH = 500


def open_candidate(threshold: int, folder: str, embed: LookupEmbeddings) -> ChromaStore:
    """A store whose collections save their index each ``threshold`` writes."""
    _chroma.SYNC_THRESHOLD = threshold
    return ChromaStore.from_path(folder, index={"dims": DIMS, "embed": embed,
                                                "fields": ["text"]})


def log_rows(folder: str) -> int:
    """Rows of Chroma's write log (``embeddings_queue``) in ``folder``."""
    with sqlite3.connect(os.path.join(folder, "chroma.sqlite3")) as db:
        return int(db.execute("select count(*) from embeddings_queue").fetchone()[0])


def run(args: argparse.Namespace) -> None:
    thresholds = [int(t) for t in args.thresholds.split(",")]
    root = tempfile.mkdtemp(prefix="sync-threshold-",
                            dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    print(f"load average at start: {os.getloadavg()}")
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            rng = random.Random(7)
            items = [((f"ns{i % NAMESPACES}",), f"k{i}", make_value(rng, i)) for i in range(size)]
            embed = LookupEmbeddings(DIMS)
            stores: dict[int, ChromaStore] = {}
            folders: dict[int, str] = {}
            for threshold in thresholds:
                folders[threshold] = os.path.join(root, f"{size}-{threshold}")
                store = stores[threshold] = open_candidate(threshold, folders[threshold], embed)
                for start in range(0, size, LOAD_BATCH):
                    store.batch([PutOp(*item) for item in items[start:start + LOAD_BATCH]])
            puts: dict[int, list[float]] = {t: [] for t in thresholds}
            searches: dict[int, list[float]] = {t: [] for t in thresholds}
            written = 0
            while written < args.writes:
                cases = []
                for n in range(args.block):
                    i = written + n
                    if i % 2:
                        ns, key, _ = items[rng.randrange(size)]
                        cases.append((ns, key, make_value(rng, i, "changed ")))
                    else:
                        cases.append(((f"ns{i % NAMESPACES}",), f"new{i}", make_value(rng, i)))
                queries = [f"query {rng.random()}" for _ in range(args.block)]
                embed.prepare([c[2]["text"] for c in cases] + queries)
                order = thresholds[:]
                rng.shuffle(order)
                for threshold in order:
                    store = stores[threshold]
                    for (ns, key, value), query in zip(cases, queries, strict=True):
                        began = time.perf_counter()
                        store.put(ns, key, value)
                        middle = time.perf_counter()
                        store.search(ns, query=query, limit=10)
                        puts[threshold].append(middle - began)
                        searches[threshold].append(time.perf_counter() - middle)
                written += args.block
            rows = []
            for threshold in thresholds:
                stores[threshold].close()
                p = puts[threshold]
                rows.append([f"{size:,}", f"{threshold:,}", f"{1000 * median(p):.2f}",
                             f"{1000 * statistics.mean(p):.2f}",
                             f"{1000 * percentile(p, 99):.1f}",
                             f"{1000 * median(searches[threshold]):.2f}",
                             log_rows(folders[threshold])])
            print(table(["items", "sync_threshold", "put p50 ms", "put mean ms", "put p99 ms",
                         "search p50 ms", "log rows left"], rows), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"load average at end: {os.getloadavg()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="2000,20000", help="items a store holds first")
    parser.add_argument("--thresholds", default="1000,200,100,50",
                        help="sync_threshold candidates")
    parser.add_argument("--writes", type=int, default=2000, help="puts each candidate")
    parser.add_argument("--block", type=int, default=100,
                        help="operations a candidate makes before the next one's turn")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
