"""The keyword channels of the offline retrieval benchmarks (``locomo.py``, ``locomo_cv.py``,
``keyword_channel.py``): the package's BM25 (:func:`rank_documents`, the arithmetic of
``rank_fields``) and exact-key ranking (:func:`rank_keys`) over the package's analyser, fed
rows directly.

Rows are analysed once when given, and their term counts kept per namespace prefix searched; a
search ranks the rows under its prefix (their statistics only), as the store and the memory
tiers rank what they read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langmem_edge.retrieval.bm25 import Corpus, corpus, rank_documents
from langmem_edge.retrieval.config import DEFAULT_KEYWORD_CONFIG, KeywordConfig
from langmem_edge.retrieval.keys import key_segments
from langmem_edge.retrieval.keywords import rank_keys
from langmem_edge.retrieval.text import Analyzer, key_tokens

Namespace = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class KeywordRow:
    """An item as the keyword channels see it: id, namespace, key and ``{field: text}``."""

    id: str
    namespace: Namespace
    key: str
    fields: Mapping[str, str]


class KeywordIndex:
    """BM25 keyword channel + exact-key channel over rows given to :meth:`apply`."""

    def __init__(self, *, config: KeywordConfig | None = None) -> None:
        self.cfg: dict[str, Any] = {**DEFAULT_KEYWORD_CONFIG, **(config or {})}
        self.analyzer = Analyzer(language=self.cfg["language"], stopwords=self.cfg["stopwords"])
        self._rows: dict[str, tuple[Namespace, dict[str, list[str]], list[str]]] = {}
        # per prefix searched since the last apply: each row's weighted tfs, N, avglen
        self._tfs: dict[Namespace, Corpus] = {}

    def apply(self, rows: Iterable[KeywordRow]) -> None:
        """Take in ``rows`` (replacing same ids), analysed now."""
        self._tfs.clear()
        for row in rows:
            self._rows.pop(row.id, None)
            terms = {name: self.analyzer.terms(text) for name, text in row.fields.items()}
            self._rows[row.id] = (row.namespace, terms, key_segments(row.key))

    def _under(self, prefix: Namespace) -> Sequence[tuple[str, dict[str, list[str]], list[str]]]:
        k = len(prefix)
        return [(i, terms, segs) for i, (ns, terms, segs) in self._rows.items()
                if ns[:k] == prefix]

    def search_keyword(self, query: str, *, namespace_prefix: Namespace = (),
                       limit: int | None = None) -> list[tuple[str, float]]:
        """BM25 ranking under ``namespace_prefix``: ``(id, score)`` best first."""
        if namespace_prefix not in self._tfs:
            self._tfs[namespace_prefix] = corpus(
                {i: terms for i, terms, _ in self._under(namespace_prefix)
                 if any(terms.values())}, field_weights=self.cfg["field_weights"],
                default_field_weight=self.cfg["default_field_weight"])
        tfs, n, avglen = self._tfs[namespace_prefix]
        hits = rank_documents(tfs, self.analyzer.query_terms(query), n=n, avglen=avglen,
                              k1=self.cfg["k1"], b=self.cfg["b"], limit=limit)
        return [(h.id, h.score) for h in hits]

    def search_key(self, query: str, *, namespace_prefix: Namespace = (),
                   limit: int | None = None) -> list[tuple[str, float]]:
        """Exact-key ranking under ``namespace_prefix``: ``(id, score)`` best first."""
        segments = {i: segs for i, _, segs in self._under(namespace_prefix) if segs}
        return rank_keys(segments, key_tokens(query, stopwords=self.analyzer.stopwords),
                         limit=limit)
