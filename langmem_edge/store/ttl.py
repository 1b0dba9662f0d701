"""TTL for ``ChromaStore``: expiry on write, refresh on read, sweeping.

An item's expiry (``exp``, epoch seconds) is set on every write from its TTL in minutes (the
put's ``ttl``, else ``ttl["default_ttl"]``, else never). Reads refresh it (unless the op says
``refresh_ttl=False`` or the store's ``refresh_on_read`` is false). Expired items are never
returned, even before a sweep; a sweep deletes them and their vectors. The background
sweeper is the storage layer's one (:mod:`langmem_edge._sweeper`, shared with
``ChromaSaver``).
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable
from typing import Any

from langgraph.store.base import NOT_PROVIDED, TTLConfig

from langmem_edge import _chroma
from langmem_edge._chroma import split_labels
from langmem_edge._sweeper import Sweeper
from langmem_edge._twins import threaded
from langmem_edge.errors import InvalidInputError
from langmem_edge.store import layout

logger = logging.getLogger(__name__)

DEFAULT_SWEEP_INTERVAL_MINUTES = 5
"""TTL sweeper interval when neither the call nor ``ttl["sweep_interval_minutes"]`` sets one."""


class TTLMixin:
    """TTL behaviour of ``ChromaStore`` (needs its ``_call``, ``_items``, ``_vectors``)."""

    ttl_config: TTLConfig | None
    _call: _chroma.ChromaCaller
    _clock: Callable[[], float]
    _items: Any
    _vectors: Any
    _write: Callable[..., int]
    _write_lock: threading.RLock
    _written_floor: int
    _last_written: dict[str, int]
    _scan_items: Callable[..., list[dict[str, Any]]]  # ChromaStore's paged item scan

    def _ttl_minutes(self, ttl: Any) -> float | None:
        if ttl is NOT_PROVIDED:
            return (self.ttl_config or {}).get("default_ttl")
        if ttl is not None and not isinstance(ttl, (int, float)):
            raise InvalidInputError(f"ttl must be minutes (a number) or None, got {ttl!r}")
        return ttl

    def _should_refresh(self, refresh_ttl: bool | None) -> bool:
        if refresh_ttl is not None:
            return refresh_ttl
        return bool((self.ttl_config or {}).get("refresh_on_read", True))

    def _refresh_ttl(self, rows: dict[str, dict[str, Any]], now: float, read_at: int) -> None:
        """Push back the expiry of items read at write epoch ``read_at``.

        Only the ``exp`` field is written (Chroma's ``update`` merges fields and ignores ids
        that are gone, so a refresh never brings back a deleted item or an old value), under
        the write lock, and never for an item this process wrote after the read: that put set
        the expiry it wanted. (Another process's put between our read and this refresh can
        still have its expiry pushed to our read's TTL: the cost of not reading the row
        again.)"""
        with self._write_lock:
            if read_at < self._written_floor:
                return  # forgot which items were written since: skip rather than guess
            ids, metas = [], []
            for iid, meta in rows.items():
                ttl = float(meta.get("ttl") or 0.0)
                if ttl > 0 and self._last_written.get(iid, 0) <= read_at:
                    ids.append(iid)
                    metas.append({"exp": now + ttl * 60.0})
            if ids:
                self._call(self._items.update, ids=ids, metadatas=metas)

    def sweep_ttl(self) -> int:
        """Delete expired items (and their vectors) now. Returns how many were deleted."""
        now = self._clock()
        # a put racing the sweep keeps its item: the delete is conditional on expiry
        expired = self._scan_items({"exp": {"$lte": now}})
        if not expired:
            return 0
        ids = [layout.item_id(split_labels(m["ns"]), m["k"]) for m in expired]
        vec_ids = [
            vid for iid, m in zip(ids, expired, strict=True) for vid in layout.vector_ids(iid, m)
        ]
        return self._write(deletes=ids, stale=vec_ids, delete_where={"exp": {"$lte": now}})

    asweep_ttl = threaded(sweep_ttl)

    def _ttl_sweeper(self) -> Sweeper:
        """This store's sweeper (the storage layer's one mechanism, made on first use)."""
        with self._write_lock:
            sweeper: Sweeper | None = self.__dict__.get("_periodic_sweeper")
            if sweeper is None:
                sweeper = Sweeper(self.sweep_ttl, name="chroma-store-ttl",
                                  label="TTL sweep of expired items")
                self.__dict__["_periodic_sweeper"] = sweeper
            return sweeper

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Sweep expired items every ``sweep_interval_minutes`` on a daemon thread.

        The interval defaults to ``ttl["sweep_interval_minutes"]``, then 5 minutes. Returns a
        future that completes when the sweeper stops (see :meth:`stop_ttl_sweeper`).
        """
        interval = (
            sweep_interval_minutes
            or (self.ttl_config or {}).get("sweep_interval_minutes")
            or DEFAULT_SWEEP_INTERVAL_MINUTES
        )
        return self._ttl_sweeper().start(float(interval))

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread. Returns True if it stopped (or was not running)."""
        sweeper: Sweeper | None = self.__dict__.get("_periodic_sweeper")
        return True if sweeper is None else sweeper.stop(timeout)
