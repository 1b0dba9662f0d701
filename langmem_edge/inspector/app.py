"""The inspector's Starlette application: :func:`create_app` wires the pages
(:mod:`~langmem_edge.inspector.pages`), the actions (:mod:`~langmem_edge.inspector.actions`),
the templates and static files shipped in the package, the guards
(:mod:`~langmem_edge.inspector.security`) and the error pages.

Every page and action takes the profile (and the memory, session or thread) from the query
string, never from the path: profile names and session ids may hold ``/``, which a path
segment cannot carry.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from langmem_edge.errors import (
    InvalidInputError,
    LangmemEdgeError,
    NotFoundError,
)
from langmem_edge.inspector import actions, documents, pages
from langmem_edge.inspector.rendering import render, templates
from langmem_edge.inspector.security import LOOPBACK_HOSTS, SECRET_BYTES, CsrfError, Guard
from langmem_edge.memory import AgentMemory

__all__ = ["LOOPBACK_ALLOWED_HOSTS", "ROUTES", "create_app", "inspecting"]

LOOPBACK_ALLOWED_HOSTS = (*sorted(LOOPBACK_HOSTS), "[::1]")
"""``Host`` headers accepted when the inspector listens on a loopback host: a page of another
site that rebinds its DNS name to 127.0.0.1 is refused (400)."""

ROUTES = [
    Route("/", pages.profiles, name="profiles"),
    Route("/profile", pages.profile, name="profile"),
    Route("/memory", pages.memory, name="memory"),
    Route("/search", pages.search, name="search"),
    Route("/sessions", pages.sessions, name="sessions"),
    Route("/session", pages.session, name="session"),
    Route("/working", pages.working, name="working"),
    Route("/reflective", pages.reflective, name="reflective"),
    Route("/summary", pages.summary, name="summary"),
    Route("/jobs", pages.jobs, name="jobs"),
    Route("/memory/edit", actions.edit, methods=["POST"], name="edit"),
    Route("/memory/forget", actions.forget, methods=["POST"], name="forget"),
    Route("/memory/delete", actions.delete, methods=["POST"], name="delete"),
    Route("/session/delete", actions.delete_session, methods=["POST"], name="delete_session"),
    Route("/jobs/consolidate", actions.consolidate, methods=["POST"], name="consolidate"),
    Route("/jobs/reflect", actions.reflect, methods=["POST"], name="reflect"),
    Route("/documents", documents.documents, name="documents"),
    Route("/documents/delete", documents.delete_document, methods=["POST"],
          name="delete_document"),
]
"""Every page (GET) and action (POST)."""


async def _error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, CsrfError):
        status = 403
    elif isinstance(exc, NotFoundError):
        status = 404
    elif isinstance(exc, InvalidInputError):
        status = 400
    else:
        status = 500
    message = exc.message if isinstance(exc, LangmemEdgeError) else str(exc)
    return render(request, "error.html", status_code=status, status=status, message=message)


def inspecting(memory: AgentMemory) -> AgentMemory:
    """The memory the inspector works through: the same store, namespace, model, config,
    embeddings and encryption key as ``memory``, with recall's access counting off (a person
    searching the inspector is not the agent using a memory: it must not slow its decay or
    lift it in the relevance fill). It keeps its own per-profile indexes."""
    recall = memory.config.recall.model_copy(update={"bump_access": False})
    reader = AgentMemory(memory.store, namespace=memory.namespace, model=memory.model,
                         config=memory.config.model_copy(update={"recall": recall}),
                         embeddings=memory.embeddings)
    reader.cipher = memory.cipher  # the key itself is not kept; its cipher is
    return reader


def create_app(memory: AgentMemory, *, token: str | None = None,
               allowed_hosts: Sequence[str] | None = LOOPBACK_ALLOWED_HOSTS,
               count_access: bool = False,
               title: str = "langmem-edge memory inspector") -> Starlette:
    """The inspector of ``memory`` as an ASGI application.

    Args:
        memory: The memory it shows and edits (``AgentMemory`` over any store). Searches go
            through :func:`inspecting` (no access counted) unless ``count_access``.
        token: Access token every request must carry (see :mod:`.security`); ``None``: none
            (serve it on a loopback host only: :func:`~.security.check_bind`).
        allowed_hosts: ``Host`` headers accepted (default the loopback names); ``None``:
            any (when it listens on another interface, behind its token).
        count_access: Count the memories a search returns as accessed, as an agent's recall
            does (default ``False``: inspecting changes nothing but what a form changes).
        title: The pages' title.
    """
    middleware = [Middleware(Guard, token=token)]
    if allowed_hosts is not None:
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts)))
    routes = [*ROUTES, Mount("/static", StaticFiles(packages=[("langmem_edge.inspector",
                                                               "static")]), name="static")]
    app = Starlette(routes=routes, middleware=middleware,
                    exception_handlers={LangmemEdgeError: _error, CsrfError: _error})
    app.state.memory = memory if count_access else inspecting(memory)
    app.state.templates = templates()
    app.state.csrf_secret = secrets.token_bytes(SECRET_BYTES)
    app.state.title = title
    return app
