"""The memory inspector on a large profile: what a page costs against the API call it renders.

    python benchmarks/inspector_bench.py                    # 100,000 memories, 15 runs
    python benchmarks/inspector_bench.py --memories 20000 --runs 9

One profile of ``--memories`` memories in an ``InMemoryStore`` without vectors (so the store
costs nothing and what is measured is the memory API and the inspector), warmed once. Each
row is timed ``--runs`` times, interleaved with its baseline measured in the same run: the
same call through the library (``profile.list`` / ``profile.recall``). The table shows medians
and the ratio of the page (a request through starlette's TestClient: routing, the guards,
the template) to its baseline.

- ``first page``: ``/profile`` (50 newest) against ``profile.list(limit=50, newest_first=True)``;
- ``deep page``: the cursor page 50 rows from the oldest end, against the same ``list`` call;
- ``500 rows``: ``/profile?limit=500&status=all`` against ``list(limit=500, status="all")``;
- ``search``: ``/search?q=...`` against ``profile.recall(q)``.

The last line is the floor of a request through the TestClient (its thread portal, the
guards): ``/static/inspector.js``, no memory read, no template. Most of what a page adds to
its API call is that floor and the async driver, not the template.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT)]  # this checkout's package
from _common import median, table, timed  # noqa: E402

BATCH = 500
"""Memories written per ``remember_many`` call."""

TOPICS = 97
"""Distinct topics the generated memories cycle through."""

QUERY = "topic 42 preferences"
"""The search the ``search`` row runs."""

BASE = "http://127.0.0.1"


def main() -> None:
    """Build the profile, time each page against its baseline, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()

    from langgraph.store.memory import InMemoryStore
    from starlette.testclient import TestClient

    from langmem_edge.inspector import create_app
    from langmem_edge.memory import AgentMemory

    memory = AgentMemory(InMemoryStore())
    big = memory.profile("big")
    for lo in range(0, args.memories, BATCH):
        hi = min(args.memories, lo + BATCH)
        big.remember_many([f"memory {i} about topic {i % TOPICS} preferences"
                           for i in range(lo, hi)])
    oldest = big.list(limit=51)  # oldest first: the cursor of the page 50 from the end
    deep_cursor = oldest.memories[-1].id
    client = TestClient(create_app(memory), base_url=BASE)

    def page(url: str, params: dict[str, str]) -> None:
        response = client.get(url, params=params)
        assert response.status_code == 200, response.text

    rows = {
        "first page": (
            lambda: page("/profile", {"p": "big"}),
            lambda: big.list(limit=50, newest_first=True)),
        "deep page": (
            lambda: page("/profile", {"p": "big", "cursor": deep_cursor}),
            lambda: big.list(limit=50, cursor=deep_cursor, newest_first=True)),
        "500 rows": (
            lambda: page("/profile", {"p": "big", "limit": "500", "status": "all"}),
            lambda: big.list(limit=500, status="all", newest_first=True)),
        "search": (
            lambda: page("/search", {"p": "big", "q": QUERY}),
            lambda: big.recall(QUERY)),
    }
    for inspector, api in rows.values():  # warm: the index is loaded, templates compiled
        inspector()
        api()
    samples: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in rows}
    floor: list[float] = []
    for _ in range(args.runs):
        for name, (inspector, api) in rows.items():
            samples[name][1].append(timed(api))
            samples[name][0].append(timed(inspector))
        floor.append(timed(lambda: page("/static/inspector.js", {})))
    out = []
    for name, (pages, apis) in samples.items():
        p, a = median(pages), median(apis)
        out.append((name, f"{a * 1000:.1f}", f"{p * 1000:.1f}", f"{p / a:.2f}x"))
    out.append(("floor: a static file", "", f"{median(floor) * 1000:.1f}", ""))
    print(f"{args.memories:,} memories in one profile, medians of {args.runs} runs\n")
    print(table(("page", "API call (ms)", "inspector page (ms)", "page / API"), out))


if __name__ == "__main__":
    main()
