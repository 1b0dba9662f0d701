"""Access counts of recalled memories: each process writes its own cumulative counts of a
profile's memories to its own row (``layout.access_by_writer``, key = its writer id), never
a memory's record (so a count cannot bring a deleted memory back). One row per process and
profile, whatever the number of memories recalled: a read of the profile returns a row per
writer, not one per memory and writer. Two flushes of one writer racing in two threads may
land out of order; the next flush writes every count again.

A flush is written blind: on a :class:`~langmem_edge.memory.core.stores.PutNew` store
(``ChromaStore``) one write and no read (a count item is this process's own, so the
cumulative count it writes is right whatever the row held). A write that has rows of its own
(``remember``, an ingest's messages) carries the pending counts in the same call
(:func:`take_access`, :func:`access_written`): no call of their own.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from langgraph.store.base import BaseStore, PutOp

from langmem_edge.memory.core.layout import ProfileLayout
from langmem_edge.memory.core.plans import Call, Plan, batch
from langmem_edge.memory.core.stores import PutNew
from langmem_edge.memory.index.access import AccessWriter
from langmem_edge.memory.index.profile_index import ProfileIndex
from langmem_edge.memory.semantic.context import ProfileContext

__all__ = ["AccessFlush", "access_failed", "access_written", "plan_flush_access",
           "plan_put_blind", "plan_write_access", "take_access"]

logger = logging.getLogger(__name__)


@dataclass
class AccessFlush:
    """Access counts taken for a write (:func:`take_access`): the items to put and what
    to give back if that write fails."""

    counter: AccessWriter
    index: ProfileIndex
    writer: str
    taken: dict[str, tuple[int, str]]
    written: list[tuple[str, int, str]]
    puts: list[PutOp] = field(default_factory=list)


def take_access(layout: ProfileLayout, counter: AccessWriter, index: ProfileIndex
                ) -> AccessFlush | None:
    """The profile's pending bumps of the memories ``index`` holds, taken for one write
    (None: nothing pending); after the write, :func:`access_written` (or, on failure,
    ``counter.release``)."""
    whole = index.complete and index.history
    # after a read of active records only, a bumped memory it lacks may be superseded, not
    # deleted: every bump is taken and no count dropped
    present = index.values if whole or not index.complete else None
    read_at = index.read_at if whole else float("-inf")
    writer, taken, written = counter.start_flush(present, read_at)
    if not taken:
        return None
    totals = counter.totals(index.values if whole else None)
    puts = [PutOp(layout.access_by_writer, writer,
                  {"profile": layout.profile, "writer": writer,
                   "counts": {mid: [count, last] for mid, (count, last) in sorted(
                       totals.items())}}, index=False)]
    return AccessFlush(counter, index, writer, taken, written, puts)


def access_written(flush: AccessFlush | None) -> int:
    """Record that ``flush``'s counts were written; returns how many memories they count."""
    if flush is None:
        return 0
    for mid, total, last in flush.written:
        flush.index.set_counts(mid, [(flush.writer, total, last)])
    return len(flush.written)


def access_failed(flush: AccessFlush | None, error: Exception) -> None:
    """Give ``flush``'s counts back after its write failed (they stay pending)."""
    if flush is not None:
        flush.counter.release(flush.taken, time.time())
        logger.warning("writing access counts of %r failed (%s); kept pending",
                       flush.index.profile, error)


def plan_flush_access(ctx: ProfileContext) -> Plan[int]:
    """Write the profile's pending access bumps; returns how many memories they counted.

    The counts go to this process's own row (``layout.access_by_writer``, key = the
    process's count writer, :mod:`~langmem_edge.memory.index.access`): its cumulative count
    of every memory it counted, written blind. No record is read or written. Only the bumps
    of memories the operation's read found are written (``ctx.index``); after a read of the
    whole profile with its history, those of a memory deleted since its recall are dropped
    (:meth:`AccessWriter.start_flush`) and so are its counts in the row; after a read of the
    active records only (a recall, a write), every bump is written (a memory it lacks may
    be superseded, not deleted); after a partial read (a large profile's candidates) the
    rest stay pending. On failure the bumps stay pending.
    """
    return (yield from plan_write_access(ctx.store, ctx.layout, ctx.index.access_writer,
                                         ctx.index))


def plan_write_access(store: BaseStore, layout: ProfileLayout, counter: AccessWriter,
                      index: ProfileIndex) -> Plan[int]:
    """:func:`plan_flush_access` for a profile's access writer and an index read from the
    store in this operation."""
    flush = take_access(layout, counter, index)
    if flush is None:
        return 0
    try:
        yield from plan_put_blind(store, flush.puts)
    except Exception as e:
        access_failed(flush, e)
        return 0
    return access_written(flush)


def plan_put_blind(store: BaseStore, puts: list[PutOp]) -> Plan[None]:
    """Put items whose writer owns them (no one else writes them): on a ``PutNew`` store
    without reading them first, else as puts."""
    if not puts:
        return
    if isinstance(store, PutNew):
        yield Call(store.put_new, store.aput_new,
                   ([(op.namespace, op.key, op.value, op.index) for op in puts],))
    else:
        yield batch(store, puts)
