"""The local keyword channel: an analyser and an incremental BM25 index.

Works over any ``BaseStore`` (only ``store.search(query=...)``'s vector ranking is needed
from the store). The index lives in the per-process profile index
(``index/profile_index.py``) and is kept exact by the change log, so another process's
write is visible to the next recall.

Analysis: the package's one analyser (:func:`langmem_edge.retrieval.text.default_analyzer`:
normalised words, English stopwords dropped, Snowball stems from ``snowballstemmer``, the
stemmer chromadb's own BM25 encoder uses).

Scoring is Okapi BM25 with ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

import numpy as np

from langmem_edge.retrieval.text import default_analyzer

__all__ = ["BM25Index", "analyse"]


def analyse(text: str) -> list[str]:
    """Text to index terms: :func:`langmem_edge.retrieval.text.default_analyzer`'s terms
    (normalised words minus stopwords, Snowball-stemmed), the analysis the store's keyword
    channel uses too."""
    return default_analyzer().terms(text)


class _Posting:
    """One term's postings: document rows and term counts, appended to Python lists and
    turned into numpy arrays when a query needs them."""

    __slots__ = ("_new_rows", "_new_tfs", "_rows", "_tfs", "live")

    def __init__(self) -> None:
        self._rows = np.empty(0, dtype=np.int64)
        self._tfs = np.empty(0, dtype=np.float64)
        self._new_rows: list[int] = []
        self._new_tfs: list[int] = []
        self.live = 0

    def append(self, row: int, tf: int) -> None:
        self._new_rows.append(row)
        self._new_tfs.append(tf)
        self.live += 1

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, term counts)`` of every posting, dead ones included."""
        if self._new_rows:
            self._rows = np.concatenate([self._rows, np.asarray(self._new_rows, np.int64)])
            self._tfs = np.concatenate([self._tfs, np.asarray(self._new_tfs, np.float64)])
            self._new_rows, self._new_tfs = [], []
        return self._rows, self._tfs


class BM25Index:
    """An incremental BM25 index over documents numbered by integer rows.

    Rows are never reused: removing a document marks it dead (its postings stay until
    :meth:`dead_share` tells the owner to rebuild). Scoring is vectorised with numpy over
    each query term's postings, so a term found in most documents costs microseconds per
    thousand documents rather than a Python loop.

    Args:
        k1: Term-frequency saturation (1.2).
        b: Length normalisation (0.75).
    """

    def __init__(self, *, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._postings: dict[str, _Posting] = {}
        self._terms: dict[int, tuple[str, ...]] = {}
        self._lengths = np.zeros(1024, dtype=np.float64)
        self._alive = np.zeros(1024, dtype=bool)
        self._total = 0
        self._dead_postings = 0
        self._live_postings = 0

    def __len__(self) -> int:
        return len(self._terms)

    def __contains__(self, row: object) -> bool:
        return row in self._terms

    def add(self, row: int, text: str) -> None:
        """Index ``text`` as document ``row`` (a row not used before, or removed)."""
        self.remove(row)
        counts = Counter(analyse(text))
        if row >= len(self._lengths):
            size = max(2 * len(self._lengths), row + 1)
            self._lengths = np.resize(self._lengths, size)
            alive = np.zeros(size, dtype=bool)
            alive[: len(self._alive)] = self._alive
            self._alive = alive
        length = sum(counts.values())
        self._lengths[row] = length
        self._alive[row] = True
        for term, tf in counts.items():
            posting = self._postings.get(term)
            if posting is None:
                posting = self._postings[term] = _Posting()
            posting.append(row, tf)
        self._terms[row] = tuple(counts)
        self._total += length
        self._live_postings += len(counts)

    def remove(self, row: int) -> None:
        """Drop document ``row`` (no-op when absent); its postings turn dead."""
        terms = self._terms.pop(row, None)
        if terms is None:
            return
        self._total -= int(self._lengths[row])
        self._alive[row] = False
        for term in terms:
            self._postings[term].live -= 1
        self._dead_postings += len(terms)
        self._live_postings -= len(terms)

    def dead_share(self) -> float:
        """Share of postings that belong to removed documents."""
        total = self._dead_postings + self._live_postings
        return self._dead_postings / total if total else 0.0

    def search(
        self,
        query: str | Iterable[str],
        *,
        limit: int,
        mask: np.ndarray | None = None,
    ) -> list[tuple[int, float]]:
        """The ``limit`` best ``(row, score)`` for ``query`` (text or analysed terms).

        ``mask`` (a boolean array over rows) admits documents: scope, status, ...; rows
        beyond it, and removed documents, never rank.
        """
        terms = analyse(query) if isinstance(query, str) else list(query)
        n = len(self._terms)
        if n == 0 or not terms or limit <= 0:
            return []
        avgdl = self._total / n if self._total else 1.0
        k1, b = self.k1, self.b
        width = len(self._lengths) if mask is None else min(len(self._lengths), len(mask))
        scores = np.zeros(width)
        alive = self._alive[:width] if mask is None else self._alive[:width] & mask[:width]
        for term in dict.fromkeys(terms):
            posting = self._postings.get(term)
            if posting is None or posting.live <= 0:
                continue
            rows, tfs = posting.arrays()
            keep = rows < width
            rows, tfs = rows[keep], tfs[keep]
            df = posting.live
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            norm = k1 * (1.0 - b + b * self._lengths[rows] / avgdl)
            scores[rows] += idf * tfs * (k1 + 1.0) / (tfs + norm)
        scores[~alive] = 0.0
        hits = np.flatnonzero(scores > 0.0)
        if hits.size == 0:
            return []
        k = min(limit, hits.size)
        kth = -np.partition(-scores[hits], k - 1)[k - 1]
        top = hits[scores[hits] >= kth]  # every tie at the cut, so the order is deterministic
        order = np.lexsort((-top, -scores[top]))  # score desc, then row desc (newer first)
        return [(int(r), float(scores[r])) for r in top[order][:k]]
