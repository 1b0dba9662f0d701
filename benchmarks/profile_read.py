"""A profile's read in one Chroma call: which ``where`` keeps it on Chroma's index (issue 34).

    python benchmarks/profile_read.py [--profiles 20,1000] [--memories 100] [--reads 60]

A recall reads a profile's active records (``p4`` = its records' namespace and the ``live``
filter pushed down) and its access-count rows (``p4`` = their namespace). The candidates, as
raw ``Collection.get`` calls on the rows collection of a store built as
``benchmarks/memory_scale.py`` builds it (``--profiles`` x ``--memories``, fake 64-d vectors,
one recall on each profile so each has its access-count row):

- ``two gets``: one ``get`` each (the store before the thirty-second session);
- ``$or``: one ``get`` whose ``where`` is the ``$or`` of the two;
- ``$in + $or``: one ``get``, ``{"$and": [{"p4": {"$in": [both]}}, {"$or": [both]}]}``
  (what ``ChromaStore`` sends since: ``store/listing.py`` ``_list_together``);
- ``records only``: the first ``get`` alone (what one read costs).

Each read asks for documents and embeddings, as the store does. The candidates run in turn on a
random profile each time (rotating order); printed: p50 ms, the ratio to ``two gets``, the rows
returned (the same for every candidate), and the load average.
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

from _common import table  # noqa: E402
from memory_scale import build  # noqa: E402

from langmem_edge._chroma import join_labels  # noqa: E402
from langmem_edge.store.filters import string_entry  # noqa: E402

Where = dict[str, Any]


def candidates(root: tuple[str, ...]) -> dict[str, Callable[[str], list[Where]]]:
    """Each candidate: the ``where`` of each of its reads, for profile ``user``."""

    def records(user: str) -> Where:
        return {"$and": [{"p4": join_labels((*root, user, "memories"))},
                         {"$or": [{"fs": {"$contains": string_entry("live", user)}},
                                  {"fx": 1}]}]}

    def counts(user: str) -> Where:
        return {"p4": join_labels((*root, user, "access"))}

    def in_and_or(user: str) -> Where:
        both = sorted(join_labels((*root, user, n)) for n in ("memories", "access"))
        return {"$and": [{"p4": {"$in": both}}, {"$or": [records(user), counts(user)]}]}

    return {
        "two gets": lambda u: [records(u), counts(u)],
        "$or": lambda u: [{"$or": [records(u), counts(u)]}],
        "$in + $or": lambda u: [in_and_or(u)],
        "records only": lambda u: [records(u)],
    }


def measure(store: Any, profiles: int, reads: int, seed: int) -> list[list[str]]:
    """The candidates in turn on ``store``: one table row each."""
    col = store._items
    forms = candidates(("langmem_edge", "profiles"))
    names = list(forms)
    rng = random.Random(seed)
    times: dict[str, list[float]] = {n: [] for n in names}
    rows: dict[str, int] = {}
    for r in range(reads):
        user = f"user:{rng.randrange(profiles)}"
        for name in names[r % len(names):] + names[:r % len(names)]:
            start = time.perf_counter()
            got = sum(len(col.get(where=w, include=["documents", "embeddings"])["ids"])
                      for w in forms[name](user))
            times[name].append(time.perf_counter() - start)
            rows[name] = got
    base = statistics.median(times["two gets"])
    return [[f"{profiles:,}", name, f"{1000 * statistics.median(times[name]):.2f}",
             f"{statistics.median(times[name]) / base:.2f}x", str(rows[name])]
            for name in names]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profiles", default="20,1000")
    parser.add_argument("--memories", type=int, default=100)
    parser.add_argument("--reads", type=int, default=60, help="reads of each candidate")
    parser.add_argument("--folder", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    root = tempfile.mkdtemp(prefix="profile-read-", dir=args.folder)
    out: list[list[str]] = []
    try:
        for n in (int(x) for x in args.profiles.split(",")):
            start = time.perf_counter()
            store, memory = build(os.path.join(root, f"p{n}"), n, args.memories, args.seed)
            for p in range(n):  # each profile's access-count row
                memory.profile(f"user:{p}").recall("what does the user enjoy?")
            memory.flush()
            print(f"built {n:,} profiles x {args.memories} memories in "
                  f"{time.perf_counter() - start:.0f} s", flush=True)
            out += measure(store, n, args.reads, args.seed)
            store.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(table(["profiles", "read", "p50 ms", "/ two gets", "rows"], out))
    print(f"\nload average {load:.2f} before, {os.getloadavg()[0]:.2f} after")


if __name__ == "__main__":
    main()
