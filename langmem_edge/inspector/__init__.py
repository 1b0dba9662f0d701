"""The memory inspector: a small local web app to see what an agent remembers about someone,
fix it and forget it (``langmem-edge ui``, ``docs/inspector.md``).

::

    from langmem_edge.inspector import create_app, serve

    app = create_app(memory)                    # an ASGI app (Starlette)
    serve(memory, host="127.0.0.1", port=8765)  # or run it with uvicorn

Server-rendered HTML (Jinja2, autoescape on) with one small script and one stylesheet shipped
in the package: no build step, no CDN. Pages read and actions write through the public memory
API only. Safety (:mod:`~langmem_edge.inspector.security`): a loopback host unless a token is
set, the token checked on every request, a per-session CSRF token on every POST, a strict
Content-Security-Policy.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = ["create_app", "serve"]

_HOMES = {"create_app": "app", "serve": "server"}
"""The module each public name lives in: imported on first use, so ``langmem-edge --help``
(whose ``ui`` command reads the defaults) never loads the app, the pages or the memory."""


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{home}"), name)
