"""Recall alone, before and after a round of writes, on ``memory_scale.py``'s store: whether
what a write leaves behind (access counts, superseded records) slows the next recalls.

    PYTHONPATH=<tree> python benchmarks/recall_after_writes.py [--profiles 20] [--recalls 60]
                                                               [--mix 2]

Builds ``--profiles`` profiles x 100 memories (``memory_scale.build``: a ChromaStore folder on
tmpfs, fake 64-d embeddings), times ``--recalls`` recalls of random profiles, then one
``remember`` per profile, then ``--recalls`` recalls again; prints both medians. With ``--mix
N``, the writes are instead ``memory_scale.py``'s mix (N rounds of 15 recalls, 15 remembers
and 15 ingests on random profiles), and the second recalls also print the time inside
Chroma's ``get`` and the rows it returned. Run it on two trees alternating (``PYTHONPATH``) to
compare layouts, as ``docs/benchmarks.md`` does.
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

from memory_scale import TOPICS, build, run_op  # noqa: E402

GETS = {"seconds": 0.0, "rows": 0}
"""Time inside Chroma's ``Collection.get`` and rows it returned (``--mix``)."""


def count_gets() -> None:
    from chromadb.api.models.Collection import Collection

    original = Collection.get

    def counted(self: object, *args: object, **kwargs: object) -> dict:
        start = time.perf_counter()
        out = original(self, *args, **kwargs)
        GETS["seconds"] += time.perf_counter() - start
        GETS["rows"] += len(out["ids"])
        return out

    Collection.get = counted  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profiles", type=int, default=20)
    parser.add_argument("--recalls", type=int, default=60)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--mix", type=int, default=0, help="rounds of memory_scale's op mix")
    args = parser.parse_args()
    if args.mix:
        count_gets()
    folder = tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    try:
        store, memory = build(folder, args.profiles, 100, 7)
        rng = random.Random(args.seed)

        gets: list[tuple[float, int]] = []

        def recalls() -> float:
            times = []
            for _ in range(args.recalls):
                profile = memory.profile(f"user:{rng.randrange(args.profiles)}")
                GETS["seconds"], GETS["rows"] = 0.0, 0
                start = time.perf_counter()
                profile.recall(f"what does the user enjoy, {rng.choice(TOPICS)}?")
                times.append(time.perf_counter() - start)
                gets.append((GETS["seconds"], int(GETS["rows"])))
            return statistics.median(times) * 1000

        fresh = recalls()
        if args.mix:
            serial = 0
            for _ in range(args.mix):
                for op in ("recall", "remember", "ingest"):
                    for _ in range(15):
                        serial += 1
                        run_op(memory, args.profiles, op, rng, serial)
        else:
            for i in range(args.profiles):
                memory.profile(f"user:{i}").remember(
                    f"The user bought a {rng.choice(TOPICS)} book, number {i}.")
        gets.clear()
        after = recalls()
        detail = (f"; after: Chroma get p50 {statistics.median(g for g, _ in gets) * 1000:.2f} "
                  f"ms, {statistics.median(r for _, r in gets):.0f} rows") if args.mix else ""
        print(f"recall p50: {fresh:.2f} ms fresh, {after:.2f} ms after the writes{detail} "
              f"(load average {os.getloadavg()[0]:.2f})")
        store.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
