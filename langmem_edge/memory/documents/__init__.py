"""The documents room: files a profile knows (text, Markdown, PDF), chunked, embedded and
searched as passages (``docs/documents.md``).

- :mod:`~langmem_edge.memory.documents.records`: ``Document``, ``DocumentPassage``,
  ``DocumentPage``, the sizes and where a document lives in the store;
- :mod:`~langmem_edge.memory.documents.reading`: reading a source, cutting passages (pure);
- :mod:`~langmem_edge.memory.documents.plans`: the plans (store, process, search, delete);
- :mod:`~langmem_edge.memory.documents.worker`: the background thread;
- :mod:`~langmem_edge.memory.documents.api`: ``ProfileDocuments`` (``profile.documents``).

A room at the tiers' level: it uses the ``BaseStore`` API, ``core`` and ``records`` only,
and no tier imports it (``profile.py`` composes it).
"""

from __future__ import annotations

from langmem_edge.memory.documents.api import ProfileDocuments
from langmem_edge.memory.documents.records import (
    CHUNK_CHARS,
    CHUNK_OVERLAP_CHARS,
    DOCUMENT_STATUSES,
    Document,
    DocumentPage,
    DocumentPassage,
)
from langmem_edge.memory.documents.worker import DocumentWorker

__all__ = [
    "CHUNK_CHARS",
    "CHUNK_OVERLAP_CHARS",
    "DOCUMENT_STATUSES",
    "Document",
    "DocumentPage",
    "DocumentPassage",
    "DocumentWorker",
    "ProfileDocuments",
]
