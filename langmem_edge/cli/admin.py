"""Commands on the whole memory: export, import, stats, delete-profile, analyze."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from langmem_edge.cli.base import (
    DEFAULT_PROFILE,
    EXIT_FAILURE,
    EXIT_NOT_FOUND,
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

__all__ = ["analyze", "delete_profile", "export", "import_", "stats"]

STDOUT = "-"
"""The file name that means standard output."""

ProfilesOption = Annotated[list[str] | None, typer.Option(
    "--profile", "-p", help="Only this profile (repeatable) [default: every profile].")]


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(plural(n, kind) for kind, n in counts.items() if n) or "nothing"


@app.command()
def export(
    ctx: typer.Context,
    file: Annotated[str, typer.Argument(
        help="Where to write the JSON Lines export; '-' for standard output.")] = STDOUT,
    profile: ProfilesOption = None,
    as_json: JsonOption = False,
) -> None:
    """Export profiles to JSON Lines: memories with their history, messages, overlays and
    working rows, in the format of docs/export.md; `import` reads it back."""
    from langmem_edge.memory.transfer import export_jsonl

    with opened(ctx) as memory:
        with progress("Exporting") as update:
            dest = sys.stdout if file == STDOUT else Path(file)
            result = export_jsonl(memory, dest, profiles=profile, on_progress=update)
    if as_json and file != STDOUT:
        emit_json(result)
        return
    shown = "standard output" if file == STDOUT else file
    err.print(f"Exported {plural(len(result.profiles), 'profile')} to {shown}: "
              f"{_counts(result.counts)}")


@app.command("import")
def import_(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(
        exists=True, dir_okay=False, readable=True, help="A file written by `export`.")],
    profile: ProfilesOption = None,
    as_json: JsonOption = False,
) -> None:
    """Import a file written by `export`.

    The whole file is checked before anything is written; items already there are kept as
    they are, so running it twice changes nothing."""
    from langmem_edge.memory.transfer import import_jsonl

    with opened(ctx, create=True) as memory:
        with progress(f"Importing {file.name}") as update:
            result = import_jsonl(memory, file, profiles=profile, on_progress=update)
    if as_json:
        return emit_json(result)
    out.print(f"Imported {plural(len(result.profiles), 'profile')} from {file.name}: "
              f"written {_counts(result.written)}; already there {_counts(result.existing)}")
    if result.unknown:
        out.print(f"Skipped record types this version does not know: "
                  f"{_counts(result.unknown)}")


@app.command()
def stats(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Memory counts by profile, kind, status and embedding status."""
    with opened(ctx) as memory:
        result = memory.stats()
    if as_json:
        return emit_json(result)
    table = Table(title=f"{result.total} memories")
    for name in ("profile", "total", "by kind", "by status", "embedding"):
        table.add_column(name, overflow="fold")
    for name, p in result.profiles.items():
        table.add_row(name, str(p.total), _counts(p.by_kind), _counts(p.by_status),
                      _counts(p.by_embedding_status))
    out.print(table)


@app.command("delete-profile")
def delete_profile(
    ctx: typer.Context,
    profile: ProfileOption = DEFAULT_PROFILE,
    yes: YesOption = False,
    as_json: JsonOption = False,
) -> None:
    """Delete a profile and everything in it (asks first).

    Memories, messages, overlays and working rows all go."""
    with opened_profile(ctx, profile) as (memory, _):
        confirm(f"Delete profile {profile!r} and everything it remembers? This cannot be "
                "undone", yes)
        removed = memory.delete_profile(profile)
    if as_json:
        return emit_json({"profile": profile, "items_deleted": removed})
    out.print(f"Deleted profile {profile!r} ({removed} store items)")


@app.command()
def analyze(folder: Annotated[Path, typer.Argument(
        help="A Chroma folder: an embedded store's, or a Chroma server's while it runs.")]
            ) -> None:
    """Take SQLite's planner statistics of a Chroma folder, so that reads by metadata filter
    start from the index instead of walking every row (docs/store.md). A store keeps its
    embedded folder's statistics itself; run this on a server's folder after loading data."""
    import subprocess

    from langmem_edge._sqlite_stats import refresh

    try:
        report = refresh(str(folder), min_rows=1, growth=1.0)
    except FileNotFoundError as e:
        fail(str(e), EXIT_NOT_FOUND)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        fail(str(e), EXIT_FAILURE)
    out.print(f"Planner statistics taken on {report.split()[-1]} rows of {folder}.")
