"""Access counts of recalled memories: each process writes its own cumulative count of a
memory to its own item, never the memory's record (so a count cannot bring a deleted memory
back)."""

from __future__ import annotations

import logging
import time

from langgraph.store.base import BaseStore, PutOp

from langmem_edge.memory.core.layout import ProfileLayout
from langmem_edge.memory.core.plans import Plan, batch
from langmem_edge.memory.index.access import AccessWriter
from langmem_edge.memory.index.profile_index import ProfileIndex
from langmem_edge.memory.semantic.context import ProfileContext

__all__ = ["plan_flush_access", "plan_write_access"]

logger = logging.getLogger(__name__)


def plan_flush_access(ctx: ProfileContext) -> Plan[int]:
    """Write the profile's pending access bumps; returns how many memories they counted.

    Each memory's count goes to this process's own count item (``layout.access_of(id)``,
    key = the process's count writer, :mod:`~langmem_edge.memory.index.access`): its
    cumulative count, written blind. No record is read or written. Only the bumps of
    memories the operation's read found are written (``ctx.index``); after a read of the
    whole profile, those of a memory deleted since its recall are dropped
    (:meth:`AccessWriter.start_flush`), so no count item appears under a deleted memory or
    profile; after a partial read (a large profile's candidates) the rest stay pending. On
    failure the bumps stay pending.
    """
    return (yield from plan_write_access(ctx.store, ctx.layout, ctx.index.access_writer,
                                         ctx.index))


def plan_write_access(store: BaseStore, layout: ProfileLayout, counter: AccessWriter,
                      index: ProfileIndex) -> Plan[int]:
    """:func:`plan_flush_access` for a profile's access writer and an index read from the
    store in this operation."""
    writer, taken, written = counter.start_flush(
        index.values, index.read_at if index.complete else float("-inf"))
    if not taken:
        return 0
    try:
        yield batch(store, [PutOp(layout.access_of(mid), writer,
                                  {"profile": layout.profile, "id": mid, "writer": writer,
                                   "count": total, "last": last}, index=False)
                            for mid, total, last in written])
    except Exception as e:
        counter.release(taken, time.time())
        logger.warning("writing access counts of %r failed (%s); kept pending", layout.profile, e)
        return 0
    for mid, total, last in written:
        index.set_counts(mid, [(writer, total, last)])
    return len(written)
