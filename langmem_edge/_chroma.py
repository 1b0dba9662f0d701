"""Chroma plumbing shared by the store and the checkpointer.

- Opening clients: :func:`open_persistent_client` (a folder) and :func:`open_http_client` (a
  ``chroma run`` server; the URL checked by :func:`parse_server_url`, then one heartbeat that
  refuses a URL answering as something other than Chroma). Telemetry is off; Chroma's
  default embedding function is never attached (collections are opened with
  ``embedding_function=None`` and every write passes its own vectors).
- :class:`ChromaCaller`: runs a Chroma call, retries transient failures (connection refused,
  timeouts, HTTP 429/5xx) with tenacity, bounded, and turns every chromadb error into one of
  ours (:class:`~langmem_edge.errors.BackendError`, ``BackendUnavailableError``).
- :func:`open_collection`: get-or-create a collection whose metadata records the layout's
  schema version, refusing to open a collection written by a newer layout.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, TypedDict, TypeVar
from urllib.parse import urlsplit

import httpx
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.config import Settings
from chromadb.errors import ChromaError
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from langmem_edge._options import check_keys
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

NS_SEP = "\x1f"
"""Separator of namespace labels in a joined path (:func:`join_labels`)."""

_NS_ESC = "\x1e"
_ENCODE = str.maketrans({_NS_ESC: _NS_ESC + "0", NS_SEP: _NS_ESC + "1"})
_DECODE = re.compile(_NS_ESC + "([01])")


def join_labels(labels: Iterable[str]) -> str:
    """One string for a namespace path, for Chroma's equality filters on metadata.

    Labels are joined with :data:`NS_SEP` (U+001F). A label may hold any character: U+001E
    and U+001F inside a label are escaped (as U+001E followed by ``0`` or ``1``), so the
    separator never occurs inside an encoded label and :func:`split_labels` gives back
    exactly the labels written (``("users", "alice\\n")`` never matches
    ``("users", "alice")``, and ``("users", "a\\x1fb")`` is one label, not two). A label
    without either character is stored as it is, so paths written before the escape read
    back unchanged.
    """
    return NS_SEP.join(label.translate(_ENCODE) for label in labels)


def split_labels(joined: str) -> tuple[str, ...]:
    """The labels of a path made by :func:`join_labels` (its inverse)."""
    return tuple(
        _DECODE.sub(lambda m: _NS_ESC if m[1] == "0" else NS_SEP, part)
        for part in joined.split(NS_SEP)
    )


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


SYNC_THRESHOLD = 100
"""Writes between two saves of a collection's vector index (Chroma's ``hnsw:sync_threshold``;
its default is 1,000). Until a save, Chroma's local and single-node modes reread every write
since the last one on each new write, so a write's cost climbs with that backlog: 1,000 makes
the average write about twice as dear as 100 (``benchmarks/sync_threshold.py``). A save writes
only the changed part of the index."""

DAMAGED_INDEX_SIGNS = ("Error deserializing pickle file", "EOF while parsing")
"""Text of the error Chroma 1.5 raises at every write once a collection's HNSW metadata file
(``index_metadata.pickle``) was cut short by a kill while Chroma saved it (seen in
``benchmarks/kill_probe.py --sync-threshold 10``): permanent, never worth a retry."""


def is_damaged_index(exc: BaseException) -> bool:
    """Whether ``exc`` says a collection's vector index files are damaged on disk."""
    text = str(exc)
    return any(sign in text for sign in DAMAGED_INDEX_SIGNS)


def is_transient(exc: BaseException) -> bool:
    """Whether a failed Chroma call is worth retrying (network trouble, 429, 5xx)."""
    if is_damaged_index(exc):
        return False
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
        check_keys("retry", retry, RetryConfig.__annotations__)
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
    if is_damaged_index(exc):
        return BackendError(
            f"Chroma {what} failed: the collection's vector index files on disk are damaged "
            "(a process was killed while Chroma was saving them). Its rows are intact in "
            "Chroma's SQLite file, but Chroma refuses writes to this collection until the "
            f"collection is rebuilt. ({type(exc).__name__}: {exc})"
        )
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


API_PATH = "/api/v2"
"""Where chromadb's HTTP client finds the API under a server URL (chromadb 1.x)."""

PROBE_TIMEOUT = 10.0
"""Seconds the heartbeat probe of :func:`open_http_client` waits for an answer."""


class ServerURL(NamedTuple):
    """A checked Chroma server URL (see :func:`parse_server_url`)."""

    scheme: str
    """``http`` or ``https``."""
    host: str
    """Host name or address, lower-cased (IPv6 without brackets)."""
    port: int
    """The port; default 8000 (Chroma's) for http, 443 for https."""
    path: str
    """The path prefix the server is mounted under, without a trailing ``/`` (``""``: none)."""

    @property
    def ssl(self) -> bool:
        """Whether the URL is https."""
        return self.scheme == "https"

    @property
    def base(self) -> str:
        """The URL with its port spelled out: what the chromadb client is given."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{self.path}"

    @property
    def api(self) -> str:
        """The API root chromadb's client calls (``base`` + ``/api/v2``)."""
        return self.base + API_PATH


_EXAMPLE = "'http://127.0.0.1:8000'"


def _redacted(url: str) -> str:
    """``url`` for an error message, with any ``user:password@`` replaced by ``***@``."""
    if "@" not in url:
        return url
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    netloc, slash, tail = rest.partition("/")
    return f"{scheme}://***@{netloc.rpartition('@')[2]}{slash}{tail}"


def parse_server_url(url: str) -> ServerURL:
    """Check a Chroma server URL: ``http[s]://host[:port][/path/prefix]``.

    A path prefix is honoured (a server behind a reverse proxy that mounts it at
    ``/chroma``): chromadb's client (1.x) takes a full URL as its host and calls
    ``<url>/api/v2/...``. The port defaults to Chroma's 8000 for http and to 443 for https.

    Raises:
        ConfigurationError: no ``http://`` or ``https://`` scheme, no host, a port outside
            1-65535, credentials in the URL (pass ``headers=`` instead), a query string or a
            fragment, or a path naming Chroma's own API path (``/api/v1``, ``/api/v2``).
    """
    shown = _redacted(url) if isinstance(url, str) else url
    if not isinstance(url, str) or "://" not in url:
        raise ConfigurationError(
            f"A Chroma server URL starts with http:// or https:// (like {_EXAMPLE}); "
            f"got {shown!r}"
        )
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https"):
        raise ConfigurationError(
            f"A Chroma server URL starts with http:// or https:// (like {_EXAMPLE}); "
            f"got scheme {parts.scheme!r} in {shown!r}"
        )
    if parts.username is not None or parts.password is not None:
        raise ConfigurationError(
            f"Credentials in a Chroma server URL are not accepted ({shown!r}): pass them as "
            "headers=, e.g. headers={'Authorization': 'Bearer <token>'} or "
            "{'X-Chroma-Token': '<token>'}"
        )
    if not parts.hostname:
        raise ConfigurationError(f"The Chroma server URL {shown!r} has no host (like {_EXAMPLE})")
    try:
        port = parts.port
    except ValueError:
        port = -1
    if port is not None and not 1 <= port <= 65535:
        netloc_port = parts.netloc.rpartition(":")[2]
        raise ConfigurationError(
            f"The port of a Chroma server URL must be a number from 1 to 65535; got "
            f"{netloc_port!r} in {shown!r}"
        )
    if parts.query:
        raise ConfigurationError(
            f"A Chroma server URL takes no query string ({shown!r}); the tenant and database "
            "are not read from the URL"
        )
    if parts.fragment:
        raise ConfigurationError(f"A Chroma server URL takes no fragment (#...): {shown!r}")
    path = parts.path.rstrip("/")
    if path.endswith(("/api/v1", "/api/v2")):
        raise ConfigurationError(
            f"Give the Chroma server's root, not its API path: {shown!r} ends with "
            f"{path[-7:]!r}, which chromadb's client adds itself"
        )
    scheme = parts.scheme
    default = 443 if scheme == "https" else 8000
    return ServerURL(scheme, parts.hostname, port or default, path)


class _NotReady(ConnectionError):
    """The URL answered with a 429/5xx page that is not Chroma's: a proxy in front of a
    server that is down or restarting. Transient (a ``ConnectionError``), so retried."""


def check_is_chroma(
    server: ServerURL, *, headers: dict[str, str] | None = None, shown: str | None = None
) -> None:
    """Ask ``GET <api>/heartbeat`` and refuse anything that does not answer like Chroma.

    Chroma answers ``200 {"nanosecond heartbeat": ...}``, or an error as JSON with an
    ``"error"`` field (left to chromadb's client to raise and us to translate). Anything
    else is named by its status and content type, never pasted: a web page would put its
    HTML into the message.

    Raises:
        ConfigurationError: the URL answered, but not as Chroma does. The answer is
            permanent and the remedy is a different URL (host, port or path): a wrong
            option, not a failing backend, so retrying would not help and
            ``BackendError`` (which means Chroma itself refused or failed) would mislead.
        _NotReady: a 429 or 5xx answer that is not Chroma's (transient, retried).
        httpx.TransportError: no answer at all (transient, retried).
    """
    url = f"{server.api}/heartbeat"
    resp = httpx.get(url, headers=headers, timeout=PROBE_TIMEOUT)
    ctype = (resp.headers.get("content-type") or "").split(";")[0].strip().lower()
    body: Any = None
    if ctype.endswith("json") or ctype == "":
        try:
            body = resp.json()
        except ValueError:
            body = None
    if isinstance(body, dict) and (
        (resp.status_code == 200 and "nanosecond heartbeat" in body) or "error" in body
    ):
        return
    what = f"HTTP {resp.status_code}, {ctype or 'no content type'}"
    where = shown or server.base
    if resp.status_code == 429 or resp.status_code >= 500:
        raise _NotReady(f"{where} answered {what} instead of Chroma's heartbeat")
    if resp.status_code in (401, 403):
        raise ConfigurationError(
            f"{where} answered but is not a Chroma server ({what}) at GET {url}: a proxy "
            "in front of Chroma refusing the request? Pass its credentials with headers="
        )
    raise ConfigurationError(
        f"{where} answered but is not a Chroma server ({what}) at GET {url}; check the "
        "host, port and path prefix (a Chroma 1.x server answers this with JSON)"
    )


def open_http_client(
    url: str,
    *,
    headers: dict[str, str] | None = None,
    retry: RetryConfig | None = None,
) -> ClientAPI:
    """A ``chromadb.HttpClient`` for a server at ``url``: ``http[s]://host[:port][/prefix]``.

    The URL is checked by :func:`parse_server_url` (a path prefix is honoured), then one
    heartbeat (:func:`check_is_chroma`) makes sure it is a Chroma server before chromadb's
    client is built. Both run under the retry policy: no answer, a timeout, or a 429/5xx page
    is retried, then raised as ``BackendUnavailableError``.

    Raises:
        ConfigurationError: a malformed URL, or one that answers but not as Chroma does.
        BackendUnavailableError: the server stayed unreachable through every retry.
        BackendError: Chroma refused the client (bad credentials, unknown tenant, ...).
    """
    import chromadb

    server = parse_server_url(url)
    shown = _redacted(url)

    def connect() -> ClientAPI:
        check_is_chroma(server, headers=headers, shown=shown)
        # chromadb takes a full URL as host (then ignores port): the path prefix survives
        return chromadb.HttpClient(
            host=server.base,
            port=server.port,
            ssl=server.ssl,
            headers=dict(headers) if headers else None,
            settings=_settings(),
        )

    client: ClientAPI = ChromaCaller(retry)(connect)
    logger.debug("connected to the Chroma server at %s", server.api)
    return client


def open_collection(
    client: ClientAPI,
    name: str,
    *,
    schema_version: int,
    call: ChromaCaller,
    metadata: dict[str, Any] | None = None,
    ef_search: int | None = None,
    way_out: str = "",
) -> Collection:
    """Get or create ``name`` with cosine space and a schema version in its metadata.

    ``ef_search`` sets the HNSW search breadth of a collection that holds vectors, and every
    collection saves its vector index each :data:`SYNC_THRESHOLD` writes: at creation, or on
    a collection created with other values (Chroma applies the change when a process next
    loads the index).

    Raises:
        ConfigurationError: the collection was written by another layout than this code's
            (left as it is; ``way_out``: what the error for an older one suggests).
    """
    meta = {"hnsw:space": "cosine", SCHEMA_KEY: schema_version, **(metadata or {}),
            "hnsw:sync_threshold": SYNC_THRESHOLD, "hnsw:batch_size": SYNC_THRESHOLD}
    wanted = {"sync_threshold": SYNC_THRESHOLD, "batch_size": SYNC_THRESHOLD}
    if ef_search is not None:
        meta["hnsw:search_ef"] = ef_search
        wanted["ef_search"] = ef_search
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
        raise ConfigurationError(
            f"Collection {name!r} has layout schema {found}; this version of langmem_edge "
            f"reads schema {schema_version}. {way_out}".rstrip()
        )
    hnsw = (getattr(collection, "configuration", None) or {}).get("hnsw") or {}
    changed = {k: v for k, v in wanted.items() if hnsw.get(k, v) != v}
    if changed:
        call(collection.modify, configuration={"hnsw": changed})
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
