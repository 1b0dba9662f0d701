"""Token estimation without a tokenizer.

Budgets in the episodic tier (the compaction window) are counted in *estimated* tokens, so the
library needs no model-specific tokenizer. The estimate is ``ceil(len(text) / r)`` characters,
where the ratio ``r`` is picked from the text's make-up (docs/architecture.md, "token estimate"):

=====================================================  ==================
text                                                   chars per token
=====================================================  ==================
more than 30 % CJK characters                          1.5
otherwise, more than 8 % of the JSON punctuation
``{ } [ ] : "``                                        3.0
otherwise (prose, code)                                3.5
=====================================================  ==================

Shares are counted over every character of the text, whitespace included. "CJK" means the
Han ideographs (with extension A/B and compatibility blocks), Hiragana, Katakana, Hangul
(syllables and jamo), CJK punctuation and full-width forms. The thresholds are strict
("more than"): exactly 30 % CJK still counts as not-CJK.

The estimate is deliberately simple and a little generous for English (OpenAI-style BPE
averages about 4 characters a token); budgets built on it err on the side of fitting.
"""

from __future__ import annotations

import math
import re

from langmem_edge.memory.config import (
    CJK_CHARS_PER_TOKEN,
    CJK_THRESHOLD,
    DEFAULT_CHARS_PER_TOKEN,
    JSON_CHARS_PER_TOKEN,
    JSON_THRESHOLD,
)

__all__ = [
    "CJK_CHARS_PER_TOKEN",
    "CJK_THRESHOLD",
    "DEFAULT_CHARS_PER_TOKEN",
    "JSON_CHARS",
    "JSON_CHARS_PER_TOKEN",
    "JSON_THRESHOLD",
    "TRUNCATION_MARK",
    "chars_per_token",
    "estimate_tokens",
    "truncate_to_tokens",
]

JSON_CHARS = frozenset('{}[]:"')
"""The characters counted for the JSON share."""

TRUNCATION_MARK = " [...]"
"""Appended to a text cut by :func:`truncate_to_tokens`."""

_CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x3000, 0x303F),  # CJK symbols and punctuation
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3130, 0x318F),  # Hangul compatibility jamo
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF00, 0xFFEF),  # half-width and full-width forms
    (0x20000, 0x2FFFF),  # CJK extensions B-F, compatibility supplement
)


_CJK = re.compile("[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _CJK_RANGES) + "]")
"""One character of the CJK blocks (counted in C: a window estimates every message it reads)."""
_JSON = re.compile("[" + re.escape("".join(sorted(JSON_CHARS))) + "]")


def chars_per_token(
    text: str,
    *,
    cjk_threshold: float = CJK_THRESHOLD,
    cjk_ratio: float = CJK_CHARS_PER_TOKEN,
    json_threshold: float = JSON_THRESHOLD,
    json_ratio: float = JSON_CHARS_PER_TOKEN,
    default_ratio: float = DEFAULT_CHARS_PER_TOKEN,
) -> float:
    """The characters-per-token ratio the estimate uses for ``text`` (see the module table)."""
    if not text:
        return default_ratio
    total = len(text)
    cjk = len(_CJK.findall(text))
    if cjk / total > cjk_threshold:
        return cjk_ratio
    punct = len(_JSON.findall(text))
    if punct / total > json_threshold:
        return json_ratio
    return default_ratio


def estimate_tokens(text: str, **ratios: float) -> int:
    """Estimated token count of ``text``: ``ceil(len(text) / chars_per_token(text))``.

    Keyword arguments override the thresholds and ratios of :func:`chars_per_token`.
    The empty string is 0 tokens.
    """
    if not text:
        return 0
    return math.ceil(len(text) / chars_per_token(text, **ratios))


def truncate_to_tokens(text: str, max_tokens: int, **ratios: float) -> tuple[str, bool]:
    """Cut ``text`` so its estimate is at most ``max_tokens``; returns ``(text, was_cut)``.

    A cut text ends with :data:`TRUNCATION_MARK`. The ratio is the one of the whole text, so
    the cut keeps the character class of what it cuts. ``max_tokens <= 0`` gives ``""``.
    """
    if estimate_tokens(text, **ratios) <= max_tokens:
        return text, False
    if max_tokens <= 0:
        return "", True
    ratio = chars_per_token(text, **ratios)
    keep = int(max_tokens * ratio) - len(TRUNCATION_MARK)
    while keep > 0:
        candidate = text[:keep].rstrip() + TRUNCATION_MARK
        if estimate_tokens(candidate, **ratios) <= max_tokens:
            return candidate, True
        keep -= max(1, keep // 20)
    mark = TRUNCATION_MARK.strip()
    return (mark if estimate_tokens(mark, **ratios) <= max_tokens else ""), True
