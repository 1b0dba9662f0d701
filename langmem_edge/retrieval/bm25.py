"""An in-memory BM25 inverted index, updatable document by document.

Scoring is Okapi BM25 with the Lucene idf (never negative)::

    idf(t)    = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score(d)  = sum over distinct query terms t in d of
                idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b + b * len(d) / avglen))

Defaults ``k1 = 1.2``, ``b = 0.75`` are the textbook values (Robertson & Zaragoza 2009) that
Lucene and Elasticsearch ship; they are configurable.

**Fields.** A document is a mapping ``field -> terms``; each field has a weight (default 1.0).
Term frequencies and lengths are the weighted sums over fields, the simple form of BM25F
(Robertson, Zaragoza & Taylor 2004): a word in a weak field (say, a turn's surrounding
context) counts for less than the same word in the main text, and a long weak field barely
stretches the length normalisation.

**Namespaces.** Every document carries a namespace tuple. A search names a namespace prefix,
and *all* statistics (N, average length, document frequencies) are computed over the
documents under that prefix only. Scores therefore never depend on documents outside the
prefix: another profile's data cannot change, or leak through, this profile's ranking, and a
search returns what a fresh index of just that prefix would.

**Updates.** :meth:`BM25Index.upsert` and :meth:`BM25Index.remove` are O(terms of the
document), amortised; an index built incrementally is identical to one rebuilt from scratch
(tested). Ties are broken by document id so results are deterministic.

**Slots.** Each document sits in an integer *slot* (:meth:`BM25Index.slot`), stable while it
stays indexed (a removed document's slot is reused). A caller that keeps numpy columns of its
own can admit documents with a boolean mask over slots (``search(accept_mask=...)``) instead
of a predicate called per match: the memory tier's profile index does, for its admissibility
masks over 100k records.

**Search** is vectorised with numpy: each document slot has its length and a namespace number
in flat arrays, each queried term keeps numpy copies of its posting list (rebuilt lazily once a
write touches the term), a namespace prefix becomes a cached boolean mask over namespace
numbers, and scores accumulate in a dense array. The arithmetic is the formula above evaluated
in the same order as the straightforward per-posting loop, so scores (and with them the ties)
are bit-for-bit what that loop gives; only the best ``limit`` candidates are sorted in Python.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from langmem_edge.errors import ConfigurationError

__all__ = [
    "DEFAULT_B",
    "DEFAULT_K1",
    "MAX_PREFIX_MASKS",
    "BM25Index",
    "ScoredDoc",
    "weighted_tf",
]

DEFAULT_K1 = 1.2
"""BM25 term-frequency saturation (Lucene's default)."""

DEFAULT_B = 0.75
"""BM25 length normalisation, 0 (none) to 1 (full) (Lucene's default)."""

MAX_PREFIX_MASKS = 256
"""Namespace-prefix masks a :class:`BM25Index` keeps (one per prefix searched since the last
namespace appeared or vanished); at the bound the cache is cleared and refills. Each mask is
one byte per namespace number. ``BM25Index(max_prefix_masks=...)`` sets another."""

Namespace = tuple[str, ...]

_FloatArray = npt.NDArray[np.float64]
_IntArray = npt.NDArray[np.intp]
_BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class ScoredDoc:
    """One BM25 result: document id and its score (higher is better)."""

    id: str
    score: float


class BM25Index:
    """BM25 over documents made of weighted fields, with namespace-scoped statistics.

    Args:
        k1: Term-frequency saturation. Default :data:`DEFAULT_K1`.
        b: Length normalisation in [0, 1]. Default :data:`DEFAULT_B`.
        field_weights: Weight of each field; fields not listed weigh ``default_field_weight``.
        default_field_weight: Weight of unlisted fields. Default 1.0.
        max_prefix_masks: Bound of the cached namespace-prefix masks (kept by
            :meth:`clear`). Default :data:`MAX_PREFIX_MASKS`.

    Not thread-safe: the caller serialises writes against reads.
    """

    def __init__(
        self,
        *,
        k1: float = DEFAULT_K1,
        b: float = DEFAULT_B,
        field_weights: Mapping[str, float] | None = None,
        default_field_weight: float = 1.0,
        max_prefix_masks: int = MAX_PREFIX_MASKS,
    ) -> None:
        if k1 < 0:
            raise ConfigurationError(f"bm25 k1 must be >= 0, got {k1}")
        if not 0 <= b <= 1:
            raise ConfigurationError(f"bm25 b must be within [0, 1], got {b}")
        if max_prefix_masks < 1:
            raise ConfigurationError(f"max_prefix_masks must be >= 1, got {max_prefix_masks}")
        weights = dict(field_weights or {})
        for name, w in [*weights.items(), ("<default>", default_field_weight)]:
            if w < 0:
                raise ConfigurationError(f"field weight of {name!r} must be >= 0, got {w}")
        self.k1 = float(k1)
        self.b = float(b)
        self.field_weights = weights
        self.default_field_weight = float(default_field_weight)
        self._slot: dict[str, int] = {}
        self._ids: list[str | None] = []
        # per slot: its document's terms
        self._terms: list[tuple[str, ...]] = []
        self._free: list[int] = []
        self._postings: dict[str, dict[int, float]] = {}
        self._ns_stats: dict[Namespace, list[float]] = {}  # ns -> [doc count, total length]
        self._prefix_cache: dict[Namespace, tuple[int, float]] = {}
        # Numpy side. Per slot (capacity grows by doubling): weighted length, namespace number.
        self._len: _FloatArray = np.zeros(0, dtype=np.float64)
        self._nsno: _IntArray = np.zeros(0, dtype=np.intp)
        # Namespace numbers live while the namespace has documents, then are reused.
        self._ns_number: dict[Namespace, int] = {}
        self._number_ns: list[Namespace | None] = []
        self._free_numbers: list[int] = []
        # prefix -> mask over namespace numbers; cleared when a namespace appears or vanishes.
        self._mask_cache: dict[Namespace, _BoolArray] = {}
        self.max_prefix_masks = max_prefix_masks
        # term -> (slots, weighted tfs) of its posting; dropped whenever the posting changes.
        self._arrays: dict[str, tuple[_IntArray, _FloatArray]] = {}

    # ----------------------------------------------------------------- writes

    def _weighted_tf(self, fields: Mapping[str, Sequence[str]]) -> tuple[dict[str, float], float]:
        return weighted_tf(fields, self.field_weights, self.default_field_weight)

    def upsert(
        self, doc_id: str, fields: Mapping[str, Sequence[str]], *, namespace: Namespace = ()
    ) -> None:
        """Add a document, or replace the one with the same id.

        Args:
            doc_id: The document id (the store's item id).
            fields: Analysed terms of each field, e.g. ``{"text": [...], "context": [...]}``.
            namespace: The document's namespace.
        """
        self.remove(doc_id)
        tf, length = self._weighted_tf(fields)
        if self._free:
            slot = self._free.pop()
            self._ids[slot] = doc_id
            self._terms[slot] = tuple(tf)
        else:
            slot = len(self._ids)
            self._ids.append(doc_id)
            self._terms.append(tuple(tf))
            if slot >= len(self._len):
                self._grow(slot + 1)
        self._slot[doc_id] = slot
        arrays = self._arrays
        for term, n in tf.items():
            self._posting(term)[slot] = n
            arrays.pop(term, None)
        stats = self._ns_stats.get(namespace)
        if stats is None:
            stats = self._ns_stats[namespace] = [0, 0.0]
            self._number_namespace(namespace)
        stats[0] += 1
        stats[1] += length
        self._len[slot] = length
        self._nsno[slot] = self._ns_number[namespace]
        self._prefix_cache.clear()

    def _grow(self, need: int) -> None:
        capacity = max(16, 2 * len(self._len), need)
        lens = np.zeros(capacity, dtype=np.float64)
        lens[: len(self._len)] = self._len
        nsno = np.zeros(capacity, dtype=np.intp)
        nsno[: len(self._nsno)] = self._nsno
        self._len, self._nsno = lens, nsno

    def _number_namespace(self, namespace: Namespace) -> None:
        if self._free_numbers:
            number = self._free_numbers.pop()
            self._number_ns[number] = namespace
        else:
            number = len(self._number_ns)
            self._number_ns.append(namespace)
        self._ns_number[namespace] = number
        self._mask_cache.clear()

    def _forget_namespace(self, namespace: Namespace) -> None:
        number = self._ns_number.pop(namespace)
        self._number_ns[number] = None
        self._free_numbers.append(number)
        self._mask_cache.clear()

    def remove(self, doc_id: str) -> bool:
        """Remove a document; returns whether it was there."""
        slot = self._slot.pop(doc_id, None)
        if slot is None:
            return False
        arrays = self._arrays
        terms = self._terms[slot]
        for term in terms:
            posting = self._postings[term]
            del posting[slot]
            if not posting:
                del self._postings[term]
            arrays.pop(term, None)
        ns = self._number_ns[int(self._nsno[slot])]
        assert ns is not None
        stats = self._ns_stats[ns]
        stats[0] -= 1
        stats[1] -= float(self._len[slot])
        if stats[0] <= 0:
            del self._ns_stats[ns]
            self._forget_namespace(ns)
        self._ids[slot] = None
        self._terms[slot] = ()
        self._free.append(slot)
        self._prefix_cache.clear()
        return True

    def clear(self) -> None:
        """Remove every document."""
        self.__init__(  # type: ignore[misc]
            k1=self.k1,
            b=self.b,
            field_weights=self.field_weights,
            default_field_weight=self.default_field_weight,
            max_prefix_masks=self.max_prefix_masks,
        )

    def _posting(self, term: str) -> dict[int, float]:
        """The postings of ``term`` (created empty)."""
        posting = self._postings.get(term)
        if posting is None:
            posting = self._postings[term] = {}
        return posting

    # ----------------------------------------------------------------- reads

    def __len__(self) -> int:
        return len(self._slot)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._slot

    def ids(self) -> list[str]:
        """Ids of every document, sorted."""
        return sorted(self._slot)

    def slot(self, doc_id: str) -> int | None:
        """The slot of a document (see the module docstring), or None if absent."""
        return self._slot.get(doc_id)

    @property
    def slots(self) -> int:
        """The number of slots (an ``accept_mask`` longer than this is never read past it)."""
        return len(self._ids)

    def namespace_of(self, doc_id: str) -> Namespace | None:
        """The namespace a document was indexed under, or None if absent."""
        slot = self._slot.get(doc_id)
        return None if slot is None else self._number_ns[int(self._nsno[slot])]

    def prefix_stats(self, prefix: Namespace = ()) -> tuple[int, float]:
        """(document count, average length) of the documents under ``prefix``."""
        cached = self._prefix_cache.get(prefix)
        if cached is None:
            n = 0
            total = 0.0
            k = len(prefix)
            for ns, (count, length) in self._ns_stats.items():
                if ns[:k] == prefix:
                    n += int(count)
                    total += length
            cached = (n, total / n if n else 0.0)
            self._prefix_cache[prefix] = cached
        return cached

    def idf(self, df: int, n: int) -> float:
        """Lucene's BM25 idf for a term in ``df`` of ``n`` documents."""
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def search(
        self,
        terms: Iterable[str],
        *,
        namespace_prefix: Namespace = (),
        limit: int | None = None,
        accept: Callable[[str], bool] | None = None,
        accept_mask: _BoolArray | None = None,
    ) -> list[ScoredDoc]:
        """Documents under ``namespace_prefix`` matching any of ``terms``, best first.

        Args:
            terms: Query terms (analysed like the documents). Repeats are ignored.
            namespace_prefix: Only documents whose namespace starts with this tuple.
            limit: Most results to return; None for every match.
            accept: Optional predicate on a document id (the store's ``filter``); rejected
                documents are skipped *before* ranking, so ranks count accepted documents.
            accept_mask: Optional boolean array over slots (:meth:`slot`), applied like
                ``accept``; slots beyond its end are rejected.

        Returns:
            :class:`ScoredDoc` sorted by score descending, then id ascending.
        """
        query = list(dict.fromkeys(terms))
        n, avglen = self.prefix_stats(namespace_prefix)
        if not query or n == 0:
            return []
        # Every document is under the prefix (always so for ()): no per-posting filter.
        mask = None if n == len(self._slot) else self._prefix_mask(namespace_prefix)
        k1 = self.k1
        b = self.b
        size = len(self._ids)
        scores = np.zeros(size, dtype=np.float64)
        matched = np.zeros(size, dtype=np.bool_)
        for term in query:
            arrays = self._posting_arrays(term)
            if arrays is None:
                continue
            slots, tfs = arrays
            if mask is not None:
                inside = mask[self._nsno[slots]]
                slots = slots[inside]
                tfs = tfs[inside]
            if not len(slots):
                continue
            idf = self.idf(len(slots), n)
            # Same operations, in the same order, as the scalar formula (bit-identical scores).
            if avglen:
                norm: _FloatArray | float = k1 * ((1.0 - b) + b * self._len[slots] / avglen)
            else:
                norm = k1
            scores[slots] += idf * tfs * (k1 + 1.0) / (tfs + norm)
            matched[slots] = True
        found = np.flatnonzero(matched)
        if accept_mask is not None and len(found):
            found = found[found < len(accept_mask)]
            found = found[accept_mask[found]]
        if accept is not None and len(found):
            ids = self._ids
            keep = np.array([bool(accept(ids[s])) for s in found.tolist()],  # type: ignore[arg-type]
                            dtype=np.bool_)
            found = found[keep]
        return self._rank(found, scores[found], limit)

    def _posting_arrays(self, term: str) -> tuple[_IntArray, _FloatArray] | None:
        """``(slots, weighted tfs)`` of a term's postings (arrays of its dict, kept until a
        write touches the term); ``None`` when no document has it."""
        cached = self._arrays.get(term)
        if cached is None:
            posting = self._postings.get(term)
            if not posting:
                return None
            count = len(posting)
            cached = (
                np.fromiter(posting.keys(), dtype=np.intp, count=count),
                np.fromiter(posting.values(), dtype=np.float64, count=count),
            )
            self._arrays[term] = cached
        return cached

    def _prefix_mask(self, prefix: Namespace) -> _BoolArray:
        """Which namespace numbers lie under ``prefix``."""
        mask = self._mask_cache.get(prefix)
        if mask is None:
            k = len(prefix)
            mask = np.fromiter(
                (ns is not None and ns[:k] == prefix for ns in self._number_ns),
                dtype=np.bool_,
                count=len(self._number_ns),
            )
            if len(self._mask_cache) >= self.max_prefix_masks:
                self._mask_cache.clear()
            self._mask_cache[prefix] = mask
        return mask

    def _rank(self, slots: _IntArray, scores: _FloatArray, limit: int | None) -> list[ScoredDoc]:
        """Order by score descending, then id ascending; keep the first ``limit``."""
        if not len(slots) or (limit is not None and limit <= 0):
            return []
        if limit is not None and limit < len(slots):
            # Everything scoring at least the limit-th best score (ties included) can be
            # in the top ``limit``; the exact order is settled below.
            negated = -scores
            bound = np.partition(negated, limit - 1)[limit - 1]
            near = negated <= bound
            slots = slots[near]
            scores = scores[near]
        order = np.argsort(-scores, kind="stable")
        ids = self._ids
        ranked = [
            (-v, ids[s], v)
            for v, s in zip(scores[order].tolist(), slots[order].tolist(), strict=True)
        ]
        # Already sorted by score; this only orders ids within tied scores (timsort runs).
        ranked.sort()
        if limit is not None:
            del ranked[limit:]
        return [ScoredDoc(doc_id, v) for _, doc_id, v in ranked]  # type: ignore[arg-type]


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
