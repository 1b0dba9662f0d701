"""Commands on conversations: ingest a file of messages, list and delete sessions."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from langmem_edge.cli.base import (
    DEFAULT_PROFILE,
    EXIT_FAILURE,
    EXIT_INVALID,
    EXIT_NOT_FOUND,
    AllOption,
    JsonOption,
    ProfileOption,
    YesOption,
    app,
    confirm,
    emit_json,
    err,
    fail,
    opened,
    opened_profile,
    out,
    plural,
    progress,
)
from langmem_edge.errors import LangmemEdgeError

__all__ = ["delete_session", "flush", "ingest", "pending", "read_messages", "sessions"]

_BATCH_POSITION = re.compile(r"message (\d+)")

INGEST_BATCH = 500
"""Messages per ingest call: the episodic tier's limit a call (``max_messages_per_call``)."""

MESSAGES_RULE = ("a JSON list of messages, an object with a 'messages' list, or JSON Lines "
                 "with one message a line; a message is an object with 'role' (user, "
                 "assistant, system, tool) and 'content'")
"""What ``ingest`` accepts, as its errors say it."""


def read_messages(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The messages of a JSON or JSON Lines file, and where each is (``"message 3"``, ``"line
    7"``); ``ValueError`` naming what is wrong (the line or the message) otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path} is not UTF-8 text ({e.reason})") from e
    if not text.strip():
        raise ValueError(f"{path} is empty: expected {MESSAGES_RULE}")
    try:
        whole: Any = json.loads(text)
        where = [f"message {i + 1}" for i in range(len(whole))] if isinstance(whole, list) \
            else None
    except json.JSONDecodeError:
        whole, where = [], []
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                whole.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise ValueError(f"{path} line {n} is not JSON ({e.msg}): expected "
                                 f"{MESSAGES_RULE}") from e
            where.append(f"line {n}")
    if isinstance(whole, dict):
        whole = whole.get("messages") if "messages" in whole else [whole]
        if not isinstance(whole, list):
            raise ValueError(f"{path}: 'messages' is not a list; expected {MESSAGES_RULE}")
        where = [f"message {i + 1}" for i in range(len(whole))]
    if not isinstance(whole, list) or where is None:
        raise ValueError(f"{path} holds a JSON {type(whole).__name__}; expected "
                         f"{MESSAGES_RULE}")
    for message, at in zip(whole, where, strict=True):
        if not isinstance(message, dict) or "role" not in message or "content" not in message:
            raise ValueError(f"{path} {at} is not a message: expected an object with 'role' "
                             f"and 'content', got {json.dumps(message)[:80]}")
    if not whole:
        raise ValueError(f"{path} holds no messages: expected {MESSAGES_RULE}")
    return whole, where


@app.command()
def ingest(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(
        exists=True, dir_okay=False, readable=True,
        help="A JSON or JSON Lines file of messages (role, content).")],
    session: Annotated[str | None, typer.Option(
        help="Session id of the conversation [default: the file's name without suffix].")
    ] = None,
    contact: Annotated[str | None, typer.Option(
        help="The contact the conversation is with (scopes what is learnt).")] = None,
    profile: ProfileOption = DEFAULT_PROFILE,
    as_json: JsonOption = False,
) -> None:
    """Store a conversation's messages and remember what they teach (idempotent)."""
    try:
        messages, where = read_messages(file)
    except ValueError as e:
        fail(str(e), EXIT_INVALID)
    session_id = session or file.stem
    added, written = 0, []
    with opened(ctx, create=True) as memory:
        p = memory.profile(profile)
        with progress(f"Ingesting {file.name}", total=len(messages)) as update:
            for lo in range(0, len(messages), INGEST_BATCH):
                chunk = messages[lo: lo + INGEST_BATCH]
                try:
                    result = p.ingest(chunk, session_id=session_id, contact=contact)
                except ValueError as e:  # "message <i in the chunk>: ..." -> where it is
                    found = _BATCH_POSITION.match(str(e))
                    at = where[lo + int(found.group(1))] if found else f"messages {lo + 1}-"
                    rest = str(e)[found.end():] if found else f"{lo + len(chunk)}: {e}"
                    stored = " (the messages before it were stored)" if lo else ""
                    fail(f"{file} {at}{rest}{stored}", EXIT_INVALID)
                added += result.messages_added
                written += result.memories_written
                update(lo + len(chunk), len(messages))
    if as_json:
        emit_json({"profile": profile, "session_id": session_id, "messages": len(messages),
                   "messages_added": added, "memories_written": written})
        return
    out.print(f"Ingested {file.name} into session {session_id!r} of profile {profile!r}: "
              f"{plural(added, 'new message')} of {len(messages)}, "
              f"{plural(len(written), 'memory')} remembered")
    for m in written:
        out.print(f"  {m.id}  {m.text}")


@app.command()
def sessions(
    ctx: typer.Context,
    profile: ProfileOption = DEFAULT_PROFILE,
    as_json: JsonOption = False,
) -> None:
    """List a profile's conversations (sessions), least recently active first."""
    from langmem_edge.memory.transfer import list_sessions

    with opened_profile(ctx, profile) as (memory, _):
        found = list_sessions(memory, profile)
    if as_json:
        return emit_json(found)
    if not found:
        out.print(f"Profile {profile!r} has no sessions.")
        return
    table = Table(title=f"Sessions of {profile}")
    for name in ("session", "messages", "first", "last", "contact", "pending"):
        table.add_column(name, overflow="fold")
    for s in found:
        table.add_row(s.session_id, str(s.messages), str(s.first_at or "")[:19],
                      str(s.last_at or "")[:19], s.contact or "", str(s.pending or ""))
    out.print(table)


def _owing(memory: Any, profile: str | None) -> list[tuple[str, Any]]:
    """``(profile, SessionInfo)`` of every session that still owes memory, of ``profile``
    or (``None``) of every profile."""
    from langmem_edge.memory.transfer import list_sessions

    names = [profile] if profile is not None else memory.list_profiles()
    return [(name, s) for name in names for s in list_sessions(memory, name) if s.pending]


@app.command()
def pending(
    ctx: typer.Context,
    profile: ProfileOption = DEFAULT_PROFILE,
    every: AllOption = False,
    as_json: JsonOption = False,
) -> None:
    """List the sessions that still owe memory: messages stored whose memories a job did
    not get to write (the server went away mid-job, the process died). `flush` writes them."""
    with opened(ctx) as memory:
        owing = _owing(memory, None if every else profile)
    if as_json:
        return emit_json([{"profile": name, **s.model_dump()} for name, s in owing])
    if not owing:
        out.print("Nothing pending." if every else f"Nothing pending in profile {profile!r}.")
        return
    table = Table(title="Pending")
    for name in ("profile", "session", "pending", "messages", "last"):
        table.add_column(name, overflow="fold")
    for name, s in owing:
        table.add_row(name, s.session_id, str(s.pending), str(s.messages),
                      str(s.last_at or "")[:19])
    out.print(table)


@app.command()
def flush(
    ctx: typer.Context,
    profile: ProfileOption = DEFAULT_PROFILE,
    every: AllOption = False,
    as_json: JsonOption = False,
) -> None:
    """Write what the pending sessions owe memory (see `pending`): the memories of their
    stored messages, from each session's extraction mark on. Idempotent."""
    done: list[dict[str, Any]] = []
    failed: list[str] = []
    with opened(ctx) as memory:
        owing = _owing(memory, None if every else profile)
        with progress("Flushing", total=len(owing)) as update:
            for i, (name, s) in enumerate(owing):
                try:
                    result = memory.profile(name).ingest([], session_id=s.session_id)
                except LangmemEdgeError as e:
                    failed.append(f"{name}/{s.session_id}: {e}")
                else:
                    done.append({"profile": name, "session_id": s.session_id,
                                 "memories_written": len(result.memories_written)})
                update(i + 1, len(owing))
    if as_json:
        emit_json({"flushed": done, "failed": failed})
    else:
        written = sum(d["memories_written"] for d in done)
        out.print(f"Flushed {plural(len(done), 'session')}: {plural(written, 'memory')} "
                  "written.")
        for line in failed:
            err.print(f"error: {line}")
    if failed:
        raise typer.Exit(EXIT_FAILURE)


@app.command("delete-session")
def delete_session(
    ctx: typer.Context,
    session_id: Annotated[str, typer.Argument(help="The session to delete.")],
    profile: ProfileOption = DEFAULT_PROFILE,
    yes: YesOption = False,
    as_json: JsonOption = False,
) -> None:
    """Delete a session (asks first).

    Its messages, overlays, working rows and the memories written in it all go."""
    from langmem_edge.memory.transfer import list_sessions

    with opened_profile(ctx, profile) as (memory, p):
        known = {s.session_id: s for s in list_sessions(memory, profile)}
        if session_id not in known:
            shown = ", ".join(repr(s) for s in list(known)[:10]) or "none"
            fail(f"no session {session_id!r} in profile {profile!r}; sessions: {shown}",
                 EXIT_NOT_FOUND)
        confirm(f"Delete session {session_id!r} of profile {profile!r} "
                f"({known[session_id].messages} messages and the memories written in it)?",
                yes)
        result = p.delete_session(session_id)
    if as_json:
        return emit_json({"profile": profile, "session_id": session_id, **result.model_dump()})
    out.print(f"Deleted session {session_id!r} of profile {profile!r}: "
              f"{plural(result.messages_deleted, 'message')}, "
              f"{plural(result.memories_deleted, 'memory')}")
