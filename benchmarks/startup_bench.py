"""Start-up: how long a new process takes to its first recall, against a bare import.

    python benchmarks/startup_bench.py              # 5 runs of each, medians
    python benchmarks/startup_bench.py --runs 3

Each variant is a fresh ``python`` process, timed from spawn to exit (wall clock), ``--runs``
times, interleaved so that the load of a shared machine falls on every variant alike; the
table shows medians and the ratio to the baseline measured in the same run:

- ``import``: ``python -c "import langmem_edge"`` (the baseline);
- ``cli list``: ``langmem-edge list`` on a folder: no text is embedded, so the model is never
  loaded (torch is not even imported);
- ``cli recall``: ``langmem-edge recall``: the first recall of a new process (opens the folder,
  loads the profile, loads the model for the query's vector, recalls, prints);
- ``library recall``: the same through the library (``ChromaStore.from_path`` +
  ``AgentMemory`` + ``profile.recall``), without the CLI;
- ``model only``: ``default_embeddings().embed_query(...)``: what loading the model costs.

The column ``bar`` says whether any run printed transformers' ``Loading weights`` progress
bar on stderr (it is hidden unless ``LANGMEM_EDGE_SHOW_LOADING=1``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT)]  # this checkout's package, as the runs
from _common import median, table  # noqa: E402

SEED = [
    "Alice prefers dark mode in every app",
    "Alice is allergic to peanuts",
    "Alice lives in Singapore",
    "Alice works as a nurse on night shifts",
]

LIBRARY_RECALL = """
import sys
from langmem_edge import AgentMemory, ChromaStore, default_embeddings
store = ChromaStore.from_path(sys.argv[1], index={{"dims": 384, "embed": default_embeddings(),
                                                  "fields": ["text"]}})
print(AgentMemory(store).profile("bench").recall({query!r}).candidates[0].text)
store.close()
"""


def run(args: list[str]) -> tuple[float, str]:
    """Seconds a new process takes, and its stderr (a failing run stops the benchmark)."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{args} failed ({done.returncode}):\n{done.stderr}")
    return took, done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="processes per variant")
    opts = parser.parse_args()
    query = "what food must she avoid?"
    with tempfile.TemporaryDirectory() as tmp:
        cli = ["-m", "langmem_edge.cli", "--path", tmp]
        for text in SEED:  # real vectors, so recall ranks as it would for a user
            run([*cli, "remember", text, "-p", "bench"])
        variants = {
            "import (baseline)": ["-c", "import langmem_edge"],
            "cli list": [*cli, "list", "-p", "bench"],
            "cli recall": [*cli, "recall", query, "-p", "bench"],
            "library recall": ["-c", LIBRARY_RECALL.format(query=query), tmp],
            "model only": ["-c", "from langmem_edge import default_embeddings; "
                                 "default_embeddings().embed_query('warm up')"],
        }
        times: dict[str, list[float]] = {name: [] for name in variants}
        bars: dict[str, bool] = {name: False for name in variants}
        for _ in range(opts.runs):
            for name, args in variants.items():
                took, stderr = run(args)
                times[name].append(took)
                bars[name] = bars[name] or "Loading weights" in stderr
    base = median(times["import (baseline)"])
    rows = [(name, f"{median(ts):.2f}", f"{median(ts) / base:.1f}x",
             f"{min(ts):.2f}-{max(ts):.2f}", "yes" if bars[name] else "no")
            for name, ts in times.items()]
    print(f"New processes, {opts.runs} runs each (seconds, wall clock)\n")
    print(table(["variant", "median s", "vs import", "range s", "bar"], rows))


if __name__ == "__main__":
    main()
