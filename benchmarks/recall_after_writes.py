"""Recall alone, before and after a round of writes, on ``memory_scale.py``'s store: whether
what a write leaves behind (access counts, superseded records) slows the next recalls.

    PYTHONPATH=<tree> python benchmarks/recall_after_writes.py [--profiles 20] [--recalls 60]

Builds ``--profiles`` profiles x 100 memories (``memory_scale.build``: a ChromaStore folder on
tmpfs, fake 64-d embeddings), times ``--recalls`` recalls of random profiles, then one
``remember`` per profile, then ``--recalls`` recalls again; prints both medians. Run it on two
trees alternating (``PYTHONPATH``) to compare layouts, as ``docs/benchmarks.md`` does.
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

from memory_scale import TOPICS, build  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profiles", type=int, default=20)
    parser.add_argument("--recalls", type=int, default=60)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    try:
        store, memory = build(folder, args.profiles, 100, 7)
        rng = random.Random(args.seed)

        def recalls() -> float:
            times = []
            for _ in range(args.recalls):
                profile = memory.profile(f"user:{rng.randrange(args.profiles)}")
                start = time.perf_counter()
                profile.recall(f"what does the user enjoy, {rng.choice(TOPICS)}?")
                times.append(time.perf_counter() - start)
            return statistics.median(times) * 1000

        fresh = recalls()
        for i in range(args.profiles):
            memory.profile(f"user:{i}").remember(
                f"The user bought a {rng.choice(TOPICS)} book, number {i}.")
        after = recalls()
        print(f"recall p50: {fresh:.2f} ms fresh, {after:.2f} ms after one remember a profile "
              f"(load average {os.getloadavg()[0]:.2f})")
        store.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
