"""The exact-key channel: items whose key segments equal a query word.

Keys like ``preference.ui_theme`` or ``user:alice/address-home`` carry meaning a writer
chose on purpose, so a query word that *is* one of those segments is strong evidence. A key
is split on ``. : / _ -`` and whitespace, each segment normalised like query words (NFKC,
casefold) but never stemmed: this channel is about exact segments, BM25 covers inflections.

Ranking inside the channel (raw score = matched + coverage, higher is better):

- ``matched``: how many distinct query words equal one of the key's segments;
- ``coverage``: the fraction of the key's distinct segments matched (between 0 and 1, so it
  only breaks ties between equal ``matched``: the more specific key wins);
- then the item id, ascending, for determinism.

Query words are :func:`~langmem_edge.retrieval.text.key_tokens` (stopwords removed), so
``"what is the theme"`` never matches a key segment ``the``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from langmem_edge.retrieval.text import ENGLISH_STOPWORDS, key_tokens, normalize

__all__ = ["KEY_SEPARATORS", "KeyIndex", "key_segments"]

KEY_SEPARATORS = ".:/_-"
"""Characters that split a key into segments (whitespace splits too)."""

_SPLIT_RE = re.compile(r"[.:/_\-\s]+")


def key_segments(key: str) -> list[str]:
    """Distinct normalised segments of ``key``, in order (empty segments dropped).

    >>> key_segments("Preference.UI_theme")
    ['preference', 'ui', 'theme']
    """
    seen: dict[str, None] = {}
    for seg in _SPLIT_RE.split(normalize(key)):
        if seg:
            seen.setdefault(seg, None)
    return list(seen)


Namespace = tuple[str, ...]


class KeyIndex:
    """Segment -> item postings for the exact-key channel.

    Not thread-safe: the caller serialises writes against reads.
    """

    def __init__(self, *, stopwords: Iterable[str] = ENGLISH_STOPWORDS) -> None:
        self.stopwords = frozenset(stopwords)
        self._segments: dict[str, tuple[str, ...]] = {}
        self._ns: dict[str, Namespace] = {}
        self._postings: dict[str, set[str]] = {}

    def __len__(self) -> int:
        return len(self._segments)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._segments

    def upsert(self, doc_id: str, key: str, *, namespace: Namespace = ()) -> None:
        """Index (or re-index) item ``doc_id`` under ``key``."""
        self.remove(doc_id)
        segs = tuple(key_segments(key))
        self._segments[doc_id] = segs
        self._ns[doc_id] = namespace
        for seg in segs:
            self._postings.setdefault(seg, set()).add(doc_id)

    def remove(self, doc_id: str) -> bool:
        """Forget item ``doc_id``; returns whether it was there."""
        segs = self._segments.pop(doc_id, None)
        if segs is None:
            return False
        del self._ns[doc_id]
        for seg in segs:
            posting = self._postings[seg]
            posting.discard(doc_id)
            if not posting:
                del self._postings[seg]
        return True

    def clear(self) -> None:
        """Forget every item."""
        self._segments.clear()
        self._ns.clear()
        self._postings.clear()

    def search(
        self,
        query: str,
        *,
        namespace_prefix: Namespace = (),
        limit: int | None = None,
        accept: Callable[[str], bool] | None = None,
    ) -> list[tuple[str, float]]:
        """Items under ``namespace_prefix`` with a key segment equal to a query word.

        Returns:
            ``(item id, matched + coverage)`` pairs, best first (see the module docstring).
        """
        words = key_tokens(query, stopwords=self.stopwords)
        k = len(namespace_prefix)
        matched: dict[str, int] = {}
        for word in words:
            for doc_id in self._postings.get(word, ()):
                if k and self._ns[doc_id][:k] != namespace_prefix:
                    continue
                matched[doc_id] = matched.get(doc_id, 0) + 1
        if accept is not None:
            matched = {d: m for d, m in matched.items() if accept(d)}
        scored = [(m + m / len(self._segments[d]), d) for d, m in matched.items()]
        scored.sort(key=lambda sd: (-sd[0], sd[1]))
        if limit is not None:
            scored = scored[:limit]
        return [(d, s) for s, d in scored]
