"""Access counts of recalled memories: each process writes its own cumulative count of a
memory to its own item, never the memory's record (so a count cannot bring a deleted memory
back)."""

from __future__ import annotations

import logging
import time

from langgraph.store.base import PutOp

from langmem_edge.memory.core.plans import Plan, batch
from langmem_edge.memory.semantic.context import ProfileContext

__all__ = ["plan_flush_access"]

logger = logging.getLogger(__name__)


def plan_flush_access(ctx: ProfileContext) -> Plan[int]:
    """Write the profile's pending access bumps; returns how many memories they counted.

    Each memory's count goes to this process's own count item (``layout.access_of(id)``,
    key = the index's count writer): its cumulative count, written blind. No record is read
    or written, so a memory deleted meanwhile by another process stays deleted (its count
    item is an orphan that no read attaches to anything). On failure the bumps stay pending.
    """
    index = ctx.index
    taken = index.take_pending()
    if not taken:
        return 0
    writer = index.count_writer
    written = []
    for mid in sorted(taken):
        count, last = taken[mid]
        written.append((mid, index.own_count(mid) + count, last))
    try:
        yield batch(ctx.store, [PutOp(ctx.layout.access_of(mid), writer,
                                      {"profile": ctx.profile, "id": mid, "writer": writer,
                                       "count": total, "last": last}, index=False)
                                for mid, total, last in written])
    except Exception as e:
        index.restore_pending(taken, time.time())
        logger.warning("writing access counts of %r failed (%s); kept pending", ctx.profile, e)
        return 0
    for mid, total, last in written:
        index.set_counts(mid, [(writer, total, last)])
    return len(written)
