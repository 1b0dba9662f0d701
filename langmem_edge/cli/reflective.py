"""Commands of the reflective tier and its upkeep: consolidate, reflect.

Both run without a model (the CLI has none): consolidation keeps the most complete, most
recent member of a cluster of near-duplicates, and reflection follows the model-free rules
of ``memory/reflection.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer
from rich.table import Table

from langmem_edge.cli.base import (
    DEFAULT_PROFILE,
    AllOption,
    JsonOption,
    ProfileOption,
    app,
    emit_json,
    opened,
    out,
    require_profile,
)

if TYPE_CHECKING:
    from langmem_edge.memory.consolidation import ConsolidationReport
    from langmem_edge.memory.reflection import ReflectionResult

__all__ = ["consolidate", "reflect"]

@app.command()
def consolidate(
    ctx: typer.Context,
    profile: ProfileOption = DEFAULT_PROFILE,
    every: AllOption = False,
    as_json: JsonOption = False,
) -> None:
    """One consolidation pass over a profile (or every profile with --all).

    Lowers the confidence of memories unused for 30 days and merges near-duplicates into one
    memory that supersedes them (no model: the most complete, most recent member is kept).
    A second pass at once changes nothing."""
    with opened(ctx) as memory:
        name = None if every else require_profile(ctx, memory, profile).name
        report = memory.consolidate(name)
    if as_json:
        return emit_json(report.model_dump(mode="json")
                         | {"changed": report.changed, "decayed": report.decayed,
                            "merged": report.merged})
    out.print(_consolidation_table(report))


def _consolidation_table(report: ConsolidationReport) -> Table:
    table = Table(title=f"Consolidation: {report.decayed} decayed, {report.merged} merged")
    for name in ("profile", "sampled", "decayed", "merged", "retired", "skipped", "note"):
        table.add_column(name, overflow="fold")
    for p in report.profiles:
        note = "busy: another pass ran" if p.busy else \
            "" if p.clustering else "no vector index: decay only"
        table.add_row(p.profile, str(p.sampled), str(len(p.decayed)), str(len(p.merged)),
                      str(len(p.retired)), str(len(p.skipped)), note)
    for p in report.profiles:
        for m in p.merged:
            table.add_row(p.profile, "", "", f"{m.memory_id}: {m.text}",
                          f"{len(m.members)} superseded", "", m.by)
    return table


@app.command()
def reflect(
    ctx: typer.Context,
    profile: ProfileOption = DEFAULT_PROFILE,
    as_json: JsonOption = False,
) -> None:
    """Reflect on a profile's activity since its last reflection (model-free rules).

    Writes a reflection (summary, what worked, what failed), goal updates and learnings;
    nothing when there is nothing new."""
    with opened(ctx) as memory:
        result = require_profile(ctx, memory, profile).reflect()
    if as_json:
        return emit_json(result.model_dump(mode="json") | {"written": result.written})
    _print_reflection(result)


def _print_reflection(result: ReflectionResult) -> None:
    r = result.reflection
    if result.busy:
        out.print(f"Another reflection of {result.profile!r} is running: nothing was done.")
        return
    if r is None:
        out.print(f"Nothing new to reflect on in {result.profile!r} since its last "
                  "reflection.")
        return
    since = r.since.isoformat() if r.since else "the beginning"
    table = Table(title=f"Reflection {r.id} of {result.profile!r} ({since} to "
                        f"{r.until.isoformat()}, by {r.by})", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("", overflow="fold")
    table.add_row("summary", r.summary)
    table.add_row("worked", "\n".join(r.worked) or "-")
    table.add_row("failed", "\n".join(r.failed) or "-")
    table.add_row("reviewed", f"{r.messages_reviewed} messages, {len(r.events)} events, "
                              f"sessions: {', '.join(r.sessions) or '-'}")
    table.add_row("learnings", "\n".join(f"{m.key}: {m.text}" for m in result.learnings)
                  or "-")
    table.add_row("goals", "\n".join(f"{g.title} -> {g.status}" for g in result.goals) or "-")
    out.print(table)
