"""The semantic tier's reads and edits of single records, as plans: ``get`` (with its
access count), ``update`` (a new version that supersedes the old one, so edits show in
``history``), ``forget`` (kept, never recalled), ``delete``, ``end_session``, ``history``
and ``list``. Writing a new memory is :mod:`.write`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.store.base import GetOp, SearchOp

from langmem_edge.errors import (
    InvalidInputError,
    LimitExceededError,
    NotFoundError,
)
from langmem_edge.memory.core.dates import iso_to_epoch
from langmem_edge.memory.core.plans import Plan, batch
from langmem_edge.memory.core.validate import (
    check_text,
)
from langmem_edge.memory.index.profile_index import count_entries, valid_at
from langmem_edge.memory.index.store_io import LOAD_LIMIT, plan_write_records
from langmem_edge.memory.records import (
    KINDS,
    LIVE,
    NOT_PROVIDED,
    MemoryPage,
    MemoryRecord,
    scope_of,
    utcnow,
)
from langmem_edge.memory.semantic.context import ProfileContext, plan_read
from langmem_edge.memory.semantic.write import (
    MAX_NAME_CHARS,
    WriteSpec,
    plan_write,
)

__all__ = ["plan_delete", "plan_end_session", "plan_forget", "plan_get", "plan_history",
           "plan_list", "plan_update"]

MAX_COUNT_WRITERS = 10_000
"""Access-count items (one per writer) read for one memory at most."""

UPDATABLE = frozenset(
    {"text", "key", "kind", "fact_type", "confidence", "tags", "metadata", "valid_from",
     "valid_until"}
)
"""Fields ``update`` may change (the rest is carried over)."""


def _plan_fresh(ctx: ProfileContext, memory_id: str) -> Plan[dict[str, Any] | None]:
    if not isinstance(memory_id, str) or not memory_id:
        raise InvalidInputError(f"memory_id must be a non-empty string, got {memory_id!r}")
    (item,) = yield batch(ctx.store, [GetOp(ctx.layout.memories, memory_id)])
    if item is None or item.value.get("profile") != ctx.profile:
        return None
    return dict(item.value)


def plan_get(ctx: ProfileContext, memory_id: str) -> Plan[MemoryRecord | None]:
    """One memory of this profile by id (any status), or ``None``; its access count read
    fresh too (every process's count items)."""
    if not isinstance(memory_id, str) or not memory_id:
        raise InvalidInputError(f"memory_id must be a non-empty string, got {memory_id!r}")
    item, rows = yield batch(ctx.store, [
        GetOp(ctx.layout.memories, memory_id),
        SearchOp(ctx.layout.access_by_writer, limit=MAX_COUNT_WRITERS)])
    if item is None or item.value.get("profile") != ctx.profile:
        return None
    ctx = ctx.fresh()
    entries = count_entries(rows, ctx.profile).get(memory_id, [])
    ctx.index.set_counts(memory_id, entries)
    return ctx.record(dict(item.value))


def plan_update(ctx: ProfileContext, memory_id: str, changes: dict[str, Any]
                ) -> Plan[MemoryRecord]:
    """A new version of an active memory with ``changes``; it supersedes the old one."""
    unknown = set(changes) - UPDATABLE
    if unknown:
        raise InvalidInputError(f"cannot update {sorted(unknown)}; updatable: {sorted(UPDATABLE)}")
    value = yield from _plan_fresh(ctx, memory_id)
    if value is None:
        raise NotFoundError(f"no memory {memory_id!r} in profile {ctx.profile!r}")
    if value.get("status") != "active":
        raise InvalidInputError(
            f"memory {memory_id} is {value.get('status')}"
            + (f" (by {value.get('superseded_by')})" if value.get("superseded_by") else "")
            + "; only the active version can be updated"
        )
    old = ctx.record(value)
    # valid_from is not carried: the new version is valid from now, so at(ts) shows the old
    # version before the edit and the new one after it.
    fields = {f: getattr(old, f) for f in UPDATABLE - {"valid_from"}}
    if "kind" in changes and "fact_type" not in changes:
        fields["fact_type"] = None
    fields.update(changes)
    spec = WriteSpec(
        source=old.source, writer=old.writer, contact=old.contact, session_id=old.session_id,
        encrypted=old.encrypted,
        extra={"access_count": old.access_count, "last_accessed_at": old.last_accessed_at},
        **fields,
    )
    return (yield from plan_write(ctx, spec, verify=False, supersede=[memory_id]))


def plan_forget(ctx: ProfileContext, memory_id: str, reason: str | None) -> Plan[MemoryRecord]:
    """Mark a memory forgotten: kept in the store and in ``history``, never recalled."""
    if reason is not None:
        check_text(reason, "reason", ctx.config.limits.max_text_chars, allow_empty=True)
    ctx = ctx.fresh()
    value = yield from _plan_fresh(ctx, memory_id)
    if value is None:
        raise NotFoundError(f"no memory {memory_id!r} in profile {ctx.profile!r}")
    if value.get("status") != "forgotten":
        stamp = utcnow().isoformat()
        value.update({"status": "forgotten", LIVE: None, "forgotten_at": stamp,
                      "forgotten_reason": reason, "updated_at": stamp})
        # deleted meanwhile by another process: it stays deleted
        yield from plan_write_records(ctx.store, ctx.index,
                                      rewrites=[(value, False)])
    return ctx.record(value)


def plan_delete(ctx: ProfileContext, memory_ids: Sequence[str]
                ) -> Plan[list[dict[str, Any]]]:
    """Remove memories for good; returns the stored values of those that existed."""
    for mid in memory_ids:
        if not isinstance(mid, str) or not mid:
            raise InvalidInputError(f"memory_id must be a non-empty string, got {mid!r}")
    if not memory_ids:
        return []
    ctx = ctx.fresh()
    got = yield batch(ctx.store, [GetOp(ctx.layout.memories, mid) for mid in memory_ids])
    found = [dict(it.value) for it in got
             if it is not None and it.value.get("profile") == ctx.profile]
    if found:
        yield from plan_write_records(ctx.store, ctx.index, deletes=[v["id"] for v in found])
    return found


def plan_end_session(ctx: ProfileContext, session_id: str) -> Plan[int]:
    """Mark the task memories of a session as ended (they rank lower); returns how many."""
    check_text(session_id, "session_id", MAX_NAME_CHARS)
    ctx = ctx.fresh()
    (got,) = yield batch(ctx.store, [SearchOp(
        ctx.layout.memories, filter={"kind": "task", "session_id": session_id},
        limit=LOAD_LIMIT)])
    stamp = utcnow().isoformat()
    values = [{**item.value, "session_ended_at": stamp, "updated_at": stamp}
              for item in got if item.value.get("profile") == ctx.profile
              and item.value.get("id") == item.key and item.value.get("kind") == "task"
              and item.value.get("session_id") == session_id
              and not item.value.get("session_ended_at")]
    if not values:
        return 0
    gone = yield from plan_write_records(ctx.store, ctx.index,
                                         rewrites=[(v, False) for v in values])
    return len(values) - len(gone)


def plan_history(ctx: ProfileContext, key_or_id: str, contact: Any = NOT_PROVIDED
                 ) -> Plan[list[MemoryRecord]]:
    """The supersession chain of a key (or of the memory with that id), oldest first.

    Starts from every record under the key (in ``contact``'s scope when given, all scopes
    otherwise) or from the memory with that id, and follows ``supersedes`` / ``superseded_by``
    both ways, so versions written under another key or by verification are included.
    """
    check_text(key_or_id, "key", ctx.config.limits.max_key_chars)
    ctx = yield from plan_read(ctx)
    values = ctx.index.values
    scope = None if contact is NOT_PROVIDED else scope_of(contact)
    start = set(ctx.index.key_ids(key_or_id, scope))
    if not start and key_or_id in values:
        start = {key_or_id}
    seen: set[str] = set()
    todo = list(start)
    while todo:
        mid = todo.pop()
        if mid in seen or mid not in values:
            continue
        seen.add(mid)
        v = values[mid]
        todo.extend(v.get("supersedes") or ())
        if v.get("superseded_by"):
            todo.append(v["superseded_by"])
    chain = sorted(seen, key=lambda m: (iso_to_epoch(values[m].get("created_at"), 0.0), m))
    return [ctx.record(values[m]) for m in chain]


def plan_list(
    ctx: ProfileContext,
    *,
    kind: str | None,
    limit: int | None,
    cursor: str | None,
    status: str,
    contact: Any,
    writer: str | None,
    session_id: str | None,
    newest_first: bool,
    as_of: float | None = None,
) -> Plan[MemoryPage]:
    """One page of memories matching the filters, in creation order.

    With ``as_of`` (epoch seconds), the page holds the memories valid at that moment
    (``valid_from <= as_of < valid_until``, not yet superseded or forgotten) and ``status``
    is ignored.
    """
    limits = ctx.config.limits
    limit = limits.default_list_page if limit is None else limit
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidInputError(f"limit must be a positive integer, got {limit!r}")
    if limit > limits.max_list_page:
        raise LimitExceededError(f"limit is {limit}; list pages hold at most "
                                 f"{limits.max_list_page}")
    if kind is not None and kind not in KINDS:
        raise InvalidInputError(f"unknown kind {kind!r}; allowed: {list(KINDS)}")
    if status not in ("active", "superseded", "forgotten", "all"):
        raise InvalidInputError(
            f"unknown status {status!r}; allowed: active, superseded, forgotten, all"
        )
    if cursor is not None and not isinstance(cursor, str):
        raise InvalidInputError("cursor must be a string returned by list()")
    ctx = yield from plan_read(ctx)
    values = ctx.index.values
    scope = None if contact is NOT_PROVIDED else scope_of(contact)
    ids = ctx.index.sorted_ids()
    if newest_first:
        ids = ids[::-1]
    page: list[dict[str, Any]] = []
    more = False
    for mid in ids:
        if cursor is not None and (mid >= cursor if newest_first else mid <= cursor):
            continue
        v = values.get(mid)
        if v is None:
            continue
        if as_of is not None:
            if not valid_at(v, as_of):
                continue
        elif status != "all" and v.get("status") != status:
            continue
        if (kind is not None and v.get("kind") != kind) or (
            scope is not None and v.get("scope") != scope
        ):
            continue
        if (writer is not None and v.get("writer") != writer) or (
            session_id is not None and v.get("session_id") != session_id
        ):
            continue
        if len(page) == limit:
            more = True
            break
        page.append(v)
    records = [ctx.record(v) for v in page]
    return MemoryPage(memories=records, next_cursor=records[-1].id if more else None)

