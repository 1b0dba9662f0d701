"""What an operation's profile index costs, numpy columns (before) against admission and the
fill computed from the values (this tree), on the same records (thirty-fourth session,
issue 34).

    git worktree add /tmp/before dc16e49
    python benchmarks/profile_index_ab.py /tmp/before [--records 100,1000] [--calls 40]

For each ``--records`` count: synthetic records of one profile (texts of 8 words from 500,
a third under keys, two scopes, every kind, a tenth superseded, access counts on some, rows
of two other writers' counts), built the same way in both trees. A call is what a recall
does with the index besides its channels: fill it from the read (``reset``), admit the
records of a current recall and of an ``at(ts)`` view, and rank the fill of each
(``rank_fill``, 10). Each tree runs in its own process (``PYTHONPATH``), in turn, 3 times;
printed: the median milliseconds a call of each and their ratio, and the script asserts both
trees admit the same records and rank the same fill (scores within 1e-9, the same ids above
the last score; records tied at the cut may come in either order: the columns' partial sort
left that order undefined).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent


def records(n: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``n`` record values of profile ``p`` and two writers' count rows."""
    rng = random.Random(n)
    words = [f"w{i}" for i in range(500)]
    kinds = ["fact", "preference", "event", "task", "learning"]
    start = datetime(2026, 1, 1, tzinfo=UTC)
    out = []
    for i in range(n):
        created = start + timedelta(hours=i)
        value: dict[str, Any] = {
            "id": f"{i:032x}", "profile": "p", "text": " ".join(rng.choices(words, k=8)),
            "scope": "agent" if i % 4 else "contact:bob", "kind": kinds[i % len(kinds)],
            "writer": "agent", "confidence": round(rng.uniform(0.3, 1.0), 3),
            "created_at": created.isoformat(), "valid_from": created.isoformat(),
            "status": "active", "access_count": rng.randint(0, 5) if i % 3 == 0 else 0,
        }
        if i % 3 == 0:
            value["key"] = f"topic.{i % 40}"
        if i % 10 == 9:
            value["status"] = "superseded"
            value["superseded_at"] = (created + timedelta(days=3)).isoformat()
        if i % 5 == 0:
            value["last_accessed_at"] = (created + timedelta(days=1)).isoformat()
        out.append(value)
    counts = [{"profile": "p", "writer": w, "counts": {
        v["id"]: [rng.randint(1, 3),
                  (start + timedelta(days=400, minutes=rng.randint(0, 9999))).isoformat()]
        for v in out if rng.random() < 0.2}} for w in ("w1", "w2")]
    return out, counts


def worker(sizes: list[int], calls: int) -> dict[str, Any]:
    """This process's tree: timings and answers for each size."""
    from types import SimpleNamespace

    from langmem_edge.memory.config import MemoryConfig
    from langmem_edge.memory.core.layout import ProfileLayout
    from langmem_edge.memory.index.profile_index import ProfileIndex

    layout, recall = ProfileLayout(("m",), "p"), MemoryConfig().recall
    out: dict[str, Any] = {}
    for n in sizes:
        values, rows = records(n)
        counts = [SimpleNamespace(key=r["writer"], value=r) for r in rows]
        now = datetime(2026, 1, 1, tzinfo=UTC).timestamp() + 3600 * n
        past = now - 3600 * n / 2

        def call(values: list[Any] = values, counts: list[Any] = counts, now: float = now,
                 past: float = past) -> list[Any]:
            index = ProfileIndex(layout, recall)
            index.reset([dict(v) for v in values], counts)
            answers = []
            for t, as_of in ((now, False), (past, True)):
                accept = index.admissible(t=t, as_of=as_of, scopes=("agent",), kinds=None,
                                          writer=None, min_confidence=0.5)
                admitted = sorted(mid for mid in index.values if accept(mid))
                answers.append([admitted, index.rank_fill(accept, t=t, exclude=[], limit=10)])
            return answers

        call()
        ms = []
        for _ in range(calls):
            began = time.perf_counter()
            answers = call()
            ms.append(1000 * (time.perf_counter() - began))
        out[str(n)] = {"ms": statistics.median(ms), "answers": answers}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", nargs="?", help="the checkout to compare with")
    parser.add_argument("--records", default="100,1000")
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(x) for x in args.records.split(",")]
    if args.worker:
        print(json.dumps(worker(sizes, args.calls)))
        return
    trees = {"before": Path(args.before).resolve(), "after": ROOT}
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    load = os.getloadavg()[0]
    for _ in range(3):
        for name, tree in trees.items():
            done = subprocess.run(
                [sys.executable, str(HERE), "--worker", "--records", args.records,
                 "--calls", str(args.calls)], check=True, capture_output=True, text=True,
                env={**os.environ, "PYTHONPATH": str(tree)}, cwd=str(tree))
            runs[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    print("| records | before, ms a call | after, ms a call | after / before |")
    print("| --- | --- | --- | --- |")
    for n in sizes:
        key = str(n)
        old = [r[key] for r in runs["before"]]
        new = [r[key] for r in runs["after"]]
        for a, b in zip(old[0]["answers"], new[0]["answers"], strict=True):
            assert a[0] == b[0], "the trees admit different records"
            assert all(abs(x - y) < 1e-9 for (_, x), (_, y) in zip(a[1], b[1], strict=True))
            last = min((sc for _, sc in a[1]), default=0.0)  # ties at the cut: either order
            assert ({i for i, sc in a[1] if sc > last + 1e-9}
                    == {i for i, sc in b[1] if sc > last + 1e-9}), "the fills differ"
        before_ms = statistics.median(r["ms"] for r in old)
        after_ms = statistics.median(r["ms"] for r in new)
        print(f"| {n:,} | {before_ms:.3f} | {after_ms:.3f} | {after_ms / before_ms:.2f}x |")
    print(f"\nload average {load:.2f} before, {os.getloadavg()[0]:.2f} after; 3 runs of each "
          f"tree in turn, {args.calls} calls a run; admitted records and fills equal")


if __name__ == "__main__":
    main()
