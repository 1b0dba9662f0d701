"""An in-process keyword index for the offline retrieval benchmarks (``locomo.py``,
``locomo_cv.py``, ``keyword_channel.py``): the package's BM25 (:class:`BM25Index`) and
exact-key channel (:class:`KeyIndex`) over the package's analyser, fed rows directly.

The store no longer keeps such an index (its keyword channel reads the database:
``langmem_edge/store/keyword.py``); the benchmarks that tune the retrieval core, or use it as
the reference ranking, still rank the same way in process.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from langmem_edge.retrieval.bm25 import BM25Index
from langmem_edge.retrieval.config import DEFAULT_KEYWORD_CONFIG, KeywordConfig
from langmem_edge.retrieval.keys import KeyIndex
from langmem_edge.retrieval.text import Analyzer

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
        cfg: dict[str, Any] = {**DEFAULT_KEYWORD_CONFIG, **(config or {})}
        self.analyzer = Analyzer(language=cfg["language"], stopwords=cfg["stopwords"])
        self.bm25 = BM25Index(k1=cfg["k1"], b=cfg["b"], field_weights=cfg["field_weights"],
                              default_field_weight=cfg["default_field_weight"])
        self.keys = KeyIndex(stopwords=self.analyzer.stopwords)

    def apply(self, rows: Iterable[KeywordRow]) -> None:
        """Index ``rows`` (replacing same ids)."""
        for row in rows:
            terms = {name: self.analyzer.terms(text) for name, text in row.fields.items()}
            if any(terms.values()):
                self.bm25.upsert(row.id, terms, namespace=row.namespace)
            else:
                self.bm25.remove(row.id)
            self.keys.upsert(row.id, row.key, namespace=row.namespace)

    def search_keyword(self, query: str, *, namespace_prefix: Namespace = (),
                       limit: int | None = None) -> list[tuple[str, float]]:
        """BM25 ranking under ``namespace_prefix``: ``(id, score)`` best first."""
        hits = self.bm25.search(self.analyzer.query_terms(query),
                                namespace_prefix=namespace_prefix, limit=limit)
        return [(h.id, h.score) for h in hits]

    def search_key(self, query: str, *, namespace_prefix: Namespace = (),
                   limit: int | None = None) -> list[tuple[str, float]]:
        """Exact-key ranking under ``namespace_prefix``: ``(id, score)`` best first."""
        return self.keys.search(query, namespace_prefix=namespace_prefix, limit=limit)
