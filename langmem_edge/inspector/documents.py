"""The documents page: a profile's documents with their status (``processing``, ``ready``,
``failed`` with the error), cursor-paged like memories, a search over the passages of ready
documents, and the delete action (a CSRF-checked POST)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse

from langmem_edge.inspector.actions import _checked_form, _params, _redirect
from langmem_edge.inspector.params import DEFAULT_PAGE, MAX_PAGE, integer, profile_of, require, text
from langmem_edge.inspector.rendering import render

__all__ = ["DEFAULT_PASSAGE_RESULTS", "delete_document", "documents"]

DEFAULT_PASSAGE_RESULTS = 10
"""Passages a documents search shows."""


async def documents(request: Request) -> HTMLResponse:
    """A profile's documents, oldest first, one cursor page at a time; with ``q``, the
    passages of ready documents that match it, best first."""
    prof = await profile_of(request)
    q = request.query_params
    limit = integer(q, "limit", DEFAULT_PAGE, low=1, high=MAX_PAGE)
    cursor = text(q, "cursor") or None
    query = text(q, "q")
    page = await prof.documents.alist(limit=limit, cursor=cursor)
    passages = (await prof.documents.asearch(query, limit=DEFAULT_PASSAGE_RESULTS)
                if query else [])
    return render(request, "documents.html", profile=prof.name, section="documents",
                  documents=page.documents, next_cursor=page.next_cursor, cursor=cursor,
                  limit=limit, query=query, passages=passages,
                  notice=text(q, "notice"))


async def delete_document(request: Request) -> RedirectResponse:
    """Delete a document: its text, status record and passages."""
    form, prof = await _checked_form(request)
    doc = require(_params(form), "id", "the document id")
    gone = await prof.documents.adelete(doc)
    notice = f"Deleted document {doc}." if gone else f"No document {doc} (already deleted?)."
    return _redirect("/documents", p=prof.name, notice=notice)
