"""Hybrid retrieval core: keyword (BM25) and exact-key channels, weighted RRF fusion.

Pure parts, no Chroma calls except in :mod:`.chroma_sync` (the thin reader of the change
protocol):

- :mod:`.text`: the analyser (tokenise, normalise, stopwords, Snowball stemming).
- :mod:`.bm25`: an updatable BM25 inverted index with field weights and namespace-scoped
  statistics.
- :mod:`.keys`: the exact-key channel (key segments split on ``. : / _ -``).
- :mod:`.fusion`: weighted reciprocal rank fusion with a per-channel explanation.
- :mod:`.config`: every default (weights vector 1, keyword 1, key 1.5; ``rrf_k`` 60; BM25
  ``k1`` 1.2, ``b`` 0.75) as TypedDicts, and :func:`resolve_hybrid_config`.
- :mod:`.index`: :class:`KeywordIndex`, the per-process cache kept exact by the change
  protocol; :mod:`.chroma_sync`: its Chroma source and the writer's side.
- :mod:`.hybrid`: fusing the channels with a resolved config.
- :mod:`.vectors`: cosine distance, for vectors scored in process.
- :mod:`.shape`: prose or paste: :func:`is_code_line` (a line of code, markup or log, never a
  fact) and :func:`recall_query` (a recall query made from a long message).

Design notes and measurements: ``docs/retrieval.md``.
"""

from __future__ import annotations

from langmem_edge.retrieval.bm25 import BM25Index, ScoredDoc
from langmem_edge.retrieval.chroma_sync import ChromaKeywordSource, SyncWriter, purge_sync_rows
from langmem_edge.retrieval.config import (
    CONVERSATION_HYBRID,
    DEFAULT_HYBRID_CONFIG,
    DEFAULT_KEYWORD_CONFIG,
    HybridConfig,
    KeywordConfig,
    resolve_hybrid_config,
)
from langmem_edge.retrieval.fusion import ChannelHit, FusedHit, rrf_fuse
from langmem_edge.retrieval.hybrid import active_channels, channel_depth, fuse
from langmem_edge.retrieval.index import (
    KeywordIndex,
    KeywordRow,
    KeywordSource,
    decode_document,
    encode_document,
)
from langmem_edge.retrieval.keys import KeyIndex, key_segments
from langmem_edge.retrieval.shape import is_code_line, recall_query
from langmem_edge.retrieval.text import Analyzer

__all__ = [
    "CONVERSATION_HYBRID",
    "DEFAULT_HYBRID_CONFIG",
    "DEFAULT_KEYWORD_CONFIG",
    "Analyzer",
    "BM25Index",
    "ChannelHit",
    "ChromaKeywordSource",
    "FusedHit",
    "HybridConfig",
    "KeyIndex",
    "KeywordConfig",
    "KeywordIndex",
    "KeywordRow",
    "KeywordSource",
    "ScoredDoc",
    "SyncWriter",
    "active_channels",
    "channel_depth",
    "decode_document",
    "encode_document",
    "fuse",
    "is_code_line",
    "key_segments",
    "purge_sync_rows",
    "recall_query",
    "resolve_hybrid_config",
    "rrf_fuse",
]
