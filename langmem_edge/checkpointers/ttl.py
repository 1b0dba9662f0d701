"""Checkpoint time-to-live: configuration and the background sweeper thread.

A thread *expires* when none of its namespaces got a new checkpoint (``put``) for
``default_ttl`` minutes. ``ChromaSaver.sweep_ttl()`` then deletes it (``strategy="delete"``)
or prunes it to its latest checkpoint per namespace (``strategy="keep_latest"``); a pruned
thread is not swept again until its next ``put``. Reads and ``put_writes`` do not refresh the
clock: LangGraph ends every super-step with a ``put``, so a thread in use stays fresh.

The sweeper is the storage layer's one (:mod:`langmem_edge._sweeper`, shared with
``ChromaStore``), mirroring langgraph's ``SqliteStore``: ``start_ttl_sweeper()`` runs
``sweep_ttl`` every ``sweep_interval_minutes`` in a daemon thread and returns a ``Future``;
``stop_ttl_sweeper(timeout)`` stops it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Literal, TypedDict

from langmem_edge._options import check_keys
from langmem_edge._sweeper import Sweeper
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
    check_keys("ttl", ttl, CheckpointTTLConfig.__annotations__)
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


class TTLSweeper(Sweeper):
    """The checkpointer's sweeper: the storage layer's one :class:`~langmem_edge._sweeper.
    Sweeper`, running ``ChromaSaver.sweep_ttl`` (expired threads)."""

    def __init__(self, sweep: Callable[[], int], name: str = "chroma-saver-ttl-sweeper") -> None:
        super().__init__(sweep, name=name, label="Checkpoint TTL sweep")
