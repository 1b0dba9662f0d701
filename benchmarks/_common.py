"""Shared helpers for the benchmarks: a throwaway Chroma server, timers, Markdown tables."""

from __future__ import annotations

import os
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from langmem_edge.testing import chroma_server  # noqa: E402

__all__ = ["CHROMA_CALLS", "WORDS", "chroma_server", "count_chroma_calls", "median",
           "percentile", "table", "timed"]

CHROMA_CALLS: Counter[str] = Counter()
"""Chroma collection calls made in this process since :func:`count_chroma_calls`, by method."""

WORDS = (
    "memory agent user prefers dark mode lives city travel booking flight hotel meeting "
    "project deadline budget report coffee tea music guitar piano running marathon doctor "
    "appointment birthday party gift family sister brother dog cat garden recipe pasta"
).split()
"""A small vocabulary the store benchmarks make item texts from."""


def count_chroma_calls() -> None:
    """Count every Chroma collection call (get, query, add, upsert, update, delete, count),
    whoever makes it, in :data:`CHROMA_CALLS`."""
    from chromadb.api.models.Collection import Collection

    for name in ("get", "query", "add", "upsert", "update", "delete", "count"):
        original = getattr(Collection, name)

        def counted(self: Any, *args: Any, __original: Any = original, __name: str = name,
                    **kwargs: Any) -> Any:
            CHROMA_CALLS[__name] += 1
            return __original(self, *args, **kwargs)

        setattr(Collection, name, counted)


def timed(fn: Callable[[], object]) -> float:
    """Seconds one call of ``fn`` takes."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def percentile(samples: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``samples``, by nearest rank."""
    ordered = sorted(samples)
    index = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def median(samples: Sequence[float]) -> float:
    """The median of ``samples``."""
    return statistics.median(samples)


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join("---" for _ in headers) + " |"]
    for row in rows:
        lines.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(lines)
