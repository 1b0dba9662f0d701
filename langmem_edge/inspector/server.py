"""Serving the inspector with uvicorn on one host and port, after :func:`check_bind`."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlencode

from langmem_edge.inspector.security import TOKEN_QUERY, check_bind, is_loopback

if TYPE_CHECKING:
    from langmem_edge.memory import AgentMemory

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "address", "serve"]

DEFAULT_HOST = "127.0.0.1"
"""Where the inspector listens by default: this machine only."""

DEFAULT_PORT = 8765
"""The inspector's default port."""


def address(host: str, port: int, token: str | None) -> str:
    """The address to open: ``http://host:port/``, with ``?token=...`` when there is one."""
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    query = f"?{urlencode({TOKEN_QUERY: token})}" if token else ""
    return f"http://{shown}:{port}/{query}"


def serve(memory: AgentMemory, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
          token: str | None = None, log_level: str = "warning") -> None:
    """Serve the inspector of ``memory`` until interrupted.

    On a loopback host only ``Host`` headers naming the loopback are accepted (a DNS
    rebinding page is refused); on any other host a token is required
    (:func:`~langmem_edge.inspector.security.check_bind`) and any ``Host`` is accepted.
    """
    import uvicorn

    from langmem_edge.inspector.app import LOOPBACK_ALLOWED_HOSTS, create_app

    check_bind(host, token)
    allowed = LOOPBACK_ALLOWED_HOSTS if is_loopback(host) else None
    app = create_app(memory, token=token, allowed_hosts=allowed)
    uvicorn.run(app, host=host, port=port, log_level=log_level)
