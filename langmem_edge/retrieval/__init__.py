"""Hybrid retrieval core: keyword (BM25) and exact-key channels, weighted RRF fusion.

Pure parts, no Chroma calls:

- :mod:`.text`: the analyser (tokenise, normalise, stopwords, Snowball stemming).
- :mod:`.bm25`: BM25 (with field weights) of the documents a caller read, per call.
- :mod:`.keys`: the exact-key channel (key segments split on ``. : / _ -``).
- :mod:`.fusion`: weighted reciprocal rank fusion with a per-channel explanation.
- :mod:`.config`: every default (weights vector 1, keyword 1, key 1.5; ``rrf_k`` 60; BM25
  ``k1`` 1.2, ``b`` 0.75) as TypedDicts, and :func:`resolve_hybrid_config`.
- :mod:`.keywords`: the keyword and key channels as fields of a store's rows (terms list,
  key segments, analysed document), the ``where`` that fetches a query's rows and the key
  ranking; the store runs the one ``get`` (:mod:`langmem_edge.store.keyword`).
- :mod:`.hybrid`: fusing the channels with a resolved config.
- :mod:`.vectors`: cosine distance, for vectors scored in process.
- :mod:`.shape`: prose or paste: :func:`is_code_line` (a line of code, markup or log, never a
  fact) and :func:`recall_query` (a recall query made from a long message).

The package exports the settings a ``ChromaStore`` takes (``hybrid=``); the parts above are
internal (import them from their modules). Design notes and measurements:
``docs/retrieval.md``.
"""

from __future__ import annotations

from langmem_edge.retrieval.config import CONVERSATION_HYBRID, HybridConfig, KeywordConfig

__all__ = ["CONVERSATION_HYBRID", "HybridConfig", "KeywordConfig"]
