"""``memory_scale.py`` on two source trees in one run, alternating: today's code against a
baseline checkout, as the issue asks for a before/after in one run.

    git worktree add /tmp/before <commit>
    python benchmarks/memory_scale_ab.py /tmp/before . [--runs 2] [-- memory_scale args]

Each run is a fresh process with ``PYTHONPATH`` set to its tree (so it imports that tree's
``langmem_edge``) and this tree's ``memory_scale.py``. Runs go A, B, B, A, A, B, ...: the
second process of a pair ran 5-33 % slower whichever tree it was (thirty-fourth session), so
each tree takes each place equally often with an even ``--runs``. Printed: per operation
and profile count, the median over runs of each run's p50 and p95, the ratio B / A, the
Chroma calls per operation of each, and the load averages.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import table

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", help="baseline source tree (A)")
    parser.add_argument("after", help="source tree measured against it (B)")
    parser.add_argument("--runs", type=int, default=2, help="runs of each tree")
    args, rest = parser.parse_known_args()
    rest = [a for a in rest if a != "--"]
    results: dict[str, list[dict]] = {"A": [], "B": []}
    pair = (("A", args.before), ("B", args.after))
    for run in range(args.runs):
        for label, tree in pair if run % 2 == 0 else pair[::-1]:
            with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
                out = f.name
            env = {**os.environ, "PYTHONPATH": str(Path(tree).resolve())}
            subprocess.run([sys.executable, str(HERE / "memory_scale.py"), "--json", out,
                            *rest], env=env, check=True)
            with open(out) as f:
                results[label].append(json.load(f))
            os.unlink(out)
    keys = [(x["op"], x["profiles"]) for x in results["A"][0]["figures"]]

    def med(label: str, key: tuple[str, int], field: str) -> float:
        return statistics.median(
            next(x[field] for x in r["figures"] if (x["op"], x["profiles"]) == key)
            for r in results[label])

    rows = []
    for key in keys:
        a50, b50 = med("A", key, "p50_ms"), med("B", key, "p50_ms")
        rows.append([key[0], key[1], f"{a50:.1f}", f"{b50:.1f}", f"{b50 / a50:.2f}x",
                     f"{med('A', key, 'p95_ms'):.1f}", f"{med('B', key, 'p95_ms'):.1f}",
                     f"{med('A', key, 'calls'):.1f}", f"{med('B', key, 'calls'):.1f}"])
    print(table(["operation", "profiles", "A p50 ms", "B p50 ms", "B / A", "A p95 ms",
                 "B p95 ms", "A calls", "B calls"], rows))
    loads = [round(v, 2) for lab in "AB" for r in results[lab] for v in r["load"]]
    print(f"\nA = {args.before}, B = {args.after}; {args.runs} runs each, A B B A ...; "
          f"load averages (before, after each run): {loads}")


if __name__ == "__main__":
    main()
