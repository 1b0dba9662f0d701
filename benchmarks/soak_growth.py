"""Where the growing soak's time per operation grows: Chroma's calls, or the process?
(thirty-third session, issue 34).

    python benchmarks/soak_growth.py build 20000        # prints the kept folder
    python benchmarks/soak_growth.py build 70000
    python benchmarks/soak_growth.py compare FOLDER_A FOLDER_B [--rounds 3]

``build`` runs the growing soak of ``tests/reliability/test_soak.py`` (its own ``_Soak``, the
cache bounds lowered as the test lowers them) for that many operations and keeps its folder
(in RAM; delete it after). ``compare`` opens both folders in this one fresh process and times,
in turn, raw Chroma calls on each (a row by id, a namespace's rows with their vectors, a
vector query filtered to ``("soak",)`` and one unfiltered, a one-row upsert of a copied memory
row under a new id) and the store's own operations (``get``, ``search``, ``hybrid_search``,
``recall``, as the soak calls them): p50 ms of each, A then B.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]

from reliability.helpers import DIMS, open_memory, open_store  # noqa: E402
from reliability.test_soak import WORDS, _Soak  # noqa: E402

from langmem_edge.embeddings import CachedEmbeddings  # noqa: E402
from langmem_edge.testing import FakeEmbeddings  # noqa: E402


def build(ops: int) -> None:
    soak = _Soak(constant=False)
    began = time.perf_counter()
    for _ in range(ops):
        soak.step()
    print(f"{soak.folder} ({ops:,} operations in {time.perf_counter() - began:.0f} s;"
          f" medians of the run: ms (Chroma calls){soak.window_medians()})")
    soak.store.close()


def compare(folders: list[str], rounds: int) -> None:
    import numpy as np

    rng = random.Random(1)
    opened: dict[str, tuple[Any, Any, Any]] = {}
    for folder in folders:
        store = open_store(folder, index={"dims": DIMS, "fields": ["text"], "embed":
                                          CachedEmbeddings(FakeEmbeddings(DIMS), max_size=200)})
        col = store._items
        ids = col.get(include=[])["ids"]
        metas = col.get(ids=rng.sample(ids, min(400, len(ids))),
                        include=["metadatas", "documents", "embeddings"])
        opened[folder] = (store, col, metas)
        print(f"{folder}: {len(ids):,} item rows")
    times: dict[tuple[str, str], list[float]] = defaultdict(list)

    def timed(folder: str, name: str, fn: Callable[[], Any]) -> None:
        began = time.perf_counter()
        fn()
        times[(folder, name)].append(1000 * (time.perf_counter() - began))

    copies = iter(range(10**9))

    def one_round(folder: str, store: Any, col: Any, got: Any) -> None:
        memory = open_memory(store)
        rows = list(zip(got["ids"], got["metadatas"], got["documents"], got["embeddings"],
                        strict=True))
        records = [r for r in rows if str(r[1].get("p4", "")).endswith("memories")]
        for iid, *_ in rows[:100]:
            timed(folder, "raw get by id", lambda iid=iid: col.get(
                ids=[iid], include=["metadatas", "documents"]))
        for _, meta, *_ in records[:50]:
            timed(folder, "raw get of a namespace with vectors", lambda m=meta: col.get(
                where={"p4": m["p4"]}, include=["metadatas", "documents", "embeddings"]))
        for _ in range(30):
            q = np.random.rand(DIMS).astype(np.float32)
            timed(folder, "raw query in ('soak',)", lambda q=q: col.query(
                query_embeddings=[q], n_results=15, where={"p1": "soak"},
                include=["metadatas", "documents", "distances"]))
            timed(folder, "raw query, no filter", lambda q=q: col.query(
                query_embeddings=[q], n_results=15, include=["distances"]))
        for _, meta, doc, emb in records[:30]:
            k = next(copies)
            timed(folder, "raw upsert of a memory row", lambda m=meta, d=doc, e=emb, k=k:
                  col.upsert(ids=[f"copy-{k}"], metadatas=[m], documents=[d], embeddings=[e]))
        for _ in range(200):
            w = f"w{rng.randrange(WORDS)}"
            timed(folder, "store get", lambda w=w: store.get(("soak", w[:3]), w))
        for _ in range(60):
            w = f"w{rng.randrange(WORDS)}"
            profile = memory.profile(f"user{rng.randrange(40)}")
            timed(folder, "recall", lambda p=profile, w=w: p.recall(f"fact {w}", limit=5))
            timed(folder, "store search ('soak',)", lambda w=w: store.search(
                ("soak",), query=f"item {w}", limit=5))
            timed(folder, "hybrid_search", lambda w=w: store.hybrid_search(
                ("soak", w[:3]), query=f"item {w}", limit=5))

    for _ in range(rounds):
        for folder, (store, col, got) in opened.items():
            one_round(folder, store, col, got)
    print(f"load average {os.getloadavg()[0]:.2f}")
    names = list(dict.fromkeys(name for _, name in times))
    print("| call | " + " | ".join(Path(f).name for f in folders) + " | B / A |")
    print("| --- |" + " --- |" * (len(folders) + 1))
    for name in names:
        p50 = [statistics.median(times[(f, name)]) for f in folders]
        print(f"| {name} | " + " | ".join(f"{v:.2f}" for v in p50)
              + f" | {p50[-1] / p50[0]:.2f}x |")
    for store, _, _ in opened.values():
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("ops", type=int)
    c = sub.add_parser("compare")
    c.add_argument("folders", nargs=2)
    c.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.cmd == "build":
        build(args.ops)
    else:
        compare(args.folders, args.rounds)


if __name__ == "__main__":
    main()
