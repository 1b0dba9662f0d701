"""The storage layer's one periodic sweeper: a daemon thread that calls a sweep function.

``ChromaStore.start_ttl_sweeper`` (expired items) and ``ChromaSaver.start_ttl_sweeper``
(expired threads) both run on a :class:`Sweeper`, as langgraph's ``SqliteStore`` runs its
TTL sweep: ``start`` returns a ``Future`` that completes once the sweeper stops (cancelling
it stops the sweeper), ``stop(timeout)`` stops it and says whether it did. A failed sweep is
logged and tried again at the next interval; it never stops the thread.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable

__all__ = ["Sweeper"]

logger = logging.getLogger(__name__)


class Sweeper:
    """Calls ``sweep()`` every interval on a daemon thread named ``name`` until stopped.

    ``sweep`` returns how many things it removed; ``label`` names them in the log
    (``"TTL sweep of the store"``).
    """

    def __init__(self, sweep: Callable[[], int], *, name: str, label: str) -> None:
        self._sweep = sweep
        self._name = name
        self._label = label
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._future: concurrent.futures.Future[None] | None = None
        self._lock = threading.Lock()

    @property
    def running(self) -> bool:
        """Whether the sweeper thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def start(self, interval_minutes: float) -> concurrent.futures.Future[None]:
        """Sweep every ``interval_minutes`` (the first sweep one interval from now).

        Returns a future that completes when the sweeper stops; cancelling it stops the
        sweeper. Starting a running sweeper returns its future.
        """
        with self._lock:
            if self.running and self._future is not None:
                logger.info("%s: the sweeper is already running", self._label)
                return self._future
            future: concurrent.futures.Future[None] = concurrent.futures.Future()
            future.add_done_callback(lambda f: self._stop.set() if f.cancelled() else None)
            self._stop.clear()
            interval = float(interval_minutes) * 60.0
            self._thread = threading.Thread(target=self._loop, args=(interval, future),
                                            daemon=True, name=self._name)
            self._future = future
            self._thread.start()
        logger.info("%s: sweeping every %.3g minute(s)", self._label, interval_minutes)
        return future

    def _loop(self, interval: float, future: concurrent.futures.Future[None]) -> None:
        try:
            while not self._stop.wait(interval):
                try:
                    swept = self._sweep()
                    if swept:
                        logger.info("%s removed %d", self._label, swept)
                except Exception:
                    logger.exception("%s failed; will retry next interval", self._label)
        finally:
            if not future.done():
                future.set_result(None)

    def stop(self, timeout: float | None = None) -> bool:
        """Stop the thread; ``True`` when it stopped (or was not running) within
        ``timeout`` seconds."""
        with self._lock:
            thread = self._thread
            if thread is None or not thread.is_alive():
                self._thread = None
                return True
            self._stop.set()
        thread.join(timeout)
        stopped = not thread.is_alive()
        if stopped:
            with self._lock:
                if self._thread is thread:
                    self._thread = None
        else:
            logger.warning("%s: timed out waiting for the sweeper to stop", self._label)
        return stopped
