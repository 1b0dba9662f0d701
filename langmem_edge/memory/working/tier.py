"""The working tier's plans: notes, the ongoing task and turn records of one thread.

Everything of a thread lives in one namespace, ``(*R, "working", thread)``
(:meth:`~langmem_edge.memory.core.layout.ProfileLayout.working`), one item per thing::

    key "notes"            {"record": "notes", "notes": ...}
    key "note+:<at>:<id>"  {"record": "notes+", "line": ...}     one appended line
    key "task"             {"record": "task", "description": ..., "steps": [...], "status": ...}
    key "turn:<call id>"   {"record": "turn", "name": ..., "args": ..., "result_preview": ...}

Every value also carries ``profile``, ``thread`` and ``at`` (epoch seconds from the tier's
clock); reads skip values whose ``profile`` or ``thread`` is not theirs. A turn is the set of
its ``turn:`` rows: each tool call writes its own item, so tool calls of one round that run
at once never overwrite each other, and a re-run of the same call (same id) rewrites its row
instead of adding one. Rows expire ``expire_after_seconds`` after they were written: through
the store's TTL when it has one, and on every read (expired rows are not returned and are
deleted) and by :func:`plan_sweep` otherwise.

These are plans (:mod:`~langmem_edge.memory.core.plans`): the accessor in
:mod:`~langmem_edge.memory.working.api` runs each one sync or async.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from langgraph.store.base import NOT_PROVIDED, BaseStore, GetOp, Item, NotProvided, PutOp, SearchOp

from langmem_edge.errors import InvalidInputError, LimitExceededError
from langmem_edge.memory.config import WorkingConfig
from langmem_edge.memory.core.labels import (
    check_label,
    plan_child_labels,
    plan_delete_prefix,
    plan_scan,
)
from langmem_edge.memory.core.layout import ProfileLayout
from langmem_edge.memory.core.plans import Plan, batch
from langmem_edge.memory.core.validate import check_metadata, check_text

__all__ = [
    "CALL_STATUSES",
    "CallStatus",
    "NotesMode",
    "OngoingTask",
    "TASK_STATUSES",
    "TaskStatus",
    "ThreadState",
    "TurnRecord",
    "TurnRow",
    "WorkingScope",
]

NotesMode = Literal["replace", "append", "clear"]
TaskStatus = Literal["pending", "in_progress", "blocked", "done"]
TASK_STATUSES: tuple[str, ...] = ("pending", "in_progress", "blocked", "done")
CallStatus = Literal["success", "error"]
CALL_STATUSES: tuple[str, ...] = ("success", "error")
"""How a recorded tool call ended: its ``ToolMessage.status``."""
"""The statuses an ongoing task may have."""
NOTES_MODES: tuple[str, ...] = ("replace", "append", "clear")

NOTES_KEY = "notes"
TASK_KEY = "task"
TURN_PREFIX = "turn:"
SCAN_PAGE = 500
"""Rows read per page when listing a turn or sweeping."""


def _dt(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


@dataclass(frozen=True)
class TurnRow:
    """One tool call of the current turn."""

    call_id: str
    name: str
    args: dict[str, Any]
    result_preview: str
    truncated: bool
    """Whether ``result_preview`` was cut to the config's ``preview_chars``."""
    open_resources: tuple[str, ...]
    recorded_at: datetime
    status: CallStatus = "success"
    """The tool's ``ToolMessage.status``: a resumed turn replays an error as an error."""


@dataclass(frozen=True)
class TurnRecord:
    """The unfinished turn of a thread: its tool calls so far, oldest first."""

    thread: str
    rows: tuple[TurnRow, ...]
    started_at: datetime
    touched_at: datetime
    """When the newest row was written."""
    resume_after: float
    clock: Callable[[], float] = field(repr=False, compare=False)

    @property
    def open_resources(self) -> tuple[str, ...]:
        """The resource ids the turn's tools reported open (browser sessions, files, jobs),
        in the order first reported."""
        return tuple(dict.fromkeys(r for row in self.rows for r in row.open_resources))

    def touched_within(self, seconds: float) -> bool:
        """Whether a row was written within the last ``seconds`` (by the tier's clock)."""
        return self.clock() - self.touched_at.timestamp() <= seconds

    @property
    def stale(self) -> bool:
        """Untouched for longer than ``resume_after_seconds`` (45 s): a turn to resume from
        its results rather than one still running."""
        return not self.touched_within(self.resume_after)


@dataclass(frozen=True)
class OngoingTask:
    """The task a thread is working on."""

    description: str
    steps: tuple[str, ...]
    status: str
    updated_at: datetime


@dataclass(frozen=True)
class ThreadState:
    """Everything the working tier holds for one thread, read at once
    (:func:`plan_thread_state`): what a model call shows (notes, task) and what ends its
    turn (the record)."""

    notes: str
    """The working notes (``""`` when none)."""
    task: OngoingTask | None
    """The ongoing task, or ``None``."""
    turn: TurnRecord | None
    """The unfinished turn, or ``None``."""


@dataclass(frozen=True)
class WorkingScope:
    """What every working-tier plan needs: the store, the profile's layout, the config and
    the clock (epoch seconds; inject one in tests)."""

    store: BaseStore
    layout: ProfileLayout
    config: WorkingConfig
    clock: Callable[[], float]

    def namespace(self, thread: Any) -> tuple[str, ...]:
        """The thread's namespace, the thread id checked as a namespace label."""
        check_label(thread, "thread_id", self.config.max_name_chars, allow_blank=True)
        return self.layout.working(thread)

    def mine(self, item: Item | None, thread: str, record: str) -> bool:
        return (item is not None and item.value.get("profile") == self.layout.profile
                and item.value.get("thread") == thread and item.value.get("record") == record)

    def stamp(self, thread: str, record: str) -> dict[str, Any]:
        return {"record": record, "profile": self.layout.profile, "thread": thread,
                "at": float(self.clock())}


# -- notes and the ongoing task ----------------------------------------------------------------


def _notes_of(scope: WorkingScope, thread: str, base: Item | None,
              lines: Sequence[Item]) -> tuple[str, list[Item]]:
    """The notes from their base item and appended lines, and those lines' items (oldest
    first)."""
    ns = scope.namespace(thread)
    appended = sorted((it for it in lines if tuple(it.namespace) == ns
                       and scope.mine(it, thread, "notes+")),
                      key=lambda it: (it.value["at"], it.key))
    parts = [str(base.value.get("notes", ""))] if scope.mine(base, thread, "notes") else []
    parts += [str(it.value.get("line", "")) for it in appended]
    return "\n".join(p for p in parts if p), appended


def _lines_op(ns: tuple[str, ...]) -> SearchOp:
    """The search of a thread's appended note lines (their first page)."""
    return SearchOp(ns, filter={"record": "notes+"}, limit=SCAN_PAGE)


def _plan_notes(scope: WorkingScope, thread: str) -> Plan[tuple[str, list[Item]]]:
    """The notes now, and the appended lines' items (oldest first)."""
    ns = scope.namespace(thread)
    base, lines = yield batch(scope.store, [GetOp(ns, NOTES_KEY), _lines_op(ns)])
    return _notes_of(scope, thread, base, lines)


def plan_get_notes(scope: WorkingScope, thread: str) -> Plan[str]:
    """Plan: the thread's working notes (``""`` when there are none)."""
    notes, _ = yield from _plan_notes(scope, thread)
    return notes


def plan_set_notes(scope: WorkingScope, thread: str, notes: str, mode: str) -> Plan[str]:
    """Plan: replace, append to or clear the thread's notes; returns the notes now.

    An append writes its own item (``note+:...``), so appends made at once (two tool calls
    of one round) never lose each other; a replace or a clear folds them away."""
    ns = scope.namespace(thread)
    if mode not in NOTES_MODES:
        raise InvalidInputError(f"mode must be one of {', '.join(NOTES_MODES)}, got {mode!r}")
    limit = scope.config.max_notes_chars
    if mode != "clear":
        check_text(notes, "notes", limit, allow_empty=mode == "replace")
    if mode != "append":  # folds the appended lines away: they are all it reads
        lines = yield batch(scope.store, [_lines_op(ns)])
        _, appended = _notes_of(scope, thread, None, lines[0])
        base = (PutOp(ns, NOTES_KEY, None) if mode == "clear" else PutOp(
            ns, NOTES_KEY, {**scope.stamp(thread, "notes"), "notes": notes}, index=False))
        yield batch(scope.store, [base, *(PutOp(ns, it.key, None) for it in appended)])
        return "" if mode == "clear" else notes
    old, _ = yield from _plan_notes(scope, thread)
    now = f"{old}\n{notes}" if old else notes
    if len(now) > limit:
        raise LimitExceededError(
            f"notes would be {len(now):,} characters after appending; at most {limit:,}")
    value = {**scope.stamp(thread, "notes+"), "line": notes}
    key = f"note+:{value['at']:.6f}:{uuid.uuid4().hex}"
    yield batch(scope.store, [PutOp(ns, key, value, index=False)])
    return now


def _task(item: Item) -> OngoingTask:
    v = item.value
    return OngoingTask(description=str(v.get("description", "")),
                       steps=tuple(str(s) for s in v.get("steps") or ()),
                       status=str(v.get("status", "in_progress")), updated_at=_dt(v["at"]))


def plan_get_task(scope: WorkingScope, thread: str) -> Plan[OngoingTask | None]:
    """Plan: the thread's ongoing task, or ``None``."""
    ns = scope.namespace(thread)
    (item,) = yield from _get(scope, ns, TASK_KEY)
    return _task(item) if scope.mine(item, thread, "task") else None


def plan_set_task(scope: WorkingScope, thread: str, description: str, steps: Sequence[str],
                  status: str) -> Plan[OngoingTask]:
    """Plan: set the thread's ongoing task (replacing any); returns it."""
    ns = scope.namespace(thread)
    cfg = scope.config
    check_text(description, "description", cfg.max_notes_chars)
    if isinstance(steps, str) or not isinstance(steps, Sequence):
        raise InvalidInputError(f"steps must be a list of strings, got {type(steps).__name__}")
    if len(steps) > cfg.max_task_steps:
        raise LimitExceededError(f"{len(steps)} steps; at most {cfg.max_task_steps}")
    for step in steps:
        check_text(step, "step", cfg.max_notes_chars)
    if status not in TASK_STATUSES:
        raise InvalidInputError(
            f"status must be one of {', '.join(TASK_STATUSES)}, got {status!r}")
    value = {**scope.stamp(thread, "task"), "description": description,
             "steps": list(steps), "status": status}
    yield batch(scope.store, [PutOp(ns, TASK_KEY, value, index=False)])
    return _task(Item(value=value, key=TASK_KEY, namespace=ns, created_at=_dt(value["at"]),
                      updated_at=_dt(value["at"])))


def plan_clear_task(scope: WorkingScope, thread: str) -> Plan[bool]:
    """Plan: clear the thread's ongoing task; ``False`` if there was none."""
    had = yield from plan_get_task(scope, thread)
    if had is not None:
        yield batch(scope.store, [PutOp(scope.namespace(thread), TASK_KEY, None)])
    return had is not None


def _get(scope: WorkingScope, ns: tuple[str, ...], key: str) -> Plan[list[Item | None]]:
    found: list[Item | None] = yield batch(scope.store, [GetOp(ns, key)])
    return found


# -- turn records --------------------------------------------------------------------------------


def _check_resources(value: Any, max_chars: int) -> list[str]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidInputError(
            f"open_resources must be a list of ids, got {type(value).__name__}")
    return [check_text(r, "open resource id", max_chars) for r in dict.fromkeys(value)]


def _ttl(scope: WorkingScope) -> float | None:
    if not scope.store.supports_ttl:
        return None
    return math.ceil(scope.config.expire_after_seconds / 60.0)


def _expired(scope: WorkingScope, value: dict[str, Any]) -> bool:
    at = value.get("at")
    return (not isinstance(at, int | float)
            or scope.clock() - at >= scope.config.expire_after_seconds)


def _plan_scan(scope: WorkingScope, thread: str, filter: dict[str, Any] | None
               ) -> Plan[list[Item]]:
    """Every item of the thread's own namespace matching ``filter`` (:func:`plan_scan`)."""
    ns = scope.namespace(thread)
    items = yield from plan_scan(scope.store, ns, page=SCAN_PAGE, filter=filter)
    return [it for it in items if tuple(it.namespace) == ns]


def _plan_live(scope: WorkingScope, thread: str, items: Sequence[Item]) -> Plan[list[Item]]:
    """The thread's live turn rows among ``items``, oldest first, the newest
    ``max_turn_rows`` of them; expired and surplus rows are deleted on the way (one write,
    none when there are none)."""
    rows = [it for it in items if scope.mine(it, thread, "turn")]
    live = sorted((it for it in rows if not _expired(scope, it.value)),
                  key=lambda it: (it.value["at"], it.key))
    keep = live[max(0, len(live) - scope.config.max_turn_rows):]
    kept = {it.key for it in keep}
    dead = [it for it in rows if it.key not in kept]
    if dead:
        ns = scope.namespace(thread)
        yield batch(scope.store, [PutOp(ns, it.key, None) for it in dead])
    return keep


def _plan_rows(scope: WorkingScope, thread: str) -> Plan[list[Item]]:
    """The thread's live turn rows, oldest first; expired and surplus ones are deleted on
    the way."""
    items = yield from _plan_scan(scope, thread, {"record": "turn"})
    return (yield from _plan_live(scope, thread, items))


def plan_record(scope: WorkingScope, thread: str, call_id: str, name: str, args: Any,
                result_preview: str, open_resources: Sequence[str],
                status: CallStatus = "success") -> Plan[TurnRow]:
    """Plan: write one tool call's row (one put, no read). The ``max_turn_rows`` cap is
    applied when the turn is read (:func:`plan_unfinished`, :func:`plan_thread_state`), which
    deletes the surplus; until then a round of more calls keeps them all (each row expires
    with its TTL, 24 h)."""
    ns = scope.namespace(thread)
    cfg = scope.config
    check_text(call_id, "call_id", cfg.max_name_chars)
    check_text(name, "tool name", cfg.max_name_chars)
    args = check_metadata(args, cfg.max_args_bytes, "args")
    if not isinstance(result_preview, str):
        raise InvalidInputError(
            f"result_preview must be a string, got {type(result_preview).__name__}")
    resources = _check_resources(open_resources, cfg.max_name_chars)
    if status not in CALL_STATUSES:
        raise InvalidInputError(f"status must be one of {CALL_STATUSES}, got {status!r}")
    preview = result_preview[: cfg.preview_chars]
    value = {**scope.stamp(thread, "turn"), "call_id": call_id, "name": name, "args": args,
             "result_preview": preview, "truncated": len(preview) < len(result_preview),
             "open_resources": resources, "status": status}
    yield batch(scope.store, [PutOp(ns, TURN_PREFIX + call_id, value, index=False,
                                    ttl=_ttl(scope))])
    return _row(value)


def _row(v: dict[str, Any]) -> TurnRow:
    return TurnRow(call_id=v["call_id"], name=v["name"], args=dict(v.get("args") or {}),
                   result_preview=v.get("result_preview", ""),
                   truncated=bool(v.get("truncated")),
                   open_resources=tuple(v.get("open_resources") or ()),
                   recorded_at=_dt(v["at"]),
                   status="error" if v.get("status") == "error" else "success")


def _record_of(scope: WorkingScope, thread: str, rows: Sequence[Item]) -> TurnRecord | None:
    if not rows:
        return None
    return TurnRecord(thread=thread, rows=tuple(_row(it.value) for it in rows),
                      started_at=_dt(rows[0].value["at"]),
                      touched_at=_dt(rows[-1].value["at"]),
                      resume_after=scope.config.resume_after_seconds, clock=scope.clock)


def plan_unfinished(scope: WorkingScope, thread: str) -> Plan[TurnRecord | None]:
    """Plan: the thread's unfinished turn (its live rows, the newest ``max_turn_rows``), or
    ``None``."""
    rows = yield from _plan_rows(scope, thread)
    return _record_of(scope, thread, rows)


def plan_thread_state(scope: WorkingScope, thread: str) -> Plan[ThreadState]:
    """Plan: the thread's notes, ongoing task and unfinished turn from one search of its
    namespace (one store call while the thread holds fewer than :data:`SCAN_PAGE` items),
    where reading them one by one takes four."""
    items = yield from _plan_scan(scope, thread, None)
    by_key = {it.key: it for it in items}
    notes, _ = _notes_of(scope, thread, by_key.get(NOTES_KEY),
                         [it for it in items if it.key.startswith("note+:")])
    task = by_key.get(TASK_KEY)
    rows = yield from _plan_live(scope, thread,
                                 [it for it in items if it.key.startswith(TURN_PREFIX)])
    return ThreadState(notes=notes,
                       task=_task(task) if task and scope.mine(task, thread, "task") else None,
                       turn=_record_of(scope, thread, rows))


def plan_finish(scope: WorkingScope, thread: str,
                seen: TurnRecord | None | NotProvided = NOT_PROVIDED) -> Plan[int]:
    """Plan: delete the thread's turn record (its final message is saved); rows deleted.

    With ``seen`` (default ``NOT_PROVIDED``: read the record now), the record as read
    earlier in the same step, when no tool call of the thread can have been recorded
    since: its rows are deleted by key in one write (none when ``seen`` is ``None``),
    without a read."""
    ns = scope.namespace(thread)
    if not isinstance(seen, NotProvided):
        rows = seen.rows if isinstance(seen, TurnRecord) else ()
        if rows:
            yield batch(scope.store, [PutOp(ns, TURN_PREFIX + r.call_id, None) for r in rows])
        return len(rows)
    return (yield from plan_delete_prefix(
        scope.store, ns, page=SCAN_PAGE, filter={"record": "turn"},
        doomed=lambda it: tuple(it.namespace) == ns and it.key.startswith(TURN_PREFIX)))


def plan_sweep(scope: WorkingScope) -> Plan[int]:
    """Plan: delete every expired turn row of the profile, in every thread; rows deleted."""
    return (yield from plan_delete_prefix(
        scope.store, scope.layout.working(), page=SCAN_PAGE, filter={"record": "turn"},
        doomed=lambda it: it.key.startswith(TURN_PREFIX) and _expired(scope, it.value)))


def plan_delete_thread(scope: WorkingScope, thread: str) -> Plan[int]:
    """Plan: delete everything the working tier holds for a thread; items deleted."""
    return (yield from plan_delete_prefix(scope.store, scope.namespace(thread),
                                          page=SCAN_PAGE))


def plan_threads(scope: WorkingScope) -> Plan[list[str]]:
    """Plan: the threads of the profile that hold anything (notes, a task, turn rows),
    sorted. Listed namespaces are checked for an item of this profile: some stores
    (``InMemoryStore``) keep listing a namespace whose items were all deleted."""
    root = scope.layout.working()
    names = yield from plan_child_labels(scope.store, root, page=SCAN_PAGE)
    if not names:
        return []
    found = yield batch(scope.store, [SearchOp((*root, n), limit=1) for n in names])
    return [n for n, items in zip(names, found, strict=True)
            if any(it.value.get("profile") == scope.layout.profile for it in items)]
