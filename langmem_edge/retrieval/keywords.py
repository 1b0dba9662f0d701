"""The keyword and exact-key channels as rows of the database: pure functions, no I/O.

Each item row carries what the two channels need, so a search is one Chroma ``get`` and no
process keeps an index (``docs/architecture.md``, "ChromaStore"):

- **metadata** ``kt`` (:data:`TERMS_FIELD`): the *distinct* analysed terms of the item's
  indexed texts (:class:`~langmem_edge.retrieval.text.Analyzer`: tokens, stopwords, Snowball
  stems), at most :data:`MAX_ROW_TERMS`, first occurrence first; ``ky``
  (:data:`KEY_SEGMENTS_FIELD`): the key's segments
  (:func:`~langmem_edge.retrieval.keys.key_segments`); ``kl`` (:data:`LENGTH_FIELD`): the
  number of analysed terms (0: nothing to rank by BM25). Chroma stores lists and matches
  ``{"kt": {"$contains": term}}``; an empty list is refused, so a row without terms or
  segments has no such field.
- **document**: :func:`encode_keyword_document`: JSON ``{"f": {field: "t1 t2 t1 ..."},
  "k": [segments]}``, the analysed token stream of each indexed field (repeats kept: term
  frequencies and lengths come from it; fields are kept apart for the BM25F field weights)
  and the key's segments.

A search fetches every row of the scope holding a query term (``$or`` of ``$contains``,
:func:`match_where`), so document frequencies counted from the rows returned are exact, and
scores them with :func:`~langmem_edge.retrieval.bm25.rank_documents`.

**The cap.** An item with more than :data:`MAX_ROW_TERMS` distinct terms lists only its
first :data:`MAX_ROW_TERMS` in ``kt`` (its document keeps every token). A search that
fetches candidates by ``kt`` does not find it by a later term alone, and that term's document
frequency misses it; a search that reads the scope's documents whole (small scopes, the
store's ``KEYWORD_SCAN_ROWS``) sees every term.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langmem_edge.retrieval.keys import key_segments
from langmem_edge.retrieval.text import Analyzer

__all__ = [
    "KEY_SEGMENTS_FIELD",
    "LENGTH_FIELD",
    "MAX_ROW_TERMS",
    "TERMS_FIELD",
    "KeywordDocument",
    "decode_keyword_document",
    "encode_keyword_document",
    "keyword_fields",
    "keyword_metadata",
    "match_where",
    "rank_keys",
]

TERMS_FIELD = "kt"
"""Item-row metadata: the distinct analysed terms (a list of strings)."""

KEY_SEGMENTS_FIELD = "ky"
"""Item-row metadata: the key's segments (a list of strings), for the exact-key channel."""

LENGTH_FIELD = "kl"
"""Item-row metadata: how many analysed terms the indexed texts hold (an int; 0 for none)."""

MAX_ROW_TERMS = 1024
"""Most distinct terms listed in an item row's ``kt`` (the first ones in the text). Measured
on chromadb 1.5.9: a one-row upsert costs ~5 ms with 50 terms, 7 ms with 500 and 22 ms with
5,000; 1,024 covers a text of ~10,000 characters of prose."""


class KeywordDocument(dict[str, Any]):
    """A decoded keyword document: ``fields`` (``{field: [terms]}``) and ``segments``."""

    @property
    def fields(self) -> dict[str, list[str]]:
        """The analysed terms of each indexed field, in order, repeats kept."""
        return self.get("f", {})

    @property
    def segments(self) -> list[str]:
        """The key's segments."""
        return self.get("k", [])


def keyword_fields(
    texts: Mapping[str, str], key: str, analyzer: Analyzer
) -> tuple[str, dict[str, Any]]:
    """The document and the metadata fields (``kt``, ``ky``, ``kl``) of an item row whose
    indexed texts are ``texts`` (``{field: text}``) and whose key is ``key``."""
    fields = {name: analyzer.terms(text) for name, text in texts.items()}
    segments = key_segments(key)
    return encode_keyword_document(fields, segments), keyword_metadata(fields, segments)


def keyword_metadata(fields: Mapping[str, Sequence[str]], segments: Sequence[str]
                     ) -> dict[str, Any]:
    """The metadata fields (``kt``, ``ky``, ``kl``) of a row whose analysed fields and key
    segments are these (also of a decoded document: ``doc.fields``, ``doc.segments``)."""
    distinct = list(dict.fromkeys(t for terms in fields.values() for t in terms))
    meta: dict[str, Any] = {LENGTH_FIELD: sum(len(t) for t in fields.values())}
    if distinct:
        meta[TERMS_FIELD] = distinct[:MAX_ROW_TERMS]
    if segments:
        meta[KEY_SEGMENTS_FIELD] = list(segments)
    return meta


def encode_keyword_document(fields: Mapping[str, Sequence[str]], segments: Sequence[str]) -> str:
    """The row's document: ``{"f": {field: "t1 t2 ..."}, "k": [segments]}`` as JSON (terms
    never hold a space: the analyser splits on it)."""
    return json.dumps(
        {"f": {name: " ".join(terms) for name, terms in fields.items() if terms},
         "k": list(segments)},
        ensure_ascii=False, separators=(",", ":"),
    )


def decode_keyword_document(document: str | None) -> KeywordDocument:
    """Inverse of :func:`encode_keyword_document`; anything else decodes as empty."""
    if not document:
        return KeywordDocument()
    try:
        data = json.loads(document)
    except ValueError:
        return KeywordDocument()
    if not isinstance(data, dict) or not isinstance(data.get("f"), dict):
        return KeywordDocument()
    fields = {str(k): str(v).split() for k, v in data["f"].items()}
    segments = [str(s) for s in data.get("k") or []]
    return KeywordDocument(f=fields, k=segments)


def match_where(terms: Sequence[str], segments: Sequence[str] = ()) -> dict[str, Any] | None:
    """A ``where`` matching the rows that list one of ``terms`` in ``kt`` or one of
    ``segments`` in ``ky`` (one clause alone: no ``$or``); None when both are empty."""
    clauses = [{TERMS_FIELD: {"$contains": t}} for t in dict.fromkeys(terms)]
    clauses += [{KEY_SEGMENTS_FIELD: {"$contains": s}} for s in dict.fromkeys(segments)]
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$or": clauses}


def rank_keys(
    segments_by_id: Mapping[str, Sequence[str]], words: Sequence[str], *, limit: int | None = None
) -> list[tuple[str, float]]:
    """The exact-key channel over ``segments_by_id``: ``(id, matched + coverage)`` best first
    (ties by id)."""
    wanted = set(words)
    scored = []
    for doc_id, segs in segments_by_id.items():
        matched = len(wanted.intersection(segs))
        if matched:
            scored.append((matched + matched / len(set(segs)), doc_id))
    scored.sort(key=lambda sd: (-sd[0], sd[1]))
    if limit is not None:
        del scored[limit:]
    return [(d, s) for s, d in scored]
