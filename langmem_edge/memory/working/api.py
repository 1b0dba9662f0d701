"""``profile.working``: the working tier (L1) of one profile, thread by thread.

::

    w = memory.profile("user:alice").working
    w.set_context("t1", "user wants a PDF", mode="append")
    w.set_ongoing_task("t1", "book a flight", steps=["search", "pay"])
    w.record_tool_call("t1", "call_1", "search", {"q": "LIS"}, "3 flights found")
    turn = w.unfinished_turn("t1")          # TurnRecord, or None
    turn.stale                              # untouched for 45 s: resume from its results
    w.finish_turn("t1")                     # the final assistant message is saved

Every method has an async twin (``aset_context``, ...); both run one plan of
:mod:`~langmem_edge.memory.working.tier`. The clock is injectable (``with_clock``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from langgraph.store.base import NOT_PROVIDED, BaseStore, NotProvided

from langmem_edge.memory.config import WorkingConfig
from langmem_edge.memory.core.layout import ProfileLayout
from langmem_edge.memory.core.plans import Plan, planned
from langmem_edge.memory.working.tier import (
    CallStatus,
    NotesMode,
    OngoingTask,
    TaskStatus,
    ThreadState,
    TurnRecord,
    TurnRow,
    WorkingScope,
    plan_clear_task,
    plan_delete_thread,
    plan_finish,
    plan_get_notes,
    plan_get_task,
    plan_record,
    plan_set_notes,
    plan_set_task,
    plan_sweep,
    plan_thread_state,
    plan_threads,
    plan_unfinished,
)

__all__ = ["ProfileWorking"]


class ProfileWorking:
    """The working tier of one profile (get it with ``profile.working``)."""

    def __init__(self, store: BaseStore, layout: ProfileLayout, config: WorkingConfig, *,
                 clock: Callable[[], float] = time.time) -> None:
        self._scope = WorkingScope(store=store, layout=layout, config=config, clock=clock)

    def __repr__(self) -> str:
        return f"ProfileWorking({self._scope.layout.profile!r})"

    def with_clock(self, clock: Callable[[], float]) -> ProfileWorking:
        """The same tier read and written with ``clock`` (epoch seconds) as the time."""
        s = self._scope
        return ProfileWorking(s.store, s.layout, s.config, clock=clock)

    @planned
    def threads(self) -> Plan[list[str]]:
        """The threads the working tier holds anything for (notes, a task, turn rows),
        sorted."""
        return plan_threads(self._scope)

    athreads = threads.twin

    # -- working notes -----------------------------------------------------------------------

    @planned
    def get_context(self, thread: str) -> Plan[str]:
        """The thread's working notes (``""`` when none)."""
        return plan_get_notes(self._scope, thread)

    aget_context = get_context.twin

    @planned
    def set_context(self, thread: str, notes: str = "", *, mode: NotesMode = "replace"
                    ) -> Plan[str]:
        """Replace (``mode="replace"``), add a line to (``"append"``) or clear (``"clear"``)
        the thread's working notes; returns the notes now."""
        return plan_set_notes(self._scope, thread, notes, mode)

    aset_context = set_context.twin

    # -- the ongoing task --------------------------------------------------------------------

    @planned
    def set_ongoing_task(self, thread: str, description: str, *, steps: Sequence[str] = (),
                         status: TaskStatus = "in_progress") -> Plan[OngoingTask]:
        """Set the thread's ongoing task (replacing any): a description, its steps and a
        status (pending, in_progress, blocked or done)."""
        return plan_set_task(self._scope, thread, description, steps, status)

    aset_ongoing_task = set_ongoing_task.twin

    @planned
    def get_ongoing_task(self, thread: str) -> Plan[OngoingTask | None]:
        """The thread's ongoing task, or ``None``."""
        return plan_get_task(self._scope, thread)

    aget_ongoing_task = get_ongoing_task.twin

    @planned
    def clear_ongoing_task(self, thread: str) -> Plan[bool]:
        """Clear the thread's ongoing task; ``False`` if there was none."""
        return plan_clear_task(self._scope, thread)

    aclear_ongoing_task = clear_ongoing_task.twin

    # -- turn records ------------------------------------------------------------------------

    @planned
    def record_tool_call(self, thread: str, call_id: str, name: str,
                         args: dict[str, Any] | None, result_preview: str,
                         open_resources: Sequence[str] = (), *,
                         status: CallStatus = "success") -> Plan[TurnRow]:
        """Record one tool call of the thread's current turn (its own row: concurrent calls
        never lose each other's), in one write and no read. The preview is cut to
        ``preview_chars`` (3,000); a turn is cut to its newest ``max_turn_rows`` (40) when
        it is read; ``open_resources`` are ids of what the tool left open (a browser
        session, a file, a job); ``status`` is how the call ended (``"error"`` when its
        ``ToolMessage`` says so)."""
        return plan_record(self._scope, thread, call_id, name, args, result_preview,
                           open_resources, status)

    arecord_tool_call = record_tool_call.twin

    @planned
    def unfinished_turn(self, thread: str) -> Plan[TurnRecord | None]:
        """The thread's unfinished turn, or ``None`` (none, finished, or expired: rows
        older than ``expire_after_seconds`` (24 h) are deleted when read)."""
        return plan_unfinished(self._scope, thread)

    aunfinished_turn = unfinished_turn.twin

    @planned
    def thread_state(self, thread: str) -> Plan[ThreadState]:
        """The thread's notes, ongoing task and unfinished turn in one read (one store call
        while the thread holds fewer than 500 items): what a model call needs, for the
        price of one of :meth:`get_context`, :meth:`get_ongoing_task`,
        :meth:`unfinished_turn`."""
        return plan_thread_state(self._scope, thread)

    athread_state = thread_state.twin

    @planned
    def finish_turn(self, thread: str, *,
                    seen: TurnRecord | None | NotProvided = NOT_PROVIDED) -> Plan[int]:
        """Delete the thread's turn record (call it when the turn's final assistant message
        is saved); returns the rows deleted. ``seen``: the record as read (``thread_state``
        / ``unfinished_turn``) since the thread's last tool call, so nothing was recorded
        after it: its rows are deleted in one write without reading them again (``None``:
        there was none, nothing to do)."""
        return plan_finish(self._scope, thread, seen)

    afinish_turn = finish_turn.twin

    @planned
    def sweep(self) -> Plan[int]:
        """Delete the expired turn rows of every thread of the profile (for stores without
        TTL); returns how many."""
        return plan_sweep(self._scope)

    asweep = sweep.twin

    @planned
    def delete_thread(self, thread: str) -> Plan[int]:
        """Delete everything the working tier holds for ``thread``; returns items deleted."""
        return plan_delete_thread(self._scope, thread)

    adelete_thread = delete_thread.twin
