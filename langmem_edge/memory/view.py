"""Read-only renderings of a profile: as of a past moment, and as Markdown.

:class:`ProfileView` is what ``profile.at(ts)`` returns: recall and listing restricted to the
memories valid at ``ts`` (``valid_from <= ts < valid_until``, not yet superseded or
forgotten at ``ts``), counting no accesses. :func:`plan_summary` is the plan behind
``profile.summary()``. Both read the semantic tier only; composing tiers stays in
:mod:`~langmem_edge.memory.profile`, which sits above this module.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from langmem_edge.memory.core.dates import iso_to_epoch
from langmem_edge.memory.core.plans import Plan, planned
from langmem_edge.memory.core.validate import to_utc
from langmem_edge.memory.index.profile_index import valid_at
from langmem_edge.memory.records import (
    NOT_PROVIDED,
    MemoryPage,
    MemoryRecord,
    RecallResult,
    utcnow,
)
from langmem_edge.memory.semantic.context import ProfileContext, plan_read
from langmem_edge.memory.semantic.edits import plan_list
from langmem_edge.memory.semantic.recall import RecallRequest, plan_recall

__all__ = ["KIND_TITLES", "ProfileView", "plan_summary"]

KIND_TITLES: dict[str, str] = {"fact": "Facts", "instruction": "Instructions",
                               "event": "Events", "task": "Tasks"}
"""The summary's section title of each kind, in the order the sections appear."""


def plan_summary(ctx: ProfileContext) -> Plan[str]:
    """Markdown of the profile's active, unexpired memories: agent-wide ones first, then one
    section per contact; within each, a section per kind (:data:`KIND_TITLES`), newest first,
    at most ``limits.summary_max_per_kind`` each."""
    ctx = yield from plan_read(ctx)
    now = utcnow().timestamp()
    groups: dict[str | None, dict[str, list[dict[str, Any]]]] = defaultdict(
        lambda: defaultdict(list))
    for mid in ctx.index.sorted_ids():
        v = ctx.index.values[mid]
        if v.get("status") == "active" and iso_to_epoch(v.get("valid_until")) > now:
            groups[v.get("contact")][v.get("kind", "fact")].append(v)
    if not groups:
        return f"# Memory of {ctx.profile}\n\nNothing remembered yet.\n"
    cap = ctx.config.limits.summary_max_per_kind
    lines = [f"# Memory of {ctx.profile}", ""]
    for contact in sorted(groups, key=lambda c: (c is not None, c or "")):
        level = "##"
        if contact is not None:
            lines += [f"## Contact: {contact}", ""]
            level = "###"
        for kind, title in KIND_TITLES.items():
            items = groups[contact].get(kind)
            if not items:
                continue
            lines += [f"{level} {title}", ""]
            for v in items[-cap:][::-1]:
                record = ctx.record(v)
                extra = [f"`{record.key}`"] if record.key else []
                extra.append(f"confidence {record.confidence:.2f}")
                lines.append(f"- {record.text} ({', '.join(extra)})")
            if len(items) > cap:
                lines.append(f"- ... and {len(items) - cap} older")
            lines.append("")
    return "\n".join(lines)


class ProfileView:
    """A profile as of a past moment: only memories valid then (``valid_from <= ts <
    valid_until``, not yet superseded or forgotten at ``ts``). Read-only; recalls made
    through it do not count as accesses. Get one with ``profile.at(ts)``."""

    def __init__(self, ctx: ProfileContext, timestamp: datetime) -> None:
        self._ctx = ctx
        self.timestamp = timestamp
        """The moment the view shows (UTC)."""

    def __repr__(self) -> str:
        return f"ProfileView({self._ctx.profile!r}, {self.timestamp.isoformat()!r})"

    @planned
    def recall(
        self,
        query: str,
        *,
        limit: int | None = None,
        contact: str | None = None,
        kind: str | Sequence[str] | None = None,
        writer: str | None = None,
        tags: Sequence[str] = (),
        scorer: str = "rrf",
        reference_date: datetime | str | float | None = None,
        session_id: str | None = None,
        fill: bool | None = None,
    ) -> Plan[RecallResult]:
        """:meth:`Profile.recall` as of the view's moment."""
        req = RecallRequest(query=query, limit=limit, contact=contact, kind=kind, writer=writer,
                            tags=tags, scorer=scorer,
                            reference_date=to_utc(reference_date, "reference_date"),
                            session_id=session_id, fill=fill, as_of=self.timestamp)
        return plan_recall(self._ctx, req)

    arecall = recall.twin

    def _list_plan(self, kind: str | None, limit: int | None, cursor: str | None, status: str,
                   contact: Any, writer: str | None, session_id: str | None,
                   newest_first: bool) -> Plan[MemoryPage]:
        return plan_list(self._ctx, kind=kind, limit=limit, cursor=cursor, status=status,
                         contact=contact, writer=writer, session_id=session_id,
                         newest_first=newest_first, as_of=self.timestamp.timestamp())

    @planned
    def list(
        self,
        kind: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        *,
        status: str = "active",
        contact: Any = NOT_PROVIDED,
        writer: str | None = None,
        session_id: str | None = None,
        newest_first: bool = False,
    ) -> Plan[MemoryPage]:
        """The memories valid at the view's moment, paged like :meth:`Profile.list`
        (``status`` is ignored: validity at the moment decides)."""
        return self._list_plan(kind, limit, cursor, status, contact, writer,
                               session_id, newest_first)

    alist = list.twin

    def is_valid(self, record: MemoryRecord) -> bool:
        """Whether ``record`` was valid at the view's moment."""
        return valid_at(record.to_value(), self.timestamp.timestamp())
