"""Rendering: the Jinja2 templates shipped in the package (autoescape ON: memory text is
user-written, a stored ``<script>`` renders as text), the profile tabs, and :func:`render`,
which gives every template the CSRF token of the request's session."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from jinja2 import Environment, PackageLoader
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.templating import Jinja2Templates

from langmem_edge.inspector.security import CSRF_FIELD, csrf_token

__all__ = ["SCORE_DIGITS", "SECTIONS", "render", "templates"]

SECTIONS = (
    ("memories", "/profile", "Memories"),
    ("search", "/search", "Search"),
    ("sessions", "/sessions", "Sessions"),
    ("working", "/working", "Working"),
    ("reflective", "/reflective", "Reflections & goals"),
    ("summary", "/summary", "Summary"),
    ("documents", "/documents", "Documents"),
    ("jobs", "/jobs", "Consolidate & reflect"),
)
"""The tabs of a profile's pages: (name, path, title)."""

SCORE_DIGITS = 3
"""Decimals a score shows with."""


def _when(d: datetime | None) -> str:
    return d.strftime("%Y-%m-%d %H:%M") if d else ""


def _num(x: float | None, digits: int = SCORE_DIGITS) -> str:
    return "" if x is None else f"{x:.{digits}f}"


def templates() -> Jinja2Templates:
    """The inspector's templates, autoescaped, with the ``when`` and ``num`` filters."""
    env = Environment(loader=PackageLoader("langmem_edge.inspector", "templates"),
                      autoescape=True, trim_blocks=True, lstrip_blocks=True)
    env.filters["when"] = _when
    env.filters["num"] = _num
    return Jinja2Templates(env=env)


def render(request: Request, template: str, status_code: int = 200, **context: Any
           ) -> HTMLResponse:
    """Render ``template`` with ``context``, the CSRF token of the request's session and the
    profile tabs."""
    state = request.app.state
    session_id = getattr(request.state, "session_id", "")
    context.update(request=request, sections=SECTIONS, csrf_field=CSRF_FIELD,
                   csrf=csrf_token(state.csrf_secret, session_id), title=state.title)
    return state.templates.TemplateResponse(request, template, context,
                                            status_code=status_code)
