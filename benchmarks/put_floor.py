"""What a ``ChromaStore.put`` costs against raw Chroma upserts of the same rows (issues 33, 34).

Issue 33 asks a put to cost at most 1.2x "one raw Chroma upsert of the same rows"; issue 34
asks ">= 0.8x a raw Chroma upsert of the same rows, taken in turn". The other benchmarks'
floor (``store_peers.py``'s ``RawChroma``) upserts a *lighter* row (value and namespace only),
so it cannot answer that. This script records the rows each put writes and writes them again,
raw, with fresh ids, right after it; and it times the one-collection layout issue 33 names
("the item in its vector row"), built from the same rows, so the choice between layouts is a
measurement.

Candidates, interleaved call by call in a shuffled order each round, on one store of
``--items`` items (10 namespaces, 384-d seeded random vectors, never a model):

- ``store put (new)``: ``ChromaStore.put`` of a new key (a read, the vector upsert, the item
  upsert: the store's Chroma calls are listed in the output).
- ``raw: the same upserts``: the upserts that put made, replayed raw with fresh ids.
- ``raw: item row alone`` / ``raw: vector row alone``: each of them on its own.
- ``one collection: get + upsert``: the layout with the item in its vector row (the item
  row's metadata and document with the real vector, in a third collection holding a copy of
  every item so built): the put's read, then its one upsert.
- ``one collection: upsert alone``: that layout's floor.
- ``store put (changed text)``: a put over an existing key with a new text (a read, the new
  generation's vector upsert, the item upsert, the delete of the old vector row).
- Reads, for the layout question: the store's vector search (k=10 in one namespace of
  ``--items / 10``), today's two raw calls under it (the vector query with the namespace
  ``where``, then the item rows by id), and the one-collection layout's single query that
  returns the item rows with their distances.

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


def build(args: argparse.Namespace, store: ChromaStore, embed: LookupEmbeddings) -> Any:
    """Load ``--items`` items; copy them into a one-collection layout; return that collection."""
    rng = random.Random(7)
    items = [(("users", f"u{i % 10}"), f"k{i}", make_value(rng, i)) for i in range(args.items)]
    embed.prepare([v["text"] for _, _, v in items]
                  + [f"probe {j}" for j in range(args.rounds)])
    for start in range(0, len(items), 500):
        store.batch([PutOp(ns, k, v) for ns, k, v in items[start:start + 500]])
    one = store._client.create_collection(
        "one-layout", embedding_function=None, metadata={"hnsw:space": "cosine"})
    offset = 0
    while True:
        rows = store._items.get(limit=500, offset=offset, include=["metadatas", "documents"])
        if not rows["ids"]:
            break
        vecs = store._vectors.get(
            where={"k": {"$in": [m["k"] for m in rows["metadatas"]]}},
            include=["metadatas", "embeddings"])
        by_item = {(m["ns"], m["k"]): e for m, e in zip(vecs["metadatas"], vecs["embeddings"],
                                                       strict=True)}
        one.upsert(ids=rows["ids"], metadatas=rows["metadatas"], documents=rows["documents"],
                   embeddings=[by_item[(m["ns"], m["k"])] for m in rows["metadatas"]])
        offset += 500
    return one


def run(args: argparse.Namespace, store: ChromaStore, label: str) -> None:
    embed = store.embeddings
    assert isinstance(embed, LookupEmbeddings)
    one = build(args, store, embed)
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

    def replay(j: int, which: set[str], tag: str) -> None:
        for name, kw in last.get("rows", []):
            if name in which:
                raw[name].upsert(**{**kw, "ids": [f"{tag}{j}-{i}" for i in kw["ids"]]})

    def one_row(j: int) -> dict[str, Any]:
        item = next(kw for n, kw in last["rows"] if n == "items")
        vec = next(kw for n, kw in last["rows"] if n == "vectors")
        return {"metadatas": item["metadatas"], "documents": item.get("documents"),
                "embeddings": vec["embeddings"]}

    def one_get_upsert(j: int) -> None:
        one.get(ids=[f"one{j}"], include=["metadatas", "embeddings"])
        one.upsert(ids=[f"one{j}"], **one_row(j))

    def one_upsert(j: int) -> None:
        one.upsert(ids=[f"onu{j}"], **one_row(j))

    def changed(j: int) -> None:
        log.clear()
        key = f"k{rng.randrange(args.items)}"
        store.put(("users", f"u{int(key[1:]) % 10}"), key, make_value(rng, 10 * args.items + j))
        calls["changed"] = [f"{n}.{m}" for n, m, _ in log]

    def search(j: int) -> None:
        store.search(("users", f"u{j % 10}"), query=f"probe {j}", limit=10)

    def raw_two(j: int) -> None:
        where = {"p2": join_labels(("users", f"u{j % 10}"))}
        hits = raw_vectors.query(query_embeddings=[embed.vector(f"probe {j}").tolist()],
                                 n_results=10, where=where, include=["distances"])
        raw_items.get(ids=[h.split(":")[0] for h in hits["ids"][0]], include=["metadatas"])

    def one_query(j: int) -> None:
        one.query(query_embeddings=[embed.vector(f"probe {j}").tolist()], n_results=10,
                  where={"p2": join_labels(("users", f"u{j % 10}"))},
                  include=["metadatas", "distances"])

    cases: dict[str, Callable[[int], None]] = {
        "store vector search (k=10, one namespace)": search,
        "raw: vector query, then item rows (2 calls)": raw_two,
        "one collection: one query, item rows returned": one_query,
        "raw: the same upserts": lambda j: replay(j, {"items", "vectors"}, "both"),
        "raw: item row alone": lambda j: replay(j, {"items"}, "item"),
        "raw: vector row alone": lambda j: replay(j, {"vectors"}, "vec"),
        "one collection: get + upsert": one_get_upsert,
        "one collection: upsert alone": one_upsert,
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
