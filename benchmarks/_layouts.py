"""Shared by the row-layout benchmarks (``string_mirrors.py``, ``prefix_fields.py``): the
store's rows copied into a second collection laid out another way, the same reads timed on
both, interleaved, and the run over several store sizes."""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from _common import table

PAGE = 2000
"""Rows copied per call."""

Read = Callable[[Any, bool, Any], object]
"""One timed read: ``(collection, is_the_new_layout, case)``."""


def copied_collection(store: Any, suffix: str,
                      convert: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    """A new collection of ``store``'s client holding every item row of ``store``, each row's
    metadata passed through ``convert`` (documents and vectors as they are)."""
    rows = store._items
    copy = store._client.create_collection(rows.name + suffix, embedding_function=None,
                                           metadata={"hnsw:space": "cosine"})
    offset = 0
    while True:
        page = rows.get(include=["metadatas", "documents", "embeddings"], limit=PAGE,
                        offset=offset)
        if page["ids"]:
            copy.add(ids=page["ids"], metadatas=[convert(m) for m in page["metadatas"]],
                     documents=page["documents"], embeddings=list(page["embeddings"]))
        if len(page["ids"]) < PAGE:
            return copy
        offset += PAGE


def time_layouts(reads: dict[str, Read], old: Any, new: Any, cases: list[Any],
                 rng: random.Random, memories: int) -> list[list[object]]:
    """Each read on both collections (``old``, then ``new`` or the reverse, at random) for
    each case; one table row a read: memories, read, old and new p50 ms, new / old."""
    times: dict[tuple[str, bool], list[float]] = {}
    for case in cases:
        for name, fn in reads.items():
            order = [(old, False), (new, True)]
            rng.shuffle(order)
            for col, is_new in order:
                start = time.perf_counter()
                fn(col, is_new, case)
                times.setdefault((name, is_new), []).append((time.perf_counter() - start) * 1e3)
    out: list[list[object]] = []
    for name in reads:
        before = statistics.median(times[(name, False)])
        after = statistics.median(times[(name, True)])
        out.append([memories, name, f"{before:.2f}", f"{after:.2f}", f"{after / before:.2f}x"])
    return out


def main_over_sizes(doc: str, default_profiles: str, folder_prefix: str,
                    run: Callable[[str, int, int, int, random.Random], list[list[object]]],
                    headers: list[str]) -> None:
    """Parse ``--profiles`` (a comma list), ``--memories``, ``--reads``, ``--folder`` and
    ``--seed``; ``run(folder, profiles, memories, reads, rng)`` in a fresh folder for each
    profile count; print the rows under ``headers`` and the load average."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--profiles", default=default_profiles)
    parser.add_argument("--memories", type=int, default=100)
    parser.add_argument("--reads", type=int, default=30)
    parser.add_argument("--folder", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    before = os.getloadavg()
    rows: list[list[object]] = []
    for profiles in [int(x) for x in args.profiles.split(",")]:
        folder = tempfile.mkdtemp(prefix=folder_prefix, dir=args.folder)
        try:
            rows += run(folder, profiles, args.memories, args.reads, rng)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    print(table(headers, rows))
    print(f"load average before {before}, after {os.getloadavg()}")
