"""Reading a document (text, Markdown, PDF) and cutting its text into passages (pure: no
store, only the file read at the edge).

``read_source`` decides what it was given: a ``Path`` is a file; a ``str`` is a file when it
is one line naming an existing file, else it is the text itself; ``bytes`` are a file's
content (a PDF when they start with ``%PDF-``, else UTF-8 text). PDFs are read with
``pypdf`` (text pages only: a scanned PDF without a text layer is refused).
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langmem_edge.errors import InvalidInputError, LimitExceededError
from langmem_edge.memory.documents.records import (
    CHUNK_CHARS,
    CHUNK_MIN_CHARS,
    CHUNK_OVERLAP_CHARS,
    DOCUMENT_FORMATS,
    MAX_DOCUMENT_CHARS,
    MAX_DOCUMENT_NAME_CHARS,
    DocumentFormat,
)

__all__ = ["Source", "chunk_text", "read_source"]

MAX_PATH_CHARS = 4_096
"""Longest ``str`` taken for a file path (longer ones are text)."""
NAME_WORDS = 8
"""Words of the text a document without a name or file is named after."""
PDF_MAGIC = b"%PDF-"
"""How a PDF's bytes start."""
MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdown")
"""File suffixes read as Markdown."""
BREAKS = ("\n\n", "\n", ". ", "? ", "! ", "; ", " ")
"""Where a passage prefers to end, best first."""


@dataclass(frozen=True)
class Source:
    """A document's text, read: what ``documents.add`` stores."""

    text: str
    format: DocumentFormat
    name: str
    path: str | None


def _is_path(value: str) -> bool:
    if "\n" in value or len(value) > MAX_PATH_CHARS or not value.strip():
        return False
    try:
        return Path(value).expanduser().is_file()
    except OSError:
        return False


def _pdf_text(data: bytes, what: str) -> str:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
    except (PyPdfError, ValueError, KeyError, TypeError) as e:
        raise InvalidInputError(f"{what} is not a readable PDF ({type(e).__name__}: {e})") from e
    return "\n\n".join(p for p in pages if p)


def _decode(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InvalidInputError(f"{what} is neither a PDF nor UTF-8 text ({e}); documents are "
                                "text, Markdown or PDF") from e


def _clean(text: str) -> str:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip()


def _name_of(text: str) -> str:
    words = text.split()[:NAME_WORDS]
    return " ".join(words)[:MAX_DOCUMENT_NAME_CHARS] or "document"


def read_source(source: Any, *, name: str | None = None,
                format: DocumentFormat | None = None) -> Source:
    """The text of ``source`` (a path, a text, or a file's bytes), checked.

    Raises:
        InvalidInputError: not text, Markdown or a readable PDF; no text in it; a bad name
            or format.
        LimitExceededError: over :data:`MAX_DOCUMENT_CHARS` or :data:`MAX_DOCUMENT_NAME_CHARS`.
        NotFoundError-like ``InvalidInputError``: a ``Path`` that is not a file.
    """
    if format is not None and format not in DOCUMENT_FORMATS:
        raise InvalidInputError(f"format must be one of {', '.join(DOCUMENT_FORMATS)}, got "
                                f"{format!r}")
    path: Path | None = None
    if isinstance(source, os.PathLike) or (isinstance(source, str) and _is_path(source)):
        path = Path(source).expanduser()
        if not path.is_file():
            raise InvalidInputError(f"{os.fspath(path)!r} is not a file")
        data: bytes | None = path.read_bytes()
        what = repr(os.fspath(path))
    elif isinstance(source, bytes | bytearray):
        data, what = bytes(source), "the bytes given"
    elif isinstance(source, str):
        data, what = None, "the text given"
    else:
        raise InvalidInputError(f"a document is a path, a text or bytes, got "
                                f"{type(source).__name__}")
    fmt: DocumentFormat
    if data is not None and (format == "pdf" or (format is None and data.startswith(PDF_MAGIC))):
        text, fmt = _pdf_text(data, what), "pdf"
    else:
        text = _decode(data, what) if data is not None else str(source)
        suffix = path.suffix.lower() if path is not None else ""
        fmt = format or ("markdown" if suffix in MARKDOWN_SUFFIXES else "text")
    text = _clean(text)
    if not text:
        hint = " (a scanned PDF needs OCR first)" if fmt == "pdf" else ""
        raise InvalidInputError(f"{what} holds no text{hint}")
    if len(text) > MAX_DOCUMENT_CHARS:
        raise LimitExceededError(f"{what} has {len(text):,} characters of text; a document "
                                 f"holds at most {MAX_DOCUMENT_CHARS:,}")
    if name is not None:
        if not isinstance(name, str) or not name.strip():
            raise InvalidInputError("name must be a non-empty string")
        if len(name) > MAX_DOCUMENT_NAME_CHARS:
            raise LimitExceededError(f"name has {len(name)} characters; at most "
                                     f"{MAX_DOCUMENT_NAME_CHARS}")
    shown = name.strip() if name else (path.name if path is not None else _name_of(text))
    return Source(text=text, format=fmt, name=shown[:MAX_DOCUMENT_NAME_CHARS],
                  path=os.fspath(path.absolute()) if path is not None else None)


def _end(text: str, start: int, size: int) -> int:
    hard = min(len(text), start + size)
    if hard == len(text):
        return hard
    window = text[start + min(CHUNK_MIN_CHARS, size // 2): hard]
    for sep in BREAKS:
        at = window.rfind(sep)
        if at >= 0:
            return hard - len(window) + at + len(sep)
    return hard


def chunk_text(text: str, *, size: int = CHUNK_CHARS,
               overlap: int = CHUNK_OVERLAP_CHARS) -> list[str]:
    """``text`` as passages of at most ``size`` characters, each ending at the best break
    (paragraph, line, sentence, word) past :data:`CHUNK_MIN_CHARS`, each starting at a word
    about ``overlap`` characters before the previous one ended."""
    if size < 1 or not 0 <= overlap < size:
        raise InvalidInputError(f"chunk size must be >= 1 and overlap in [0, size), got "
                                f"size={size}, overlap={overlap}")
    out: list[str] = []
    start = 0
    while start < len(text):
        end = _end(text, start, size)
        piece = text[start:end].strip()
        if piece:
            out.append(piece)
        if end >= len(text):
            break
        nxt = max(end - overlap, start + 1)
        space = text.find(" ", nxt, end)  # start the overlap at a word
        start = space + 1 if 0 <= space < end - 1 and overlap else nxt
    return out
