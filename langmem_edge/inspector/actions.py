"""The inspector's actions (POST, each checked against the CSRF token of its session):
edit a memory (a new version that supersedes it), forget it, delete it, delete a session, and
run consolidation or reflection on demand. Every action names its profile (and memory or
session) in form fields; a change redirects (303) to the page that shows its effect, a job
renders its report.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse

from langmem_edge.errors import InvalidInputError, NotFoundError
from langmem_edge.inspector.params import memory_of, require, text
from langmem_edge.inspector.rendering import render
from langmem_edge.inspector.security import check_csrf
from langmem_edge.memory import Profile

__all__ = ["EDITABLE", "consolidate", "delete", "delete_session", "edit", "forget",
           "reflect"]

EDITABLE = ("text", "key", "confidence", "valid_from", "valid_until")
"""Form fields the edit form may change; an empty field keeps the memory's value."""


async def _checked_form(request: Request) -> tuple[FormData, Profile]:
    form = await request.form()
    check_csrf(request, form)
    name = require(_params(form), "p", "the profile name")
    return form, memory_of(request).profile(name)


def _params(form: FormData) -> dict[str, str]:
    return {k: v for k, v in form.items() if isinstance(v, str)}


def _redirect(path: str, **query: str) -> RedirectResponse:
    return RedirectResponse(f"{path}?{urlencode(query)}", status_code=303)


def _changes(params: dict[str, str]) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    for field in EDITABLE:
        value = text(params, field)
        if not value:
            continue
        if field == "confidence":
            try:
                changes[field] = float(value)
            except ValueError:
                raise InvalidInputError(f"confidence must be a number from 0 to 1, got "
                                        f"{value!r}") from None
        else:
            changes[field] = value
    return changes


async def edit(request: Request) -> RedirectResponse:
    """Write a new version of a memory; redirects to it (its chain shows both versions)."""
    form, prof = await _checked_form(request)
    params = _params(form)
    memory_id = require(params, "id", "the memory id")
    changes = _changes(params)
    if not changes:
        raise InvalidInputError("nothing to change: fill in at least one field of the form")
    new = await prof.aupdate(memory_id, **changes)
    return _redirect("/memory", p=prof.name, id=new.id, notice="Saved as a new version.")


async def forget(request: Request) -> RedirectResponse:
    """Mark a memory forgotten (kept, never recalled again)."""
    form, prof = await _checked_form(request)
    params = _params(form)
    memory_id = require(params, "id", "the memory id")
    await prof.aforget(memory_id, reason=text(params, "reason") or None)
    return _redirect("/memory", p=prof.name, id=memory_id,
                     notice="Forgotten: it stays here, and recall no longer returns it.")


async def delete(request: Request) -> RedirectResponse:
    """Delete a memory for good (and the raw messages only it cited)."""
    form, prof = await _checked_form(request)
    memory_id = require(_params(form), "id", "the memory id")
    if not await prof.adelete(memory_id):
        raise NotFoundError(f"no memory {memory_id!r} in profile {prof.name!r} to delete")
    return _redirect("/profile", p=prof.name, notice=f"Deleted memory {memory_id}.")


async def delete_session(request: Request) -> RedirectResponse:
    """Delete a session: its messages, overlays, working rows and the memories written in
    it."""
    form, prof = await _checked_form(request)
    sid = require(_params(form), "s", "the session id")
    done = await prof.adelete_session(sid)
    return _redirect("/sessions", p=prof.name,
                     notice=f"Deleted session {sid}: {done.messages_deleted} message(s), "
                            f"{done.memories_deleted} memory(ies).")


async def consolidate(request: Request) -> HTMLResponse:
    """Run one consolidation pass over the profile and show its report."""
    _, prof = await _checked_form(request)
    report = await memory_of(request).aconsolidate(prof.name)
    return render(request, "jobs.html", profile=prof.name, section="jobs",
                  consolidation=report.profiles[0] if report.profiles else None,
                  reflection=None)


async def reflect(request: Request) -> HTMLResponse:
    """Reflect on the profile's activity since its last reflection and show what it
    wrote."""
    _, prof = await _checked_form(request)
    result = await prof.areflect()
    return render(request, "jobs.html", profile=prof.name, section="jobs",
                  consolidation=None, reflection=result)
