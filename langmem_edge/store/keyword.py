"""The keyword (BM25) and exact-key channels of ``ChromaStore``, answered by the database.

No process keeps an index: each item row carries its analysed terms, key segments and term
count (:mod:`langmem_edge.retrieval.keywords`), so a search reads what it needs and every
other process's write is visible to the next search. Two routes, chosen per scope (the
namespace prefix):

**Small scopes** (at most :data:`KEYWORD_SCAN_ROWS` item rows): one ``get`` of the scope's
documents, scored in process. Exact: N, the average length and every document frequency
come from all of the scope's documents.

**Larger scopes**: the rows holding each query term, ids only (one ``get`` per distinct
term, the scope's ``where`` and ``{"kt": {"$contains": term}}``: Chroma answers it from
SQLite's index on the field, ~0.3 ms for a rare term and ~2.5 ms for one in 1,000 rows), and
the scope's document count N (one id-only ``get``, ``kl != 0``), so every document frequency
and N are exact. The rows are ranked by the idf sum of the terms they hold; the documents of
the best :data:`KEYWORD_CANDIDATES` (or three times ``limit``) are read (one ``get``) and
scored by BM25F exactly. What is approximate: a row outside those candidates is not
ranked (it holds only common query terms, or fewer of them); when some rows are left out,
a document frequency counts the rows holding the term in any field, also one that the
``field_weights`` weigh 0 (when none is left out, it is counted from the documents, per
field); and the average length is the
mean of the rows read, which runs above the scope's mean (longer texts hold more terms).
A query's terms past :data:`MAX_POSTING_TERMS` are not fetched. Measured in
``benchmarks/keyword_postings.py`` (docs/retrieval.md): 16 ms against 137 ms for fetching
every row holding a term with its document, top ten 0.97 of the exact ranking's, at 1,000
messages. A row past :data:`~langmem_edge.retrieval.keywords.MAX_ROW_TERMS` distinct terms
is not found here by a term beyond the cap.

Which route a scope takes is a per-process hint (:attr:`_large_keyword_scopes`): a scope found
larger than :data:`KEYWORD_SCAN_ROWS` goes to the second route at once from then on, and back
to the first when its count falls under the bound. It only picks a route; both are answered
from the rows as they are now.

Expiry is not checked here (as in ``nearest_keys``): an item whose TTL ran out ranks until the
sweeper deletes it; callers that read the rows (``hybrid_search``, ``keyword_search`` with a
``filter``) drop it then.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from langgraph.store.base import SearchOp

from langmem_edge import _chroma
from langmem_edge._twins import threaded
from langmem_edge.errors import InvalidInputError
from langmem_edge.retrieval import HybridConfig
from langmem_edge.retrieval.bm25 import bm25_idf, rank_documents, weighted_tf
from langmem_edge.retrieval.keywords import (
    LENGTH_FIELD,
    TERMS_FIELD,
    decode_keyword_document,
    match_where,
    rank_keys,
)
from langmem_edge.retrieval.text import Analyzer, key_tokens
from langmem_edge.store import filters, layout
from langmem_edge.store.names import ItemNames
from langmem_edge.store.ranking import ADMIT_SLACK, KeyHit, passes

logger = logging.getLogger(__name__)

__all__ = ["KEYWORD_SCAN_ROWS", "KeywordMixin"]

KEYWORD_SCAN_ROWS = 300
"""Largest scope (item rows under the prefix) whose documents a keyword search reads whole and
scores exactly, instead of fetching the rows that hold a query term. Measured on chromadb
1.5.9 (``benchmarks/keyword_channel.py``, docs/store.md): reading a profile of 100 documents
whole costs 6 ms against 14 ms for the term fetch, 40 against 25 ms at 1,000."""

KEYWORD_CANDIDATES = 100
"""Rows of a large scope whose documents a keyword search reads and scores exactly (or three
times its ``limit``, when larger): the best by the idf sum of the query terms they hold."""

MAX_POSTING_TERMS = 16
"""Most distinct query terms, in query order, whose rows a large scope's search fetches (one
id-only ``get`` each); a term past them adds nothing to the search."""

MAX_SCOPES_KEPT = 4096
"""Scopes remembered as too large to read whole (then the hint starts over)."""

Ranking = list[tuple[str, float]]


class KeywordMixin:
    """Keyword and exact-key channels of ``ChromaStore`` (needs its items collection)."""

    hybrid_config: HybridConfig
    _call: _chroma.ChromaCaller
    _items: Any
    _analyzer: Analyzer
    _names: ItemNames
    _large_keyword_scopes: dict[tuple[str, ...], int]
    _clock: Callable[[], float]
    _get_items: Callable[..., dict[str, dict[str, Any]]]

    def keyword_search(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        query: str,
        *,
        limit: int = 10,
        filter: dict[str, Any] | None = None,
        field_weights: Mapping[str, float] | None = None,
    ) -> list[KeyHit]:
        """The ``limit`` items under ``namespace_prefix`` that BM25 ranks best for ``query``:
        ``KeyHit(namespace, key, score)`` (the score is BM25's, higher is better), best first,
        ties by item id.

        The keyword channel of ``hybrid_search`` on its own: the query and the items' indexed
        texts (the index ``fields``) analysed alike (tokens, stopwords, Snowball stems), BM25
        with the store's ``hybrid["keyword"]`` options over the items under the prefix. One
        Chroma ``get`` for a scope of up to :data:`KEYWORD_SCAN_ROWS` items, two past it (see
        the module docstring). Without ``filter`` no value is read, and an item whose TTL ran
        out may be returned until the sweeper deletes it; with a ``filter``, ranks are
        counted among the live items that pass it (statistics stay the prefix's), and their
        rows are read, best first, until ``limit`` pass.

        ``field_weights`` (BM25F, this call only): the weight of each indexed field by name
        (an ``index`` path, or a keyword-only path without its ``keyword:``); a field it
        does not name weighs 0. None: the store's ``hybrid["keyword"]`` weights.

        A query with no usable terms (stopwords, punctuation) returns ``[]``.

        Raises:
            InvalidInputError: Bad prefix, query, limit, filter or field weights.
        """
        prefix = _checked_prefix(namespace_prefix)
        weights = _checked_weights(field_weights)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise InvalidInputError(f"limit must be an integer >= 0, got {limit!r}")
        if not isinstance(query, str):
            raise InvalidInputError(f"query must be a string, got {type(query).__name__}")
        filters.validate_filter(filter)
        if limit == 0:
            return []
        ranked = self._keyword_rankings(prefix, query, {"keyword"},
                                        None if filter else limit,
                                        weights=weights).get("keyword", [])
        if filter:
            ranked = self._admit_ranked(ranked, filter, limit)
        self._name_ids([i for i, _ in ranked])
        out = []
        for iid, score in ranked:
            name = self._names.get(iid)
            if name is not None:
                out.append(KeyHit(name[0], name[1], score))
        return out

    akeyword_search = threaded(keyword_search)

    # -- the channels -------------------------------------------------------------------------

    def _keyword_rankings(
        self, prefix: tuple[str, ...], query: str, channels: Iterable[str], limit: int | None,
        *, weights: Mapping[str, float] | None = None, documents: dict[str, str] | None = None,
    ) -> dict[str, Ranking]:
        """The keyword and/or key channel's ranking of the items under ``prefix``:
        ``{"keyword": [(id, score)], "key": [...]}`` for the channels asked for, each best
        first, cut at ``limit`` (None: every match). ``weights``: the BM25F field weights
        (unnamed fields 0); None: the store's. ``documents``: every item row's document
        under a small prefix, already read (scored as the first route's)."""
        wanted = set(channels)
        terms = self._analyzer.query_terms(query) if "keyword" in wanted else []
        words = (key_tokens(query, stopwords=self._analyzer.stopwords)
                 if "key" in wanted else [])
        out: dict[str, Ranking] = {name: [] for name in ("keyword", "key") if name in wanted}
        if not terms and not words:
            return out
        scope = layout.prefix_where(prefix)
        docs = documents
        n = 0
        if docs is None and prefix not in self._large_keyword_scopes:
            got = self._call(self._items.get, where=scope, include=["documents"],
                             limit=KEYWORD_SCAN_ROWS + 1)
            if len(got["ids"]) <= KEYWORD_SCAN_ROWS:
                docs = dict(zip(got["ids"], got["documents"] or [], strict=True))
            else:
                if len(self._large_keyword_scopes) >= MAX_SCOPES_KEPT:
                    self._large_keyword_scopes.clear()
                self._large_keyword_scopes[prefix] = len(got["ids"])
        exact = docs is not None
        df: dict[str, int] | None = None
        if docs is None:
            docs, n, df = self._posting_route(prefix, scope, terms, words, limit)
        decoded = {iid: decode_keyword_document(doc) for iid, doc in docs.items()}
        if terms:
            cfg = self.hybrid_config["keyword"]
            if weights is None:
                weights, default = cfg["field_weights"], cfg["default_field_weight"]
            else:
                default = 0.0
            query_set = set(terms)
            tfs = {iid: weighted_tf(d.fields, weights, default, only=query_set)
                   for iid, d in decoded.items() if any(d.fields.values())}
            if exact:
                n = len(tfs)
                lengths = [length for _, length in tfs.values()]
            else:  # the rows holding a query term (key-only matches left out)
                lengths = [length for tf, length in tfs.values() if query_set & tf.keys()]
            avglen = sum(lengths) / len(lengths) if lengths else 0.0
            out["keyword"] = [
                (h.id, h.score)
                for h in rank_documents(tfs, terms, n=n, avglen=avglen, k1=cfg["k1"],
                                        b=cfg["b"], limit=limit, df=df)
            ]
        if words:
            out["key"] = rank_keys({i: d.segments for i, d in decoded.items()}, words,
                                   limit=limit)
        return out

    def _posting_route(
        self, prefix: tuple[str, ...], scope: dict[str, Any], terms: list[str],
        words: list[str], limit: int | None,
    ) -> tuple[dict[str, str], int, dict[str, int] | None]:
        """A large scope's candidates (the module docstring): ``(documents, N, df)``, df None
        when every row holding a query term is among the documents (count them there: exact
        per field too)."""
        n, df, binary = 0, {}, {}
        if terms:
            # $ne, not $gt: a range on it made Chroma walk the field's index (measured:
            # 110-140 ms against 15 ms on a scope of 1,000 rows of 50,000)
            counted = layout.and_where([scope, {LENGTH_FIELD: {"$ne": 0}}])
            n = len(self._call(self._items.get, where=counted, include=[])["ids"])
            if n <= KEYWORD_SCAN_ROWS // 2:
                self._large_keyword_scopes.pop(prefix, None)
            for term in list(dict.fromkeys(terms))[:MAX_POSTING_TERMS]:
                ids = self._call(self._items.get, include=[], where=layout.and_where(
                    [scope, {TERMS_FIELD: {"$contains": term}}]))["ids"]
                df[term] = len(ids)
                idf = bm25_idf(len(ids), n) if ids else 0.0
                for iid in ids:
                    binary[iid] = binary.get(iid, 0.0) + idf
        depth = KEYWORD_CANDIDATES if limit is None else max(KEYWORD_CANDIDATES, 3 * limit)
        wanted = sorted(binary, key=lambda i: (-binary[i], i))[:depth]
        every = len(wanted) == len(binary) and len(df) == len(set(terms))
        if words:
            where = layout.and_where([scope, match_where([], words)])
            wanted += self._call(self._items.get, where=where, include=[])["ids"]
        if not wanted:
            return {}, n, df
        got = self._call(self._items.get, ids=list(dict.fromkeys(wanted)),
                         include=["documents"])
        return (dict(zip(got["ids"], got["documents"] or [], strict=True)), n,
                None if every else df)

    def _admit_ranked(
        self, ranked: Ranking, filter: dict[str, Any], limit: int
    ) -> Ranking:
        """The first ``limit`` of ``ranked`` whose items are alive and pass ``filter``,
        reading rows best first in slices."""
        now = self._clock()
        kept: Ranking = []
        start = 0
        while start < len(ranked) and len(kept) < limit:
            chunk = ranked[start : start + limit - len(kept) + ADMIT_SLACK]
            start += len(chunk)
            rows = self._get_items(ids=[i for i, _ in chunk], now=now)
            kept.extend((i, s) for i, s in chunk
                        if (m := rows.get(i)) is not None and passes(m, filter))
        return kept[:limit]

    def _name_ids(self, ids: list[str]) -> None:
        """Learn the names of ``ids`` this process has not seen (one read of their rows)."""
        unknown = [i for i in ids if i not in self._names]
        if unknown:
            self._get_items(ids=unknown)


def _checked_weights(weights: Mapping[str, float] | None) -> dict[str, float] | None:
    if weights is None:
        return None
    if not isinstance(weights, Mapping) or not all(
            isinstance(k, str) and isinstance(w, (int, float)) and not isinstance(w, bool)
            and w >= 0 for k, w in weights.items()):
        raise InvalidInputError(
            f"field_weights must map field names to numbers >= 0, got {weights!r}")
    return {k: float(w) for k, w in weights.items()}


def _checked_prefix(namespace_prefix: tuple[str, ...]) -> tuple[str, ...]:
    prefix = tuple(namespace_prefix)
    if not all(isinstance(label, str) for label in prefix):
        raise InvalidInputError(f"namespace_prefix must hold strings, got {prefix!r}")
    layout.checked_op(SearchOp(prefix))
    return prefix
