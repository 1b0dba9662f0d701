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
    cumulative count, written blind. No record is read or written, so a memory deleted
    meanwhile by another process stays deleted (its count item is an orphan that no read
    attaches to anything). On failure the bumps stay pending.
    """
    return (yield from plan_write_access(ctx.store, ctx.layout, ctx.index.access_writer,
                                         ctx.index))


def plan_write_access(store: BaseStore, layout: ProfileLayout, counter: AccessWriter,
                      index: ProfileIndex | None = None) -> Plan[int]:
    """:func:`plan_flush_access` for a profile's access writer, with or without its index
    (a profile whose index left the cache keeps its bumps in its writer)."""
    writer, taken, written = counter.start_flush()
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
    if index is not None:
        for mid, total, last in written:
            index.set_counts(mid, [(writer, total, last)])
    return len(written)
