"""Soak: many mixed operations in one process; memory at the start and the end, and every
per-process cache within its documented bound.

The caches and their bounds: the store's id map (``store.names.ItemNames``,
``DEFAULT_CAPACITY`` ids; the test lowers it to :data:`SOAK_ID_CAPACITY` so the bound is
reached), the profile indexes (``AgentMemory``, ``MemoryConfig.index.cached_profiles``,
``CACHED_PROFILES`` = 16; the test writes to :data:`PROFILES` profiles) and the embedding
cache (``CachedEmbeddings``, ``DEFAULT_CACHE_SIZE`` vectors; :data:`SOAK_EMBED_CACHE` here)
and the store keyword index's prefix masks (``retrieval.bm25.MAX_PREFIX_MASKS``;
:data:`SOAK_PREFIX_MASKS` here: hybrid searches go to one of ``("soak",)``'s ~100 children).
Memory is measured with ``tracemalloc`` (Python allocations) and the RSS after a warm-up of
:data:`WARMUP_FRACTION` of the run, at the half and at the end: growth over the second half
above :data:`MAX_SECOND_HALF_GROWTH_MB` is a leak. The RSS is also sampled every
:data:`RSS_SAMPLE_EVERY` operations (printed, not asserted: it shows whether native memory
flattens).

Quick: :data:`QUICK_OPS` operations; long: :data:`LONG_OPS`.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import json
import os
import random
import tempfile
import tracemalloc
from collections import Counter

from langmem_edge.embeddings import CachedEmbeddings
from langmem_edge.memory.config.sections import CACHED_PROFILES
from langmem_edge.retrieval.bm25 import BM25Index
from langmem_edge.testing import FakeEmbeddings

from .helpers import DIMS, long_size, open_memory, open_store, rss_mb

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

SOAK_PREFIX_MASKS = 8
"""The store keyword index's prefix-mask bound during the soak (lowered from 256)."""

HYBRID_SHARE = 0.5
"""Share of the store searches made with ``hybrid_search`` in one child namespace (the
keyword channel, so its prefix masks fill); the rest are vector searches of ``("soak",)``."""

RSS_SAMPLE_EVERY = 1_000
"""Operations between two RSS samples."""

TRIM_ENV = "LANGMEM_EDGE_SOAK_TRIM"
"""Set to 1: after each RSS sample, glibc's ``malloc_trim(0)`` and a second sample (freed
heap the allocator kept vs memory in use; the trims change the later samples)."""

WARMUP_FRACTION = 0.1
"""Share of the run before the first memory figure (imports, first loads, caches filling)."""

MAX_SECOND_HALF_GROWTH_MB = 64.0
"""Largest growth of Python allocations over the second half that is not a leak."""

WRITE_SHARE = 0.2
"""Share of the operations that write (put, remember, working notes); the rest read."""


def _trimmedrss_mb() -> float:
    """The RSS after glibc returns the free heap it keeps to the system (NaN without glibc)."""
    name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(name) if name else None
    if libc is None or not hasattr(libc, "malloc_trim"):
        return float("nan")
    libc.malloc_trim(0)
    return rss_mb()


def _mb() -> float:
    gc.collect()
    return tracemalloc.get_traced_memory()[0] / 2**20


def test_mixed_operations_keep_caches_bounded_and_memory_flat(long_run: bool) -> None:
    total = long_size(LONG_OPS) if long_run else QUICK_OPS
    rng = random.Random(17)
    cache = CachedEmbeddings(FakeEmbeddings(DIMS), max_size=SOAK_EMBED_CACHE)
    store = open_store(tempfile.mkdtemp(prefix="rel-soak-"),
                       index={"dims": DIMS, "embed": cache, "fields": ["text"]})
    store._names.capacity = SOAK_ID_CAPACITY
    masks = store._keywords.bm25
    masks.max_prefix_masks = SOAK_PREFIX_MASKS
    memory = open_memory(store)
    ops: Counter[str] = Counter()
    marks: dict[str, tuple[float, float]] = {}
    peak = {"ids": 0, "indexes": 0, "embeddings": 0, "prefix_masks": 0}
    rss: list[float] = []
    trimmed: list[float] = []
    trim = os.environ.get(TRIM_ENV) == "1"
    tracemalloc.start()
    try:
        for n in range(total):
            if n == int(total * WARMUP_FRACTION):
                marks["start"] = (_mb(), rss_mb())
            if n == total // 2:
                marks["half"] = (_mb(), rss_mb())
            if n % RSS_SAMPLE_EVERY == 0:
                rss.append(round(rss_mb(), 1))
                if trim:
                    trimmed.append(round(_trimmedrss_mb(), 1))
            profile = memory.profile(f"user{rng.randrange(PROFILES)}")
            word = f"w{rng.randrange(5 * SOAK_ID_CAPACITY)}"
            if rng.random() < WRITE_SHARE:
                op = rng.choice(["put", "remember", "working"])
                if op == "put":
                    store.put(("soak", word[:3]), word, {"text": f"item {word} amber"})
                elif op == "remember":
                    profile.remember(f"fact {word} cedar", key=f"topic.{word[:3]}")
                else:
                    profile.working.set_context(f"t{word[:3]}", f"notes {word}")
            else:
                op = rng.choice(["get", "search", "recall"])
                if op == "get":
                    store.get(("soak", word[:3]), word)
                elif op == "search" and rng.random() < HYBRID_SHARE:
                    op = "hybrid_search"  # the keyword channel: its prefix masks
                    store.hybrid_search(("soak", word[:3]), query=f"item {word}", limit=5)
                elif op == "search":
                    store.search(("soak",), query=f"item {word}", limit=5)
                else:
                    profile.recall(f"fact {word}", limit=5)
            ops[op] += 1
            peak["ids"] = max(peak["ids"], len(store._names))
            peak["indexes"] = max(peak["indexes"], len(memory._indexes))
            peak["embeddings"] = max(peak["embeddings"], len(cache._cache))
            peak["prefix_masks"] = max(peak["prefix_masks"], len(masks._mask_cache))
        marks["end"] = (_mb(), rss_mb())
    finally:
        tracemalloc.stop()
        store.close()
    growth = marks["end"][0] - marks["half"][0]
    figures = {"operations": total, "by_op": dict(ops),
               "traced_mb": {k: round(v[0], 1) for k, v in marks.items()},
               "rss_mb": {k: round(v[1], 1) for k, v in marks.items()},
               f"rss_mb_every_{RSS_SAMPLE_EVERY}": rss,
               **({f"rss_mb_trimmed_every_{RSS_SAMPLE_EVERY}": trimmed} if trim else {}),
               "second_half_growth_mb": round(growth, 2), "cache_peaks": peak,
               "cache_bounds": {"ids": SOAK_ID_CAPACITY, "indexes": CACHED_PROFILES,
                                "embeddings": SOAK_EMBED_CACHE,
                                "prefix_masks": SOAK_PREFIX_MASKS}}
    print("\nsoak: " + json.dumps(figures))
    assert peak["ids"] <= SOAK_ID_CAPACITY
    assert peak["indexes"] <= CACHED_PROFILES
    assert peak["embeddings"] <= SOAK_EMBED_CACHE
    assert 1 < peak["prefix_masks"] <= SOAK_PREFIX_MASKS  # searched, and bounded
    assert growth <= MAX_SECOND_HALF_GROWTH_MB


def test_prefix_masks_stay_within_their_bound_across_clear() -> None:
    """Regression (the soak found 9 masks for a bound of 8): ``clear()`` rebuilt the index
    with the default bound."""
    index = BM25Index(max_prefix_masks=SOAK_PREFIX_MASKS)
    index.clear()
    for n in range(3 * SOAK_PREFIX_MASKS):
        index.upsert(f"d{n}", {"text": ["amber"]}, namespace=("soak", f"c{n}"))
    for n in range(3 * SOAK_PREFIX_MASKS):
        assert [d.id for d in index.search(["amber"], namespace_prefix=("soak", f"c{n}"))] == [
            f"d{n}"]
        assert len(index._mask_cache) <= SOAK_PREFIX_MASKS
    assert len(index._mask_cache) > 1
