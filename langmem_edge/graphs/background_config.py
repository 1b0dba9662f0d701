"""The vocabulary of :mod:`langmem_edge.graphs.background`: its settings and their defaults,
its counters, the errors a retry cannot mend and a job set aside for them. No threads here;
the executor is in ``background.py``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypedDict

from langmem_edge._options import check_keys
from langmem_edge.errors import (
    ConfigurationError,
    DecryptionError,
    InvalidInputError,
    NotFoundError,
)

__all__ = [
    "DEFAULT_BACKGROUND_CONFIG",
    "DEFAULT_DELAY_SECONDS",
    "DEFAULT_EXIT_TIMEOUT",
    "DEFAULT_MAX_ATTEMPTS",
    "DEFAULT_MAX_PENDING",
    "DEFAULT_RETRY_FOR_SECONDS",
    "DEFAULT_RETRY_WAIT_INITIAL",
    "DEFAULT_RETRY_WAIT_MAX",
    "PERMANENT_ERRORS",
    "SET_ASIDE_KEPT",
    "BackgroundConfig",
    "BackgroundStats",
    "Job",
    "SetAsideJob",
    "resolve_config",
]

Job = Callable[[], object]
"""A unit of background work: a sync callable taking nothing; its return value is ignored."""

DEFAULT_DELAY_SECONDS = 2.0
"""Seconds a job waits before it runs, restarted by each replacing submit: a user's quick
follow-up turn within this delay folds the two extractions into one (the episodic ingest is
idempotent, so the later job covers the earlier turn's messages too)."""

DEFAULT_MAX_PENDING = 256
"""Jobs waiting at most; a submit past it waits for room (backpressure), never drops a job."""

DEFAULT_MAX_ATTEMPTS = 3
"""Tries of one job, the first included, before it is logged and counted as failed (a job
failing because the backend did not answer is retried for ``retry_for_seconds`` instead)."""

DEFAULT_RETRY_FOR_SECONDS = 86_400.0
"""How long a job failing because the backend did not answer (an outage) keeps being
retried, from its first failure: a day, as long as a turn record lives."""

DEFAULT_RETRY_WAIT_INITIAL = 0.5
"""Seconds before the first retry of a failed job; doubles at each retry."""

DEFAULT_RETRY_WAIT_MAX = 8.0
"""Longest wait between two tries of a job, in seconds."""

DEFAULT_EXIT_TIMEOUT = 30.0
"""Seconds an executor still open at interpreter exit gets to run what waits."""

PERMANENT_ERRORS: tuple[type[Exception], ...] = (InvalidInputError, ConfigurationError,
                                                 NotFoundError, DecryptionError)
"""Errors a retry cannot mend (``LimitExceededError`` and ``InvalidNamespaceError`` are
kinds of ``InvalidInputError``): a job raising one is tried once and set aside."""

SET_ASIDE_KEPT = 100
"""Set-aside jobs an executor keeps (the newest) for :meth:`BackgroundExecutor.set_aside`."""


class BackgroundConfig(TypedDict, total=False):
    """How a :class:`BackgroundExecutor` schedules and retries its jobs.

    Attributes:
        delay_seconds: Debounce delay per key, in seconds (>= 0). Default
            :data:`DEFAULT_DELAY_SECONDS` (2.0).
        max_pending: Jobs waiting at most (>= 1). Default :data:`DEFAULT_MAX_PENDING` (256).
        max_attempts: Tries of a job, first included (>= 1). Default
            :data:`DEFAULT_MAX_ATTEMPTS` (3).
        retry_wait_initial: Seconds before the first retry (>= 0), doubling. Default
            :data:`DEFAULT_RETRY_WAIT_INITIAL` (0.5).
        retry_wait_max: Longest wait between tries, in seconds (>= 0). Default
            :data:`DEFAULT_RETRY_WAIT_MAX` (8.0).
        retry_for_seconds: How long a job failing with ``BackendUnavailableError`` is
            retried, from its first failure (>= 0). Default
            :data:`DEFAULT_RETRY_FOR_SECONDS` (a day).
        exit_timeout: Seconds given to waiting jobs at interpreter exit (>= 0). Default
            :data:`DEFAULT_EXIT_TIMEOUT` (30.0).
    """

    delay_seconds: float
    max_pending: int
    max_attempts: int
    retry_wait_initial: float
    retry_wait_max: float
    retry_for_seconds: float
    exit_timeout: float


DEFAULT_BACKGROUND_CONFIG: BackgroundConfig = {
    "delay_seconds": DEFAULT_DELAY_SECONDS,
    "max_pending": DEFAULT_MAX_PENDING,
    "max_attempts": DEFAULT_MAX_ATTEMPTS,
    "retry_wait_initial": DEFAULT_RETRY_WAIT_INITIAL,
    "retry_wait_max": DEFAULT_RETRY_WAIT_MAX,
    "retry_for_seconds": DEFAULT_RETRY_FOR_SECONDS,
    "exit_timeout": DEFAULT_EXIT_TIMEOUT,
}

_MINIMUMS: dict[str, float] = {
    "delay_seconds": 0.0,
    "max_pending": 1,
    "max_attempts": 1,
    "retry_wait_initial": 0.0,
    "retry_wait_max": 0.0,
    "retry_for_seconds": 0.0,
    "exit_timeout": 0.0,
}
_INTEGER_FIELDS = frozenset({"max_pending", "max_attempts"})


def resolve_config(config: BackgroundConfig | None) -> BackgroundConfig:
    """The defaults overlaid with ``config``, checked: unknown keys and bad values raise."""
    check_keys("BackgroundConfig", config, DEFAULT_BACKGROUND_CONFIG)
    given: dict[str, Any] = dict(config or {})
    for key, value in given.items():
        kinds: tuple[type, ...] = (int,) if key in _INTEGER_FIELDS else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds) or value < _MINIMUMS[key]:
            kind = "an integer" if key in _INTEGER_FIELDS else "a number"
            raise ConfigurationError(
                f"BackgroundConfig {key!r} must be {kind} >= {_MINIMUMS[key]}, got {value!r}"
            )
    return {**DEFAULT_BACKGROUND_CONFIG, **given}  # type: ignore[typeddict-item]


@dataclass(frozen=True)
class BackgroundStats:
    """Counters of a :class:`BackgroundExecutor` since it was made.

    Attributes:
        submitted: ``submit`` calls accepted (replacing ones included).
        replaced: Waiting jobs replaced by a later submit under the same key (never run).
        completed: Jobs that returned (after retries or not).
        failed: Jobs that raised on every try (logged with their key).
        set_aside: Jobs that raised one of :data:`PERMANENT_ERRORS`: tried once, not retried,
            logged with their key and error (:meth:`BackgroundExecutor.set_aside`).
        retried: Retries made (a job that fails twice then succeeds counts 2).
        pending: Jobs not finished: waiting (for their delay or a retry), plus the one
            running.
        retrying: Of the waiting jobs, those waiting for a retry after a failed try.
        waited: Submits that had to wait for room in a full queue (backpressure).
    """

    submitted: int = 0
    replaced: int = 0
    completed: int = 0
    failed: int = 0
    retried: int = 0
    pending: int = 0
    waited: int = 0
    set_aside: int = 0
    retrying: int = 0


@dataclass(frozen=True)
class SetAsideJob:
    """A job set aside after one try (:data:`PERMANENT_ERRORS`): run it again by hand with
    ``executor.submit(entry.key, entry.job)`` once its cause is mended."""

    key: str
    """The key it was submitted under."""
    job: Job
    """The job itself."""
    error: Exception
    """What it raised."""
    at: float
    """When it was set aside (``time.time()``)."""
