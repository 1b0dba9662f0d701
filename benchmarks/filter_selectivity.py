"""What a Chroma ``where`` pays for an equality many rows share: the reason active records are
read by their ``live`` field (``memory/records.py``), not by ``status``.

    python benchmarks/filter_selectivity.py [--profiles 20,200,1000] [--records 100]
                                            [--active 20] [--reads 30] [--rounds 3]

Raw Chroma calls, no ChromaStore: one collection on tmpfs (a folder under ``/dev/shm`` when
there is one) that grows in steps to each ``--profiles`` count, ``--records`` rows a profile,
``--active`` of them active, each row with the metadata a memory record's read names: ``p3``
(its profile's namespace, joined), ``f:status`` (``active`` or ``superseded``), ``f:live`` (the
profile on active rows only). After each step SQLite's planner statistics are taken (as the
store does), then, in ``--rounds`` interleaved rounds, ``--reads`` reads of a random profile by
each ``where``:

- ``namespace``: ``p3`` only (every record of the profile, history included);
- ``namespace + status``: ``p3`` and ``f:status == "active"`` (what reads asked before);
- ``namespace + live``: ``p3`` and ``f:live == profile`` (what they ask now);
- ``namespace + (live or fx == True)`` and ``... fx == 1``: the same with the branch every
  pushed-down filter of ``ChromaStore`` carries (an item whose mirror is incomplete passes),
  its flag a bool (schema 6) or an int (schema 7). No row holds it, but as soon as one
  candidate fails ``live`` SQLite evaluates the branch, and Chroma keeps no index of bool
  values: that branch reads every metadata row of the collection.

Printed: the median milliseconds of each and the rows returned. Chroma evaluates each
equality of a ``where`` as ``id IN (SELECT id FROM embedding_metadata WHERE key = ? AND
value = ?)`` and intersects them, so an equality that every profile's active rows share is
paid in full on each read: its cost grows with the number of profiles; ``live`` is as
selective as the namespace.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import chromadb  # noqa: E402

from langmem_edge._sqlite_stats import refresh  # noqa: E402

DIMS = 8
ADD_CHUNK = 5000


def namespace(p: int) -> str:
    return f"langmem_edge\x1fprofiles\x1fu{p}\x1fmemories"


def add_profiles(col: object, start: int, stop: int, records: int, active: int,
                 rng: random.Random) -> None:
    ids, embs, metas = [], [], []
    for p in range(start, stop):
        for r in range(records):
            live = r < active
            ids.append(f"u{p}r{r}")
            embs.append([rng.random() for _ in range(DIMS)])
            metas.append({"p3": namespace(p), "f:status": "active" if live else "superseded",
                          **({"f:live": f"u{p}"} if live else {}), "ua": float(r)})
    for i in range(0, len(ids), ADD_CHUNK):
        col.add(ids=ids[i:i + ADD_CHUNK], embeddings=embs[i:i + ADD_CHUNK],  # type: ignore
                metadatas=metas[i:i + ADD_CHUNK], documents=["x" * 200] * len(ids[i:i + ADD_CHUNK]))


WHERES = {
    "namespace": lambda p: {"p3": namespace(p)},
    "namespace + status": lambda p: {"$and": [{"p3": namespace(p)}, {"f:status": "active"}]},
    "namespace + live": lambda p: {"$and": [{"p3": namespace(p)}, {"f:live": f"u{p}"}]},
    "namespace + (live or fx == True)": lambda p: {"$and": [
        {"p3": namespace(p)}, {"$or": [{"f:live": f"u{p}"}, {"fx": True}]}]},
    "namespace + (live or fx == 1)": lambda p: {"$and": [
        {"p3": namespace(p)}, {"$or": [{"f:live": f"u{p}"}, {"fx": 1}]}]},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profiles", default="20,200,1000")
    parser.add_argument("--records", type=int, default=100)
    parser.add_argument("--active", type=int, default=20)
    parser.add_argument("--reads", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    steps = sorted(int(x) for x in args.profiles.split(","))
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    folder = tempfile.mkdtemp(prefix="filter-selectivity-", dir=base)
    rng = random.Random(7)
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print("| profiles | rows | where | p50 ms | rows returned | vs namespace |")
    print("| --- | --- | --- | --- | --- | --- |")
    try:
        client = chromadb.PersistentClient(path=folder)
        col = client.create_collection("selectivity", metadata={"hnsw:space": "cosine"})
        done = 0
        for n in steps:
            add_profiles(col, done, n, args.records, args.active, rng)
            done = n
            refresh(folder, min_rows=1, growth=1.0)
            times: dict[str, list[float]] = {name: [] for name in WHERES}
            found: dict[str, int] = {}
            for _ in range(args.rounds):
                for name, where in WHERES.items():
                    for _ in range(args.reads):
                        w = where(rng.randrange(n))
                        t0 = time.perf_counter()
                        got = col.get(where=w, include=["documents"])
                        times[name].append((time.perf_counter() - t0) * 1000)
                        found[name] = len(got["ids"])
            base_ms = statistics.median(times["namespace"])
            for name in WHERES:
                ms = statistics.median(times[name])
                print(f"| {n:,} | {n * args.records:,} | {name} | {ms:.2f} | {found[name]} "
                      f"| {ms / base_ms:.2f}x |")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
