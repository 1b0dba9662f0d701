"""Checkpoint time-to-live: configuration and the background sweeper thread.

A thread *expires* when none of its namespaces got a new checkpoint (``put``) for
``default_ttl`` minutes. ``ChromaSaver.sweep_ttl()`` then deletes it (``strategy="delete"``)
or prunes it to its latest checkpoint per namespace (``strategy="keep_latest"``); a pruned
thread is not swept again until its next ``put``. Reads and ``put_writes`` do not refresh the
clock: LangGraph ends every super-step with a ``put``, so a thread in use stays fresh.

The sweeper mirrors langgraph's ``SqliteStore``: ``start_ttl_sweeper()`` runs ``sweep_ttl``
every ``sweep_interval_minutes`` in a daemon thread and returns a ``Future``;
``stop_ttl_sweeper(timeout)`` stops it.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable
from typing import Literal, TypedDict

from langmem_edge.errors import ConfigurationError

logger = logging.getLogger(__name__)

TTLStrategy = Literal["delete", "keep_latest"]

DEFAULT_TTL_STRATEGY: TTLStrategy = "delete"
"""What happens to an expired thread by default: it is deleted."""

DEFAULT_SWEEP_INTERVAL_MINUTES = 5.0
"""Minutes between two sweeps of the background sweeper."""


class CheckpointTTLConfig(TypedDict, total=False):
    """Checkpoint TTL for :class:`~langmem_edge.checkpointers.ChromaSaver`.

    Attributes:
        default_ttl: Minutes without a new checkpoint after which a thread expires.
            Required to enable TTL; must be > 0.
        strategy: ``"delete"`` (default) removes an expired thread; ``"keep_latest"`` keeps
            only the latest checkpoint of each namespace (and, for ``DeltaChannel`` state,
            the ancestors needed to rebuild it).
        sweep_interval_minutes: Minutes between sweeps of the background sweeper started by
            ``start_ttl_sweeper()``. Default 5.
    """

    default_ttl: float
    strategy: TTLStrategy
    sweep_interval_minutes: float


def validate_ttl(ttl: CheckpointTTLConfig | None) -> CheckpointTTLConfig | None:
    """Check a TTL config and fill its defaults; ``None`` (no TTL) passes through."""
    if ttl is None:
        return None
    unknown = set(ttl) - set(CheckpointTTLConfig.__annotations__)
    if unknown:
        raise ConfigurationError(
            f"Unknown TTL option(s) {sorted(unknown)}; allowed: "
            f"{sorted(CheckpointTTLConfig.__annotations__)}"
        )
    minutes = ttl.get("default_ttl")
    if not isinstance(minutes, (int, float)) or isinstance(minutes, bool) or minutes <= 0:
        raise ConfigurationError(
            f"ttl['default_ttl'] must be a number of minutes > 0, got {minutes!r}"
        )
    strategy = ttl.get("strategy", DEFAULT_TTL_STRATEGY)
    if strategy not in ("delete", "keep_latest"):
        raise ConfigurationError(
            f"ttl['strategy'] must be 'delete' or 'keep_latest', got {strategy!r}"
        )
    interval = ttl.get("sweep_interval_minutes", DEFAULT_SWEEP_INTERVAL_MINUTES)
    if not isinstance(interval, (int, float)) or isinstance(interval, bool) or interval <= 0:
        raise ConfigurationError(
            f"ttl['sweep_interval_minutes'] must be > 0, got {interval!r}"
        )
    return {
        "default_ttl": float(minutes),
        "strategy": strategy,
        "sweep_interval_minutes": float(interval),
    }


class TTLSweeper:
    """Runs a sweep function every few minutes in a daemon thread until stopped."""

    def __init__(self, sweep: Callable[[], int], name: str = "chroma-saver-ttl-sweeper") -> None:
        self._sweep = sweep
        self._name = name
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def running(self) -> bool:
        """Whether the sweeper thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def start(self, interval_minutes: float) -> concurrent.futures.Future[None]:
        """Start sweeping every ``interval_minutes``; cancelling the future stops it."""
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        future.add_done_callback(lambda f: self._stop.set() if f.cancelled() else None)
        with self._lock:
            if self.running:
                logger.info("Checkpoint TTL sweeper is already running")
                return future
            self._stop.clear()
            interval = float(interval_minutes) * 60.0

            def loop() -> None:
                try:
                    while not self._stop.wait(interval):
                        try:
                            swept = self._sweep()
                            if swept:
                                logger.info("Checkpoint TTL sweep removed %d thread(s)", swept)
                        except Exception:
                            logger.exception("Checkpoint TTL sweep failed")
                    if not future.done():
                        future.set_result(None)
                except Exception as exc:  # pragma: no cover - defensive
                    if not future.done():
                        future.set_exception(exc)

            self._thread = threading.Thread(target=loop, daemon=True, name=self._name)
            self._thread.start()
        logger.info("Started checkpoint TTL sweeper every %.3g minute(s)", interval_minutes)
        return future

    def stop(self, timeout: float | None = None) -> bool:
        """Stop the thread; ``True`` when it stopped (or was not running) within ``timeout``."""
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
                self._thread = None
        else:
            logger.warning("Timed out waiting for the checkpoint TTL sweeper to stop")
        return stopped
