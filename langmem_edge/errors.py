"""Errors raised by langmem_edge.

Every error carries a stable ``code`` a caller can branch on, and a message to log.

Error tree::

    LangmemEdgeError                      code
    ├── ConfigurationError (ValueError)   "configuration"   bad constructor/config options
    │   └── UnsupportedDurabilityError    "unsupported_durability"  a run that cannot be resumed
    ├── InvalidInputError (ValueError)    "invalid_input"   bad argument to a call
    │   ├── InvalidNamespaceError         "invalid_namespace"  a bad namespace label (also
    │   │                                                   langgraph's InvalidNamespaceError)
    │   └── LimitExceededError            "limit_exceeded"  too large / too many; nothing written
    ├── NotFoundError (KeyError)          "not_found"       the thing asked for does not exist
    ├── BackendError                      "backend"         Chroma refused or failed the call
    │   └── BackendUnavailableError       "backend_unavailable"  transient failures outlived retries
    ├── EmbeddingError                    "embedding"       the embedding model failed
    ├── ExtractionError                   "extraction"      a chat model's extraction failed
    ├── TurnInProgressError               "turn_in_progress"  the thread's last turn still runs
    ├── BackgroundClosedError (RuntimeError) "closed"       a job submitted after close()
    └── DecryptionError                   "decryption"      wrong or missing encryption key

Chroma's own exceptions never leave the package raw: they are wrapped in
``BackendError`` (or ``BackendUnavailableError``) with ``raise ... from e``, so the original
stays on ``__cause__``.
"""

from __future__ import annotations

from langgraph.store.base import InvalidNamespaceError as _LanggraphInvalidNamespaceError

__all__ = [
    "BackendError",
    "BackgroundClosedError",
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
    "TurnInProgressError",
    "UnsupportedDurabilityError",
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


class UnsupportedDurabilityError(ConfigurationError):
    """A run asked for a durability mode turn resume cannot work with: ``durability="exit"``
    saves nothing until the run ends, so a crash leaves no checkpoint to resume from and no
    saved tool results. ``durability`` is the mode asked for."""

    code = "unsupported_durability"

    def __init__(self, message: str, *, durability: str) -> None:
        super().__init__(message)
        self.durability = durability


class InvalidInputError(LangmemEdgeError, ValueError):
    """An argument to a call is invalid (bad namespace, unserialisable value, ...)."""

    code = "invalid_input"


class InvalidNamespaceError(InvalidInputError, _LanggraphInvalidNamespaceError):
    """A namespace label is not allowed: empty, not a string, containing a period or NUL
    (langgraph's rules); AgentMemory's profile names and session ids also refuse control
    characters. Catchable as langgraph's ``InvalidNamespaceError`` too."""

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


class TurnInProgressError(LangmemEdgeError):
    """A request arrived on a thread whose last turn is still running: its turn record (or
    its last tool round) was touched within ``resume_after_seconds`` (45 s). Send the
    message again after ``retry_after`` seconds, or let the resume wait
    (``TurnResume(wait=True)``).

    Attributes: ``thread``; ``touched_at`` (epoch seconds of the last touch);
    ``retry_after`` (seconds until the turn counts as interrupted and is resumed).
    """

    code = "turn_in_progress"

    def __init__(self, message: str, *, thread: str, touched_at: float,
                 retry_after: float) -> None:
        super().__init__(message)
        self.thread = thread
        self.touched_at = touched_at
        self.retry_after = retry_after


class BackgroundClosedError(LangmemEdgeError, RuntimeError):
    """A job was submitted to a ``BackgroundExecutor`` (``langmem_edge.graphs``) after its
    ``close()``."""

    code = "closed"


class DecryptionError(LangmemEdgeError):
    """An encrypted memory could not be read: the key is missing or wrong."""

    code = "decryption"
