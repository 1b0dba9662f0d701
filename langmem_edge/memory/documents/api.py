"""``profile.documents``: a profile's documents (the "brain files").

::

    doc = alice.documents.add("notes/handbook.pdf")        # Document(status="processing")
    alice.documents.get(doc.id, wait=True).status          # "ready" (or "failed" + error)
    alice.documents.search("vacation policy", limit=3)     # [DocumentPassage, ...]
    alice.documents.list()                                 # DocumentPage
    alice.documents.delete(doc.id)                         # True

Every method has an async twin; both run one plan of
:mod:`~langmem_edge.memory.documents.plans`. ``documents.add`` stores the text and returns at
once; the chunking and embedding run on the memory's
:class:`~langmem_edge.memory.documents.worker.DocumentWorker` (``wait=True``: in the call).
"""

from __future__ import annotations

import asyncio
import builtins
from typing import Any

from langgraph.store.base import BaseStore

from langmem_edge.memory.core.layout import ProfileLayout
from langmem_edge.memory.core.plans import Plan, planned, run_async, run_sync
from langmem_edge.memory.core.validate import check_metadata, check_optional_name
from langmem_edge.memory.documents.plans import (
    DocumentScope,
    plan_delete,
    plan_delete_session,
    plan_get,
    plan_list,
    plan_process,
    plan_search,
    plan_store,
)
from langmem_edge.memory.documents.reading import read_source
from langmem_edge.memory.documents.records import (
    Document,
    DocumentFormat,
    DocumentPage,
    DocumentPassage,
    document_id,
)
from langmem_edge.memory.documents.worker import DocumentWorker

__all__ = ["MAX_DOCUMENT_METADATA_BYTES", "ProfileDocuments"]

MAX_DOCUMENT_METADATA_BYTES = 16_384
"""Largest ``metadata`` of a document, as JSON."""
MAX_SESSION_CHARS = 200
"""Longest session id a document may name."""


class ProfileDocuments:
    """The documents of one profile (get it with ``profile.documents``)."""

    def __init__(self, store: BaseStore, layout: ProfileLayout, *, has_vectors: bool,
                 page: int, worker: DocumentWorker) -> None:
        self._scope = DocumentScope(store=store, layout=layout, has_vectors=has_vectors,
                                    page=page)
        self._worker = worker

    def __repr__(self) -> str:
        return f"ProfileDocuments({self._scope.layout.profile!r})"

    # -- adding ------------------------------------------------------------------------------

    def _store_plan(self, source: Any, name: str | None, format: DocumentFormat | None,
                    session_id: str | None, metadata: dict[str, Any] | None
                    ) -> Plan[tuple[Document, bool]]:
        src = read_source(source, name=name, format=format)
        sid = check_optional_name(session_id, "session_id", MAX_SESSION_CHARS)
        meta = check_metadata(metadata, MAX_DOCUMENT_METADATA_BYTES)
        busy = self._worker.pending(self._scope.layout.root, document_id(src.text)) is not None
        return (yield from plan_store(self._scope, src, session_id=sid, metadata=meta,
                                      busy=busy))

    def _background(self, doc: Document) -> None:
        scope = self._scope
        self._worker.submit(scope.layout.root, doc.id,
                            lambda: run_sync(plan_process(scope, doc.id)))

    def add(self, source: Any, *, name: str | None = None,
            format: DocumentFormat | None = None, session_id: str | None = None,
            metadata: dict[str, Any] | None = None, wait: bool = False) -> Document:
        """Store a document (a path, a text, or a file's bytes: text, Markdown or PDF) and
        have it chunked and embedded; returns its record.

        The same content again returns the document already stored (its id is a hash of the
        text); a ``failed`` one is processed again. Without ``wait`` the record is
        ``processing`` and the work runs in the background (``get(id, wait=True)`` waits for
        it); with ``wait`` it runs in the call and the record returned is ``ready`` or
        ``failed`` (with the error).

        Args:
            source: A ``Path``, a one-line ``str`` naming an existing file, the text itself,
                or a file's bytes.
            name: Its name (default the file's name, else the text's first words).
            format: ``text``, ``markdown`` or ``pdf`` (default by suffix and content).
            session_id: The session it belongs to: ``delete_session`` deletes it too.
            metadata: JSON-serialisable extras (at most 16 KB).
            wait: Process it in the call instead of the background.
        """
        doc, todo = run_sync(self._store_plan(source, name, format, session_id, metadata))
        if not todo:
            return doc
        if wait:
            return run_sync(plan_process(self._scope, doc.id)) or doc
        self._background(doc)
        return doc

    async def aadd(self, source: Any, *, name: str | None = None,
                   format: DocumentFormat | None = None, session_id: str | None = None,
                   metadata: dict[str, Any] | None = None, wait: bool = False) -> Document:
        """Async :meth:`add` (the background work runs on the same worker thread)."""
        doc, todo = await run_async(self._store_plan(source, name, format, session_id,
                                                     metadata))
        if not todo:
            return doc
        if wait:
            return (await run_async(plan_process(self._scope, doc.id))) or doc
        self._background(doc)
        return doc

    # -- reading -----------------------------------------------------------------------------

    def get(self, document_id: str, *, wait: bool = False,
            timeout: float | None = None) -> Document | None:
        """The document's record (its status), or ``None``. ``wait``: first wait (at most
        ``timeout`` seconds) for its background processing in this process."""
        if wait:
            self._worker.wait(self._scope.layout.root, document_id, timeout)
        return run_sync(plan_get(self._scope, document_id))

    async def aget(self, document_id: str, *, wait: bool = False,
                   timeout: float | None = None) -> Document | None:
        """Async :meth:`get` (waiting in a thread)."""
        if wait:
            await asyncio.to_thread(self._worker.wait, self._scope.layout.root, document_id,
                                    timeout)
        return await run_async(plan_get(self._scope, document_id))

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for this profile's documents processing in the background; ``False`` if
        some still run after ``timeout`` seconds."""
        return self._worker.wait(self._scope.layout.root, None, timeout)

    @planned
    def list(self, *, limit: int | None = None, cursor: str | None = None) -> Plan[DocumentPage]:
        """A page of documents (any status), oldest first: at most ``limit`` (default 50,
        at most 500); pass ``next_cursor`` back as ``cursor`` for the next page."""
        return plan_list(self._scope, limit=limit, cursor=cursor)

    alist = list.twin

    @planned
    def search(self, query: str, *, limit: int | None = None
               ) -> Plan[builtins.list[DocumentPassage]]:
        """Passages of ready documents best matching ``query`` (at most ``limit``, default
        5, at most 100), best first: by vector on a store with an index, else by BM25."""
        return plan_search(self._scope, query, limit=limit)

    asearch = search.twin

    # -- deleting ----------------------------------------------------------------------------

    @planned
    def delete(self, document_id: str) -> Plan[bool]:
        """Delete a document: its text, record and passages; ``False`` if there was none."""
        return plan_delete(self._scope, document_id)

    adelete = delete.twin

    @planned
    def delete_session(self, session_id: str) -> Plan[int]:
        """Delete the documents added with ``session_id``; returns how many."""
        return plan_delete_session(self._scope, session_id)

    adelete_session = delete_session.twin
