"""The documents room's plans: store, process (chunk + embed), read, search, delete.

Everything goes through the ``BaseStore`` API in the profile's namespaces
(:mod:`~langmem_edge.memory.documents.records` draws them). Each plan is driven by
``run_sync`` or ``run_async`` (:mod:`~langmem_edge.memory.core.plans`).

**Nothing half-written.** A document's passages are searchable only while its record says
``ready``: :func:`plan_search` reads the records first and keeps passages of ready documents
only. Processing writes the chunks, then the ``ready`` record; if chunking or embedding
fails, the chunks written so far are deleted and the record says ``failed`` with the error,
so a failure never leaves a searchable passage.

**A delete is never undone by processing.** :func:`plan_delete` removes the text first, then
the record, then the chunks. Processing writes its final record and then checks that the
text is still there; if it is gone, a delete ran meanwhile, and processing deletes the record
and chunks itself. Either the delete's record removal comes after the final write, or
processing sees the text gone.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langgraph.store.base import BaseStore, GetOp, Item, PutOp, SearchOp

from langmem_edge.errors import InvalidInputError, LimitExceededError
from langmem_edge.memory.core.labels import plan_delete_prefix
from langmem_edge.memory.core.layout import ProfileLayout
from langmem_edge.memory.core.plans import Plan, batch
from langmem_edge.memory.documents.reading import Source, chunk_text
from langmem_edge.memory.documents.records import (
    TEXT_PART_CHARS,
    Document,
    DocumentPage,
    DocumentPassage,
    content_hash,
    document_id,
)
from langmem_edge.memory.records import utcnow
from langmem_edge.retrieval.bm25 import rank_fields
from langmem_edge.retrieval.text import default_analyzer

__all__ = [
    "DEFAULT_DOCUMENT_PAGE",
    "DEFAULT_PASSAGES",
    "DocumentScope",
    "MAX_DOCUMENT_PAGE",
    "MAX_PASSAGES",
    "STALE_PROCESSING_SECONDS",
    "plan_delete",
    "plan_delete_session",
    "plan_get",
    "plan_list",
    "plan_process",
    "plan_restore",
    "plan_search",
    "plan_store",
]

logger = logging.getLogger(__name__)

DEFAULT_PASSAGES = 5
"""Passages ``documents.search`` returns without a ``limit``."""
MAX_PASSAGES = 100
"""Most passages one ``documents.search`` returns."""
DEFAULT_DOCUMENT_PAGE = 50
"""Documents on a page of ``documents.list`` without a ``limit``."""
MAX_DOCUMENT_PAGE = 500
"""Most documents on one page of ``documents.list``."""
CHUNK_BATCH = 64
"""Passages written (and embedded) per store batch."""
SEARCH_OVERFETCH = 4
"""Passages asked of the store per passage wanted, before non-ready ones are dropped."""
SEARCH_FETCH_CAP = 2_000
"""Most passages one vector search asks of the store."""
MIN_CHUNK_STEP = 100
"""Characters a passage advances at least (an upper bound on the passages of a text, used
to over-fetch past the chunks of documents still processing)."""
STALE_PROCESSING_SECONDS = 600
"""A ``processing`` record untouched this long, with no job in this process, was left by a
process that died: adding the same content again starts it over."""
READ_LIMIT = 100_000_000
"""``limit`` of the one search that reads every record (or every part of a text)."""
MAX_ERROR_CHARS = 2_000
"""Longest error message a ``failed`` record keeps."""


@dataclass(frozen=True)
class DocumentScope:
    """What the documents plans need about one profile."""

    store: BaseStore
    layout: ProfileLayout
    has_vectors: bool
    """The store embeds ``text`` (an index config): passages get vectors."""
    page: int
    """Items per page when deleting by prefix."""

    @property
    def records(self) -> tuple[str, ...]:
        """The namespace of the status records."""
        return self.layout.documents("records")

    def texts(self, doc_id: str) -> tuple[str, ...]:
        """The namespace of one document's text parts."""
        return self.layout.documents("texts", doc_id)

    def chunks(self, doc_id: str | None = None) -> tuple[str, ...]:
        """The namespace of one document's passages (of every document without an id)."""
        return self.layout.documents("chunks", doc_id)


def _document(scope: DocumentScope, item: Item | None) -> Document | None:
    if item is None or item.value.get("profile") != scope.layout.profile:
        return None  # isolation: a value of another profile is never returned
    return Document.model_validate(item.value)


def _value(doc: Document) -> dict[str, Any]:
    return doc.model_dump(mode="json")


def plan_get(scope: DocumentScope, doc_id: str) -> Plan[Document | None]:
    """Plan: the document ``doc_id`` of this profile (any status), or ``None``."""
    if not isinstance(doc_id, str) or not doc_id:
        raise InvalidInputError("document id must be a non-empty string")
    (item,) = yield batch(scope.store, [GetOp(scope.records, doc_id)])
    return _document(scope, item)


def _plan_all(scope: DocumentScope) -> Plan[list[Document]]:
    (items,) = yield batch(scope.store, [SearchOp(scope.records, limit=READ_LIMIT)])
    docs = [_document(scope, it) for it in items if tuple(it.namespace) == scope.records]
    return sorted((d for d in docs if d is not None), key=lambda d: (d.created_at, d.id))


def plan_store(scope: DocumentScope, source: Source, *, session_id: str | None,
               metadata: dict[str, Any], busy: bool,
               created_at: datetime | None = None) -> Plan[tuple[Document, bool]]:
    """Plan: store the text and a ``processing`` record; returns the document and whether
    it needs processing. The same content already stored (ready, or processing in a live
    job: ``busy``, or recently) is returned as it is; a failed or stale one starts over."""
    doc_id = document_id(source.text)
    (item,) = yield batch(scope.store, [GetOp(scope.records, doc_id)])
    existing = _document(scope, item)
    now = utcnow()
    if existing is not None:
        age = (now - existing.updated_at).total_seconds()
        stale = existing.status == "processing" and not busy and age > STALE_PROCESSING_SECONDS
        if existing.status == "ready" or (existing.status == "processing" and not stale):
            return existing, False
    text = source.text
    parts = [text[lo: lo + TEXT_PART_CHARS] for lo in range(0, len(text), TEXT_PART_CHARS)]
    ns = scope.texts(doc_id)
    profile = scope.layout.profile
    yield batch(scope.store, [
        PutOp(ns, f"{n:06d}", {"profile": profile, "document_id": doc_id, "part": n,
                               "text": part}, index=False)
        for n, part in enumerate(parts)])
    first = existing.created_at if existing is not None else (created_at or now)
    doc = Document(id=doc_id, profile=profile, name=source.name, status="processing",
                   format=source.format, content_hash=content_hash(text), chars=len(text),
                   source=source.path, session_id=session_id, metadata=metadata,
                   created_at=first, updated_at=now)
    yield batch(scope.store, [PutOp(scope.records, doc_id, _value(doc), index=False)])
    return doc, True


def _plan_text(scope: DocumentScope, doc_id: str) -> Plan[tuple[Document | None, str | None]]:
    got, parts = yield batch(scope.store, [GetOp(scope.records, doc_id),
                                           SearchOp(scope.texts(doc_id), limit=READ_LIMIT)])
    doc = _document(scope, got)
    mine = sorted((it for it in parts if tuple(it.namespace) == scope.texts(doc_id)
                   and it.value.get("profile") == scope.layout.profile),
                  key=lambda it: it.key)
    text = "".join(str(it.value.get("text", "")) for it in mine) if mine else None
    return doc, text


def _plan_settle(scope: DocumentScope, doc: Document) -> Plan[Document | None]:
    """Write the final record, then make sure no delete ran meanwhile (module docstring)."""
    yield batch(scope.store, [PutOp(scope.records, doc.id, _value(doc), index=False)])
    (alive,) = yield batch(scope.store, [GetOp(scope.texts(doc.id), f"{0:06d}")])
    if alive is None:
        yield batch(scope.store, [PutOp(scope.records, doc.id, None)])
        yield from plan_delete_prefix(scope.store, scope.chunks(doc.id), page=scope.page)
        return None
    return doc


def plan_process(scope: DocumentScope, doc_id: str) -> Plan[Document | None]:
    """Plan: cut the document into passages and write them (the store embeds them), then
    mark it ``ready``; on a failure delete the passages written and mark it ``failed`` with
    the error. ``None`` when the document was deleted meanwhile."""
    doc, text = yield from _plan_text(scope, doc_id)
    if doc is None or text is None:
        yield from plan_delete_prefix(scope.store, scope.chunks(doc_id), page=scope.page)
        return None
    ns = scope.chunks(doc_id)
    index: Any = ["text"] if scope.has_vectors else False
    try:
        yield from plan_delete_prefix(scope.store, ns, page=scope.page)  # an earlier try's
        pieces = chunk_text(text)
        for lo in range(0, len(pieces), CHUNK_BATCH):
            yield batch(scope.store, [
                PutOp(ns, f"{n:06d}", {"profile": scope.layout.profile, "document_id": doc_id,
                                       "name": doc.name, "chunk": n, "text": piece},
                      index=index)
                for n, piece in enumerate(pieces[lo: lo + CHUNK_BATCH], start=lo)])
    except Exception as e:
        logger.warning("processing document %s of %r failed: %s", doc_id,
                       scope.layout.profile, e)
        try:
            yield from plan_delete_prefix(scope.store, ns, page=scope.page)
        except Exception as cleanup:  # unsearchable anyway: the record says failed
            logger.warning("removing the passages of failed document %s failed: %s",
                           doc_id, cleanup)
        message = f"{type(e).__name__}: {e}"[:MAX_ERROR_CHARS]
        failed = doc.model_copy(update={"status": "failed", "error": message, "chunks": 0,
                                        "updated_at": utcnow()})
        return (yield from _plan_settle(scope, failed))
    ready = doc.model_copy(update={"status": "ready", "error": None, "chunks": len(pieces),
                                   "updated_at": utcnow()})
    return (yield from _plan_settle(scope, ready))


def _check_limit(limit: int | None, default: int, most: int, name: str) -> int:
    if limit is None:
        return default
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidInputError(f"{name} must be a positive integer, got {limit!r}")
    if limit > most:
        raise LimitExceededError(f"{name} is {limit}; at most {most}")
    return limit


def _cursor(doc: Document) -> str:
    return f"{doc.created_at.isoformat()}|{doc.id}"


def plan_list(scope: DocumentScope, *, limit: int | None, cursor: str | None
              ) -> Plan[DocumentPage]:
    """Plan: a page of documents, oldest first (ties by id); ``cursor`` is the
    ``next_cursor`` of the page before (where it ended: a deleted document's place still
    works)."""
    size = _check_limit(limit, DEFAULT_DOCUMENT_PAGE, MAX_DOCUMENT_PAGE, "limit")
    after: tuple[datetime, str] | None = None
    if cursor is not None:
        stamp, _, last = str(cursor).rpartition("|")
        try:
            after = (datetime.fromisoformat(stamp), last)
        except ValueError as e:
            raise InvalidInputError(f"cursor {cursor!r} is not a next_cursor of "
                                    "documents.list") from e
    docs = yield from _plan_all(scope)
    if after is not None:
        docs = [d for d in docs if (d.created_at, d.id) > after]
    page = docs[:size]
    more = len(docs) > size
    return DocumentPage(documents=page, next_cursor=_cursor(page[-1]) if more else None)


def plan_search(scope: DocumentScope, query: str, *, limit: int | None
                ) -> Plan[list[DocumentPassage]]:
    """Plan: the passages of ready documents best matching ``query``: by vector on a store
    with an index, else by BM25 over the ready documents' passages."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInputError("query must be a non-empty string")
    want = _check_limit(limit, DEFAULT_PASSAGES, MAX_PASSAGES, "limit")
    docs = yield from _plan_all(scope)
    ready = {d.id: d for d in docs if d.status == "ready"}
    if not ready:
        return []
    if scope.has_vectors:
        unready = sum(d.chars // MIN_CHUNK_STEP + 1 for d in docs if d.status != "ready")
        fetch = min(SEARCH_FETCH_CAP, want * SEARCH_OVERFETCH + unready)
        (items,) = yield batch(scope.store, [SearchOp(scope.chunks(), query=query,
                                                      limit=fetch)])
        hits = [(it, it.score) for it in items]
    else:
        hits = yield from _plan_keyword(scope, list(ready), query)
    out: list[DocumentPassage] = []
    for it, score in hits:
        v = it.value
        doc = ready.get(str(v.get("document_id")))
        if doc is None or v.get("profile") != scope.layout.profile \
                or tuple(it.namespace) != scope.chunks(doc.id):
            continue
        out.append(DocumentPassage(document_id=doc.id, name=doc.name, chunk=int(v["chunk"]),
                                   text=str(v["text"]), score=score))
        if len(out) == want:
            break
    return out


def _plan_keyword(scope: DocumentScope, ids: Sequence[str], query: str
                  ) -> Plan[list[tuple[Item, float | None]]]:
    found = yield batch(scope.store, [SearchOp(scope.chunks(i), limit=READ_LIMIT)
                                      for i in ids])
    analyzer = default_analyzer()
    by_key = {f"{it.value.get('document_id')}/{it.key}": it for items in found for it in items}
    ranked = rank_fields({key: {"text": analyzer.terms(str(it.value.get("text", "")))}
                          for key, it in by_key.items()}, analyzer.query_terms(query))
    return [(by_key[r.id], float(r.score)) for r in ranked]


def plan_delete(scope: DocumentScope, doc_id: str) -> Plan[bool]:
    """Plan: delete a document's text, record and passages; ``False`` if there was none."""
    doc = yield from plan_get(scope, doc_id)
    (part,) = yield batch(scope.store, [GetOp(scope.texts(doc_id), f"{0:06d}")])
    if doc is None and part is None:
        return False
    yield from plan_delete_prefix(scope.store, scope.texts(doc_id), page=scope.page)
    yield batch(scope.store, [PutOp(scope.records, doc_id, None)])
    yield from plan_delete_prefix(scope.store, scope.chunks(doc_id), page=scope.page)
    return True


def plan_delete_session(scope: DocumentScope, session_id: str) -> Plan[int]:
    """Plan: delete the documents added with ``session_id``; returns how many."""
    docs = yield from _plan_all(scope)
    deleted = 0
    for d in docs:
        if d.session_id == session_id:
            deleted += bool((yield from plan_delete(scope, d.id)))
    return deleted


def plan_restore(scope: DocumentScope, value: dict[str, Any]) -> Plan[Document | None]:
    """Plan (import): a document record read from an export, whose text parts are already
    written: write it ``processing`` and process it again (the passages are not exported:
    they are cut and embedded again, so the same text gives the same passages)."""
    doc = Document.model_validate(value)
    restored = doc.model_copy(update={"profile": scope.layout.profile, "status": "processing",
                                      "error": None, "chunks": 0, "updated_at": utcnow()})
    yield batch(scope.store, [PutOp(scope.records, doc.id, _value(restored), index=False)])
    return (yield from plan_process(scope, doc.id))
