"""How ``get_tuple`` finds a checkpoint without trusting anything it did not just read.

Pure planning and checking; ``ChromaSaver`` makes the calls.

**By id** (:func:`by_id_ids`): one ``get`` by record ids of the checkpoint and its write
marker (a get by ids does not grow with the collection, a ``where`` does). No marker: the
checkpoint has no pending writes and the answer is complete. A marker: one more ``get`` by
group for the writes.

**Latest**: start from a candidate id, the per-process hint (the last latest id seen of the
thread key, ``ChromaSaver._hints``) or else the head record, and ask, in **one** call, for
every record of the thread key from that id on (:func:`latest_where`). The answer holds the
candidate, every *newer* checkpoint and their writes, so :func:`newest_checkpoint` picks the
max id among what is stored right now; the hint or head is only where the range starts. A head
that is missing or points at a deleted checkpoint, so that the range holds no checkpoint, falls
back to the ids of every checkpoint of the thread key (one ids-only call) and starts again from
their max. Hence a head older than a stored checkpoint (two puts racing: the head is
last-writer-wins), missing, or dangling (a crash inside a maintenance call) never changes the
answer.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langmem_edge.checkpointers.layout import (
    F_CID,
    F_GROUP,
    F_KIND,
    F_NS,
    F_ORDER,
    F_THREAD,
    F_TK,
    KIND_CHECKPOINT,
    KIND_MARK,
    Row,
    checkpoint_row_id,
    group_key,
    mark_row_id,
    order_key,
)


def by_id_ids(tk: str, cid: str) -> list[str]:
    """Record ids ``get_tuple`` by id asks for: the checkpoint and its write marker."""
    return [checkpoint_row_id(tk, cid), mark_row_id(tk, cid)]


def needs_group_read(rows: Iterable[Row]) -> bool:
    """Whether a by-id answer must be completed by a read of the group: the checkpoint has
    a write marker."""
    return any(md.get(F_KIND) == KIND_MARK for _, md in rows)


def latest_where(tk: str, from_cid: str) -> dict[str, Any]:
    """``where`` selecting every record of ``tk`` whose checkpoint id is ``from_cid`` or newer
    (and a few older ones sharing its :func:`order_key`)."""
    return {"$and": [{F_TK: tk}, {F_ORDER: {"$gte": order_key(from_cid)}}]}


def newest_checkpoint(rows: Iterable[Row], thread_id: str, ns: str) -> str | None:
    """The max checkpoint id among the checkpoint rows of ``(thread_id, ns)`` in ``rows``."""
    best: str | None = None
    for _, md in rows:
        if (
            md.get(F_KIND) == KIND_CHECKPOINT
            and md.get(F_THREAD) == thread_id
            and md.get(F_NS) == ns
            and (best is None or md[F_CID] > best)
        ):
            best = md[F_CID]
    return best


def group_of(tk: str, cid: str) -> dict[str, Any]:
    """``where`` selecting one checkpoint's group (checkpoint, writes, marker, maybe head)."""
    return {F_GROUP: group_key(tk, cid)}
