"""Why a recalled memory came back, in words: each channel that found it, its rank there, its
own score and what it added to the fused score (``ScoreBreakdown`` of ``recall``)."""

from __future__ import annotations

from dataclasses import dataclass

from langmem_edge.memory.records import Candidate

__all__ = ["CHANNEL_MEANINGS", "ChannelReason", "Explanation", "explain"]

CHANNEL_MEANINGS = {
    "vector": "its meaning is close to the query (cosine similarity)",
    "hyde": "it is close to a hypothetical answer to the query (cosine similarity)",
    "keyword": "it shares words with the query (BM25)",
    "key": "its topic key matches words of the query",
    "temporal": "it falls in the time the query names",
    "messages": "a raw message it was learnt from matched the query",
}
"""What finding a memory means, channel by channel (recall's fused channels)."""


@dataclass(frozen=True)
class ChannelReason:
    """One channel's part in a candidate's score."""

    channel: str
    """The channel's name (``vector``, ``keyword``, ...)."""
    meaning: str
    """What being found there says (:data:`CHANNEL_MEANINGS`)."""
    rank: int
    """1-based rank in the channel."""
    raw: float
    """The channel's own score."""
    contribution: float
    """What it added to the fused score."""


@dataclass(frozen=True)
class Explanation:
    """Why one candidate came back."""

    summary: str
    """One sentence."""
    channels: list[ChannelReason]
    """The channels that found it, the largest contribution first."""
    composite: dict[str, float]
    """The composite scorer's weighted components (empty for ``rrf``)."""


def explain(candidate: Candidate) -> Explanation:
    """The explanation of one recall candidate."""
    b = candidate.breakdown
    reasons = sorted(
        (ChannelReason(channel=name, meaning=CHANNEL_MEANINGS.get(name, "found by this channel"),
                       rank=c.rank, raw=c.raw, contribution=c.contribution)
         for name, c in b.channels.items()),
        key=lambda r: (-r.contribution, r.channel))
    scope = "the contact's own memories" if b.scope == "contact" else "agent-wide memories"
    if b.scorer == "fill":
        summary = (f"Not a match: no channel found it; the relevance fill added it (recency "
                   f"and use {b.relevance or 0.0:.3f}, not comparable with match scores), "
                   f"after {scope}.")
    elif reasons:
        found = ", ".join(f"{r.channel} (rank {r.rank})" for r in reasons)
        summary = f"Found by {found} among {scope}"
        summary += (f"; fused score {b.fused:.4f}" if b.scorer == "rrf"
                    else f"; composite score {candidate.score:.3f}")
        if b.factor != 1.0:
            summary += f", times {b.factor:g} (a task of an ended session)"
        summary += "."
    else:
        summary = f"Scored by the {b.scorer} scorer among {scope}: {candidate.score:.3f}."
    return Explanation(summary=summary, channels=reasons, composite=dict(b.composite))
