"""langgraph's own tests, unchanged, with ChromaSaver and ChromaStore swapped in.

``tests/upstream/run_langgraph_tests.py`` fetches the source distributions of the installed
``langgraph`` and ``langgraph-checkpoint-sqlite`` (their test suites ship in them) and runs
the interrupt, time-travel and subgraph-persistence graph tests on a ``ChromaSaver``, and the
whole store suite on a ``ChromaStore``. A difference from langgraph's own savers and stores
fails here, as two interrupts in one node and a label ending in a newline once did.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # langgraph's own store and graph suites (about 4 minutes)

RUNNER = Path(__file__).resolve().parent / "upstream" / "run_langgraph_tests.py"


@pytest.mark.parametrize("suite", ["saver", "store"])
def test_langgraph_suite_passes_with_ours_swapped_in(suite: str) -> None:
    done = subprocess.run([sys.executable, str(RUNNER), suite], capture_output=True, text=True,
                          timeout=1800)
    tail = "\n".join((done.stdout + done.stderr).splitlines()[-40:])
    assert done.returncode == 0, tail
    assert " passed" in done.stdout and " failed" not in done.stdout, tail
