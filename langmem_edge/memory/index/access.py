"""This process's writer of one profile's access counts: its id, its counts, its bumps.

A recall bumps the access count of the memories it returns; the bumps are written behind
(``semantic/access.py``) as this process's *cumulative* count of each memory, to its own row
``(*R, "access", "by-writer") / writer``: never the record, and never another process's row,
so no two processes write the same item and no count can bring a deleted record back.
``AgentMemory`` keeps an :class:`AccessWriter` per profile (``access_writers``, bounded), so
every operation on the profile writes under the same id and goes on from the same counts
(with an id per operation, every operation would add one more row). This is the writer's own
counter, not a copy of the store's data: every read still takes the counts from the store.

:meth:`AccessWriter.start_flush` takes the bumps and moves their counts forward for one flush
in one step under a lock, so two flushes at once (two threads) never write the same total for
different bumps; a flush that failed gives its bumps back with :meth:`AccessWriter.release`.
Two writes of the row may land out of order; the next flush writes every count again. A flush
writes only the bumps of memories the operation's read found (``semantic/access.py``): the
bumps of a memory deleted meanwhile are dropped, not written under a deleted profile.

An operation reads this process's count of a memory from the writer as well as from the
store (:meth:`AccessWriter.own`): a flush still in flight in another thread is counted.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Collection, Iterable, Mapping

__all__ = ["MAX_KEPT", "AccessWriter"]

MAX_KEPT = 4_096
"""Profiles whose access-count writer an ``AgentMemory`` keeps, the least recently used
dropped first. A writer is a few hundred bytes plus its pending counts (flushed with the
profile's next write or by ``flush()``); a profile whose writer was dropped gets a new one,
and so one more count row, at its next recall."""


class AccessWriter:
    """This process's writer id for one profile's access-count items and the cumulative
    count it has written (or is writing) for each memory."""

    def __init__(self) -> None:
        self.writer_id = uuid.uuid4().hex[:16]
        """The key of this process's count items."""
        self._lock = threading.Lock()
        self._totals: dict[str, tuple[int, str]] = {}
        self._pending: dict[str, tuple[int, str]] = {}
        self._bumped_at: dict[str, float] = {}
        """When each pending memory was last bumped (:func:`time.monotonic`)."""
        self.pending_since: float | None = None
        """When the oldest pending bump was counted (``None``: none pending)."""

    def __repr__(self) -> str:
        return (f"AccessWriter({self.writer_id!r}, {len(self._totals)} memories, "
                f"{len(self._pending)} pending)")

    # -- bumps not written yet ---------------------------------------------------------------

    def bump(self, ids: Iterable[str], now: float, stamp: str) -> None:
        """Count ``ids`` as accessed at ``now`` (``stamp``: ISO); written by the next flush."""
        with self._lock:
            at = time.monotonic()
            for mid in ids:
                count, _ = self._pending.get(mid, (0, stamp))
                self._pending[mid] = (count + 1, stamp)
                self._bumped_at[mid] = at
            if self._pending and self.pending_since is None:
                self.pending_since = now

    def pending(self, mid: str) -> tuple[int, str] | None:
        """The bumps of ``mid`` not written yet: ``(count, last ISO)``, or ``None``."""
        with self._lock:
            return self._pending.get(mid)

    def pending_count(self) -> int:
        """How many memories have bumps not written yet."""
        with self._lock:
            return len(self._pending)

    def start_flush(self, present: Collection[str] | None, read_at: float
                    ) -> tuple[str, dict[str, tuple[int, str]], list[tuple[str, int, str]]]:
        """Take the pending bumps of the memories in ``present`` (those a read that began at
        ``read_at``, on :func:`time.monotonic`, found) for a flush and reserve their
        counts in one step (no reader sees a bump in neither place): the writer id to write
        under, the bumps taken (``{id: (count, last ISO)}``, for :meth:`release` if the
        write fails) and the items to write, ``(id,
        cumulative count, last)``. A memory that read did not find is dropped if it was
        bumped before the read began (it existed then, so it was deleted since); one bumped
        later stays pending (the read may predate it). ``present=None``: every pending bump
        (the read could not tell a deleted memory from one it did not ask for)."""
        with self._lock:
            taken: dict[str, tuple[int, str]] = {}
            for mid in list(self._pending):
                if present is None or mid in present:
                    taken[mid] = self._pending.pop(mid)
                elif self._bumped_at.get(mid, 0.0) < read_at:
                    self._pending.pop(mid)
                else:
                    continue
                self._bumped_at.pop(mid, None)
            if not self._pending:
                self.pending_since = None
            return self.writer_id, taken, self._reserve(taken)

    def _restore(self, taken: Mapping[str, tuple[int, str]], now: float) -> None:
        for mid, (count, stamp) in taken.items():
            have, last = self._pending.get(mid, (0, stamp))
            self._pending[mid] = (have + count, max(last, stamp))
        if self._pending and self.pending_since is None:
            self.pending_since = now

    # -- counts written ----------------------------------------------------------------------

    def total(self, mid: str) -> int:
        """The cumulative count this process has written or is writing for ``mid``."""
        with self._lock:
            return self._totals.get(mid, (0, ""))[0]

    def own(self, mid: str, stored: tuple[int, str] | None) -> tuple[int, str] | None:
        """This process's accesses of ``mid``: the larger of its count item as read from the
        store (``stored``) and the count it has written or is writing, plus the bumps not
        written yet; ``(count, last ISO)``, or ``None`` when it has none."""
        with self._lock:
            total, pending = self._totals.get(mid), self._pending.get(mid)
        if total is None and pending is None:  # not counted by this process lately
            return stored if stored is not None and stored[0] > 0 else None
        found = [c for c in (stored, total) if c is not None and c[0] > 0]
        own = max(found, default=None)
        if pending is None:
            return own
        if own is None:
            return pending
        return own[0] + pending[0], max(own[1], pending[1])

    def _reserve(self, taken: Mapping[str, tuple[int, str]]) -> list[tuple[str, int, str]]:
        """The items one flush writes for the bumps ``taken`` (``{id: (count, last ISO)}``):
        ``(id, cumulative count, last)``, the counts moved forward now (under the lock)."""
        written = []
        for mid in sorted(taken):
            count, last = taken[mid]
            total, before = self._totals.get(mid, (0, last))
            self._totals[mid] = (total + count, max(before, last))
            written.append((mid, total + count, last))
        return written

    def release(self, taken: Mapping[str, tuple[int, str]], now: float) -> None:
        """Give back a failed flush: its counts leave the totals and its bumps ``taken``
        are pending again (in one step, so no reader misses them), counted at ``now``."""
        with self._lock:
            for mid, (count, _) in taken.items():
                total, last = self._totals.get(mid, (0, ""))
                if total - count > 0:
                    self._totals[mid] = (total - count, last)
                else:
                    self._totals.pop(mid, None)
            self._restore(taken, now)

    def totals(self, among: Collection[str] | None = None) -> dict[str, tuple[int, str]]:
        """The cumulative counts this process has written or is writing (``{id: (count,
        last ISO)}``): what its row in the store holds once written; ``among``: only
        those memories."""
        with self._lock:
            return {mid: c for mid, c in self._totals.items()
                    if among is None or mid in among}

    def forget(self, mid: str) -> None:
        """Drop the count and the pending bumps of a deleted memory."""
        with self._lock:
            self._totals.pop(mid, None)
            self._pending.pop(mid, None)
            self._bumped_at.pop(mid, None)
