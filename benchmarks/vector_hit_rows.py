"""How a vector search gets its hits' rows (issue 33: one round trip where the database allows),
the two routes side by side on the same stores, without a filter and (``--filtered``) with one
Chroma evaluates whole (``{"kind": ...}``, a quarter of each namespace).

- **in the query** (shipped): the round that names the prefix (and the filter) asks Chroma for
  the page plus 10 neighbours with their documents, so the hits' rows come with the
  distances: two Chroma calls (the item rows' query, the later texts' query);
- **read after**: the query asks for ``3 x`` the page plus 10 neighbours, ids and distances
  only, and the rows of the best are read by id afterwards (``get``): three calls (the route
  of every search before the thirtieth session, and of filtered ones before the
  thirty-first);
- with ``--in-process``, also **ranked in process**: the rows a search asks for (the
  namespace, or with ``--filtered`` the quarter of it that passes; at most
  ``LOCAL_RANK_ROWS``: choose ``--namespaces`` so) read whole with their vectors and ranked in
  Python, the page's rows read after (three calls). Which route a search of a small set takes
  depends on whether the store has seen the namespace whole exceed ``LOCAL_RANK_ROWS`` (an
  unfiltered search of it has, as in ``store_peers.py``); with ``--filtered`` or
  ``--in-process`` each route is told so before each search.

Both run on the same ``ChromaStore`` (a folder, and with ``--server`` a throwaway ``chroma run``
too), filled with ``--items`` items in ``--namespaces`` namespaces (10; 384-d lookup vectors,
never a model); the "read after" route is the store's own ``_gather`` called as it was before
the change. In each round every query runs on every route, in turn, the order rotating.
Reported: p50 ms, the ratio to the shipped route, Chroma calls per search, and whether the
routes returned the same keys.

Run (about two minutes on 2 cores)::

    python benchmarks/vector_hit_rows.py --server
    python benchmarks/vector_hit_rows.py --server --filtered --in-process
    python benchmarks/vector_hit_rows.py --server --in-process --namespaces 40
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import chroma_server, median, table, timed  # noqa: E402
from langgraph.store.base import PutOp  # noqa: E402
from store_peers import KINDS, WORDS, LookupEmbeddings, make_value  # noqa: E402

from langmem_edge import ChromaStore  # noqa: E402
from langmem_edge.store.ranking import CANDIDATE_FACTOR  # noqa: E402

DIMS = 384
K = 10


def read_after(store: ChromaStore) -> Any:
    """``store._rank_vector`` as it was: ids and distances, then the rows by id."""
    def rank(op: Any, query: list[float], want: int, now: float) -> Any:
        return store._gather(op, query, want,
                             lambda hits, rows: store._admit(hits, op, want, now, rows),
                             factor=CANDIDATE_FACTOR)
    return rank


def ranked_by(store: ChromaStore, rank: Any, *, in_process: bool) -> Any:
    """``rank`` with the namespace marked as too large to rank in process (as an unfiltered
    search of a namespace of more than ``LOCAL_RANK_ROWS`` items marks it: Chroma ranks), or
    (``in_process``) not marked: a filtered subset of at most ``LOCAL_RANK_ROWS`` rows is read
    whole and ranked in process."""
    def ranked(op: Any, query: list[float], want: int, now: float) -> Any:
        prefix = tuple(op.namespace_prefix)
        if in_process:
            store._large_prefixes.pop(prefix, None)
        else:
            store._large_prefixes[prefix] = 1
        return rank(op, query, want, now)
    return ranked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--namespaces", type=int, default=10,
                        help="namespaces the items are spread over (default 10)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--queries", type=int, default=40, help="searches a round and route")
    parser.add_argument("--server", action="store_true", help="also a ChromaStore.from_url")
    parser.add_argument("--filtered", action="store_true",
                        help="every search with a filter on the item's kind")
    parser.add_argument("--in-process", action="store_true",
                        help="also the route that ranks the searched rows in process")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    namespaces = [("bench", f"ns{j}") for j in range(args.namespaces)]
    items = [(namespaces[i % args.namespaces], f"item{i}", make_value(rng, i))
             for i in range(args.items)]
    rng.shuffle(items)
    queries = [[(namespaces[rng.randrange(args.namespaces)],
                 f"q{r}-{i} " + " ".join(rng.choices(WORDS, k=5)),
                 {"kind": rng.choice(KINDS)} if args.filtered else None)
                for i in range(args.queries)] for r in range(args.rounds + 1)]
    embed = LookupEmbeddings(DIMS)
    embed.prepare([v["text"] for _, _, v in items] + [q for r in queries for _, q, _ in r])
    index = {"dims": DIMS, "embed": embed, "fields": ["text"]}
    print(f"load average at start: {os.getloadavg()}", flush=True)
    root = tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, root, True)
        stores = {"folder": stack.enter_context(
            ChromaStore.from_path(os.path.join(root, "s"), index=index, ranking="vector"))}
        if args.server:
            url = stack.enter_context(chroma_server())
            stores["server"] = stack.enter_context(
                ChromaStore.from_url(url, index=index, ranking="vector"))
        for store in stores.values():
            for start in range(0, len(items), 500):
                store.batch([PutOp(ns, k, v) for ns, k, v in items[start : start + 500]])
        samples: dict[tuple[str, str], list[float]] = {}
        calls: dict[tuple[str, str], list[int]] = {}
        differ = 0
        for form, store in stores.items():
            shipped = store._rank_vector
            routes = {"in the query": shipped, "read after": read_after(store)}
            if args.filtered or args.in_process:  # each route told whether Chroma ranks
                routes = {"in the query": ranked_by(store, shipped, in_process=False),
                          "read after": ranked_by(store, read_after(store), in_process=False)}
            if args.in_process:
                routes["ranked in process"] = ranked_by(store, shipped, in_process=True)
            counted: list[int] = [0]
            inner = store._call

            def counting(fn: Any, *a: Any, __inner: Any = inner, __n: list[int] = counted,
                         **kw: Any) -> Any:
                __n[0] += 1
                return __inner(fn, *a, **kw)

            store._call = counting  # type: ignore[assignment]
            for rnd in range(args.rounds + 1):
                for j, (ns, query, where) in enumerate(queries[rnd]):
                    names = list(routes)[j % len(routes):] + list(routes)[:j % len(routes)]
                    got = {}
                    for name in names:
                        store._rank_vector = routes[name]  # type: ignore[method-assign]
                        counted[0] = 0
                        out: list[Any] = []
                        seconds = timed(lambda s=store, ns=ns, query=query, where=where,
                                        out=out: out.extend(
                            s.search(ns, query=query, filter=where, limit=K)))
                        got[name] = [r.key for r in out]
                        if rnd:  # round 0 warms up (and learns each namespace's share)
                            samples.setdefault((form, name), []).append(seconds)
                            calls.setdefault((form, name), []).append(counted[0])
                    differ += rnd > 0 and len(set(map(tuple, got.values()))) > 1
            store._rank_vector = shipped  # type: ignore[method-assign]
            store._call = inner  # type: ignore[assignment]
        rows = []
        for (form, name), values in samples.items():
            ms = median(values) * 1000
            base = median(samples[(form, "in the query")]) * 1000
            rows.append([form, name, f"{ms:.2f}", f"{ms / base:.2f}x",
                         f"{sum(calls[(form, name)]) / len(calls[(form, name)]):.1f}"])
        print(f"\n{args.items:,} items in {args.namespaces} namespaces, k={K}, "
              f"{'filtered by kind, ' if args.filtered else ''}{args.rounds} rounds "
              f"of {args.queries} searches a route; p50\n")
        print(table(["store", "route", "p50 ms", "/ in the query", "Chroma calls"], rows))
        print(f"\nsearches whose two routes returned different keys: {differ}")
        print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
