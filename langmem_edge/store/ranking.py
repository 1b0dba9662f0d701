"""Ranking channels for ``ChromaStore.search(query=...)``: the seam where channels plug in.

A channel turns a query into a ranked list of :class:`Hit` (item id, raw score), restricted
to the search's namespace prefix and filter. The store then keeps the items that are alive
and pass the filter, in channel order.

This module holds the vector channel. Its raw score is the cosine similarity of the query to
the item's best-matching vector (max-pooled over its indexed paths), as ``InMemoryStore``
scores; Chroma's HNSW index nominates the candidates and reports their exact distances.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Hit:
    """One item nominated by a channel.

    Attributes:
        item_id: The item's Chroma id.
        score: The channel's raw score (higher is better).
        channels: Per-channel detail ``{channel: {"rank": r, "score": s}}`` (1-based ranks).
    """

    item_id: str
    score: float
    channels: dict[str, dict[str, float | int | None]] = field(default_factory=dict)


def pool_vector_hits(metas: Sequence[dict[str, Any]], distances: Sequence[float]) -> list[Hit]:
    """Vector hits from vector rows: cosine similarity (``1 - distance``), max-pooled per item.

    Chroma's HNSW index nominates the candidates; the distances it reports for them are
    exact cosine distances of the stored vectors. Ties are broken by item id so the order
    is deterministic.
    """
    best: dict[str, float] = {}
    for meta, distance in zip(metas, distances, strict=True):
        iid = meta["i"]
        score = 1.0 - float(distance)
        if iid not in best or score > best[iid]:
            best[iid] = score
    ordered = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))
    return [
        Hit(iid, score, {"vector": {"rank": rank, "score": score}})
        for rank, (iid, score) in enumerate(ordered, start=1)
    ]
