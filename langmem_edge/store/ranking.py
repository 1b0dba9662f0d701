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
from typing import NamedTuple


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


class KeyHit(NamedTuple):
    """One item found by :meth:`ChromaStore.nearest_keys`: where it is and how close."""

    namespace: tuple[str, ...]
    key: str
    score: float
    """Cosine similarity of the query to the item's best-matching vector."""


def pool_vector_hits(vector_ids: Sequence[str], distances: Sequence[float]) -> list[Hit]:
    """Vector hits from vector rows: cosine similarity (``1 - distance``), max-pooled per item.

    A vector row's id is ``<item id>:<j>`` (:func:`layout.vector_id`), so the item is known
    without reading the row's metadata. Chroma's HNSW index nominates the candidates; the
    distances it reports for them are exact cosine distances of the stored vectors. Ties are
    broken by item id so the order is deterministic.
    """
    best: dict[str, float] = {}
    for vid, distance in zip(vector_ids, distances, strict=True):
        iid = vid.rpartition(":")[0]
        score = 1.0 - float(distance)
        if iid not in best or score > best[iid]:
            best[iid] = score
    ordered = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))
    return [
        Hit(iid, score, {"vector": {"rank": rank, "score": score}})
        for rank, (iid, score) in enumerate(ordered, start=1)
    ]
