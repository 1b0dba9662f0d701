"""The vector channel's measure: cosine distance, as Chroma's ``cosine`` space reports it.

Used where vectors are scored in process rather than by Chroma: ``ChromaStore`` ranking a
small namespace (``store/search.py``) and memory's composite scorer
(``memory/semantic/recall.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["cosine_distances"]


def cosine_distances(vectors: Any, query: Sequence[float]) -> list[float]:
    """Cosine distance (``1 - cos``, Chroma's ``cosine`` space) of each row of ``vectors`` to
    ``query``; a zero vector is at distance 1 (Chroma normalises it to zero as well)."""
    rows = np.asarray(vectors, dtype=np.float64)
    q = np.asarray(query, dtype=np.float64)
    norms = np.linalg.norm(rows, axis=1) * float(np.linalg.norm(q))
    dots = rows @ q
    sims = np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
    return [float(d) for d in 1.0 - sims]
