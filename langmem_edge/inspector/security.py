"""The inspector's guards: where it may listen, the access token, the session cookie and the
CSRF token of every form.

- **Binding.** :func:`check_bind` refuses any host but the loopback names
  (:data:`LOOPBACK_HOSTS`) without a token: the inspector shows and edits what an agent
  remembers about people.
- **The token.** With a token, every request carries it: the header
  ``X-Langmem-Edge-Token`` (or ``Authorization: Bearer ...``), or the cookie
  :data:`TOKEN_COOKIE`, which a first visit to ``?token=...`` sets before redirecting to the
  same address without it (so the token leaves the address bar and the history). No token:
  401; a wrong one: 403. Tokens are compared in constant time.
- **Sessions and CSRF.** Every browser gets a random session id in the cookie
  :data:`SESSION_COOKIE` (``HttpOnly``, ``SameSite=Strict``). The CSRF token of its forms is
  an HMAC of that id under a secret made when the app starts, so it is per session, never
  stored, and worthless after a restart; every POST must carry it in the form field
  :data:`CSRF_FIELD`, else 403.

:class:`Guard` is a plain ASGI middleware doing the token and session checks on every request
(static files included); the CSRF check of a POST is :func:`check_csrf`, called by each action
after reading its form.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from langmem_edge.errors import ConfigurationError

__all__ = [
    "CSRF_FIELD",
    "LOOPBACK_HOSTS",
    "SECURITY_HEADERS",
    "SESSION_COOKIE",
    "TOKEN_COOKIE",
    "TOKEN_ENV",
    "TOKEN_HEADER",
    "TOKEN_QUERY",
    "CsrfError",
    "Guard",
    "check_bind",
    "check_csrf",
    "csrf_token",
    "is_loopback",
]

TOKEN_ENV = "LANGMEM_EDGE_UI_TOKEN"
"""The environment variable the token may come from instead of ``--token``."""

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
"""Hosts the inspector may listen on without a token."""

TOKEN_HEADER = "x-langmem-edge-token"
"""The request header that may carry the token."""

TOKEN_QUERY = "token"
"""The query parameter a first visit carries the token in."""

TOKEN_COOKIE = "langmem_edge_token"
"""The cookie holding the token after the first visit."""

SESSION_COOKIE = "langmem_edge_session"
"""The cookie holding the browser's session id (the CSRF token is derived from it)."""

CSRF_FIELD = "csrf"
"""The form field every POST carries its CSRF token in."""

SESSION_ID_BYTES = 32
"""Random bytes of a session id."""

SECRET_BYTES = 32
"""Random bytes of the per-process secret the CSRF tokens are keyed with."""

SECURITY_HEADERS = {
    "content-security-policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
                               "img-src 'self' data:; object-src 'none'; base-uri 'none'; "
                               "form-action 'self'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
}
"""Headers on every response: no script but the inspector's own file runs, even if some
text escaped the templates (it never should: autoescape is on)."""


class CsrfError(Exception):
    """A POST without the CSRF token of its session (answered 403)."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback name the inspector may use without a token."""
    return host.strip("[]").lower() in LOOPBACK_HOSTS


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen on anything but a loopback host without a token.

    Raises :class:`~langmem_edge.errors.ConfigurationError` naming the host and both ways out.
    """
    if not host:
        raise ConfigurationError("host is empty: give 127.0.0.1 (the default) or a host name")
    if token is not None and not token.strip():
        raise ConfigurationError(f"the token is empty: give a non-blank --token (or "
                                 f"{TOKEN_ENV}), or none at all on 127.0.0.1")
    if token is None and not is_loopback(host):
        raise ConfigurationError(
            f"refusing to serve the memory inspector on {host!r} without a token: anyone who "
            "can reach it could read and delete what the agent remembers; bind to 127.0.0.1 "
            f"(the default) or set --token (or {TOKEN_ENV})")


def csrf_token(secret: bytes, session_id: str) -> str:
    """The CSRF token of a session: an HMAC-SHA256 of its id under the app's secret."""
    return hmac.new(secret, session_id.encode(), hashlib.sha256).hexdigest()


def check_csrf(request: Request, form: Mapping[str, Any]) -> None:
    """Raise :class:`CsrfError` unless ``form`` carries the CSRF token of the request's
    session."""
    secret: bytes = request.app.state.csrf_secret
    session_id = getattr(request.state, "session_id", None)
    given = form.get(CSRF_FIELD)
    if not session_id or not isinstance(given, str):
        raise CsrfError("this form has no CSRF token or the browser no session cookie: "
                        "reload the page and submit it again")
    if not hmac.compare_digest(given.encode(), csrf_token(secret, session_id).encode()):
        raise CsrfError("the form's CSRF token does not belong to this browser session: "
                        "reload the page and submit it again")


def _given_token(headers: Headers, cookies: dict[str, str], query: dict[str, str]
                 ) -> tuple[str | None, bool]:
    """The token a request carries and whether it came in the query."""
    if headers.get(TOKEN_HEADER):
        return headers[TOKEN_HEADER], False
    auth = headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[len("bearer "):].strip(), False
    if TOKEN_QUERY in query:
        return query[TOKEN_QUERY], True
    return cookies.get(TOKEN_COOKIE), False


def _cookie(name: str, value: str) -> str:
    return f"{name}={value}; Path=/; HttpOnly; SameSite=Strict"


class Guard:
    """ASGI middleware: the token check, the session cookie and the security headers.

    Args:
        app: The application it guards.
        token: The access token; ``None``: no token (loopback only, see :func:`check_bind`).
    """

    def __init__(self, app: ASGIApp, *, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check one request, then pass it on (or answer 401/403/303 itself)."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        cookies = _parse_cookies(headers.get("cookie", ""))
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"),
                               keep_blank_values=True))
        set_cookies: list[str] = []
        if self.token is not None:
            given, in_query = _given_token(headers, cookies, query)
            refusal = self._refusal(given)
            if refusal is not None:
                await _secured(refusal)(scope, receive, send)
                return
            if in_query:  # set the cookie, and take the token out of the address
                rest = urlencode([(k, v) for k, v in query.items() if k != TOKEN_QUERY])
                target = scope.get("root_path", "") + scope["path"] + (f"?{rest}" if rest
                                                                       else "")
                redirect = RedirectResponse(target, status_code=303)
                redirect.headers.append("set-cookie", _cookie(TOKEN_COOKIE, self.token))
                await _secured(redirect)(scope, receive, send)
                return
        session_id = cookies.get(SESSION_COOKIE)
        if not session_id:
            session_id = secrets.token_urlsafe(SESSION_ID_BYTES)
            set_cookies.append(_cookie(SESSION_COOKIE, session_id))
        scope.setdefault("state", {})["session_id"] = session_id

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                raw = list(message.get("headers", []))
                raw += [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
                raw += [(b"set-cookie", c.encode()) for c in set_cookies]
                message = {**message, "headers": raw}
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _refusal(self, given: str | None) -> Response | None:
        assert self.token is not None
        if not given:
            return PlainTextResponse(
                "401 Unauthorized: this memory inspector needs its token; open the address "
                "`langmem-edge ui` printed (it ends in ?token=...), or send the header "
                "X-Langmem-Edge-Token", status_code=401,
                headers={"www-authenticate": 'Bearer realm="langmem-edge inspector"'})
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return PlainTextResponse("403 Forbidden: wrong token for this memory inspector",
                                     status_code=403)
        return None


def _secured(response: Response) -> Response:
    for k, v in SECURITY_HEADERS.items():
        response.headers[k] = v
    return response


def _parse_cookies(raw: str) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(raw)
    except Exception:  # a malformed Cookie header: treat it as no cookies
        return {}
    return {k: m.value for k, m in jar.items()}
