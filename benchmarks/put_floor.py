"""What a ``ChromaStore.put`` costs against raw Chroma upserts of the same rows (issues 33, 34).

Issue 33 asks a put to cost at most 1.2x "one raw Chroma upsert of the same rows"; issue 34
asks "a put is one upsert of its rows plus at most one delete of stale ones (>= 0.8x a raw
Chroma upsert of the same rows, taken in turn)". This script records the rows each put writes
and writes them again, raw, with fresh ids, right after it.

Candidates, interleaved call by call in a shuffled order each round, on one store of
``--items`` items (10 namespaces, 384-d seeded random vectors, never a model):

- ``store put (new)``: ``ChromaStore.put`` of a new key (the store's Chroma calls are listed
  in the output: since schema 5 a read and one upsert of the item row, its vector in it).
- ``raw: the same upserts``: the upserts that put made, replayed raw with fresh ids.
- ``raw: get + the same upserts``: the put's floor with its read (a ``get`` of one id).
- ``store put (changed text)``: a put over an existing key with a new text.
- Reads: the store's vector search (k=10 in one namespace of ``--items / 10``) against one
  raw query with the namespace ``where`` that returns the rows with their distances.

Run (a few minutes on 2 cores)::

    python benchmarks/put_floor.py                    # 10,000 items, 300 rounds
    python benchmarks/put_floor.py --items 2000 --rounds 100
    python benchmarks/put_floor.py --server           # the same on a ``chroma run`` server
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import chroma_server, median, percentile, table, timed  # noqa: E402
from langgraph.store.base import PutOp  # noqa: E402
from store_peers import LookupEmbeddings, make_value  # noqa: E402

from langmem_edge import ChromaStore  # noqa: E402
from langmem_edge._chroma import join_labels  # noqa: E402


class Recorder:
    """A collection whose write calls are recorded (name, method, keyword arguments)."""

    def __init__(self, collection: Any, name: str, log: list[tuple[str, str, dict]]) -> None:
        self.collection = collection
        self._name = name
        self._log = log

    def __getattr__(self, attr: str) -> Any:
        fn = getattr(self.collection, attr)
        if attr not in {"get", "query", "upsert", "update", "delete", "add"}:
            return fn

        def recorded(*args: Any, **kwargs: Any) -> Any:
            self._log.append((self._name, attr, kwargs))
            return fn(*args, **kwargs)

        return recorded


def build(args: argparse.Namespace, store: ChromaStore, embed: LookupEmbeddings) -> None:
    """Load ``--items`` items."""
    rng = random.Random(7)
    items = [(("users", f"u{i % 10}"), f"k{i}", make_value(rng, i)) for i in range(args.items)]
    embed.prepare([v["text"] for _, _, v in items]
                  + [f"probe {j}" for j in range(args.rounds)])
    for start in range(0, len(items), 500):
        store.batch([PutOp(ns, k, v) for ns, k, v in items[start:start + 500]])


def run(args: argparse.Namespace, store: ChromaStore, label: str) -> None:
    embed = store.embeddings
    assert isinstance(embed, LookupEmbeddings)
    build(args, store, embed)
    log: list[tuple[str, str, dict]] = []
    raw_items, raw_vectors = store._items, store._vectors
    store._items = Recorder(raw_items, "items", log)  # type: ignore[assignment]
    store._vectors = Recorder(raw_vectors, "vectors", log)  # type: ignore[assignment]
    raw = {"items": raw_items, "vectors": raw_vectors}
    rng = random.Random(11)
    last: dict[str, list[tuple[str, dict]]] = {}
    calls: dict[str, list[str]] = {}

    def store_put(j: int) -> None:
        log.clear()
        store.put(("users", f"u{j % 10}"), f"new{j}", make_value(rng, args.items + j))
        calls["new"] = [f"{n}.{m}" for n, m, _ in log]
        last["rows"] = [(n, kw) for n, m, kw in log if m == "upsert"]

    def replay(j: int, tag: str, read: bool = False) -> None:
        if read:
            raw_items.get(ids=[f"{tag}{j}-x"], include=["documents", "embeddings"])
        for name, kw in last.get("rows", []):
            raw[name].upsert(**{**kw, "ids": [f"{tag}{j}-{i}" for i in kw["ids"]]})

    def changed(j: int) -> None:
        log.clear()
        key = f"k{rng.randrange(args.items)}"
        store.put(("users", f"u{int(key[1:]) % 10}"), key, make_value(rng, 10 * args.items + j))
        calls["changed"] = [f"{n}.{m}" for n, m, _ in log]

    def search(j: int) -> None:
        store.search(("users", f"u{j % 10}"), query=f"probe {j}", limit=10)

    def raw_query(j: int) -> None:
        raw_items.query(query_embeddings=[embed.vector(f"probe {j}").tolist()], n_results=10,
                        where={"p2": join_labels(("users", f"u{j % 10}"))},
                        include=["metadatas", "distances"])

    cases: dict[str, Callable[[int], None]] = {
        "store vector search (k=10, one namespace)": search,
        "raw: one query, rows returned": raw_query,
        "raw: the same upserts": lambda j: replay(j, "both"),
        "raw: get + the same upserts": lambda j: replay(j, "read", read=True),
        "store put (changed text)": changed,
    }
    times: dict[str, list[float]] = {"store put (new)": [], **{k: [] for k in cases}}
    load_before = os.getloadavg()
    for j in range(args.rounds):
        times["store put (new)"].append(timed(lambda j=j: store_put(j)) * 1000)
        order = list(cases)
        rng.shuffle(order)
        for name in order:
            times[name].append(timed(lambda j=j, name=name: cases[name](j)) * 1000)
    load_after = os.getloadavg()
    base = median(times["raw: the same upserts"])
    print(f"\n### {label}: {args.items:,} items, {args.rounds} rounds; load average "
          f"{' / '.join(f'{x:.2f}' for x in load_before)} before, "
          f"{' / '.join(f'{x:.2f}' for x in load_after)} after\n")
    print(table(["case", "p50 ms", "p95 ms", "p50 / raw same upserts"], [
        (name, f"{median(t):.2f}", f"{percentile(t, 95):.2f}", f"{median(t) / base:.2f}x")
        for name, t in times.items()]))
    print(f"\nChroma calls of a new item's put: {calls.get('new')}")
    print(f"Chroma calls of a changed text's put: {calls.get('changed')}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--server", action="store_true", help="also on a chroma run server")
    args = parser.parse_args()
    tmp = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    index = {"dims": args.dims, "fields": ["text"]}
    with contextlib.ExitStack() as stack:
        folder = tempfile.mkdtemp(prefix="put-floor-", dir=tmp)
        stack.callback(shutil.rmtree, folder, True)
        store = stack.enter_context(ChromaStore.from_path(
            folder, index={**index, "embed": LookupEmbeddings(args.dims)}))
        run(args, store, "ChromaStore folder")
        if args.server:
            url = stack.enter_context(chroma_server())
            server = stack.enter_context(ChromaStore.from_url(
                url, index={**index, "embed": LookupEmbeddings(args.dims)}))
            run(args, server, "ChromaStore server")


if __name__ == "__main__":
    main()
