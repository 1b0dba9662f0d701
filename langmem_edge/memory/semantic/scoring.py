"""Pure scoring functions of recall: fusion, recency, relevance fill, composite score.

* Weighted reciprocal rank fusion: a hit at 1-based rank ``r`` in a channel of weight ``w``
  adds ``w / (k + r)`` (k = 60).
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

from langmem_edge.memory.records import ChannelScore

__all__ = ["composite", "recency", "relevance", "rrf_fuse", "tag_overlap"]

SECONDS_PER_DAY = 86_400.0


def rrf_fuse(
    channels: Mapping[str, Sequence[tuple[str, float]]],
    weights: Mapping[str, float],
    k: int,
) -> dict[str, tuple[float, dict[str, ChannelScore]]]:
    """Fuse ranked ``(id, raw score)`` lists: ``{id: (fused score, per-channel detail)}``."""
    fused: dict[str, tuple[float, dict[str, ChannelScore]]] = {}
    for name, hits in channels.items():
        weight = weights.get(name, 0.0)
        for rank, (doc_id, raw) in enumerate(hits, start=1):
            contribution = weight / (k + rank)
            total, detail = fused.get(doc_id, (0.0, {}))
            detail[name] = ChannelScore(rank=rank, raw=float(raw), contribution=contribution)
            fused[doc_id] = (total + contribution, detail)
    return fused


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
