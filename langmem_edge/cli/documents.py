"""``langmem-edge documents``: a profile's documents (text, Markdown, PDF).

::

    langmem-edge documents add handbook.pdf -p alice     # stored, chunked, embedded: ready
    langmem-edge documents list -p alice --json
    langmem-edge documents search "vacation policy" -p alice
    langmem-edge documents delete doc-0123... -p alice

``add`` processes the document in the command (``wait=True``: a process that exits would
leave it ``processing``) and exits 1 when it ends ``failed``, printing the error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.table import Table

from langmem_edge.cli.base import (
    DEFAULT_PROFILE,
    EXIT_FAILURE,
    JsonOption,
    ProfileOption,
    app,
    emit_json,
    err,
    fail,
    opened,
    opened_profile,
    out,
)

__all__ = ["add", "delete", "documents_app", "list_documents", "search"]

TEXT_MIN_WIDTH = 20
"""Columns a passage keeps in the search table however narrow the terminal (it wraps)."""

NAME_MIN_WIDTH = 16
"""Columns a document's name keeps in the list table (it wraps beyond)."""

documents_app = typer.Typer(
    help="A profile's documents (text, Markdown, PDF): add, list, search, delete.",
    no_args_is_help=True,
)
app.add_typer(documents_app, name="documents")


@documents_app.command()
def add(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(
        exists=True, dir_okay=False, readable=True,
        help="A text, Markdown (.md) or PDF file.")],
    name: Annotated[str | None, typer.Option(help="Its name (default the file's).")] = None,
    session: Annotated[str | None, typer.Option(
        help="The session it belongs to (deleted with it).")] = None,
    profile: ProfileOption = DEFAULT_PROFILE,
    as_json: JsonOption = False,
) -> None:
    """Add FILE to a profile's documents: stored, cut into passages and embedded."""
    with opened(ctx, create=True) as memory:
        with err.status(f"Reading and embedding {file.name}...") if err.is_terminal \
                else _nothing():
            doc = memory.profile(profile).documents.add(file, name=name, session_id=session,
                                                       wait=True)
    if as_json:
        emit_json(doc)
    else:
        out.print(f"{doc.id} {doc.status}: {doc.name} ({doc.format}, {doc.chars:,} "
                  f"characters, {doc.chunks} passages) in profile {profile!r}")
    if doc.status == "failed":
        fail(f"processing {file.name} failed: {doc.error}", EXIT_FAILURE)


class _nothing:  # noqa: N801 - a context manager standing in for a status spinner
    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> None:
        return None


@documents_app.command("list")
def list_documents(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option(help="Documents per page (at most 500).")] = 50,
    cursor: Annotated[str | None, typer.Option(
        help="Where the previous page ended (its next_cursor).")] = None,
    profile: ProfileOption = DEFAULT_PROFILE,
    as_json: JsonOption = False,
) -> None:
    """List a profile's documents with their status, oldest first."""
    with opened_profile(ctx, profile) as (_, p):
        page = p.documents.list(limit=limit, cursor=cursor)
    if as_json:
        return emit_json({"documents": page.documents, "next_cursor": page.next_cursor})
    table = Table(title=f"Documents of {profile}", box=box.SIMPLE_HEAD)
    table.add_column("id", no_wrap=True)
    table.add_column("name", overflow="fold", min_width=NAME_MIN_WIDTH, ratio=1)
    for column in ("status", "chunks"):
        table.add_column(column, overflow="fold")
    for d in page.documents:
        status = d.status if d.error is None else f"{d.status}: {d.error}"
        table.add_row(d.id, d.name, status, str(d.chunks))
    out.print(table)
    if page.next_cursor:
        out.print(f"More: --cursor {page.next_cursor}")


@documents_app.command()
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for.")],
    limit: Annotated[int | None, typer.Option(help="Most passages (default 5).")] = None,
    profile: ProfileOption = DEFAULT_PROFILE,
    as_json: JsonOption = False,
) -> None:
    """Search the passages of a profile's ready documents, best first."""
    with opened_profile(ctx, profile) as (_, p):
        hits = p.documents.search(query, limit=limit)
    if as_json:
        return emit_json(hits)
    if not hits:
        out.print(f"No passage found for {query!r} in profile {profile!r}.")
        return
    table = Table(title=f"Documents: {query}", box=box.SIMPLE_HEAD)
    for column in ("score", "document", "passage"):
        table.add_column(column, overflow="fold")
    table.add_column("text", overflow="fold", min_width=TEXT_MIN_WIDTH, ratio=1)
    for h in hits:
        table.add_row("" if h.score is None else f"{h.score:.3f}", h.name, str(h.chunk),
                      " ".join(h.text.split()))
    out.print(table)


@documents_app.command()
def delete(
    ctx: typer.Context,
    document_id: Annotated[str, typer.Argument(help="The document's id.")],
    profile: ProfileOption = DEFAULT_PROFILE,
) -> None:
    """Delete a document: its text, status and passages."""
    from langmem_edge.errors import NotFoundError

    with opened_profile(ctx, profile) as (_, p):
        if not p.documents.delete(document_id):
            raise NotFoundError(f"no document {document_id!r} in profile {profile!r} "
                                "(`langmem-edge documents list` shows the ids)")
    out.print(f"Deleted document {document_id} from profile {profile!r}.")
