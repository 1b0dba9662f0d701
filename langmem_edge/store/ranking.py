"""Ranking channels for ``ChromaStore.search(query=...)``: the seam where channels plug in.

A channel turns a query into a ranked list of :class:`Hit` (item id, raw score), restricted
to the search's namespace prefix and filter. The store then keeps the items that are alive
and pass the filter, in channel order.

This module holds the vector channel. Its raw score is the exact cosine similarity of the
query to the item's best-matching vector (max-pooled over its indexed paths), recomputed in
float64 from the stored vectors, as ``InMemoryStore`` computes it; Chroma's HNSW index only
nominates candidates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


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
    channels: dict[str, dict[str, float]] = field(default_factory=dict)


def cosine(query: Sequence[float], vectors: Any) -> np.ndarray:
    """Cosine similarity of ``query`` to each row of ``vectors`` (0 for zero vectors)."""
    q = np.asarray(query, dtype=np.float64)
    m = np.asarray(vectors, dtype=np.float64)
    if m.size == 0:
        return np.zeros(0)
    if m.ndim == 1:
        m = m.reshape(1, -1)
    qn = np.linalg.norm(q)
    mn = np.linalg.norm(m, axis=1)
    out = np.zeros(m.shape[0])
    ok = (mn != 0) & (qn != 0)
    out[ok] = (m[ok] @ q) / (mn[ok] * qn)
    return out


def pool_vector_hits(query: Sequence[float], result: dict[str, Any]) -> list[Hit]:
    """Vector hits from one Chroma ``query`` result: exact cosine, max-pooled per item.

    Ties are broken by item id so the order is deterministic.
    """
    ids = (result.get("ids") or [[]])[0]
    if not ids:
        return []
    metas = result["metadatas"][0]
    scores = cosine(query, result["embeddings"][0])
    best: dict[str, float] = {}
    for meta, score in zip(metas, scores.tolist(), strict=True):
        iid = meta["i"]
        if iid not in best or score > best[iid]:
            best[iid] = score
    ordered = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))
    return [
        Hit(iid, score, {"vector": {"rank": rank, "score": score}})
        for rank, (iid, score) in enumerate(ordered, start=1)
    ]
