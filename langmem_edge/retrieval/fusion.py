"""Weighted reciprocal rank fusion (RRF) with an explanation of every fused score.

Each channel hands over a ranked list (best first) of ``(id, raw score)``. An item at 1-based
rank ``r`` in channel ``c`` earns ``weight[c] / (rrf_k + r)``; its fused score is the sum
over the channels that ranked it (Cormack, Clarke & Buettcher 2009, with per-channel
weights). ``rrf_k = 60`` is the paper's constant: it flattens the head of each list so one
channel's first place cannot outvote agreement between channels.

Why RRF and not a blend of raw scores: cosine similarities, BM25 scores and key-match
counts live on unrelated scales (BM25 is unbounded and depends on the corpus), so only ranks
are comparable. Weights then say how much each channel's ranking is trusted.

Tie-breaks are total and deterministic: fused score (desc), then the best rank the item got
in any weighted channel (asc), then the number of channels that ranked it (desc), then the id
(asc).

:class:`FusedHit` keeps, for every result, its rank and raw score in *every* channel
(``None`` where the channel did not rank it): that is the explain output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from langmem_edge.errors import ConfigurationError

__all__ = ["ChannelHit", "FusedHit", "rrf_fuse", "rrf_term"]

_UNRANKED = 1 << 62


@dataclass(frozen=True, slots=True)
class ChannelHit:
    """Where one channel placed one item.

    Attributes:
        rank: 1-based rank in the channel, or None if the channel did not return the item.
        score: The channel's raw score (cosine, BM25, key match), or None likewise.
        contribution: What this channel added to the fused score (0 when unranked).
    """

    rank: int | None
    score: float | None
    contribution: float = 0.0


@dataclass(frozen=True, slots=True)
class FusedHit:
    """One fused result.

    Attributes:
        id: The item id.
        score: The fused RRF score (higher is better).
        channels: ``channel name -> ChannelHit`` for every channel of the search, including
            those that did not rank the item.
    """

    id: str
    score: float
    channels: dict[str, ChannelHit] = field(default_factory=dict)

    def explain(self) -> dict[str, dict[str, float | int | None]]:
        """Plain-dict form: ``{channel: {"rank", "score", "contribution"}}``."""
        return {
            name: {"rank": hit.rank, "score": hit.score, "contribution": hit.contribution}
            for name, hit in self.channels.items()
        }


def rrf_term(weight: float, rank: int, *, rrf_k: float = 60.0) -> float:
    """One channel's contribution: ``weight / (rrf_k + rank)`` for a 1-based ``rank``."""
    return weight / (rrf_k + rank)


def rrf_fuse(
    rankings: Mapping[str, Sequence[tuple[str, float]]],
    *,
    weights: Mapping[str, float],
    rrf_k: float = 60.0,
    limit: int | None = None,
) -> list[FusedHit]:
    """Fuse ranked channel lists by weighted reciprocal rank.

    Args:
        rankings: ``channel -> [(id, raw score), ...]`` best first. An id repeated within a
            channel keeps its first (best) rank.
        weights: ``channel -> weight``; a channel without a weight weighs 0 (it still shows
            in the explanation). Weights must be >= 0.
        rrf_k: The RRF constant. Default 60.
        limit: Most results; None for all.

    Returns:
        :class:`FusedHit` list, best first, ties broken as the module docstring says.
    """
    if rrf_k < 0:
        raise ConfigurationError(f"rrf_k must be >= 0, got {rrf_k}")
    for name, w in weights.items():
        if w < 0:
            raise ConfigurationError(f"weight of channel {name!r} must be >= 0, got {w}")
    names = list(rankings)
    placed: dict[str, dict[str, tuple[int, float]]] = {}
    for name in names:
        seen: set[str] = set()
        rank = 0
        for doc_id, raw in rankings[name]:
            if doc_id in seen:
                continue
            seen.add(doc_id)
            rank += 1
            placed.setdefault(doc_id, {})[name] = (rank, float(raw))
    rows: list[tuple[float, int, int, str, FusedHit]] = []
    for doc_id, where in placed.items():
        total = 0.0
        channels: dict[str, ChannelHit] = {}
        for name in names:
            if name in where:
                rank, raw = where[name]
                contrib = rrf_term(weights.get(name, 0.0), rank, rrf_k=rrf_k)
                total += contrib
                channels[name] = ChannelHit(rank, raw, contrib)
            else:
                channels[name] = ChannelHit(None, None, 0.0)
        weighted = [r for n, (r, _) in where.items() if weights.get(n, 0.0) > 0]
        best = min(weighted) if weighted else _UNRANKED
        rows.append((-total, best, -len(where), doc_id, FusedHit(doc_id, total, channels)))
    rows.sort(key=lambda r: r[:4])
    hits = [r[4] for r in rows]
    return hits if limit is None else hits[:limit]
