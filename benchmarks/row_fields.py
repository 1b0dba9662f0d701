"""What a ``get`` pays per metadata field of each row it returns (issues 33, 34).

A profile's records are read whole by every recall (one ``get`` of ~100 item rows), and every
listing, filtered search and put reads item rows too. An item row carries ~34 metadata fields
for a memory record: the value's JSON (``v``), the namespace and its prefixes, timestamps,
vector bookkeeping, the keyword channel's lists (``kt``, ``ky``) and the filter mirrors
(``f:``/``g:`` copies of the value's short leaves). Chroma's ``get`` has no projection: it
returns every field of each row (``include=["metadatas"]``), so this measures what each group
of fields costs a read.

The rows are real: ``--profiles`` profiles of ``--memories`` memories written through
``AgentMemory.remember_many`` on a ``ChromaStore`` (fake 64-d embeddings), then one profile's
item rows copied into in-memory collections that keep only some fields. Every variant is read
by the same ids, ``--reads`` times, interleaved; p50 ms and microseconds per row. One more
row is what a recall reads since schema 5: the store's rows with their embeddings, one
``get``; two more are rows whose value and bookkeeping (the fields no ``where`` names) moved
into the document, read with ``include=["documents"]`` (schema 6's candidate).

Run::

    python benchmarks/row_fields.py                  # 100 rows
    python benchmarks/row_fields.py --memories 1000  # 1,000 rows
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median, table  # noqa: E402
from memory_scale import build  # noqa: E402

from langmem_edge.store import layout  # noqa: E402

Meta = dict[str, Any]


def variants() -> dict[str, Callable[[Meta], Meta]]:
    mirror = ("f:", "g:")
    keyword = ("kt", "ky", "kl")
    return {
        "the store's row (all fields)": lambda m: m,
        "without the keyword lists (kt, ky, kl)": lambda m: {
            k: v for k, v in m.items() if k not in keyword},
        "without the filter mirrors (f:, g:)": lambda m: {
            k: v for k, v in m.items() if not k.startswith(mirror)},
        "without both": lambda m: {
            k: v for k, v in m.items() if k not in keyword and not k.startswith(mirror)},
        "value and namespace only (v, ns)": lambda m: {"v": m["v"], "ns": m["ns"]},
    }


MOVED = ("v", "ca", "ua", "ttl", "nv", "vg", "vt", "ns", "k")
"""Fields no ``where`` names: read, never filtered on (schema 6 keeps them in the document)."""


def document_variants() -> dict[str, Callable[[Meta], Meta]]:
    """Rows whose value and bookkeeping are in the document, read with ``include=
    ["documents"]``: Chroma still reads each row's scalar fields, not its lists."""
    return {
        "value in the document, documents read (schema 6)": lambda m: {
            k: v for k, v in m.items() if k not in MOVED},
        "the same without the filter mirrors": lambda m: {
            k: v for k, v in m.items() if k not in MOVED and not k.startswith(("f:", "g:"))},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profiles", type=int, default=2)
    parser.add_argument("--memories", type=int, default=100)
    parser.add_argument("--reads", type=int, default=40)
    parser.add_argument("--folder", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    args = parser.parse_args()
    import chromadb

    folder = tempfile.mkdtemp(prefix="row-fields-", dir=args.folder)
    try:
        store, _ = build(folder, args.profiles, args.memories, 1)
        items = store._items
        first = items.get(limit=1, include=["metadatas"])["metadatas"][0]
        depth = int(first["nd"])
        rows = items.get(where={f"p{depth}": first[f"p{depth}"]},
                         include=["metadatas", "documents"])
        # the fields as schema 5 kept them, all in the metadata (schema 6 moved some into
        # the document): the variants below lay them out anew
        rows["metadatas"] = [{**meta, **{k: v for k, v in (layout.read_row(doc) or {}).items()
                                         if k != layout.FILTER_KEYS}}
                             for meta, doc in zip(rows["metadatas"], rows["documents"],
                                                  strict=True)]
        first = rows["metadatas"][0]
        client = chromadb.EphemeralClient()
        cols = {}
        for i, (name, keep) in enumerate(variants().items()):
            col = client.create_collection(f"variant-{i}", embedding_function=None)
            col.upsert(ids=rows["ids"], embeddings=[[1.0]] * len(rows["ids"]),
                       metadatas=[keep(m) for m in rows["metadatas"]])
            cols[name] = (col, len(keep(rows["metadatas"][0])))
        cols["ids only (include=[])"] = (items, 0)
        reads: dict[str, Callable[[], object]] = {
            name: (lambda col=col, n=n: col.get(ids=rows["ids"],
                                                include=["metadatas"] if n else []))
            for name, (col, n) in cols.items()}
        for i, (name, keep) in enumerate(document_variants().items()):
            col = client.create_collection(f"document-{i}", embedding_function=None)
            col.upsert(ids=rows["ids"], embeddings=[[1.0]] * len(rows["ids"]),
                       metadatas=[keep(m) for m in rows["metadatas"]],
                       documents=[json.dumps({k: m[k] for k in MOVED if k in m})
                                  for m in rows["metadatas"]])
            cols[name] = (col, len(keep(rows["metadatas"][0])))
            reads[name] = lambda col=col: col.get(ids=rows["ids"], include=["documents"])
        # what a recall reads: the item rows with their vectors (schema 5: one get)
        reads["a recall's read: the rows with their vectors (one get, schema 6)"] = lambda: (
            items.get(ids=rows["ids"], include=["documents", "embeddings"]))
        cols.update({name: (None, 0) for name in reads if name not in cols})
        times: dict[str, list[float]] = {name: [] for name in reads}
        load = os.getloadavg()
        rng = random.Random(3)
        for _ in range(args.reads):
            order = list(reads)
            rng.shuffle(order)
            for name in order:
                start = time.perf_counter()
                reads[name]()
                times[name].append((time.perf_counter() - start) * 1000)
        n = len(rows["ids"])
        print(f"{n} item rows of one profile (a memory record's row: {len(first)} fields); "
              f"load average {' / '.join(f'{x:.2f}' for x in load)} before, "
              f"{' / '.join(f'{x:.2f}' for x in os.getloadavg())} after\n")
        print(table(["rows read", "fields a row", "p50 ms", "us a row"], [
            (name, cols[name][1] or "", f"{median(t):.2f}", f"{1000 * median(t) / n:.0f}")
            for name, t in times.items()]))
        store.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
