"""What the namespace prefix fields cost a read: ``p1``..``p{d}`` scalars (today) against one
list of the prefixes, on real memory-record rows (issues 33, 34).

    python benchmarks/prefix_fields.py [--profiles 20,1000] [--memories 100] [--reads 30]

For each ``--profiles`` count: ``AgentMemory.remember_many`` writes ``--memories`` memories in
each profile of a ``ChromaStore`` folder (fake 64-d embeddings), then every item row is copied
into a second collection of the same folder whose ``p1``..``p{d}`` fields are one list,
``pp`` (each prefix joined, as the scalars hold them), and SQLite's planner statistics are
taken. Then ``--reads`` of a random profile by each layout, interleaved:

- ``profile read``: the profile's active records with their vectors (a recall's read: the
  prefix and ``live``; ``p4 == X`` against ``pp $contains X``);
- ``three listings``: three profiles' record namespaces in one read (``p4 $in [...]`` against
  an ``$or`` of three ``$contains``), ids only;
- ``vector query``: k=10 neighbours of a random vector within the profile's records
  (``where`` on the prefix), ids and distances.

Printed: p50 milliseconds of each, the ratio list / scalars, and the load average.
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
from memory_scale import DIMS, build  # noqa: E402

from langmem_edge._sqlite_stats import refresh  # noqa: E402
from langmem_edge.store import filters  # noqa: E402


def listed(meta: dict[str, Any]) -> dict[str, Any]:
    """A row's metadata with its ``p1``..``p{d}`` fields as one list, ``pp``."""
    depth = int(meta.get("nd") or 0)
    out = {k: v for k, v in meta.items()
           if not (k[:1] == "p" and k[1:].isdigit())}
    if depth:
        out["pp"] = [meta[f"p{d}"] for d in range(1, depth + 1)]
    return out


def run(folder: str, profiles: int, memories: int, reads: int, rng: random.Random
        ) -> list[list[object]]:
    store, _ = build(folder, profiles, memories, 1)
    scalars = store._items
    lists = copied_collection(store, "-pp", listed)
    refresh(folder)
    sample = scalars.get(where={"nd": 4}, limit=1, include=["metadatas"])["metadatas"][0]
    root = sample["p4"].rsplit("\x1f", 2)[0]

    def ns(p: int) -> str:
        return f"{root}\x1fuser:{p}\x1fmemories"

    def prefix(p: int, as_list: bool) -> dict[str, Any]:
        return {"pp": {"$contains": ns(p)}} if as_list else {"p4": ns(p)}

    def live(p: int) -> dict[str, Any]:
        return {filters.STRINGS_FIELD: {"$contains": filters.string_entry("live", f"user:{p}")}}

    def three(ps: list[int], as_list: bool) -> dict[str, Any]:
        if as_list:
            return {"$or": [{"pp": {"$contains": ns(p)}} for p in ps]}
        return {"p4": {"$in": [ns(p) for p in ps]}}

    ops: dict[str, Read] = {  # a case: three profiles and a query vector
        "profile read": lambda col, as_list, case: col.get(
            where={"$and": [prefix(case[0][0], as_list), live(case[0][0])]},
            include=["documents", "embeddings"]),
        "three listings (ids)": lambda col, as_list, case: col.get(
            where=three(case[0], as_list), include=[]),
        "vector query k=10": lambda col, as_list, case: col.query(
            query_embeddings=[case[1]], n_results=10, where=prefix(case[0][0], as_list),
            include=["distances"]),
    }
    cases = [(rng.sample(range(profiles), 3), [rng.gauss(0, 1) for _ in range(DIMS)])
             for _ in range(reads)]
    out = time_layouts(ops, scalars, lists, cases, rng, profiles * memories)
    store.close()
    return out


def main() -> None:
    main_over_sizes(__doc__ or "", "20,1000", "prefix-fields-", run,
                    ["memories", "read", "p1..p4 scalars p50 ms", "pp list p50 ms",
                     "list / scalars"])


if __name__ == "__main__":
    main()
