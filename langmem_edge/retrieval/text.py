"""Text analysis for the keyword channel: text in, index terms out.

Pipeline (:class:`Analyzer`), in order:

1. **Normalise**: Unicode NFKC (full-width letters and ligatures fold to their plain form),
   then ``casefold`` (Unicode-aware lower-casing: ``"Straße"`` and ``"STRASSE"`` meet).
2. **Tokenise**: runs of letters/digits (Unicode ``\\w`` minus ``_``), keeping apostrophes
   inside words (``don't``), so any script that writes words with letters works. Runs of CJK
   ideographs / kana / hangul have no spaces between words, so they become overlapping
   character bigrams (a single character stays a unigram), the usual choice of CJK
   analysers when no dictionary segmenter is available.
3. **Normalise numbers and dates**: ordinal suffixes are dropped (``8th`` -> ``8``), leading
   zeros are dropped (``05`` -> ``5``, so ``2023-05-08`` and ``8 May 2023`` share ``5``/``8``),
   and month abbreviations are expanded (``Sept``/``sep.`` -> ``september``) so every
   spelling of a month meets the same term.
4. **Stopwords** (language-specific list; English by default) are removed, as are possessive
   endings (``alice's`` -> ``alice``).
5. **Stem** with the Snowball stemmer of the configured language (``snowballstemmer``, the
   library chromadb's own BM25 encoder uses; never a hand-written stemmer). Stems are cached.

Why these choices: the channel exists for exact-word evidence (names, rare nouns, numbers)
that a small embedding model blurs, so the analyser must keep every content word and make
inflections meet (``painted``/``painting`` -> ``paint``), while dropping function words that
only add noise to BM25. Nothing here is tuned to one data set.

:func:`key_tokens` is the lighter analysis used to match query words against item keys:
normalised and tokenised like above, stopwords dropped, but *not* stemmed (the exact-key
channel is about exact segments).
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

import snowballstemmer

from langmem_edge.errors import ConfigurationError

__all__ = [
    "DEFAULT_LANGUAGE",
    "ENGLISH_STOPWORDS",
    "Analyzer",
    "default_analyzer",
    "key_tokens",
    "normalize",
    "tokenize",
]

DEFAULT_LANGUAGE = "english"
"""Snowball stemmer language used when none is configured."""

STEM_CACHE_SIZE = 65_536
"""Distinct words whose stems are remembered per analyzer."""

ENGLISH_STOPWORDS: frozenset[str] = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do does
    doesn't doing don't down during each few for from further had hadn't has hasn't have
    haven't having he he'd he'll he's her here here's hers herself him himself his how how's i
    i'd i'll i'm i've if in into is isn't it it's its itself just let's me more most mustn't my
    myself no nor not now of off on once only or other ought our ours ourselves out over own
    same shan't she she'd she'll she's should shouldn't so some such than that that's the their
    theirs them themselves then there there's these they they'd they'll they're they've this
    those through to too under until up very was wasn't we we'd we'll we're we've were weren't
    what what's when when's where where's which while who who's whom why why's will with won't
    would wouldn't you you'd you'll you're you've your yours yourself yourselves
    s t d ll m o re ve y
    """.split()
)
"""English stopwords: the classic Snowball/NLTK function-word list (pronouns, auxiliaries,
determiners, prepositions, conjunctions), plus the fragments left by contractions."""

STOPWORDS_BY_LANGUAGE: dict[str, frozenset[str]] = {
    "english": ENGLISH_STOPWORDS,
    "porter": ENGLISH_STOPWORDS,
}
"""Built-in stopword lists; other languages get none unless configured."""

MONTH_ABBREVIATIONS: dict[str, str] = {
    "jan": "january",
    "feb": "february",
    "mar": "march",
    "apr": "april",
    "jun": "june",
    "jul": "july",
    "aug": "august",
    "sep": "september",
    "sept": "september",
    "oct": "october",
    "nov": "november",
    "dec": "december",
}
"""English month abbreviations expanded before stemming (``may`` needs none)."""

_WORD_RE = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")
_CJK_RE = re.compile(
    r"([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+)"
)
_ORDINAL_RE = re.compile(r"^(\d+)(?:st|nd|rd|th)$")
_POSSESSIVE = ("'s", "\u2019s")


def normalize(text: str) -> str:
    """NFKC-normalise and casefold ``text``."""
    return unicodedata.normalize("NFKC", text).casefold()


def _split_cjk(word: str) -> list[str]:
    parts: list[str] = []
    for i, chunk in enumerate(_CJK_RE.split(word)):
        if not chunk:
            continue
        if i % 2 == 0:  # non-CJK text between CJK runs
            parts.append(chunk)
        elif len(chunk) == 1:
            parts.append(chunk)
        else:
            parts.extend(chunk[j : j + 2] for j in range(len(chunk) - 1))
    return parts


def tokenize(text: str) -> list[str]:
    """Normalised word tokens of ``text``, before stopwords and stemming.

    Possessive endings are dropped, ordinals and zero-padded numbers reduced to the number,
    and CJK runs split into bigrams.
    """
    out: list[str] = []
    for raw in _WORD_RE.findall(normalize(text)):
        if raw.isascii() and raw.isalpha():  # most words: nothing below applies
            out.append(raw)
            continue
        word = raw.replace("\u2019", "'")
        if word.endswith(_POSSESSIVE):
            word = word[:-2]
        for tok in _split_cjk(word) if _CJK_RE.search(word) else (word,):
            m = _ORDINAL_RE.match(tok)
            if m:
                tok = m.group(1)
            if tok.isdigit():
                tok = tok.lstrip("0") or "0"
            if tok:
                out.append(tok)
    return out


def key_tokens(text: str, *, stopwords: Iterable[str] = ENGLISH_STOPWORDS) -> list[str]:
    """Query tokens for the exact-key channel: normalised, stopwords dropped, not stemmed.

    Tokens are de-duplicated, first occurrence first.
    """
    stop = stopwords if isinstance(stopwords, (set, frozenset)) else frozenset(stopwords)
    seen: dict[str, None] = {}
    for tok in tokenize(text):
        if tok not in stop:
            seen.setdefault(tok, None)
    return list(seen)


class Analyzer:
    """Turns text into index terms: tokenise, normalise, drop stopwords, Snowball-stem.

    Args:
        language: A Snowball language (``snowballstemmer.algorithms()``), or ``None`` for no
            stemming. Default ``"english"``.
        stopwords: Words to drop (matched after normalisation, before stemming). Default:
            the built-in list of the language (English has one; others have none).
        expand_months: Expand English month abbreviations (``sept`` -> ``september``).
            Default: on for English.

    Instances are thread-safe and cheap to share; equal arguments give equal terms, so a
    writer and a reader configured alike agree on the terms of a text.
    """

    def __init__(
        self,
        *,
        language: str | None = DEFAULT_LANGUAGE,
        stopwords: Iterable[str] | None = None,
        expand_months: bool | None = None,
    ) -> None:
        lang = language.lower() if language else None
        if lang is not None and lang not in snowballstemmer.algorithms():
            raise ConfigurationError(
                f"unknown stemmer language {language!r}; expected one of "
                f"{', '.join(snowballstemmer.algorithms())} or None"
            )
        self.language = lang
        if stopwords is None:
            stop = STOPWORDS_BY_LANGUAGE.get(lang or "", frozenset())
        else:
            stop = frozenset(normalize(w) for w in stopwords)
        self.stopwords: frozenset[str] = stop
        english = lang in ("english", "porter")
        self.expand_months = english if expand_months is None else expand_months
        self._stemmer = snowballstemmer.stemmer(lang) if lang else None
        self._lock = threading.Lock()
        self._stem = lru_cache(maxsize=STEM_CACHE_SIZE)(self._stem_uncached)

    def _stem_uncached(self, word: str) -> str:
        if self._stemmer is None or word.isdigit():
            return word
        with self._lock:  # snowballstemmer objects keep state between calls
            return self._stemmer.stemWord(word)

    def terms(self, text: str) -> list[str]:
        """Index terms of ``text``, in order, repeats kept (they are term frequencies)."""
        out: list[str] = []
        stop = self.stopwords
        months = MONTH_ABBREVIATIONS if self.expand_months else None
        for tok in tokenize(text):
            if tok in stop:
                continue
            if months is not None:
                tok = months.get(tok, tok)
            out.append(self._stem(tok))
        return out

    def query_terms(self, text: str) -> list[str]:
        """Distinct index terms of a query, first occurrence first."""
        return list(dict.fromkeys(self.terms(text)))

    def __repr__(self) -> str:
        return (
            f"Analyzer(language={self.language!r}, stopwords={len(self.stopwords)} words, "
            f"expand_months={self.expand_months})"
        )


@lru_cache(maxsize=1)
def default_analyzer() -> Analyzer:
    """The shared ``Analyzer()`` (English: stopwords, Snowball stems, month names), for the
    memory tier's keyword index and offline extraction, so every keyword path in the
    package agrees on the terms of a text."""
    return Analyzer()
