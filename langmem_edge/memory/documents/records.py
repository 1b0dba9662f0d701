"""The documents room's data model and its numbers: a document, a passage, a page.

Where a document lives under the profile root ``R``
(:meth:`~langmem_edge.memory.core.layout.ProfileLayout.documents`)::

    (*R, "documents", "records")           key = document id   the status record
    (*R, "documents", "texts", doc id)     key = part number   the text, in parts
    (*R, "documents", "chunks", doc id)    key = chunk number  the embedded passages

A document's id is a hash of its text (:func:`document_id`), so adding the same content
again finds the record already there.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

__all__ = [
    "CHUNK_CHARS",
    "CHUNK_OVERLAP_CHARS",
    "DOCUMENT_FORMATS",
    "DOCUMENT_STATUSES",
    "Document",
    "DocumentFormat",
    "DocumentPage",
    "DocumentPassage",
    "DocumentStatus",
    "MAX_DOCUMENT_CHARS",
    "MAX_DOCUMENT_NAME_CHARS",
    "document_id",
]

DocumentStatus = Literal["processing", "ready", "failed"]
"""``processing`` (stored, chunks being embedded), ``ready`` (searchable) or ``failed``."""
DOCUMENT_STATUSES: tuple[str, ...] = ("processing", "ready", "failed")
"""Every status a document may have."""

DocumentFormat = Literal["text", "markdown", "pdf"]
"""How the document's text was read."""
DOCUMENT_FORMATS: tuple[str, ...] = ("text", "markdown", "pdf")
"""Every format :func:`~langmem_edge.memory.documents.reading.read_source` reads."""

CHUNK_CHARS = 1_200
"""Characters of one passage (about 340 tokens of English at 3.5 characters a token, well
inside the 256-word-piece window of the default embedding model's useful range)."""
CHUNK_OVERLAP_CHARS = 200
"""Characters a passage repeats from the end of the one before it, so a sentence cut at a
boundary is whole in one of them."""
CHUNK_MIN_CHARS = 300
"""A passage ends at the last paragraph, line, sentence or word break after this many
characters (else it is cut at :data:`CHUNK_CHARS`)."""
MAX_DOCUMENT_CHARS = 5_000_000
"""Longest text a document may have (about 2,500 pages)."""
MAX_DOCUMENT_NAME_CHARS = 200
"""Longest document name."""
TEXT_PART_CHARS = 100_000
"""Characters of the text stored in one item (a store value stays small)."""
ID_PREFIX = "doc-"
"""Every document id starts with it."""
ID_HASH_CHARS = 32
"""Hex digits of the content hash a document id holds."""


def document_id(text: str) -> str:
    """The id of a document with this text: ``doc-`` and 32 hex digits of its SHA-256."""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return ID_PREFIX + digest[:ID_HASH_CHARS]


def content_hash(text: str) -> str:
    """The full SHA-256 of a text (hex), kept on the record."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Document(BaseModel):
    """A stored document and its status (the record, without its text)."""

    id: str
    """``doc-`` and 32 hex digits of its text's SHA-256."""
    profile: str
    """The profile it belongs to."""
    name: str
    """The name given, else the file's name, else the first words of the text."""
    status: DocumentStatus
    """processing, ready or failed."""
    error: str | None = None
    """Why processing failed (``failed`` only)."""
    format: DocumentFormat = "text"
    """How its text was read."""
    content_hash: str
    """SHA-256 of the text (hex)."""
    chars: int
    """Characters of the text."""
    chunks: int = 0
    """Passages embedded (``ready`` only)."""
    source: str | None = None
    """The path it was read from, if any."""
    session_id: str | None = None
    """The session it belongs to (deleted with it), if any."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """JSON-serialisable extras given at ``documents.add``."""
    created_at: datetime
    """When it was first added."""
    updated_at: datetime
    """When its status last changed."""


class DocumentPassage(BaseModel):
    """One passage of a ready document found by ``documents.search``."""

    document_id: str
    """The document's id."""
    name: str
    """The document's name."""
    chunk: int
    """The passage's number in the document, from 0."""
    text: str
    """The passage."""
    score: float | None = None
    """Cosine similarity to the query (vector stores) or BM25 score (stores without
    vectors); higher is better."""


class DocumentPage(BaseModel):
    """A page of documents (oldest first); iterate over it for the documents."""

    documents: list[Document] = Field(default_factory=list)
    """The documents of this page."""
    next_cursor: str | None = None
    """Pass it back as ``cursor`` for the next page; ``None`` on the last."""

    def __iter__(self) -> Iterator[Document]:  # type: ignore[override]
        return iter(self.documents)

    def __len__(self) -> int:
        return len(self.documents)
