"""The episodic tier's message writes, as writes of the writer id + sequence protocol.

Every write of messages or session records (ingest's append, ``delete_messages``,
``delete_session``, ``import_jsonl``) is one write ``s`` of a writer ``w`` of the profile's
episodic change log (:meth:`~langmem_edge.memory.index.log.ChangeLog.of_messages`: markers at
``(*R, "meta", "message-writers")``, entries at ``(*R, "message-changes", w)``), in three steps:

1. the marker ``(w, s, settled=False)``, put in the batch of a read the write makes anyway
   (ingest's read of the session record and of its messages' ids; a deletion's last read);
2. the rows (messages, overlays, session records) and the entry ``(w, s, session ids)``, in
   one batch;
3. the marker ``(w, s, settled=True)``, in a batch of its own (where a second batch carried
   the old "messages mark").

So a message write costs the store the batches it cost before (on ``ChromaStore`` each
marker put is one row ``update``, read in the same ``get`` as the batch's reads). A write
that turns out to write nothing (a re-ingest of stored messages) settles its marker in one
small batch; a write that fails before step 2 settles it too (nothing of it is in the
store); a write that fails in or after step 2 leaves its marker unsettled: readers re-read
its entries at every sync until a pruning process settles it (``settle_after_seconds``,
10 min).

On a store that applies a batch of puts whole (:func:`~langmem_edge.memory.core.stores.
atomic_put_limit`, ``ChromaStore``), a write that only puts (ingest's append, an import
chunk) is step 2 alone with the settled marker in it: no reader can see part of it and a
crash leaves all or nothing, so no unsettled marker is needed (``docs/architecture.md``,
"The episodic message index").

The readers are :func:`~.recall_index.indexed_keyword_plan`; why this is exact is argued in
``docs/architecture.md`` ("The episodic message index") and :mod:`langmem_edge.memory.index.log`.
Pruning (at most every ``prune_interval_seconds`` per process, after a write) settles markers
of dead writers and drops entries and markers older than ``retention_seconds``; readers that
have not synced for ``reload_after_seconds`` list every session record again. The numbers are
:class:`~langmem_edge.memory.config.IndexCacheConfig`'s defaults (:data:`LOG_CONFIG`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from langgraph.store.base import BaseStore, GetOp, PutOp

from langmem_edge.memory.config import IndexCacheConfig
from langmem_edge.memory.core.layout import ProfileLayout
from langmem_edge.memory.core.plans import Call, Plan, StoreStep, batch
from langmem_edge.memory.core.stores import PutNew, atomic_put_limit
from langmem_edge.memory.index.log import ChangeLog, writer_pool

__all__ = ["LOG_CONFIG", "MessageWrite", "plan_message_write", "plan_put_absent"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

LOG_CONFIG = IndexCacheConfig()
"""Retention, reload age, settle age and prune interval of the episodic change log (the
profile index's defaults: 1 h, 30 min, 10 min, 5 min)."""

class MessageWrite:
    """One write of the episodic change log (see the module docstring).

    Put :attr:`begin` in a read batch before the rows, the rows with :meth:`rows`, then run
    :meth:`plan_end` (always: it settles the marker, or, after a failure, decides what to do
    with it).

    Args:
        store: The store. layout: The profile's layout.
        puts: For a write that only puts (no deletes), the most rows it will put: on a store
            that applies that many whole, the write is its rows' batch alone (:attr:`whole`).
    """

    def __init__(self, store: BaseStore, layout: ProfileLayout, *, puts: int | None = None
                 ) -> None:
        self.store = store
        self.log = ChangeLog.of_messages(layout)
        self.whole = puts is not None and puts + 2 <= atomic_put_limit(store)
        """Whether the rows' batch carries the settled marker (nothing before or after it)."""
        self._pool = writer_pool(store, self.log)
        self._writer = self._pool.take()
        self.seq = self._writer.next_seq()
        self.wrote = False
        """Whether :meth:`rows` was called (the rows' batch may have run, wholly or not)."""

    @property
    def begin(self) -> tuple[PutOp, ...]:
        """The unsettled marker, for a batch that runs before the rows' (none when
        :attr:`whole`)."""
        if self.whole:
            return ()
        return (self.log.marker_op(self._writer.writer_id, self.seq, settled=False),)

    def rows(self, ops: Sequence[Any], session_ids: Iterable[str]) -> tuple[Any, ...]:
        """The ops of the rows' batch: ``ops`` and the entry naming ``session_ids`` (and,
        when :attr:`whole`, the settled marker)."""
        self.wrote = True
        entry = self.log.entry_op(self._writer.writer_id, self.seq, sorted(set(session_ids)))
        if not self.whole:
            return (*ops, entry)
        if any(not isinstance(op, PutOp) or op.value is None for op in ops) or (
                len(ops) + 2 > atomic_put_limit(self.store)):
            raise ValueError("a whole message write puts at most the rows it was made for")
        return (*ops, entry, self.log.marker_op(self._writer.writer_id, self.seq,
                                                 settled=True))

    def plan_rows(self, ops: Sequence[PutOp], session_ids: Iterable[str]) -> Plan[None]:
        """Write :meth:`rows` as one step. A :attr:`whole` write of rows whose keys were
        read absent (messages with new ``seq``, memories with new ids) and rows only their
        writer writes (the session record, the log's entry and marker) goes to a
        :class:`~langmem_edge.memory.core.stores.PutNew` store without the read a batch
        makes first (a rewritten row's ``created_at`` restarts: nothing reads it)."""
        rows = self.rows(ops, session_ids)
        if self.whole and isinstance(self.store, PutNew):
            yield Call(self.store.put_new, self.store.aput_new,
                       ([(op.namespace, op.key, op.value, op.index) for op in rows],))
        else:
            yield StoreStep(rows)

    def plan_end(self, error: BaseException | None = None) -> Plan[None]:
        """Settle the marker (one batch) and prune when due; after ``error`` in or after the
        rows' batch, leave the marker unsettled and drop the writer (readers re-read its
        entries until a pruner settles it). A :attr:`whole` write has nothing to settle: its
        rows' batch landed whole or not at all."""
        if self.whole:
            if error is None or not self.wrote:
                self._pool.give_back(self._writer)
            if error is None:
                yield from self._plan_prune(time.time())
            return
        if error is not None and self.wrote:
            logger.warning("message write %d of %r failed after its marker: left unsettled "
                           "(%s)", self.seq, self.log.profile, error)
            return
        settle = self.log.marker_op(self._writer.writer_id, self.seq, settled=True)
        try:
            yield batch(self.store, [settle])
        except Exception as e:  # the write is done; readers re-read it until it settles
            logger.warning("settling message write %d of %r failed: %s", self.seq,
                           self.log.profile, e)
            return
        self._pool.give_back(self._writer)
        if error is None:
            yield from self._plan_prune(time.time())

    def _plan_prune(self, now: float) -> Plan[None]:
        cfg = LOG_CONFIG
        if not self._pool.prune_due(now, cfg.prune_interval_seconds):
            return
        mine = self._pool.ids()
        try:
            yield from self.log.plan_settle(self.store, mine, now, cfg.settle_after_seconds)
            yield from self.log.plan_drop(self.store, mine, now - cfg.retention_seconds,
                                          cfg.page_size)
        except Exception as e:  # housekeeping: never fail the write that triggered it
            logger.warning("pruning the message log of %r failed: %s", self.log.profile, e)


def plan_message_write(store: BaseStore, layout: ProfileLayout,
                       body: Callable[[MessageWrite], Plan[T]], *, puts: int | None = None
                       ) -> Plan[T]:
    """Run plan ``body(write)`` as one :class:`MessageWrite` (``puts``: see there), ending it
    as it must whether ``body`` returns or raises; returns what ``body`` returns."""
    write = MessageWrite(store, layout, puts=puts)
    try:
        out = yield from body(write)
    except Exception as e:
        yield from write.plan_end(e)
        raise
    yield from write.plan_end()
    return out


def plan_put_absent(store: BaseStore, layout: ProfileLayout,
                    puts: Sequence[tuple[tuple[str, ...], str, dict[str, Any], Any]],
                    session_ids: Sequence[str]) -> Plan[list[bool]]:
    """Put each ``(namespace, key, value, index)`` of ``puts`` that is not in the store yet
    (messages or session records; ``session_ids[i]`` is the session of ``puts[i]``), as one
    message write with its marker in the read of what exists; returns which were put."""

    def body(write: MessageWrite) -> Plan[list[bool]]:
        got = yield batch(store, [*(GetOp(ns, key) for ns, key, _, _ in puts), *write.begin])
        fresh = [it is None for it in got[:len(puts)]]
        new = [i for i, f in enumerate(fresh) if f]
        if new:
            yield batch(store, write.rows(
                [PutOp(puts[i][0], puts[i][1], puts[i][2], index=puts[i][3]) for i in new],
                [session_ids[i] for i in new]))
        return fresh

    return (yield from plan_message_write(store, layout, body, puts=len(puts)))
