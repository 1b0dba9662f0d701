"""The inspector's pages (GET): each reads through the public memory API (the async twins)
and renders one template. Nothing here writes; the writes are in
:mod:`~langmem_edge.inspector.actions`.

Paging: the memories of a profile by cursor (``profile.list``'s ``next_cursor``: a profile can
hold 100k memories), a session's messages by position (``start``), and the lists held whole
(profiles, sessions, threads, reflections, goals) by ``offset`` and ``limit``.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import HTMLResponse

from langmem_edge.errors import NotFoundError
from langmem_edge.inspector.explain import explain
from langmem_edge.inspector.params import (
    DEFAULT_PAGE,
    MAX_PAGE,
    choice,
    integer,
    memory_of,
    offset_page,
    profile_of,
    require,
    text,
)
from langmem_edge.inspector.rendering import render
from langmem_edge.memory.records import KINDS
from langmem_edge.memory.transfer import alist_sessions

__all__ = [
    "DEFAULT_MESSAGES",
    "DEFAULT_RESULTS",
    "DEFAULT_ROWS",
    "MAX_RESULTS",
    "STATUSES",
    "jobs",
    "memory",
    "profile",
    "profiles",
    "reflective",
    "search",
    "session",
    "sessions",
    "summary",
    "working",
]

STATUSES = ("active", "superseded", "forgotten", "all")
"""The memory statuses the memories page filters by."""

DEFAULT_RESULTS = 20
"""Candidates a search shows unless ``limit`` says otherwise (recall's default)."""

MAX_RESULTS = 500
"""Most candidates a search asks for (recall's limit)."""

DEFAULT_MESSAGES = 100
"""Messages a session page shows unless ``limit`` says otherwise."""

DEFAULT_ROWS = 20
"""Threads or reflections a page shows unless ``limit`` says otherwise (each row reads its
own records)."""


async def profiles(request: Request) -> HTMLResponse:
    """Every profile of the store, paged."""
    names = await memory_of(request).alist_profiles()
    return render(request, "profiles.html", page=offset_page(request, names))


async def profile(request: Request) -> HTMLResponse:
    """A profile's memories of one kind and status, newest first, one cursor page at a
    time."""
    prof = await profile_of(request)
    q = request.query_params
    kind = choice(q, "kind", ("", *KINDS), "")
    status = choice(q, "status", STATUSES, "active")
    limit = integer(q, "limit", DEFAULT_PAGE, low=1, high=MAX_PAGE)
    cursor = text(q, "cursor") or None
    found = await prof.alist(kind or None, limit, cursor, status=status, newest_first=True)
    if not found.memories and cursor is None:  # nothing here: say so if there is no profile
        await profile_of(request, must_exist=True)
    return render(request, "profile.html", profile=prof.name, section="memories",
                   kinds=KINDS, statuses=STATUSES, kind=kind, status=status, limit=limit,
                   cursor=cursor, memories=found.memories, next_cursor=found.next_cursor,
                   notice=text(q, "notice"))


async def memory(request: Request) -> HTMLResponse:
    """One memory: every field, its supersession chain, and the edit, forget and delete
    forms."""
    prof = await profile_of(request)
    memory_id = require(request.query_params, "id", "the memory id")
    record = await prof.aget(memory_id)
    if record is None:
        raise NotFoundError(f"no memory {memory_id!r} in profile {prof.name!r} (deleted, or "
                            "never there)")
    chain = await prof.ahistory(record.id)
    return render(request, "memory.html", profile=prof.name, section="memories", m=record,
                   chain=chain, notice=text(request.query_params, "notice"))


async def search(request: Request) -> HTMLResponse:
    """The fused recall of a query, each result with why it came back."""
    prof = await profile_of(request)
    q = request.query_params
    query = text(q, "q")
    contact = text(q, "contact") or None
    kind = choice(q, "kind", ("", *KINDS), "")
    limit = integer(q, "limit", DEFAULT_RESULTS, low=1, high=MAX_RESULTS)
    result = None
    explained = []
    if query:
        result = await prof.arecall(query, limit=limit, contact=contact, kind=kind or None)
        explained = [(c, explain(c)) for c in result.candidates]
    return render(request, "search.html", profile=prof.name, section="search", query=query,
                   contact=contact or "", kind=kind, kinds=KINDS, limit=limit, result=result,
                   explained=explained,
                   matched_count=sum(c.matched for c in result.candidates) if result else 0)


async def sessions(request: Request) -> HTMLResponse:
    """A profile's sessions, most recently active first, paged."""
    prof = await profile_of(request)
    found = await alist_sessions(memory_of(request), prof.name)
    return render(request, "sessions.html", profile=prof.name, section="sessions",
                   page=offset_page(request, found[::-1]),
                   notice=text(request.query_params, "notice"))


async def session(request: Request) -> HTMLResponse:
    """One session: its messages (paged by position), overlays, working notes and ongoing
    task, and the delete form."""
    prof = await profile_of(request)
    q = request.query_params
    sid = require(q, "s", "the session id")
    start = integer(q, "start", 0)
    limit = integer(q, "limit", DEFAULT_MESSAGES, low=1, high=MAX_PAGE)
    info = next((s for s in await alist_sessions(memory_of(request), prof.name)
                 if s.session_id == sid), None)
    if info is None:
        raise NotFoundError(f"no session {sid!r} in profile {prof.name!r} (the sessions page "
                            "lists them)")
    messages = await prof.episodic.amessages(sid, start=start, limit=limit)
    overlays = await prof.episodic.aoverlays(sid)
    notes = await prof.working.aget_context(sid)
    task = await prof.working.aget_ongoing_task(sid)
    return render(request, "session.html", profile=prof.name, section="sessions", info=info,
                   messages=messages, overlays=overlays, notes=notes, task=task, start=start,
                   limit=limit, prev_start=max(0, start - limit) if start else None,
                   next_start=start + limit if start + limit < info.messages else None)


async def working(request: Request) -> HTMLResponse:
    """The working tier: each thread's notes and ongoing task, paged by thread."""
    prof = await profile_of(request)
    page = offset_page(request, await prof.working.athreads(), default=DEFAULT_ROWS)
    rows = [(t, await prof.working.aget_context(t), await prof.working.aget_ongoing_task(t))
            for t in page.items]
    return render(request, "working.html", profile=prof.name, section="working", page=page,
                   rows=rows)


async def reflective(request: Request) -> HTMLResponse:
    """Goals with their history, and reflections (newest first, paged) with the learnings
    each wrote."""
    prof = await profile_of(request)
    goals = await prof.reflective.agoals()
    reflections = sorted(await prof.reflective.areflections(), key=lambda r: r.until,
                         reverse=True)
    page = offset_page(request, reflections, default=DEFAULT_ROWS)
    learnings = {}
    for r in page.items:
        for ref in r.learnings:
            learnings[ref.memory_id] = await prof.aget(ref.memory_id)
    return render(request, "reflective.html", profile=prof.name, section="reflective",
                   goals=goals, page=page, learnings=learnings)


async def summary(request: Request) -> HTMLResponse:
    """The profile's Markdown summary (shown as text)."""
    prof = await profile_of(request)
    return render(request, "summary.html", profile=prof.name, section="summary",
                   markdown=await prof.asummary())


async def jobs(request: Request) -> HTMLResponse:
    """The forms that run consolidation and reflection on demand."""
    prof = await profile_of(request)
    return render(request, "jobs.html", profile=prof.name, section="jobs",
                   consolidation=None, reflection=None)
