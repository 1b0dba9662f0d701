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
``"what is the theme"`` never matches a key segment ``the``. The ranking is
:func:`~langmem_edge.retrieval.keywords.rank_keys`, over the segments a store's rows carry.
"""

from __future__ import annotations

import re

from langmem_edge.retrieval.text import normalize

__all__ = ["KEY_SEPARATORS", "key_segments"]

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
