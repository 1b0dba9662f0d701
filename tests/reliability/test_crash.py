"""Crash durability: a writer SIGKILLed at random moments loses no acknowledged write.

A child (``crash_writer.py``) opens the store, a memory and a saver, checks the journal the
previous children left, then writes store puts, ``remember``, ``ingest``, working notes and
checkpoints (each with its writes), journalling every write that returned (fsync'd). The test
SIGKILLs it at a random moment, starts the next one, and after the last cycle runs a final
check-only child. Every acknowledged write must be present and intact, every visible record
whole, and the store must open without logging a warning (no repair).

Quick: :data:`QUICK_CYCLES` cycles, more (up to :data:`QUICK_MAX_CYCLES`) until every kind
of write was acknowledged (folder; server under the ``server`` marker). Long
(``--long`` / ``LANGMEM_EDGE_LONG=1``): :data:`LONG_CYCLES` on each.
"""

from __future__ import annotations

import json
import random
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from .helpers import CHILD_TIMEOUT_SECONDS, Journal, long_size, spawn

QUICK_CYCLES = 3
"""Kill cycles of the quick variant, at least."""

QUICK_MAX_CYCLES = 15
"""The quick variant runs more cycles, up to this many, until every kind of write was
acknowledged at least once (on a loaded machine a writer gets few writes done before its
kill)."""

KINDS = {"put", "remember", "ingest", "working", "checkpoint"}
"""The kinds of write the writer rotates over."""

LONG_CYCLES = 50
"""Kill cycles of the long variant."""

KILL_AFTER_SECONDS = (0.05, 2.0)
"""A writer is killed uniformly within this many seconds of starting to write."""

WRITER = "reliability.crash_writer"


def _run_child(args: list[str], log: Path, *, kill_after: float | None) -> dict[str, Any]:
    with open(log, "a") as err:
        proc = spawn(WRITER, *args, stderr=err)
        assert proc.stdout is not None
        report: dict[str, Any] | None = None
        deadline = time.monotonic() + CHILD_TIMEOUT_SECONDS
        for line in proc.stdout:
            if line.startswith("REPORT "):
                report = json.loads(line[len("REPORT "):])
            if line.startswith("READY") and kill_after is not None:
                time.sleep(kill_after)
                proc.send_signal(signal.SIGKILL)
                break
            assert time.monotonic() < deadline, "writer child hung"
        proc.wait(timeout=CHILD_TIMEOUT_SECONDS)
        proc.stdout.close()
    assert report is not None, f"child gave no report; its stderr: {log.read_text()[-3000:]}"
    if kill_after is not None:
        assert proc.returncode == -signal.SIGKILL
    else:
        assert proc.returncode == 0, log.read_text()[-3000:]
    return report


def run_cycles(location: str, work: Path, cycles: int, seed: int,
               max_cycles: int | None = None) -> dict[str, Any]:
    """Run ``cycles`` kill cycles on ``location`` (more, up to ``max_cycles``, until every
    kind of write was acknowledged) and a final check; the figures."""
    rng = random.Random(seed)
    journal, log = work / "journal.jsonl", work / "children.log"
    prefix = f"r{uuid.uuid4().hex[:8]}"
    base = ["--location", location, "--journal", str(journal), "--prefix", prefix]
    reports, full_from = [], 0
    cycle = 0
    while cycle < cycles or (cycle < (max_cycles or cycles) and not KINDS <= {
            e["op"] for e in Journal.read(journal)}):
        before = len(Journal.read(journal))
        reports.append(_run_child([*base, "--cycle", str(cycle), "--full-from", str(full_from)],
                                  log, kill_after=rng.uniform(*KILL_AFTER_SECONDS)))
        full_from = before
        cycle += 1
    cycles = cycle
    final = _run_child([*base, "--cycle", str(cycles), "--check-only"], log, kill_after=None)
    entries = Journal.read(journal)
    ops: dict[str, int] = {}
    for e in entries:
        ops[e["op"]] = ops.get(e["op"], 0) + 1
    figures = {
        "cycles": cycles, "writes_checked": final["checked"], "by_op": ops,
        "cycle_checks": sum(r["checked"] for r in reports),
        "unacknowledged_visible": final["unacknowledged"],
        "problems": [p for r in [*reports, final] for p in r["problems"]],
        "open_warnings": [w for r in [*reports, final] for w in r["warnings"]],
        "max_open_seconds": max(r["open_seconds"] for r in [*reports, final]),
    }
    print(f"\ncrash durability on {'server' if location.startswith('http') else 'folder'}: "
          + json.dumps(figures))
    return figures


def check(figures: dict[str, Any], cycles: int) -> None:
    assert figures["problems"] == []
    assert figures["open_warnings"] == []
    assert set(figures["by_op"]) == KINDS, (
        f"every kind of write must be acknowledged at least once in {figures['cycles']} cycles")


def test_acknowledged_writes_survive_sigkill_on_a_folder(tmp_path: Path, long_run: bool) -> None:
    cycles = long_size(LONG_CYCLES) if long_run else QUICK_CYCLES
    figures = run_cycles(str(tmp_path / "data"), tmp_path, cycles, seed=17,
                         max_cycles=None if long_run else QUICK_MAX_CYCLES)
    check(figures, cycles)


@pytest.mark.server
def test_acknowledged_writes_survive_sigkill_on_a_server(
    tmp_path: Path, long_run: bool, chroma_server_url: str
) -> None:
    cycles = long_size(LONG_CYCLES) if long_run else QUICK_CYCLES
    figures = run_cycles(chroma_server_url, tmp_path, cycles, seed=71,
                         max_cycles=None if long_run else QUICK_MAX_CYCLES)
    check(figures, cycles)
