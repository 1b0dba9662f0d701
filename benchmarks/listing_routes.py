"""What a query-less search (a listing, newest-updated first) of ``ChromaStore`` costs, by route
and by how the items' update times were written (issue 33: listing <= 2x PostgresStore, or
Chroma's floor).

Chroma's ``get`` cannot sort, so a listing reads a *window* of rows updated at or after a
threshold the store remembers (``store/listing.py``), or, from ``MIN_OFFSET_BETWEEN`` on, counts
the newer rows by id and reads the rows between two remembered times. What the window holds
depends on the update times: when the items of one batch share one time, a window reaches every
row of the batch at that time.

Two stores are loaded with the same items (``--items`` in 10 namespaces, batches of
``--batch``, 384-d lookup vectors, never a model): **tied**, written with
``writes.STAMP_STEP = 0`` (every item of a batch has the batch's time, as before the
thirtieth session's change), and **distinct** (the shipped ``STAMP_STEP``: each item a time
of its own). Each is listed at offsets ``--offsets`` (limit 10) by two routes: the window
(``MIN_OFFSET_BETWEEN`` out of reach) and the count-between route (``MIN_OFFSET_BETWEEN = 1``);
offset 0 has only the window. Beside them, Chroma's floor: one raw ``get`` of the same
namespace's rows at that offset and limit with their documents (unsorted: Chroma's own row
order, what a page costs at the least). Rounds put ``--new`` items into random namespaces of
both stores first (so the remembered times are a little stale, as in use), then take every
case on every candidate in a rotating order. Reported: p50 ms and the ratio to the floor.

Run (about two minutes on 2 cores; folders on ``/dev/shm`` when it exists)::

    python benchmarks/listing_routes.py
    python benchmarks/listing_routes.py --items 100000 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median, table, timed  # noqa: E402
from langgraph.store.base import PutOp  # noqa: E402
from store_peers import LookupEmbeddings, make_value  # noqa: E402

from langmem_edge import ChromaStore  # noqa: E402
from langmem_edge.store import layout, listing, writes  # noqa: E402

NAMESPACES = 10
DIMS = 384
LIMIT = 10
SHIPPED_STEP = writes.STAMP_STEP
SHIPPED_BETWEEN = listing.MIN_OFFSET_BETWEEN


def put_all(store: ChromaStore, items: list[tuple[tuple[str, ...], str, dict]], batch: int,
            step: int) -> None:
    writes.STAMP_STEP = step
    try:
        for start in range(0, len(items), batch):
            store.batch([PutOp(ns, k, v) for ns, k, v in items[start : start + batch]])
    finally:
        writes.STAMP_STEP = SHIPPED_STEP


def listed(store: ChromaStore, ns: tuple[str, ...], offset: int, between: int) -> None:
    listing.MIN_OFFSET_BETWEEN = between
    try:
        store.search(ns, limit=LIMIT, offset=offset)
    finally:
        listing.MIN_OFFSET_BETWEEN = SHIPPED_BETWEEN


def floor(store: ChromaStore, ns: tuple[str, ...], offset: int) -> None:
    store._items.get(where=layout.prefix_where(ns), limit=LIMIT, offset=offset,
                     include=["documents"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=500, help="puts per batch when loading")
    parser.add_argument("--offsets", default="0,90,290,590")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cases", type=int, default=20, help="listings per offset a round")
    parser.add_argument("--new", type=int, default=20, help="items put before each round")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    offsets = [int(o) for o in args.offsets.split(",")]
    rng = random.Random(args.seed)
    namespaces = [("bench", f"ns{j}") for j in range(NAMESPACES)]
    items = [(namespaces[i % NAMESPACES], f"item{i}", make_value(rng, i))
             for i in range(args.items)]
    rng.shuffle(items)
    new = [[(namespaces[rng.randrange(NAMESPACES)], f"new{r}-{i}", make_value(rng, i, "new"))
            for i in range(args.new)] for r in range(args.rounds + 1)]
    embed = LookupEmbeddings(DIMS)
    embed.prepare([v["text"] for _, _, v in items] + [v["text"] for r in new for _, _, v in r])
    root = tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    print(f"load average at start: {os.getloadavg()}", flush=True)
    try:
        stores = {}
        for name, step in (("tied", 0), ("distinct", SHIPPED_STEP)):
            stores[name] = ChromaStore.from_path(
                os.path.join(root, name), index={"dims": DIMS, "embed": embed,
                                                 "fields": ["text"]})
            put_all(stores[name], items, args.batch, step)
            for ns in namespaces:  # every prefix read whole once: the times are remembered
                stores[name].search(ns, limit=LIMIT, offset=max(offsets))
        candidates: list[tuple[str, int, object]] = []
        for offset in offsets:
            candidates.append(("floor: raw get", offset, lambda ns, o=offset: floor(
                stores["distinct"], ns, o)))
            for name in stores:
                candidates.append((f"{name}, window", offset, lambda ns, s=stores[name],
                                   o=offset: listed(s, ns, o, 10**9)))
                if offset:
                    candidates.append((f"{name}, count-between", offset,
                                       lambda ns, s=stores[name], o=offset: listed(s, ns, o, 1)))
        samples: dict[tuple[str, int], list[float]] = {(c, o): [] for c, o, _ in candidates}
        for rnd in range(args.rounds + 1):
            for name, store in stores.items():
                put_all(store, new[rnd], len(new[rnd]),
                        0 if name == "tied" else SHIPPED_STEP)
            cases = [namespaces[rng.randrange(NAMESPACES)] for _ in range(args.cases)]
            for j, ns in enumerate(cases):
                turn = candidates[j % len(candidates):] + candidates[: j % len(candidates)]
                for label, offset, fn in turn:
                    seconds = timed(lambda fn=fn, ns=ns: fn(ns))  # type: ignore[operator]
                    if rnd:  # round 0 warms up
                        samples[(label, offset)].append(seconds)
        rows = []
        for label, offset, _ in candidates:
            ms = median(samples[(label, offset)]) * 1000
            base = median(samples[("floor: raw get", offset)]) * 1000
            rows.append([offset, label, f"{ms:.2f}", f"{ms / base:.2f}x"])
        print(f"\n{args.items:,} items in {NAMESPACES} namespaces, loaded in batches of "
              f"{args.batch}; limit {LIMIT}; {args.rounds} rounds of {args.cases} listings "
              f"an offset; p50\n")
        print(table(["offset", "route", "p50 ms", "/ floor"], rows))
        print(f"\nload average at end: {os.getloadavg()}")
        for store in stores.values():
            store.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
