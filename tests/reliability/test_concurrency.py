"""Concurrency: 4 processes x 2 threads writing and reading through one server.

Each worker process (``concurrency_worker.py``) shares one store, memory and saver between
its threads; every thread puts items, reads them back, remembers under keys every process
shares, recalls (tallying the matched memories it was given) and puts checkpoints. Then a
fresh process view checks: no exception anywhere, every acknowledged item, memory and
checkpoint present, one active memory per key with the rest superseded, and each memory's
``access_count`` equal to the number of recalls that returned it as a match (docs/memory.md,
"Access counts": every matched memory a recall returns counts; ``flush()`` writes them).

Quick: :data:`QUICK_ITERATIONS` iterations a thread; long: :data:`LONG_ITERATIONS`.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import Op, PutOp, Result
from langgraph.store.memory import InMemoryStore

from langmem_edge import AgentMemory, MemoryRecord

from .concurrency_worker import SHARED_PROFILE
from .helpers import (
    CHECKPOINT_WRITES,
    CHILD_TIMEOUT_SECONDS,
    checkpoint_config,
    long_size,
    open_memory,
    open_saver,
    open_store,
    spawn,
)

PROCESSES = 4
"""Worker processes."""

THREADS = 2
"""Threads in each worker."""

QUICK_ITERATIONS = 6
"""Iterations of each thread, quick variant."""

LONG_ITERATIONS = 60
"""Iterations of each thread, long variant."""

KEYS = 3
"""Keys shared by every thread, so supersessions race."""

SECONDS_PER_ITERATION = 20.0
"""Time a worker is allowed per iteration of its threads, on top of
``CHILD_TIMEOUT_SECONDS`` (the long run's 60 iterations outlived a flat 600 s on a loaded
2-core machine: 8 threads share it, and each recall reads a profile that grows)."""


def child_timeout(iterations: int) -> float:
    """How long the suite waits for a worker that runs ``iterations`` iterations a thread."""
    return CHILD_TIMEOUT_SECONDS + iterations * SECONDS_PER_ITERATION


@pytest.mark.server
def test_processes_and_threads_lose_nothing_and_keep_one_active_per_key(
    chroma_server_url: str, tmp_path: Path, long_run: bool
) -> None:
    iterations = long_size(LONG_ITERATIONS) if long_run else QUICK_ITERATIONS
    prefix = f"c{uuid.uuid4().hex[:8]}"
    log = tmp_path / "workers.log"
    with open(log, "w") as err:
        procs = [spawn("reliability.concurrency_worker", "--url", chroma_server_url,
                       "--prefix", prefix, "--proc", str(p), "--threads", str(THREADS),
                       "--iterations", str(iterations), "--keys", str(KEYS), stderr=err)
                 for p in range(PROCESSES)]
        results = []
        deadline = time.monotonic() + child_timeout(iterations)
        for proc in procs:
            out, _ = proc.communicate(timeout=max(0.0, deadline - time.monotonic()))
            assert proc.returncode == 0, log.read_text()[-3000:]
            line = next(x for x in out.splitlines() if x.startswith("RESULT "))
            results.append(json.loads(line[len("RESULT "):]))
    errors = [e for r in results for e in r["errors"]]

    store, saver = open_store(chroma_server_url, prefix=prefix), open_saver(
        chroma_server_url, prefix=prefix)
    profile = open_memory(store).profile(SHARED_PROFILE)
    lost_items = [k for r in results for ns, k in r["items"] if store.get(tuple(ns), k) is None]
    lost_memories = [m for r in results for m in r["memories"] if profile.get(m) is None]
    lost_checkpoints = []
    for r in results:
        for thread, cid in r["checkpoints"]:
            tup = saver.get_tuple(checkpoint_config(thread, cid))
            if tup is None or len(tup.pending_writes) != CHECKPOINT_WRITES:
                lost_checkpoints.append(cid)
    histories = {f"shared.k{k}": profile.history(f"shared.k{k}") for k in range(KEYS)}
    actives = {key: sum(m.status == "active" for m in h) for key, h in histories.items()}
    crossed = {key: sorted({m.key for m in h} - {key}) for key, h in histories.items()
               if {m.key for m in h} != {key}}
    expected: dict[str, int] = {}
    for r in results:
        for mid, n in r["access"].items():
            expected[mid] = expected.get(mid, 0) + n
    counts = {mid: profile.get(mid).access_count for mid in expected}
    wrong_counts = {m: (counts[m], n) for m, n in expected.items() if counts[m] != n}
    figures = {"processes": PROCESSES, "threads": THREADS, "iterations": iterations,
               "items": sum(len(r["items"]) for r in results),
               "memories": sum(len(r["memories"]) for r in results),
               "checkpoints": sum(len(r["checkpoints"]) for r in results),
               "exceptions": len(errors), "lost_items": len(lost_items),
               "lost_memories": len(lost_memories), "lost_checkpoints": len(lost_checkpoints),
               "active_per_key": actives, "chains_crossing_keys": crossed,
               "access_counted": sum(expected.values()),
               "access_counts_wrong": len(wrong_counts)}
    print("\nconcurrency: " + json.dumps(figures))
    store.close()
    saver.close()
    assert errors == []
    assert lost_items == [] and lost_memories == [] and lost_checkpoints == []
    if not all(n == 1 for n in actives.values()):
        for key, h in histories.items():
            if actives[key] != 1:
                for m in h:
                    print("HIST", key, m.id, m.status, m.superseded_by, m.supersedes,
                          m.created_at, m.updated_at, m.text[:40])
    assert all(n == 1 for n in actives.values()), actives
    assert crossed == {}, crossed  # a chain under one key never supersedes another key's
    assert wrong_counts == {}


class _RacingStore(InMemoryStore):
    """Runs ``hook`` once, just before the batch that writes the record whose text is
    ``trigger``: another writer's whole ``remember`` lands between this one's sync and its
    commit."""

    trigger = ""
    hook: Callable[[], object] | None = None

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        if self.hook is not None and any(
            isinstance(op, PutOp) and op.value and op.value.get("text") == self.trigger
            for op in ops
        ):
            hook, self.hook = self.hook, None
            hook()
        return super().batch(ops)


def test_two_writers_racing_on_one_key_leave_one_active() -> None:
    """Regression (found by the suite above: 8 actives per key with 8 writers): both writers
    synced before either committed, so neither superseded the other."""
    store = _RacingStore()
    a, b = (AgentMemory(store, namespace=("rel",)).profile("p") for _ in range(2))
    a.remember("Theme is blue", key="preference.theme")
    store.trigger = "Theme is green"
    store.hook = lambda: b.remember("Theme is red", key="preference.theme")
    mine = a.remember("Theme is green", key="preference.theme")
    assert store.hook is None  # the race happened
    history = b.history("preference.theme")
    active = [m for m in history if m.status == "active"]
    assert len(history) == 3 and len(active) == 1
    assert active[0].id == max(m.id for m in history if m.text != "Theme is blue")
    assert mine.status == a.get(mine.id).status


def _race(first: str, second: str) -> tuple[AgentMemory, list[MemoryRecord]]:
    """``first`` writes "Theme is green" by key; ``second``'s whole write under the same key
    lands between the first's sync and its commit. ``bulk`` means ``remember_many``."""
    store = _RacingStore()
    a, b = (AgentMemory(store, namespace=("rel",)).profile("p") for _ in range(2))
    a.remember("Theme is blue", key="preference.theme")

    def write(profile: Any, how: str, text: str) -> MemoryRecord:
        item = {"text": text, "key": "preference.theme"}
        if how == "bulk":
            return profile.remember_many(["Likes tea", item])[1]
        return profile.remember(**item)

    store.trigger = "Theme is green"
    later: list[MemoryRecord] = []
    store.hook = lambda: later.append(write(b, second, "Theme is red"))
    mine = write(a, first, "Theme is green")
    assert store.hook is None  # the race happened
    return AgentMemory(store, namespace=("rel",)), [mine, *later]


@pytest.mark.parametrize(("first", "second"), [("bulk", "one"), ("one", "bulk"),
                                               ("bulk", "bulk")])
def test_remember_many_racing_on_one_key_leaves_one_active(first: str, second: str) -> None:
    """Regression: ``remember_many`` did not settle racing keys (fix 1 covered ``remember``
    only), so a bulk write racing another write under one key left two active."""
    memory, written = _race(first, second)
    profile = memory.profile("p")
    history = profile.history("preference.theme")
    active = [m for m in history if m.status == "active"]
    assert len(history) == 3 and len(active) == 1
    assert active[0].id == max(m.id for m in written)
    assert [m.status for m in written] == [profile.get(m.id).status for m in written]
