"""Where a profile stops being read whole: recall and remember by profile size, both routes.

    python benchmarks/recall_routes.py [--sizes 50,100,200,400,800] [--profiles 3]
                                       [--ops 15] [--rounds 3] [--folder /dev/shm]
    python benchmarks/recall_routes.py --history 0,500,2000 [--active 100] [--ops 10]

On a ``ChromaStore`` (a ``NearestKeys`` + ``KeywordSearch`` store) a recall either reads the
whole profile in its one batch and ranks every channel in process, or, for a profile last
seen larger than ``WHOLE_READ_MAX`` records, asks the store to rank (``nearest_keys``,
``keyword_search``) and reads only the candidates (``memory/semantic/channels.py``
``plan_store_candidates``); a ``remember`` reads the profile whole or only the records under its
key the same way. This script measures both routes on the same profiles, interleaved: ``whole``
(the threshold patched above every size) and ``store`` (patched to 0; ``WRITE_WHOLE_MAX`` and
``UNKEYED_WRITE_WHOLE_MAX`` with it), each through an ``AgentMemory`` of its own (the size hints
are per instance), ``--profiles`` profiles of each size (``remember_many``, deterministic fake
embeddings, a folder on tmpfs). Printed: per size and route, the p50 milliseconds of ``recall``,
``remember`` and a ``keyed`` remember (under one of 15 keys, superseding its last record) on a
random profile of that size, the Chroma calls per operation, and the ratio store / whole in the
same run, with the load average before and after. The crossover is the size from which ``store``
is the cheaper.

``--history``: what a recall pays for a profile's history. One profile per count: ``--active``
keyed memories, then that many more remembers under the same keys (each superseding the
key's record: the history ``at(ts)`` reads). Recalls by both routes, interleaved: ``active``
(the read asks for active records only, as it does now) and ``all`` (every record read, as
before: ``load_ops`` patched); p50, Chroma calls and active / all.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time
from functools import partial
from typing import Any

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from _common import CHROMA_CALLS, count_chroma_calls, table  # noqa: E402

from langmem_edge import AgentMemory, ChromaStore  # noqa: E402
from langmem_edge.memory.index import store_io  # noqa: E402
from langmem_edge.memory.semantic import context as context_module  # noqa: E402
from langmem_edge.memory.semantic import recall as recall_module  # noqa: E402
from langmem_edge.testing import FakeEmbeddings  # noqa: E402

DIMS = 64
TOPICS = ["hiking", "jazz", "sushi", "chess", "sailing", "pottery", "tennis", "opera",
          "cycling", "baking", "poetry", "karate", "surfing", "gardening", "painting"]
ROUTES = {"whole": 10**9, "store": 0}
OPS = ("recall", "remember", "keyed")
"""``keyed``: a remember under one of 15 keys (``book.<topic>``), superseding its last record."""


def _fact(rng: random.Random, i: int) -> str:
    return (f"Fact {i}: the user enjoys {rng.choice(TOPICS)} on weekday number "
            f"{rng.randint(1, 7)}.")


def _open(folder: str) -> ChromaStore:
    return ChromaStore.from_path(folder, index={"dims": DIMS, "embed": FakeEmbeddings(DIMS),
                                                "fields": ["text"]})


def _every_record(*args: Any, **kwargs: Any) -> Any:
    return store_io.load_ops(*args, **{**kwargs, "active": False})


def _timed(op: Any) -> tuple[float, int]:
    before = sum(CHROMA_CALLS.values())
    start = time.perf_counter()
    op()
    return time.perf_counter() - start, sum(CHROMA_CALLS.values()) - before


def by_size(store: ChromaStore, args: argparse.Namespace, rng: random.Random) -> list[list]:
    """The ``--sizes`` rows: both routes by profile size."""
    sizes = [int(s) for s in args.sizes.split(",")]
    builder = AgentMemory(store)
    for size in sizes:
        for p in range(args.profiles):
            builder.profile(f"s{size}:{p}").remember_many([_fact(rng, i) for i in range(size)])
    memories = {route: AgentMemory(store) for route in ROUTES}
    times: dict[tuple[int, str, str], list[float]] = {}
    calls: dict[tuple[int, str, str], list[int]] = {}
    n = 0
    for _ in range(args.rounds):
        for size in sizes:
            for route, threshold in ROUTES.items():  # interleaved
                recall_module.WHOLE_READ_MAX = context_module.WRITE_WHOLE_MAX = threshold
                context_module.UNKEYED_WRITE_WHOLE_MAX = threshold
                for op in OPS:
                    for _ in range(args.ops):
                        n += 1
                        profile = memories[route].profile(f"s{size}:{rng.randrange(args.profiles)}")
                        topic = rng.choice(TOPICS)
                        if op == "recall":
                            run = partial(profile.recall, f"what does the user enjoy, {topic}?")
                        else:
                            run = partial(profile.remember,
                                          f"The user bought a {topic} book, number {n}.",
                                          key=f"book.{topic}" if op == "keyed" else None)
                        took, made = _timed(run)
                        times.setdefault((size, route, op), []).append(took)
                        calls.setdefault((size, route, op), []).append(made)
    rows = []
    for size in sizes:
        for op in OPS:
            med = {r: statistics.median(times[(size, r, op)]) * 1000 for r in ROUTES}
            rows.append([size, op, f"{med['whole']:.1f}", f"{med['store']:.1f}",
                         f"{med['store'] / med['whole']:.2f}x",
                         f"{statistics.mean(calls[(size, 'whole', op)]):.1f}",
                         f"{statistics.mean(calls[(size, 'store', op)]):.1f}"])
    return rows


def by_history(store: ChromaStore, args: argparse.Namespace, rng: random.Random) -> list[list]:
    """The ``--history`` rows: active-only reads against every record, by history size."""
    histories = [int(h) for h in args.history.split(",")]
    memory = AgentMemory(store)
    for h in histories:
        p = memory.profile(f"h{h}")
        p.remember_many([{"text": _fact(rng, i), "key": f"fact.{i}"}
                         for i in range(args.active)])
        for n in range(h):
            i = rng.randrange(args.active)
            p.remember(f"Fact {i}, version {n}: the user enjoys {rng.choice(TOPICS)}.",
                       key=f"fact.{i}", verify=False)
    real = recall_module.load_ops
    times: dict[tuple[int, str], list[float]] = {}
    calls: dict[tuple[int, str], list[int]] = {}
    try:
        for _ in range(args.rounds):
            for h in histories:
                for route in ("active", "all"):  # interleaved
                    recall_module.load_ops = real if route == "active" else _every_record
                    p = AgentMemory(store).profile(f"h{h}")
                    for _ in range(args.ops):
                        took, made = _timed(partial(
                            p.recall, f"what does the user enjoy, {rng.choice(TOPICS)}?"))
                        times.setdefault((h, route), []).append(took)
                        calls.setdefault((h, route), []).append(made)
    finally:
        recall_module.load_ops = real
    rows = []
    for h in histories:
        med = {r: statistics.median(times[(h, r)]) * 1000 for r in ("active", "all")}
        rows.append([args.active, h, f"{med['active']:.1f}", f"{med['all']:.1f}",
                     f"{med['active'] / med['all']:.2f}x",
                     f"{statistics.mean(calls[(h, 'active')]):.1f}",
                     f"{statistics.mean(calls[(h, 'all')]):.1f}"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="50,100,200,400,800")
    parser.add_argument("--profiles", type=int, default=3, help="profiles of each size")
    parser.add_argument("--history", help="superseded records a profile, e.g. 0,500,2000")
    parser.add_argument("--active", type=int, default=100, help="active records (--history)")
    parser.add_argument("--ops", type=int, default=15, help="operations of each kind a round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--folder", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    count_chroma_calls()
    folder = tempfile.mkdtemp(prefix="recall-routes-", dir=args.folder)
    try:
        store = _open(folder)
        rng = random.Random(args.seed)
        load_before = os.getloadavg()
        if args.history:
            print(table(["active records", "superseded records", "active p50 ms",
                         "all p50 ms", "active / all", "calls active", "calls all"],
                        by_history(store, args, rng)))
        else:
            print(table(["memories a profile", "op", "whole p50 ms", "store p50 ms",
                         "store / whole", "calls whole", "calls store"],
                        by_size(store, args, rng)))
        print(f"load average before {load_before}, after {os.getloadavg()}")
        store.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
