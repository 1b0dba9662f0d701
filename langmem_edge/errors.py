"""Errors raised by langmem_edge.

Every error carries a stable ``code`` a caller can branch on, and a message to log.

Error tree::

    LangmemEdgeError                      code
    ├── ConfigurationError (ValueError)   "configuration"   bad constructor/config options
    ├── InvalidInputError (ValueError)    "invalid_input"   bad argument to a call
    │   ├── InvalidNamespaceError         "invalid_namespace"  a bad namespace label (also
    │   │                                                   langgraph's InvalidNamespaceError)
    │   └── LimitExceededError            "limit_exceeded"  too large / too many; nothing written
    ├── NotFoundError (KeyError)          "not_found"       the thing asked for does not exist
    ├── BackendError                      "backend"         Chroma refused or failed the call
    │   └── BackendUnavailableError       "backend_unavailable"  transient failures outlived retries
    ├── EmbeddingError                    "embedding"       the embedding model failed
    ├── ExtractionError                   "extraction"      a chat model's extraction failed
    └── DecryptionError                   "decryption"      wrong or missing encryption key

Chroma's own exceptions never leave the package raw: they are wrapped in
``BackendError`` (or ``BackendUnavailableError``) with ``raise ... from e``, so the original
stays on ``__cause__``.
"""

from __future__ import annotations

from langgraph.store.base import InvalidNamespaceError as _LanggraphInvalidNamespaceError

__all__ = [
    "BackendError",
    "BackendUnavailableError",
    "ConfigurationError",
    "DecryptionError",
    "EmbeddingError",
    "ExtractionError",
    "InvalidInputError",
    "InvalidNamespaceError",
    "LangmemEdgeError",
    "LimitExceededError",
    "NotFoundError",
]


class LangmemEdgeError(Exception):
    """Base class of every error raised by langmem_edge."""

    code: str = "error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return self.message


class ConfigurationError(LangmemEdgeError, ValueError):
    """A constructor or config option is invalid."""

    code = "configuration"


class InvalidInputError(LangmemEdgeError, ValueError):
    """An argument to a call is invalid (bad namespace, unserialisable value, ...)."""

    code = "invalid_input"


class InvalidNamespaceError(InvalidInputError, _LanggraphInvalidNamespaceError):
    """A namespace label is not allowed: empty, not a string, containing a period (langgraph's
    rules) or a control character (U+0000-U+001F, U+007F: ours, so a stored path always
    decodes to exactly the labels written). Catchable as langgraph's
    ``InvalidNamespaceError`` too."""

    code = "invalid_namespace"


class LimitExceededError(InvalidInputError):
    """An input is over a documented limit (value size, batch size, ...). Nothing was written."""

    code = "limit_exceeded"


class NotFoundError(LangmemEdgeError, KeyError):
    """The requested item, memory, profile or thread does not exist."""

    code = "not_found"

    def __str__(self) -> str:  # KeyError would repr() the message
        return self.message


class BackendError(LangmemEdgeError):
    """Chroma refused or failed a call. The chromadb exception is ``__cause__``."""

    code = "backend"


class BackendUnavailableError(BackendError):
    """The Chroma server stayed unreachable (or kept failing) through every retry."""

    code = "backend_unavailable"


class EmbeddingError(LangmemEdgeError):
    """The embedding model failed or returned vectors of the wrong shape."""

    code = "embedding"


class ExtractionError(LangmemEdgeError):
    """A chat model's extraction or judgement failed after retries."""

    code = "extraction"


class DecryptionError(LangmemEdgeError):
    """An encrypted memory could not be read: the key is missing or wrong."""

    code = "decryption"
