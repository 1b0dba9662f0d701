"""Commands on a profile's memories: remember, recall, list, show, forget, history, summary."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.table import Table

from langmem_edge.cli.base import (
    DEFAULT_PROFILE,
    JsonOption,
    ProfileOption,
    app,
    emit_json,
    opened,
    opened_profile,
    out,
)

if TYPE_CHECKING:
    from langmem_edge.memory import MemoryRecord

__all__ = ["forget", "history", "list_memories", "recall", "remember", "show", "summary"]

TEXT_MIN_WIDTH = 20
"""Columns the text of a memory keeps in tables however narrow the terminal (it wraps)."""

KEY_MAX_WIDTH = 24
"""Widest a key (or kind, status) column gets in tables; longer ones wrap."""


def _when(value: object) -> str:
    return "" if value is None else str(value)[:19].replace("T", " ")


def _table(title: str, columns: tuple[str, ...]) -> Table:
    """A table whose ``id`` never wraps (it is what `show` and `forget` take) and whose
    ``text`` keeps at least ``TEXT_MIN_WIDTH`` columns."""
    table = Table(title=title, box=box.SIMPLE_HEAD)
    for name in columns:
        if name == "text":
            table.add_column(name, overflow="fold", min_width=TEXT_MIN_WIDTH, ratio=1)
        elif name == "id":
            table.add_column(name, no_wrap=True)
        else:
            table.add_column(name, overflow="fold", max_width=KEY_MAX_WIDTH)
    return table


def _records_table(records: list[MemoryRecord], *, title: str,
                   columns: tuple[str, ...] = ("id", "kind", "key", "text")) -> Table:
    table = _table(title, columns)
    for m in records:
        cells = {"id": m.id, "kind": m.kind, "key": m.key or "", "status": m.status,
                 "created": _when(m.created_at), "text": m.text}
        table.add_row(*(cells[c] for c in columns))
    return table


@app.command()
def remember(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="What to remember.")],
    key: Annotated[str | None, typer.Option(
        help="Topic key, e.g. preference.ui_theme: a new fact under it supersedes the old.")
    ] = None,
    kind: Annotated[str | None, typer.Option(
        help="fact (default), event, instruction or task.")] = None,
    fact_type: Annotated[str | None, typer.Option(
        help="Finer type: preference, identity, decision, skill, ...")] = None,
    confidence: Annotated[float | None, typer.Option(help="0-1 (default 0.9).")] = None,
    contact: Annotated[str | None, typer.Option(
        help="Scope it to this contact (default: agent-wide).")] = None,
    session: Annotated[str | None, typer.Option(help="The conversation it belongs to.")] = None,
    tag: Annotated[list[str] | None, typer.Option(help="A label (repeatable).")] = None,
    profile: ProfileOption = DEFAULT_PROFILE,
    as_json: JsonOption = False,
) -> None:
    """Remember TEXT in a profile (created on first write)."""
    with opened(ctx, create=True) as memory:
        record = memory.profile(profile).remember(
            text, key=key, kind=kind, fact_type=fact_type, confidence=confidence,
            contact=contact, session_id=session, tags=tag or ())
    if as_json:
        return emit_json(record)
    out.print(f"Remembered {record.id} in profile {profile!r}"
              + (f" (supersedes {', '.join(record.supersedes)})" if record.supersedes else ""))


@app.command()
def recall(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="The question or topic.")],
    limit: Annotated[int | None, typer.Option(help="Most results (default 20).")] = None,
    contact: Annotated[str | None, typer.Option(
        help="Recall this contact's memories first, then agent-wide ones.")] = None,
    kind: Annotated[list[str] | None, typer.Option(help="Only this kind (repeatable).")
                    ] = None,
    profile: ProfileOption = DEFAULT_PROFILE,
    as_json: JsonOption = False,
) -> None:
    """Recall what a profile remembers about QUERY, best first."""
    with opened_profile(ctx, profile) as (_, p):
        result = p.recall(
            query, limit=limit, contact=contact, kind=kind or None)
    if as_json:
        return emit_json(result)
    if not result.candidates:
        out.print(f"Nothing recalled for {query!r} in profile {profile!r}.")
        return
    table = _table(f"Recall: {query}", ("score", "id", "key", "text"))
    for c in result.candidates:
        key = (c.memory.key if c.memory else "") or ""
        if c.matched:
            table.add_row(f"{c.score:.3f}", c.id, key, c.text)
        else:
            table.add_row("fill", c.id, key, c.text, style="dim")
    out.print(table)
    fills = sum(not c.matched for c in result.candidates)
    if fills:
        out.print(f"fill: {fills} of {result.count} matched nothing; added by recency and use "
                  "(--json: \"matched\": false).")


@app.command("list")
def list_memories(
    ctx: typer.Context,
    kind: Annotated[str | None, typer.Option(help="Only this kind.")] = None,
    status: Annotated[str, typer.Option(
        help="active, superseded, forgotten or all.")] = "active",
    contact: Annotated[str | None, typer.Option(help="Only this contact's scope.")] = None,
    limit: Annotated[int, typer.Option(help="Memories per page (at most 500).")] = 50,
    cursor: Annotated[str | None, typer.Option(
        help="Where the previous page ended (its next_cursor).")] = None,
    newest_first: Annotated[bool, typer.Option(help="Newest first.")] = False,
    profile: ProfileOption = DEFAULT_PROFILE,
    as_json: JsonOption = False,
) -> None:
    """List a profile's memories, a page at a time (oldest first)."""
    from langmem_edge.memory import NOT_PROVIDED

    with opened_profile(ctx, profile) as (_, p):
        page = p.list(
            kind, limit, cursor, status=status,
            contact=contact if contact is not None else NOT_PROVIDED,
            newest_first=newest_first)
    if as_json:
        return emit_json({"memories": page.memories, "next_cursor": page.next_cursor})
    out.print(_records_table(page.memories, title=f"Memories of {profile}"))
    if page.next_cursor:
        out.print(f"More: --cursor {page.next_cursor}")


@app.command()
def show(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(help="The memory's id.")],
    profile: ProfileOption = DEFAULT_PROFILE,
    as_json: JsonOption = False,
) -> None:
    """Show one memory, every field."""
    from langmem_edge.errors import NotFoundError

    with opened_profile(ctx, profile) as (_, p):
        record = p.get(memory_id)
        if record is None:
            raise NotFoundError(f"no memory {memory_id!r} in profile {profile!r} "
                                "(`langmem-edge list --status all` shows the ids)")
    if as_json:
        return emit_json(record)
    table = Table(show_header=False, title=f"Memory {record.id}")
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    for name, value in record.model_dump(mode="json").items():
        if value not in (None, [], {}, "") or name in ("text", "status"):
            table.add_row(name, str(value))
    out.print(table)


@app.command()
def forget(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(help="The memory's id.")],
    reason: Annotated[str | None, typer.Option(help="Why (kept with the memory).")] = None,
    profile: ProfileOption = DEFAULT_PROFILE,
    as_json: JsonOption = False,
) -> None:
    """Forget a memory: kept in its history, never recalled again."""
    with opened_profile(ctx, profile) as (_, p):
        record = p.forget(memory_id, reason=reason)
    if as_json:
        return emit_json(record)
    out.print(f"Forgot {record.id}: {record.text}")


@app.command()
def history(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="A topic key (or a memory id).")],
    profile: ProfileOption = DEFAULT_PROFILE,
    as_json: JsonOption = False,
) -> None:
    """The versions of a key, oldest first: what replaced what, and when."""
    from langmem_edge.errors import NotFoundError

    with opened_profile(ctx, profile) as (_, p):
        chain = p.history(key)
        if not chain:
            raise NotFoundError(f"no memory under key {key!r} in profile {profile!r}")
    if as_json:
        return emit_json(chain)
    out.print(_records_table(chain, title=f"History of {key}",
                             columns=("id", "status", "created", "text")))


@app.command()
def summary(
    ctx: typer.Context,
    profile: ProfileOption = DEFAULT_PROFILE,
    as_json: JsonOption = False,
) -> None:
    """What a profile remembers, as Markdown (active memories by scope and kind)."""
    with opened_profile(ctx, profile) as (_, p):
        text = p.summary()
    if as_json:
        return emit_json({"profile": profile, "summary": text})
    out.print(text, markup=False)
