"""Chroma plumbing shared by the store and the checkpointer.

- Opening clients: :func:`open_persistent_client` (a folder) and :func:`open_http_client` (a
  ``chroma run`` server). Telemetry is off; Chroma's default embedding function is never
  attached (collections are opened with ``embedding_function=None`` and every write passes
  its own vectors).
- :class:`ChromaCaller`: runs a Chroma call, retries transient failures (connection refused,
  timeouts, HTTP 429/5xx) with tenacity, bounded, and turns every chromadb error into one of
  ours (:class:`~langmem_edge.errors.BackendError`, ``BackendUnavailableError``).
- :func:`open_collection`: get-or-create a collection whose metadata records the layout's
  schema version, refusing to open a collection written by a newer layout.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypedDict, TypeVar
from urllib.parse import urlparse

import httpx
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.config import Settings
from chromadb.errors import ChromaError
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from langmem_edge.errors import (
    BackendError,
    BackendUnavailableError,
    ConfigurationError,
    LangmemEdgeError,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")

SCHEMA_KEY = "langmem_edge:schema"
"""Collection-metadata key holding the layout's schema version."""


class RetryConfig(TypedDict, total=False):
    """How transient Chroma failures are retried.

    Attributes:
        attempts: Total tries of one call, first included. Default 4.
        initial_wait: Seconds before the first retry; doubles each time, with jitter. Default 0.1.
        max_wait: Longest wait between two tries, in seconds. Default 2.0.
    """

    attempts: int
    initial_wait: float
    max_wait: float


DEFAULT_RETRY: RetryConfig = {"attempts": 4, "initial_wait": 0.1, "max_wait": 2.0}


def _settings() -> Settings:
    return Settings(anonymized_telemetry=False, allow_reset=False)


def is_transient(exc: BaseException) -> bool:
    """Whether a failed Chroma call is worth retrying (network trouble, 429, 5xx)."""
    if isinstance(exc, (httpx.TransportError, ConnectionError, TimeoutError)):
        return True
    if isinstance(exc, ChromaError):
        try:
            status = int(exc.code())
        except Exception:  # pragma: no cover - defensive: third-party code() override
            return False
        return status == 429 or status >= 500
    if isinstance(exc, ValueError) and "Could not connect to a Chroma server" in str(exc):
        return True
    return False


class ChromaCaller:
    """Runs Chroma calls with bounded retries and error translation."""

    def __init__(self, retry: RetryConfig | None = None) -> None:
        cfg: dict[str, Any] = {**DEFAULT_RETRY, **(retry or {})}
        if int(cfg["attempts"]) < 1:
            raise ConfigurationError(f"retry.attempts must be >= 1, got {cfg['attempts']!r}")
        self.retry: RetryConfig = cfg  # type: ignore[assignment]

    def __call__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Call ``fn(*args, **kwargs)``, retrying transient failures, wrapping errors.

        Returns whatever ``fn`` returns, typed ``Any``: Chroma rows are plain dicts to us.
        """
        retrying = Retrying(
            stop=stop_after_attempt(self.retry["attempts"]),
            wait=wait_exponential_jitter(
                multiplier=self.retry["initial_wait"],
                max=self.retry["max_wait"],
                jitter=self.retry["initial_wait"],
            ),
            retry=retry_if_exception(is_transient),
            reraise=True,
        )
        try:
            return retrying(fn, *args, **kwargs)
        except LangmemEdgeError:
            raise
        except Exception as e:
            raise wrap_error(e, getattr(fn, "__name__", "call")) from e


def wrap_error(exc: BaseException, what: str) -> BackendError:
    """Our error for a chromadb (or transport) exception raised by ``what``."""
    if is_transient(exc):
        return BackendUnavailableError(
            f"Chroma is unavailable: {what} kept failing after retries "
            f"({type(exc).__name__}: {exc})"
        )
    return BackendError(f"Chroma {what} failed ({type(exc).__name__}: {exc})")


def open_persistent_client(path: str) -> ClientAPI:
    """A ``chromadb.PersistentClient`` on ``path`` (created if missing), telemetry off."""
    import chromadb

    try:
        return chromadb.PersistentClient(path=str(path), settings=_settings())
    except Exception as e:
        raise BackendError(f"Cannot open a Chroma folder at {path!r}: {e}") from e


def open_http_client(
    url: str,
    *,
    headers: dict[str, str] | None = None,
    retry: RetryConfig | None = None,
) -> ClientAPI:
    """A ``chromadb.HttpClient`` for a server at ``url`` (``http[s]://host[:port]``)."""
    import chromadb

    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConfigurationError(
            f"Expected a Chroma server URL like 'http://127.0.0.1:8000', got {url!r}"
        )
    ssl = parsed.scheme == "https"
    port = parsed.port or (443 if ssl else 8000)
    return ChromaCaller(retry)(
        chromadb.HttpClient,
        host=parsed.hostname,
        port=port,
        ssl=ssl,
        headers=headers,
        settings=_settings(),
    )


def open_collection(
    client: ClientAPI,
    name: str,
    *,
    schema_version: int,
    call: ChromaCaller,
    metadata: dict[str, Any] | None = None,
    reads_from: int | None = None,
) -> Collection:
    """Get or create ``name`` with cosine space and a schema version in its metadata.

    A collection of an older schema from ``reads_from`` on (default: only this one) is one
    this code reads as it is; its version is raised to ``schema_version``, so code that
    knows only the older layout refuses it from then on instead of misreading new rows.

    Raises:
        ConfigurationError: the collection was written by a newer layout than this code knows,
            or by one older than ``reads_from``.
    """
    meta = {"hnsw:space": "cosine", SCHEMA_KEY: schema_version, **(metadata or {})}
    collection = call(
        client.get_or_create_collection, name=name, metadata=meta, embedding_function=None
    )
    found = int((collection.metadata or {}).get(SCHEMA_KEY, schema_version))
    if found > schema_version:
        raise ConfigurationError(
            f"Collection {name!r} has layout schema {found}, newer than this version of "
            f"langmem_edge understands ({schema_version}); upgrade langmem_edge."
        )
    if found < schema_version:
        oldest = schema_version if reads_from is None else reads_from
        if found < oldest:
            raise ConfigurationError(
                f"Collection {name!r} has layout schema {found}; this version of langmem_edge "
                f"reads schemas {oldest} to {schema_version}."
            )
        kept = {
            k: v for k, v in (collection.metadata or {}).items() if not k.startswith("hnsw:")
        }
        # Chroma refuses a metadata update naming the distance function, even unchanged.
        call(collection.modify, metadata={**kept, SCHEMA_KEY: schema_version})
    return collection


def validate_collection_prefix(prefix: str) -> str:
    """Check a collection-name prefix: 3-40 chars of ``[a-zA-Z0-9._-]``, alphanumeric ends."""
    import re

    if not re.fullmatch(r"[a-zA-Z0-9][a-zA-Z0-9._-]{1,38}[a-zA-Z0-9]", prefix or ""):
        raise ConfigurationError(
            "collection prefix must be 3-40 characters of [a-zA-Z0-9._-], starting and "
            f"ending with a letter or digit; got {prefix!r}"
        )
    return prefix
