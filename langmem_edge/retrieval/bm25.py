"""BM25 of given documents: the package's one keyword scoring, computed per call, kept nowhere.

Scoring is Okapi BM25 with the Lucene idf (never negative)::

    idf(t)    = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score(d)  = sum over distinct query terms t in d of
                idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b + b * len(d) / avglen))

Defaults ``k1 = 1.2``, ``b = 0.75`` are the textbook values (Robertson & Zaragoza 2009) that
Lucene and Elasticsearch ship; they are configurable.

**Fields.** A document is a mapping ``field -> terms``; each field has a weight (default 1.0).
Term frequencies and lengths are the weighted sums over fields (:func:`weighted_tf`), the
simple form of BM25F (Robertson, Zaragoza & Taylor 2004): a word in a weak field (say, a
turn's surrounding context) counts for less than the same word in the main text.

Every caller ranks what it has just read (a profile's records, the messages in scope, a
document's passages, the rows a ``ChromaStore`` keyword search fetched): statistics come from
the documents given (or, for the store, from counts it read), so another profile's data
cannot change, or leak through, a ranking. Ties are broken by document id.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from langmem_edge.errors import ConfigurationError

__all__ = [
    "DEFAULT_B",
    "DEFAULT_K1",
    "Corpus",
    "ScoredDoc",
    "bm25_idf",
    "corpus",
    "rank_documents",
    "rank_fields",
    "weighted_tf",
]

DEFAULT_K1 = 1.2
"""BM25 term-frequency saturation (Lucene's default)."""

DEFAULT_B = 0.75
"""BM25 length normalisation, 0 (none) to 1 (full) (Lucene's default)."""


@dataclass(frozen=True, slots=True)
class ScoredDoc:
    """One BM25 result: document id and its score (higher is better)."""

    id: str
    score: float


def weighted_tf(
    fields: Mapping[str, Sequence[str]],
    field_weights: Mapping[str, float],
    default_field_weight: float = 1.0,
    *,
    only: Container[str] | None = None,
) -> tuple[dict[str, float], float]:
    """A document's weighted term frequencies and weighted length (the BM25F sums of the
    module docstring): each field's counts times its weight; a field of weight 0 counts
    nothing. ``only``: count just these terms (a query's: what scoring reads; the length is
    the whole document's still)."""
    tf: dict[str, float] = {}
    length = 0.0
    for name, terms in fields.items():
        w = field_weights.get(name, default_field_weight)
        if w == 0 or not terms:
            continue
        if only is None:
            for term, n in Counter(terms).items():
                tf[term] = tf.get(term, 0.0) + w * n
        else:
            for term in terms:
                if term in only:
                    tf[term] = tf.get(term, 0.0) + w
        length += w * len(terms)
    return tf, length


def bm25_idf(df: int, n: int) -> float:
    """Lucene's BM25 idf for a term in ``df`` of ``n`` documents (never negative)."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def rank_documents(
    docs: Mapping[str, tuple[Mapping[str, float], float]],
    terms: Iterable[str],
    *,
    n: int,
    avglen: float,
    k1: float = DEFAULT_K1,
    b: float = DEFAULT_B,
    limit: int | None = None,
    df: Mapping[str, int] | None = None,
) -> list[ScoredDoc]:
    """BM25 of ``docs`` (``id -> (weighted tfs, weighted length)``, see :func:`weighted_tf`)
    against ``terms`` (repeats ignored), with the corpus size ``n`` and average length
    ``avglen`` given by the caller: best first, ties by id ascending.

    ``docs`` must hold every document of the corpus that contains a query term: each term's
    document frequency is counted from them; or ``df`` gives each term's document frequency
    (then ``docs`` may be any of the corpus's documents, and a term it omits scores
    nothing). Scores accumulate term by term in query order.
    """
    query = list(dict.fromkeys(terms))
    if not query or n <= 0 or (limit is not None and limit <= 0):
        return []
    scores: dict[str, float] = {}
    for term in query:
        holders = [(i, tf[term]) for i, (tf, _) in docs.items() if term in tf]
        count = len(holders) if df is None else df.get(term, 0)
        if not holders or not count:
            continue
        idf = bm25_idf(count, n)
        for doc_id, tf_value in holders:
            if avglen:
                norm = k1 * ((1.0 - b) + b * docs[doc_id][1] / avglen)
            else:
                norm = k1
            scores[doc_id] = scores.get(doc_id, 0.0) + idf * tf_value * (k1 + 1.0) / (
                tf_value + norm)
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    if limit is not None:
        del ranked[limit:]
    return [ScoredDoc(doc_id, score) for doc_id, score in ranked]


class Corpus(NamedTuple):
    """A corpus as :func:`rank_documents` takes it: each document's weighted term
    frequencies and length, the document count ``n`` and the average length."""

    tfs: dict[str, tuple[dict[str, float], float]]
    n: int
    avglen: float


def corpus(docs: Mapping[str, Mapping[str, Sequence[str]]], *,
           field_weights: Mapping[str, float] | None = None,
           default_field_weight: float = 1.0) -> Corpus:
    """The :class:`Corpus` of documents given as analysed fields (``id -> {field: terms}``);
    lengths summed in the order given. A caller ranking many queries over one corpus
    weighs it once and calls :func:`rank_documents` with it."""
    weights = dict(field_weights or {})
    tfs = {doc_id: weighted_tf(fields, weights, default_field_weight)
           for doc_id, fields in docs.items()}
    total = 0.0
    for _, length in tfs.values():
        total += length
    return Corpus(tfs, len(tfs), total / len(tfs) if tfs else 0.0)


def rank_fields(
    docs: Mapping[str, Mapping[str, Sequence[str]]],
    terms: Iterable[str],
    *,
    k1: float = DEFAULT_K1,
    b: float = DEFAULT_B,
    field_weights: Mapping[str, float] | None = None,
    default_field_weight: float = 1.0,
    limit: int | None = None,
    accept: Callable[[str], bool] | None = None,
) -> list[ScoredDoc]:
    """BM25 of a whole corpus given as analysed fields (``id -> {field: terms}``): the
    statistics are the corpus's, and ``accept`` (a predicate on an id) leaves documents out
    of the ranking, not of the statistics (ranks count accepted documents only).

    Raises:
        ConfigurationError: ``k1`` below 0, ``b`` outside [0, 1] or a negative weight.
    """
    if k1 < 0:
        raise ConfigurationError(f"bm25 k1 must be >= 0, got {k1}")
    if not 0 <= b <= 1:
        raise ConfigurationError(f"bm25 b must be within [0, 1], got {b}")
    weights = dict(field_weights or {})
    for name, w in [*weights.items(), ("<default>", default_field_weight)]:
        if w < 0:
            raise ConfigurationError(f"field weight of {name!r} must be >= 0, got {w}")
    tfs, n, avglen = corpus(docs, field_weights=weights,
                            default_field_weight=default_field_weight)
    if accept is None:
        return rank_documents(tfs, terms, n=n, avglen=avglen, k1=k1, b=b, limit=limit)
    query = list(dict.fromkeys(terms))
    df = {t: sum(1 for tf, _ in tfs.values() if t in tf) for t in query}
    kept = {doc_id: v for doc_id, v in tfs.items() if accept(doc_id)}
    return rank_documents(kept, query, n=n, avglen=avglen, k1=k1, b=b, limit=limit, df=df)
