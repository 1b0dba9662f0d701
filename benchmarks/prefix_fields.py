"""What the namespace prefix fields cost a read: ``p1``..``p{d}`` scalars (today) against one
list of the prefixes, on real memory-record rows (issues 33, 34).

    python benchmarks/prefix_fields.py [--profiles 20,1000] [--memories 100] [--reads 30]

For each ``--profiles`` count: ``AgentMemory.remember_many`` writes ``--memories`` memories in
each profile of a ``ChromaStore`` folder (fake 64-d embeddings), then every item row is copied
into a second collection of the same folder whose ``p1``..``p{d}`` fields are one list,
``pp`` (each prefix joined, as the scalars hold them), and SQLite's planner statistics are
taken. Then ``--reads`` of a random profile by each layout, interleaved:

- ``profile read``: the profile's active records with their vectors (a recall's read: the
  prefix and ``live``; ``p4 == X`` against ``pp $contains X``);
- ``three listings``: three profiles' record namespaces in one read (``p4 $in [...]`` against
  an ``$or`` of three ``$contains``), ids only;
- ``vector query``: k=10 neighbours of a random vector within the profile's records
  (``where`` on the prefix), ids and distances.

Printed: p50 milliseconds of each, the ratio list / scalars, and the load average.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from _common import table  # noqa: E402
from memory_scale import DIMS, build  # noqa: E402

from langmem_edge._sqlite_stats import refresh  # noqa: E402
from langmem_edge.store import filters  # noqa: E402

PAGE = 2000


def listed(meta: dict[str, Any]) -> dict[str, Any]:
    """A row's metadata with its ``p1``..``p{d}`` fields as one list, ``pp``."""
    depth = int(meta.get("nd") or 0)
    out = {k: v for k, v in meta.items()
           if not (k[:1] == "p" and k[1:].isdigit())}
    if depth:
        out["pp"] = [meta[f"p{d}"] for d in range(1, depth + 1)]
    return out


def run(folder: str, profiles: int, memories: int, reads: int, rng: random.Random
        ) -> list[list[object]]:
    store, _ = build(folder, profiles, memories, 1)
    scalars = store._items
    lists = store._client.create_collection(scalars.name + "-pp", embedding_function=None,
                                            metadata={"hnsw:space": "cosine"})
    offset = 0
    while True:
        page = scalars.get(include=["metadatas", "documents", "embeddings"], limit=PAGE,
                           offset=offset)
        if page["ids"]:
            lists.add(ids=page["ids"], metadatas=[listed(m) for m in page["metadatas"]],
                      documents=page["documents"], embeddings=list(page["embeddings"]))
        if len(page["ids"]) < PAGE:
            break
        offset += PAGE
    refresh(folder)
    sample = scalars.get(where={"nd": 4}, limit=1, include=["metadatas"])["metadatas"][0]
    root = sample["p4"].rsplit("\x1f", 2)[0]

    def ns(p: int) -> str:
        return f"{root}\x1fuser:{p}\x1fmemories"

    def prefix(p: int, as_list: bool) -> dict[str, Any]:
        return {"pp": {"$contains": ns(p)}} if as_list else {"p4": ns(p)}

    def live(p: int) -> dict[str, Any]:
        return {filters.STRINGS_FIELD: {"$contains": filters.string_entry("live", f"user:{p}")}}

    def three(ps: list[int], as_list: bool) -> dict[str, Any]:
        if as_list:
            return {"$or": [{"pp": {"$contains": ns(p)}} for p in ps]}
        return {"p4": {"$in": [ns(p) for p in ps]}}

    ops: dict[str, Callable[[Any, bool, list[int], list[float]], object]] = {
        "profile read": lambda col, as_list, ps, q: col.get(
            where={"$and": [prefix(ps[0], as_list), live(ps[0])]},
            include=["documents", "embeddings"]),
        "three listings (ids)": lambda col, as_list, ps, q: col.get(
            where=three(ps, as_list), include=[]),
        "vector query k=10": lambda col, as_list, ps, q: col.query(
            query_embeddings=[q], n_results=10, where=prefix(ps[0], as_list),
            include=["distances"]),
    }
    layouts = {"scalars": (scalars, False), "list": (lists, True)}
    times: dict[tuple[str, str], list[float]] = {}
    for _i in range(reads):
        ps = rng.sample(range(profiles), 3)
        q = [rng.gauss(0, 1) for _ in range(DIMS)]
        for op, fn in ops.items():
            order = list(layouts.items())
            rng.shuffle(order)
            for name, (col, as_list) in order:
                start = time.perf_counter()
                fn(col, as_list, ps, q)
                times.setdefault((op, name), []).append((time.perf_counter() - start) * 1e3)
    out = []
    for op in ops:
        old = statistics.median(times[(op, "scalars")])
        new = statistics.median(times[(op, "list")])
        out.append([profiles * memories, op, f"{old:.2f}", f"{new:.2f}", f"{new / old:.2f}x"])
    store.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profiles", default="20,1000")
    parser.add_argument("--memories", type=int, default=100)
    parser.add_argument("--reads", type=int, default=30)
    parser.add_argument("--folder", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    before = os.getloadavg()
    rows: list[list[object]] = []
    for profiles in [int(x) for x in args.profiles.split(",")]:
        folder = tempfile.mkdtemp(prefix="prefix-fields-", dir=args.folder)
        try:
            rows += run(folder, profiles, args.memories, args.reads, rng)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    print(table(["memories", "read", "p1..p4 scalars p50 ms", "pp list p50 ms",
                 "list / scalars"], rows))
    print(f"load average before {before}, after {os.getloadavg()}")


if __name__ == "__main__":
    main()
