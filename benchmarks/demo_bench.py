"""``langmem-edge demo``: how long the README's first command takes, against a bare import.

    python benchmarks/demo_bench.py              # 3 runs of each, medians
    python benchmarks/demo_bench.py --runs 5

Each variant is a fresh ``python`` process, timed from spawn to exit (wall clock), ``--runs``
times, interleaved so that the load of a shared machine falls on every variant alike; the
table shows medians and the ratio to the baseline measured in the same run:

- ``import``: ``python -c "import langmem_edge"`` (the baseline);
- ``demo, fake embeddings``: ``langmem-edge demo`` with ``LANGMEM_EDGE_FAKE_EMBEDDINGS=1``
  (the script, the agent, extraction and Chroma, without the model);
- ``demo``: ``langmem-edge demo`` as the README runs it (the real embedding model).

Every demo run must exit 0 (all four of its claims borne out by the store) and leave no
temporary folder behind (the column ``left``: folders named ``langmem-edge-demo-*`` left in
the run's ``TMPDIR``; torch's own empty ``torchinductor_*`` cache folder is not the demo's).
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

from langmem_edge.cli.demo import TEMP_PREFIX  # noqa: E402

DEMO = ["-m", "langmem_edge.cli", "demo"]
"""The command the README's first line ends with."""


def run(args: list[str], env: dict[str, str]) -> float:
    """Seconds a new process takes (a failing run stops the benchmark)."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", **env})
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{args} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="processes per variant")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        where = {"TMPDIR": tmp}
        variants = {
            "import (baseline)": (["-c", "import langmem_edge"], {}),
            "demo, fake embeddings": (DEMO, {**where, "LANGMEM_EDGE_FAKE_EMBEDDINGS": "1"}),
            "demo": (DEMO, where),
        }
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(opts.runs):
            for name, (args, env) in variants.items():
                times[name].append(run(args, env))
        left = len(list(Path(tmp).glob(f"{TEMP_PREFIX}*")))
    base = median(times["import (baseline)"])
    rows = [(name, f"{median(ts):.2f}", f"{median(ts) / base:.1f}x",
             f"{min(ts):.2f}-{max(ts):.2f}", "" if name.startswith("import") else left)
            for name, ts in times.items()]
    print(f"New processes, {opts.runs} runs each (seconds, wall clock)\n")
    print(table(["variant", "median s", "vs import", "range s", "left"], rows))


if __name__ == "__main__":
    main()
