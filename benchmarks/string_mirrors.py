"""What the filter mirror's layout costs a read: one scalar field per string leaf (schema 7)
against one list of them (schema 8), on real memory-record rows (issues 33, 34).

    python benchmarks/string_mirrors.py [--profiles 20,200] [--memories 100] [--reads 30]
                                        [--folder /dev/shm]

For each ``--profiles`` count: ``AgentMemory.remember_many`` writes ``--memories`` memories in
each profile of a ``ChromaStore`` folder (fake 64-d embeddings; the rows are this version's,
schema 8), then every item row is copied into a second collection of the same folder with its
string mirror laid out as schema 7 did (``f:<path>`` fields, :data:`SCHEMA7_PREFIX`), and
SQLite's planner statistics are taken (as the store does). Chroma reads every scalar field of
each row it returns, whatever ``include`` asks for, but a row's lists only when metadata is
asked for: that is the difference measured. Then ``--reads`` reads of a random profile by each
layout, interleaved:

- ``profile read``: the profile's active records with their vectors (a recall's read:
  ``p4`` and ``live``, documents and embeddings);
- ``key read``: the records under one key, active (a keyed remember's settling read:
  ``key`` and ``live``, documents);
- ``upsert``: one new row of the profile (metadata, document and vector), then deleted.

Printed: p50 milliseconds of each, the ratio list / scalars, the scalar fields of a record's
row in each layout, and the load average before and after.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from _layouts import Read, copied_collection, main_over_sizes, time_layouts  # noqa: E402
from memory_scale import build  # noqa: E402

from langmem_edge._sqlite_stats import refresh  # noqa: E402
from langmem_edge.store import filters  # noqa: E402

SCHEMA7_PREFIX = "f:"
"""Prefix of schema 7's metadata field per string leaf (``f:<path>``)."""


def schema_7(meta: dict[str, Any]) -> dict[str, Any]:
    """A schema 8 row's metadata with its strings list as schema 7's ``f:`` fields."""
    out = {k: v for k, v in meta.items() if k != filters.STRINGS_FIELD}
    for entry in meta.get(filters.STRINGS_FIELD) or []:
        path, _, text = entry.partition(filters.ENTRY_SEPARATOR)
        out[SCHEMA7_PREFIX + path] = text
    return out


def _scalars(meta: dict[str, Any]) -> int:
    return sum(not isinstance(v, list) for v in meta.values())


def run(folder: str, profiles: int, memories: int, reads: int, rng: random.Random
        ) -> list[list[object]]:
    store, _ = build(folder, profiles, memories, 1)
    rows8 = store._items
    rows7 = copied_collection(store, "-s7", schema_7)
    refresh(folder)
    sample = rows8.get(where={"nd": 4}, limit=1, include=["metadatas"])["metadatas"][0]
    depth = int(sample["nd"])
    key = "music.favourite"  # one keyed record a profile, for the key read
    for p in range(profiles):
        _.profile(f"user:{p}").remember(f"The user's favourite album is number {p}.", key=key)
    moved = rows8.get(where={filters.STRINGS_FIELD: {"$contains": filters.string_entry(
        "key", key)}}, include=["metadatas", "documents", "embeddings"])
    rows7.add(ids=moved["ids"], metadatas=[schema_7(m) for m in moved["metadatas"]],
              documents=moved["documents"], embeddings=list(moved["embeddings"]))
    ns = sample[f"p{depth}"].rsplit("\x1f", 2)[0]  # the app namespace and "profiles"

    def prefix(p: str) -> str:
        return f"{ns}\x1f{p}\x1fmemories"

    def live(p: str, listed: bool) -> dict[str, Any]:
        if listed:
            return {filters.STRINGS_FIELD: {"$contains": filters.string_entry("live", p)}}
        return {SCHEMA7_PREFIX + "live": p}

    def keyed(listed: bool) -> dict[str, Any]:
        if listed:
            return {filters.STRINGS_FIELD: {"$contains": filters.string_entry("key", key)}}
        return {SCHEMA7_PREFIX + "key": key}

    new_row = rows8.get(ids=moved["ids"][:1], include=["metadatas", "documents",
                                                        "embeddings"])
    ops: dict[str, Read] = {
        "profile read": lambda col, listed, p: col.get(
            where={"$and": [{f"p{depth}": prefix(p)}, live(p, listed)]},
            include=["documents", "embeddings"]),
        "key read": lambda col, listed, p: col.get(
            where={"$and": [keyed(listed), live(p, listed)]}, include=["documents"]),
        "upsert": lambda col, listed, p: (
            col.upsert(ids=["bench-new"], documents=new_row["documents"],
                       embeddings=list(new_row["embeddings"]),
                       metadatas=[new_row["metadatas"][0] if listed
                                  else schema_7(new_row["metadatas"][0])]),
            col.delete(ids=["bench-new"])),
    }
    out = time_layouts(ops, rows7, rows8,
                       [f"user:{rng.randrange(profiles)}" for _ in range(reads)], rng,
                       profiles * memories)
    record = rows8.get(where={"$and": [{f"p{depth}": prefix("user:0")}, live("user:0", True)]},
                       limit=1, include=["metadatas"])["metadatas"][0]
    out.append([profiles * memories, "scalar fields of a record's row",
                _scalars(schema_7(record)), _scalars(record), ""])
    store.close()
    return out


def main() -> None:
    main_over_sizes(__doc__ or "", "20,200", "string-mirrors-", run,
                    ["memories", "read", "scalars (schema 7) p50 ms", "list (schema 8) p50 ms",
                     "list / scalars"])


if __name__ == "__main__":
    main()
