"""Pure scoring functions of recall: recency, relevance fill, composite score.

(Weighted reciprocal rank fusion is :func:`langmem_edge.retrieval.fusion.rrf_fuse`, the one
the store's hybrid search uses.)

* Recency: ``0.5 ** (age_days / half_life_days)`` (half-life 30 days), age counted from the
  last access, or from creation when never accessed.
* Relevance fill: ``0.7 * recency + 0.3 * log(access_count + 1)`` (natural log).
* Composite (alternative to fusion): ``0.5 * cosine + 0.2 * recency + 0.15 * confidence +
  0.1 * tag_overlap + 0.05 * source_priority``; ``tag_overlap`` is the share of the query's
  tags the memory carries.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

__all__ = ["composite", "recency", "relevance", "tag_overlap"]

SECONDS_PER_DAY = 86_400.0


def recency(age_seconds: float, half_life_days: float) -> float:
    """``0.5 ** (age_days / half_life_days)``; 1 for ages <= 0."""
    if age_seconds <= 0:
        return 1.0
    return float(0.5 ** (age_seconds / SECONDS_PER_DAY / half_life_days))


def relevance(recency_value: float, access_count: int, recency_weight: float,
              access_weight: float) -> float:
    """The relevance-fill score."""
    return recency_weight * recency_value + access_weight * math.log(max(access_count, 0) + 1)


def tag_overlap(memory_tags: Sequence[str], query_tags: Sequence[str]) -> float:
    """Share of ``query_tags`` found in ``memory_tags`` (0 when no query tags)."""
    wanted = {t.lower() for t in query_tags}
    if not wanted:
        return 0.0
    return len(wanted & {t.lower() for t in memory_tags}) / len(wanted)


def composite(parts: Mapping[str, float], weights: Mapping[str, float]
              ) -> tuple[float, dict[str, float]]:
    """Weighted sum of the components; returns the total and each weighted part."""
    weighted = {name: weights.get(name, 0.0) * value for name, value in parts.items()}
    return sum(weighted.values()), weighted
