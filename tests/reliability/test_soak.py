"""Soak: many mixed operations in one process; memory at the start and the end, and every
per-process cache within its documented bound.

The caches and their bounds: the store's id map (``store.names.ItemNames``,
``DEFAULT_CAPACITY`` ids; the test lowers it to :data:`SOAK_ID_CAPACITY` so the bound is
reached), the embedding cache (``CachedEmbeddings``, ``DEFAULT_CACHE_SIZE`` vectors;
:data:`SOAK_EMBED_CACHE` here), the store's keyword-route hint
(``store.keyword.MAX_SCOPES_KEPT`` scopes; hybrid searches go to one of ``("soak",)``'s ~100
children) and the memory's access-count writers (``AgentMemory.access_writers``,
``memory.index.access.MAX_KEPT``; the test writes to :data:`PROFILES` profiles). The
semantic tier keeps no profile between operations.

Memory is measured with ``tracemalloc`` (Python allocations; off with :data:`TIMING_ENV`, for
timings) and the RSS after a warm-up of
:data:`WARMUP_FRACTION` of the run, at the half and at the end: growth over the second half
above :data:`MAX_SECOND_HALF_GROWTH_MB` is a leak. The RSS is also sampled every
:data:`RSS_SAMPLE_EVERY` operations (printed, not asserted: it shows whether native memory
flattens), with the median time of each kind of operation since the sample before and, in
brackets, its mean number of Chroma calls (which operation grows with the data).

Two soaks. The *growing* one lets the data grow as an application's does (supersession keeps
every old record). The *constant-data* one
(:func:`test_constant_data_keeps_in_use_memory_flat`) writes the whole data set first, then
only overwrites it: store puts under :data:`CONSTANT_PUT_KEYS` fixed keys, ``remember``
under :data:`CONSTANT_MEMORY_KEYS` fixed keys a profile with every superseded record
deleted, and working notes of :data:`CONSTANT_THREADS` fixed threads; so what is in use (the
RSS after ``malloc_trim``, sampled every :data:`RSS_SAMPLE_EVERY` operations) must stay
flat.

Quick: :data:`QUICK_OPS` (constant data: :data:`QUICK_CONSTANT_OPS`) operations; long:
:data:`LONG_OPS` (:data:`LONG_CONSTANT_OPS`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import json
import os
import random
import statistics
import sys
import time
import tracemalloc
from collections import Counter
from typing import Any

from chroma_calls import Calls
from langgraph.store.base import PutOp

from langmem_edge.embeddings import CachedEmbeddings
from langmem_edge.memory.index.access import MAX_KEPT
from langmem_edge.store.keyword import MAX_SCOPES_KEPT
from langmem_edge.testing import FakeEmbeddings

from .helpers import DIMS, long_size, open_memory, open_store, remove_folder, rss_mb, scratch_folder

QUICK_OPS = 1_000
"""Operations of the quick variant."""

LONG_OPS = 100_000
"""Operations of the long variant."""

PROFILES = 40
"""Profiles the run rotates over (more than the indexes kept)."""

SOAK_ID_CAPACITY = 500
"""The id map's capacity during the soak (lowered from 500,000 so the bound is reached)."""

SOAK_EMBED_CACHE = 200
"""The embedding cache's size during the soak."""

HYBRID_SHARE = 0.5
"""Share of the store searches made with ``hybrid_search`` in one child namespace (the
keyword channel); the rest are vector searches of ``("soak",)``."""

RSS_SAMPLE_EVERY = 1_000
"""Operations between two RSS samples."""

TIMING_ENV = "LANGMEM_EDGE_SOAK_TIMING"
"""Set to 1: the growing soak runs without ``tracemalloc``, for its timings. Tracing every
Python allocation made its searches and recalls ~3x slower, and more so as its heap grew
(measured at its 15,000th operation: ``hybrid_search`` 2.9 -> 10.0 ms, recall 3.7 -> 11.6),
so the seconds a 10,000 operations it prints with tracing on measure the tracing
(``benchmarks/soak_tracing.py``). Without it, the Python-allocation bound is not checked
(every other bound is)."""

TRIM_ENV = "LANGMEM_EDGE_SOAK_TRIM"
"""Set to 1: after each RSS sample, glibc's ``malloc_trim(0)`` and a second sample (freed
heap the allocator kept vs memory in use; the trims change the later samples)."""

WARMUP_FRACTION = 0.1
"""Share of the run before the first memory figure (imports, first loads, caches filling)."""

MAX_SECOND_HALF_GROWTH_MB = 64.0
"""Largest growth of Python allocations over the second half that is not a leak."""

WRITE_SHARE = 0.2
"""Share of the operations that write (put, remember, working notes); the rest read."""

WORDS = 5 * SOAK_ID_CAPACITY
"""Words the growing soak draws from (its put keys; ``word[:3]`` names namespaces, memory
keys and threads)."""

QUICK_CONSTANT_OPS = 200
"""Operations of the constant-data soak's quick variant (its writes cost ~4x the growing
soak's: every ``remember`` supersedes and deletes; CI stays short)."""

LONG_CONSTANT_OPS = 20_000
"""Operations of the constant-data soak's long variant."""

CONSTANT_PUT_KEYS = 2 * SOAK_ID_CAPACITY
"""Store keys of the constant-data soak (more than the id map holds, so it is cleared and
relearned); all written before the run, then only overwritten."""

CONSTANT_MEMORY_KEYS = 3
"""Memory keys of each profile in the constant-data soak; a ``remember`` supersedes the key's
record, which is then deleted."""

CONSTANT_THREADS = 2
"""Working-note threads of each profile in the constant-data soak."""

MAX_CONSTANT_RSS_GROWTH_MB = 32.0
"""Largest growth of the in-use RSS (after ``malloc_trim``) over the constant-data soak's
second half that is not a leak."""

PREFILL_CHUNK = 100
"""Store puts a batch when the constant-data soak writes its data set."""


def _trimmedrss_mb() -> float:
    """The RSS after glibc returns the free heap it keeps to the system (NaN without glibc)."""
    name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(name) if name else None
    if libc is None or not hasattr(libc, "malloc_trim"):
        return float("nan")
    libc.malloc_trim(0)
    return rss_mb()


def _mb() -> float:
    """Python allocations traced now, in MiB (NaN when nothing is traced)."""
    gc.collect()
    if not tracemalloc.is_tracing():
        return float("nan")
    return tracemalloc.get_traced_memory()[0] / 2**20


class _Soak:
    """One soak: a store and memory on a scratch folder with every cache bound lowered, the
    operations, and the memory figures."""

    def __init__(self, *, constant: bool) -> None:
        self.constant = constant
        self.rng = random.Random(17)
        self.cache = CachedEmbeddings(FakeEmbeddings(DIMS), max_size=SOAK_EMBED_CACHE)
        self.folder = scratch_folder("rel-soak-")
        self.store = open_store(self.folder,
                                index={"dims": DIMS, "embed": self.cache, "fields": ["text"]})
        self.store._names.capacity = SOAK_ID_CAPACITY
        self.memory = open_memory(self.store)
        self.ops: Counter[str] = Counter()
        self.calls = Calls(self.store)  # the Chroma calls of each operation
        # (seconds, Chroma calls) of each kind of operation since the last sample
        self.window: dict[str, list[tuple[float, int]]] = {}
        self.peak = {"ids": 0, "embeddings": 0, "keyword_scopes": 0, "access_writers": 0}

    def word(self) -> str:
        """A word: a put key; its first 3 characters name a namespace."""
        return f"w{self.rng.randrange(CONSTANT_PUT_KEYS if self.constant else WORDS)}"

    def slots(self, word: str) -> tuple[str, str]:
        """The memory key and the working thread a write with ``word`` goes to."""
        if self.constant:
            n = self.rng.randrange(CONSTANT_MEMORY_KEYS * CONSTANT_THREADS)
            return f"topic.{n % CONSTANT_MEMORY_KEYS}", f"t{n // CONSTANT_MEMORY_KEYS}"
        return f"topic.{word[:3]}", f"t{word[:3]}"

    def prefill(self) -> None:
        """The constant-data soak's whole data set, before the run."""
        puts = [PutOp(("soak", f"w{n}"[:3]), f"w{n}", {"text": f"item w{n} amber"})
                for n in range(CONSTANT_PUT_KEYS)]
        for i in range(0, len(puts), PREFILL_CHUNK):
            self.store.batch(puts[i:i + PREFILL_CHUNK])
        for p in range(PROFILES):
            profile = self.memory.profile(f"user{p}")
            profile.remember_many([{"text": f"fact w{k} cedar", "key": f"topic.{k}"}
                                   for k in range(CONSTANT_MEMORY_KEYS)])
            for t in range(CONSTANT_THREADS):
                profile.working.set_context(f"t{t}", f"notes w{t}")

    def step(self) -> None:
        """One operation (:data:`WRITE_SHARE` of them writes)."""
        rng, store = self.rng, self.store
        profile = self.memory.profile(f"user{rng.randrange(PROFILES)}")
        word = self.word()
        key, thread = self.slots(word)
        began, called = time.perf_counter(), len(self.calls.names)
        if rng.random() < WRITE_SHARE:
            op = rng.choice(["put", "remember", "working"])
            if op == "put":
                store.put(("soak", word[:3]), word, {"text": f"item {word} amber"})
            elif op == "remember":
                record = profile.remember(f"fact {word} cedar", key=key)
                if self.constant:  # the data set stays the same size
                    for old in record.supersedes:
                        profile.delete(old)
                        self.ops["delete"] += 1
            else:
                profile.working.set_context(thread, f"notes {word}")
        else:
            op = rng.choice(["get", "search", "recall"])
            if op == "get":
                store.get(("soak", word[:3]), word)
            elif op == "search" and rng.random() < HYBRID_SHARE:
                op = "hybrid_search"  # the keyword channel
                store.hybrid_search(("soak", word[:3]), query=f"item {word}", limit=5)
            elif op == "search":
                store.search(("soak",), query=f"item {word}", limit=5)
            else:
                profile.recall(f"fact {word}", limit=5)
        self.window.setdefault(op, []).append(
            (time.perf_counter() - began, len(self.calls.names) - called))
        self.ops[op] += 1
        peak = self.peak
        peak["ids"] = max(peak["ids"], len(store._names))
        peak["embeddings"] = max(peak["embeddings"], len(self.cache._cache))
        peak["keyword_scopes"] = max(peak["keyword_scopes"],
                                     len(store._large_keyword_scopes))
        peak["access_writers"] = max(peak["access_writers"], len(self.memory.access_writers))

    def window_medians(self) -> str:
        """The median milliseconds and mean Chroma calls of each kind of operation since the
        last call (printed with each RSS sample: which operation grows with the data)."""
        window, self.window = self.window, {}
        self.calls.names.clear()
        return "".join(
            f", {op} {1000 * statistics.median(t for t, _ in runs):.1f}"
            f" ({statistics.mean(c for _, c in runs):.1f})"
            for op, runs in sorted(window.items()))

    def run(self, total: int, *, trim: bool, trace: bool = True) -> dict[str, Any]:
        """``total`` operations; the figures (printed by the tests). ``trace``: Python
        allocations traced (``tracemalloc``), for the allocation figures."""
        marks: dict[str, tuple[float, float]] = {}
        rss: list[float] = []
        trimmed: list[float] = []
        if trace:
            tracemalloc.start()
        began = time.monotonic()
        try:
            if self.constant:
                self.prefill()
            for n in range(total):
                if n == int(total * WARMUP_FRACTION):
                    marks["start"] = (_mb(), rss_mb())
                if n == total // 2:
                    marks["half"] = (_mb(), rss_mb())
                if n % RSS_SAMPLE_EVERY == 0:
                    rss.append(round(rss_mb(), 1))
                    if trim:
                        trimmed.append(round(_trimmedrss_mb(), 1))
                    print(f"soak: {n} operations, {time.monotonic() - began:.0f} s, RSS "
                          f"{rss[-1]} MB" + (f", trimmed {trimmed[-1]} MB" if trim else "")
                          + self.window_medians(), file=sys.stderr, flush=True)
                self.step()
            marks["end"] = (_mb(), rss_mb())
            rss.append(round(marks["end"][1], 1))
            if trim:
                trimmed.append(round(_trimmedrss_mb(), 1))
        finally:
            tracemalloc.stop()
            self.store.close()
            remove_folder(self.folder)
        return {"operations": total, "constant_data": self.constant, "by_op": dict(self.ops),
                "traced_mb": {k: round(v[0], 1) for k, v in marks.items()},
                "rss_mb": {k: round(v[1], 1) for k, v in marks.items()},
                f"rss_mb_every_{RSS_SAMPLE_EVERY}": rss,
                **({f"rss_mb_trimmed_every_{RSS_SAMPLE_EVERY}": trimmed} if trim else {}),
                "second_half_growth_mb": round(marks["end"][0] - marks["half"][0], 2),
                "cache_peaks": self.peak,
                "cache_bounds": {"ids": SOAK_ID_CAPACITY,
                                 "embeddings": SOAK_EMBED_CACHE,
                                 "keyword_scopes": MAX_SCOPES_KEPT,
                                 "access_writers": MAX_KEPT}}


def _check_bounds(figures: dict[str, Any]) -> None:
    """Every cache within its bound, Python allocations flat (when traced)."""
    peak = figures["cache_peaks"]
    assert peak["ids"] <= SOAK_ID_CAPACITY
    assert peak["embeddings"] <= SOAK_EMBED_CACHE
    assert peak["keyword_scopes"] <= MAX_SCOPES_KEPT
    assert 0 < peak["access_writers"] <= min(MAX_KEPT, PROFILES)  # one per profile
    growth = figures["second_half_growth_mb"]
    assert growth != growth or growth <= MAX_SECOND_HALF_GROWTH_MB  # NaN: not traced


def test_mixed_operations_keep_caches_bounded_and_memory_flat(long_run: bool) -> None:
    total = long_size(LONG_OPS) if long_run else QUICK_OPS
    figures = _Soak(constant=False).run(total, trim=os.environ.get(TRIM_ENV) == "1",
                                        trace=os.environ.get(TIMING_ENV) != "1")
    print("\nsoak: " + json.dumps(figures))
    _check_bounds(figures)


def test_constant_data_keeps_in_use_memory_flat(long_run: bool) -> None:
    """The data set written first, then only overwritten: the in-use RSS (after
    ``malloc_trim``) stays flat over the second half."""
    total = long_size(LONG_CONSTANT_OPS) if long_run else QUICK_CONSTANT_OPS
    figures = _Soak(constant=True).run(total, trim=True)
    print("\nsoak: " + json.dumps(figures))
    _check_bounds(figures)
    trimmed = figures[f"rss_mb_trimmed_every_{RSS_SAMPLE_EVERY}"]
    half = trimmed[len(trimmed) // 2]
    assert trimmed[-1] - half <= MAX_CONSTANT_RSS_GROWTH_MB, trimmed
