"""Opening a Chroma server by URL (``ChromaStore.from_url``, ``ChromaSaver.from_url``): what
is accepted, what is refused, and what a user is told when the URL is wrong."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from langmem_edge import ChromaSaver, ChromaStore
from langmem_edge._chroma import open_http_client
from langmem_edge.errors import BackendUnavailableError, ConfigurationError

Handler = Callable[[BaseHTTPRequestHandler], None]


@contextmanager
def tiny_server(handle: Handler) -> Iterator[str]:
    """An ``http.server`` on 127.0.0.1 answering every request with ``handle``; its URL."""

    class _Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # keep test output clean
            pass

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = handle  # noqa: N815

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _answer(status: int, body: bytes, content_type: str) -> Handler:
    def handle(req: BaseHTTPRequestHandler) -> None:
        req.send_response(status)
        req.send_header("Content-Type", content_type)
        req.send_header("Content-Length", str(len(body)))
        req.end_headers()
        req.wfile.write(body)

    return handle


def _proxy(prefix: str, upstream: str) -> Handler:
    """A reverse proxy serving ``upstream`` under ``prefix`` (404 HTML elsewhere)."""

    def handle(req: BaseHTTPRequestHandler) -> None:
        if not req.path.startswith(prefix + "/"):
            _answer(404, b"<html><body>no such page</body></html>", "text/html")(req)
            return
        length = int(req.headers.get("Content-Length") or 0)
        body = req.rfile.read(length) if length else None
        headers = {k: v for k, v in req.headers.items() if k.lower() not in ("host",)}
        resp = httpx.request(req.command, upstream + req.path[len(prefix):], content=body,
                             headers=headers, timeout=30)
        req.send_response(resp.status_code)
        for k, v in resp.headers.items():
            if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                req.send_header(k, v)
        req.send_header("Content-Length", str(len(resp.content)))
        req.end_headers()
        req.wfile.write(resp.content)

    return handle


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- a URL that answers but is not Chroma ---------------------------------------------------

PAGE = b"<!doctype html><html><head><title>Welcome</title></head><body>" + b"x" * 500
NOT_FOUND = b"<html><body><h1>404 Not Found</h1></body></html>"


@pytest.mark.parametrize(
    ("status", "body", "content_type", "says"),
    [
        (404, NOT_FOUND, "text/html", "HTTP 404, text/html"),
        (200, PAGE, "text/html; charset=utf-8", "HTTP 200, text/html"),
        (404, b'{"detail": "Not Found"}', "application/json", "HTTP 404, application/json"),
        (200, b"hello", "text/plain", "HTTP 200, text/plain"),
        (401, b"<html>Authorization Required</html>", "text/html", "HTTP 401, text/html"),
    ],
    ids=["404-html", "200-html", "404-json", "200-text", "401-html"],
)
@pytest.mark.parametrize("opener", ["store", "saver"])
def test_a_url_that_is_not_chroma_is_named_as_such(
    status: int, body: bytes, content_type: str, says: str, opener: str
) -> None:
    with tiny_server(_answer(status, body, content_type)) as url:
        with pytest.raises(ConfigurationError) as info:
            if opener == "store":
                ChromaStore.from_url(url, index=None, retry={"attempts": 1})
            else:
                ChromaSaver.from_url(url, retry={"attempts": 1})
    message = str(info.value)
    assert f"answered but is not a Chroma server ({says})" in message
    assert url in message
    assert "<html" not in message.lower() and "<!doctype" not in message.lower()
    assert info.value.code == "configuration"
    if status == 401:
        assert "headers=" in message


def test_a_proxy_error_page_is_transient_and_retried() -> None:
    """A 502/503 HTML page (a proxy in front of a restarting server) is worth retrying; after
    the retries it is BackendUnavailableError, still without the HTML."""
    calls = []

    def handle(req: BaseHTTPRequestHandler) -> None:
        calls.append(req.path)
        _answer(502, b"<html><body>Bad Gateway</body></html>", "text/html")(req)

    with tiny_server(handle) as url:
        with pytest.raises(BackendUnavailableError) as info:
            open_http_client(url, retry={"attempts": 2, "initial_wait": 0.01})
    assert len(calls) == 2
    assert "HTTP 502, text/html" in str(info.value)
    assert "<html" not in str(info.value).lower()


# -- URL shapes -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "scheme", "host", "port", "path"),
    [
        ("http://127.0.0.1:8000", "http", "127.0.0.1", 8000, ""),
        ("http://127.0.0.1", "http", "127.0.0.1", 8000, ""),  # Chroma's default port
        ("https://chroma.example", "https", "chroma.example", 443, ""),
        ("https://chroma.example:8443/", "https", "chroma.example", 8443, ""),
        ("http://h:8000/some/prefix", "http", "h", 8000, "/some/prefix"),
        ("http://h:8000/some/prefix/", "http", "h", 8000, "/some/prefix"),
        ("HTTP://H:8000", "http", "h", 8000, ""),
        ("http://[::1]:8000", "http", "::1", 8000, ""),
    ],
)
def test_server_urls_accepted(url: str, scheme: str, host: str, port: int, path: str) -> None:
    from langmem_edge._chroma import parse_server_url

    got = parse_server_url(url)
    assert (got.scheme, got.host, got.port, got.path) == (scheme, host, port, path)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("127.0.0.1:8000", "http:// or https://"),
        ("localhost:8000", "http:// or https://"),
        ("chroma.example", "http:// or https://"),
        ("ftp://127.0.0.1:8000", "http:// or https://"),
        ("http://", "host"),
        ("http://127.0.0.1:99999", "port"),
        ("http://127.0.0.1:0", "port"),
        ("http://127.0.0.1:abc", "port"),
        ("http://127.0.0.1:8000/?tenant=x", "query"),
        ("http://127.0.0.1:8000/#top", "fragment"),
        ("http://user:secret@127.0.0.1:8000", "headers"),
        ("", "http:// or https://"),
    ],
)
def test_bad_server_urls_refused_with_what_is_allowed(url: str, says: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        ChromaStore.from_url(url, index=None, retry={"attempts": 1})
    assert says in str(info.value)
    assert "secret" not in str(info.value)


def test_connection_refused_stays_unavailable_after_retries() -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    with pytest.raises(BackendUnavailableError) as info:
        ChromaStore.from_url(url, index=None, retry={"attempts": 1})
    assert info.value.code == "backend_unavailable"
    with pytest.raises(BackendUnavailableError):
        ChromaSaver.from_url(url, retry={"attempts": 2, "initial_wait": 0.01})


@pytest.mark.server
def test_https_to_a_plain_http_server_is_unavailable_not_a_crash(chroma_server_url: str) -> None:
    https = chroma_server_url.replace("http://", "https://")
    with pytest.raises(BackendUnavailableError):
        ChromaStore.from_url(https, index=None, retry={"attempts": 1})


# -- a path prefix (Chroma behind a reverse proxy) -------------------------------------------


@pytest.mark.server
def test_a_path_prefix_is_honoured(chroma_server_url: str) -> None:
    with tiny_server(_proxy("/some/prefix", chroma_server_url)) as proxy:
        with ChromaStore.from_url(f"{proxy}/some/prefix", index=None,
                                  collection_prefix="t-prefix") as store:
            store.put(("t",), "k", {"v": 1})
            assert store.get(("t",), "k").value == {"v": 1}
        # the same data straight from the server: the prefix reached the same Chroma
        with ChromaStore.from_url(chroma_server_url, index=None,
                                  collection_prefix="t-prefix") as direct:
            assert direct.get(("t",), "k").value == {"v": 1}
        saver = ChromaSaver.from_url(f"{proxy}/some/prefix/", collection_prefix="t-prefix")
        try:
            assert saver.get_tuple({"configurable": {"thread_id": "none"}}) is None
        finally:
            saver.close()
        # without the prefix, the proxy answers its own 404 page: named, not pasted
        with pytest.raises(ConfigurationError, match="not a Chroma server"):
            ChromaStore.from_url(proxy, index=None, retry={"attempts": 1})


def test_a_damaged_index_file_is_named_and_never_retried() -> None:
    from chromadb.errors import InternalError

    from langmem_edge import _chroma, errors

    exc = InternalError(
        "Error executing plan: Error deserializing pickle file: eval error at offset 0: "
        "EOF while parsing"
    )
    assert not _chroma.is_transient(exc)
    calls = []

    def broken() -> None:
        calls.append(1)
        raise exc

    broken.__name__ = "upsert"
    with pytest.raises(errors.BackendError) as info:
        _chroma.ChromaCaller({"attempts": 4, "initial_wait": 0.0})(broken)
    assert not isinstance(info.value, errors.BackendUnavailableError)
    assert "damaged" in str(info.value) and len(calls) == 1
