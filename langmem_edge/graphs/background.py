"""Run post-turn work (memory extraction) off the reply's path: :class:`BackgroundExecutor`.

A turn's reply must never wait for extraction, and extraction must never be silently lost.
The executor runs plain sync callables on one daemon worker thread:

- **Debounced per key** (the thread id): a job waits ``delay_seconds`` before it runs; a job
  submitted under a key whose earlier job is still waiting *replaces* it and restarts the wait
  (counted in ``replaced``). A job already running is never replaced: the new one waits for
  its turn. Jobs of one key therefore never run at the same time, and they run in the order of
  their latest submission.
- **Bounded**: at most ``max_pending`` jobs wait. :meth:`~BackgroundExecutor.submit` returns at
  once while there is room (or when it replaces a waiting job); when the queue is full it
  waits for room (backpressure, counted in ``waited``), and with ``timeout=`` raises
  :class:`~langmem_edge.errors.LimitExceededError` if none came. A job is never dropped. A job
  that submits another job from the worker thread is never blocked (it would wait for itself).
- **Retried until the backend answers**: a job that raises
  :class:`~langmem_edge.errors.BackendUnavailableError` (the store or the Chroma server did
  not answer through its own retries: an outage) goes back in the queue and is tried again
  with exponential backoff (``retry_wait_initial`` doubling up to ``retry_wait_max``) for as
  long as ``retry_for_seconds`` (a day), however many tries that takes; as soon as any job
  of the executor completes (the backend answers again), every job waiting for a retry is
  due at once. A job that raises anything else is tried up to ``max_attempts`` times in all,
  with the same backoff. A retry waits in the queue, not in the worker: other keys' jobs run
  meanwhile. Each failed try is one log line with the key and the error (the traceback at
  debug level), each retry is counted in ``retried``, and a job that gives up is counted in
  ``failed``. The worker survives every failure.
- **Set aside, not retried, when a retry cannot help**: a job that raises one of
  :data:`PERMANENT_ERRORS` (the package's ``InvalidInputError``, ``LimitExceededError``
  among them, ``ConfigurationError``, ``NotFoundError``, ``DecryptionError``: bad input, a
  limit, a wrong setting, a missing key fail the same way every time) is tried once, logged
  once as an error with its key and the error, and counted in ``set_aside`` (not in
  ``failed``). The most recent ones (:data:`SET_ASIDE_KEPT`) are kept with their job, so
  they can be looked at and run again by hand (:meth:`BackgroundExecutor.set_aside`).
  Whatever the job had done before it raised stays done: the post-turn job
  (:mod:`langmem_edge.graphs.extraction`) ingests each batch of a turn on its own, so one bad
  batch leaves the others stored.
- **Flushed**: :meth:`~BackgroundExecutor.flush` runs every waiting job now (ignoring the
  delay and any retry backoff), once, and waits for them: a job whose try fails again stays
  queued for its next retry, and ``pending`` says how many are left;
  :meth:`~BackgroundExecutor.close` flushes and stops the worker, after which ``submit``
  raises :class:`BackgroundClosedError` (jobs still failing then are logged with their keys:
  they are lost to this process). Executors still open at
  interpreter exit are closed then (held weakly, so an executor dropped by its owner is not
  kept alive by the hook; its worker then runs what waits and stops), before the standard
  library shuts thread pools down (:func:`_register_exit`), so a job whose model call runs
  in a thread pool (a structured-output chain does) still runs at exit.

Nothing is looked up through context variables: the caller closes over what the job needs
(a profile and its store), so the graph's store is never lost on the way to the worker
(langmem's ``ReflectionExecutor`` loses it; see DESIGN.md, "The agent half").

Generic by design: this module runs callables and imports nothing from ``langmem_edge.memory``.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures.thread  # noqa: F401  (its exit hook must be registered before ours)
import logging
import threading
import time
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass

from langmem_edge.errors import (
    BackendUnavailableError,
    BackgroundClosedError,
    InvalidInputError,
    LimitExceededError,
)
from langmem_edge.graphs.background_config import (
    PERMANENT_ERRORS,
    SET_ASIDE_KEPT,
    BackgroundConfig,
    BackgroundStats,
    Job,
    SetAsideJob,
    resolve_config,
)

__all__ = ["BackgroundExecutor"]

logger = logging.getLogger(__name__)

@dataclass
class _Entry:
    """A waiting job: what to run and when it is due (monotonic seconds), and its failed
    tries so far."""

    job: Job
    due: float
    tries: int = 0
    """Failed tries so far (0: not tried yet)."""
    failing_since: float | None = None
    """Monotonic time of its first failed try."""
    flush_tried: int = -1
    """The flush (:attr:`_Core.flushes`) in which a try failed because the backend did not
    answer: that flush does not try it again."""
    retry_in: int = -1
    """The flush in which a try failed otherwise: that flush waits for its backoff."""


class _Core:
    """The executor's state, shared with its worker thread.

    Kept apart from :class:`BackgroundExecutor` so the worker holds no reference to the
    executor: dropping the executor lets it be collected (its finalizer stops the worker).
    Every field is guarded by ``cond``.
    """

    def __init__(self, config: BackgroundConfig, name: str) -> None:
        self.config = config
        self.name = name
        self.cond = threading.Condition()
        self.waiting: OrderedDict[str, _Entry] = OrderedDict()  # in submission order
        self.running: str | None = None
        self.flushing = 0  # flush() calls in progress: jobs run without their delay
        self.flushes = 0  # flushes started: a job is tried once a flush
        self.closed = False  # no more submits
        self.stopping = False  # the worker exits once nothing waits
        self.thread: threading.Thread | None = None
        self.counts = {field: 0 for field in ("submitted", "replaced", "completed", "failed",
                                              "retried", "waited", "set_aside")}
        self.set_aside: deque[SetAsideJob] = deque(maxlen=SET_ASIDE_KEPT)

    # -- caller side (under cond) -------------------------------------------------------------

    def stats(self) -> BackgroundStats:
        pending = len(self.waiting) + (self.running is not None)
        retrying = sum(e.tries > 0 for e in self.waiting.values())
        return BackgroundStats(pending=pending, retrying=retrying, **self.counts)

    def offer(self, key: str, job: Job) -> bool:
        """Queue ``job`` under ``key`` if there is room (or it replaces); True if queued."""
        if self.closed:
            raise BackgroundClosedError(
                f"background executor {self.name!r} is closed; job for key {key!r} refused"
            )
        due = time.monotonic() + self.config["delay_seconds"]
        if key in self.waiting:
            del self.waiting[key]
            self.counts["replaced"] += 1
        elif len(self.waiting) >= self.config["max_pending"] and not self.on_worker():
            return False
        self.waiting[key] = _Entry(job, due)
        self.counts["submitted"] += 1
        self.start()
        self.cond.notify_all()
        return True

    def on_worker(self) -> bool:
        return self.thread is not None and threading.current_thread() is self.thread

    def start(self) -> None:
        if self.thread is None:
            self.thread = threading.Thread(target=self.work, name=self.name, daemon=True)
            self.thread.start()

    def settled(self) -> bool:
        """Nothing runs, and every waiting job failed in the current flush because the
        backend did not answer (it waits for a later retry)."""
        return self.running is None and all(
            e.flush_tried == self.flushes for e in self.waiting.values())

    # -- worker side --------------------------------------------------------------------------

    def _pick(self) -> tuple[str, _Entry, float] | None:
        """The job to run next and how long until it is due: the earliest due; while
        flushing (or stopping) every job is due now, except one whose retry this flush
        scheduled (it waits for its backoff) and one this flush found the backend down for
        (not tried again)."""
        now = time.monotonic()
        if self.flushing or self.stopping:
            due = [(e.due - now if e.retry_in == self.flushes else 0.0, key, e)
                   for key, e in self.waiting.items() if e.flush_tried != self.flushes]
            if not due:
                return None
            wait, key, entry = min(due, key=lambda d: d[0])
            return key, entry, wait
        key, entry = min(self.waiting.items(), key=lambda kv: kv[1].due)
        return key, entry, entry.due - now

    def next_job(self) -> tuple[str, _Entry] | None:
        """Wait for the next due job and mark it running; None once stopping and done."""
        with self.cond:
            while True:
                picked = self._pick() if self.waiting else None
                if picked is not None and picked[2] <= 0:
                    key, entry, _ = picked
                    del self.waiting[key]
                    self.running = key
                    self.cond.notify_all()  # room for a submit waiting on a full queue
                    return key, entry
                if self.stopping and picked is None:
                    return None
                self.cond.wait(None if picked is None else picked[2])

    def work(self) -> None:
        """The worker loop: run due jobs until stopped."""
        while (picked := self.next_job()) is not None:
            key, entry = picked
            outcome = self.run(key, entry)
            with self.cond:
                if outcome == "retry":
                    self.counts["retried"] += 1
                    if key not in self.waiting:  # a newer job of the key replaces the retry
                        self.waiting[key] = entry
                else:
                    self.counts[outcome] += 1
                if outcome == "completed":  # the backend answers: retry the others now
                    now = time.monotonic()
                    for waiting in self.waiting.values():
                        if waiting.tries:
                            waiting.due = min(waiting.due, now)
                self.running = None
                self.cond.notify_all()

    def run(self, key: str, entry: _Entry) -> str:
        """One try of ``entry``'s job; its outcome: ``"completed"``, ``"retry"`` (``entry``
        updated for its next try), ``"failed"`` (gave up; logged) or ``"set_aside"`` (a
        permanent error; logged and kept)."""
        try:
            entry.job()
        except PERMANENT_ERRORS as e:
            logger.error("background job for key %r set aside after one try (a retry cannot "
                         "mend it): %r", key, e)
            with self.cond:
                self.set_aside.append(SetAsideJob(key=key, job=entry.job, error=e,
                                                  at=time.time()))
            return "set_aside"
        except BaseException as e:  # a job's SystemExit must not end the worker either
            return self._failed_try(key, entry, e)
        return "completed"

    def _failed_try(self, key: str, entry: _Entry, error: BaseException) -> str:
        now = time.monotonic()
        entry.tries += 1
        if entry.failing_since is None:
            entry.failing_since = now
        outage = isinstance(error, BackendUnavailableError)
        with self.cond:
            stopping = self.stopping and not self.flushing
            flushes, flushing = self.flushes, self.flushing
        if outage:
            more = now - entry.failing_since < self.config["retry_for_seconds"]
        else:
            more = entry.tries < self.config["max_attempts"]
        logger.debug("background job for key %r: try %d failed", key, entry.tries,
                     exc_info=error)
        if stopping or not more:
            logger.error("background job for key %r failed after %d tries, given up: %r%s",
                         key, entry.tries, error,
                         " (the executor is stopping)" if stopping and more else "")
            return "failed"
        wait = min(self.config["retry_wait_initial"] * 2 ** (entry.tries - 1),
                   self.config["retry_wait_max"])
        entry.due = now + wait
        entry.flush_tried = flushes if flushing and outage else -1
        entry.retry_in = flushes if flushing and not outage else -1
        logger.warning("background job for key %r failed (try %d), retrying in %.1f s%s: %r",
                       key, entry.tries, wait,
                       " (the backend did not answer)" if outage else "", error)
        return "retry"

    def stop_soon(self) -> None:
        """Let the worker run what waits (without delay) and exit; used when collected."""
        with self.cond:
            self.closed = True
            self.stopping = True
            self.cond.notify_all()


class BackgroundExecutor:
    """Runs sync jobs on one daemon worker thread, debounced per key, bounded, retried.

    See the module docstring for the semantics. Thread-safe: any thread (or event loop) may
    submit; the worker thread starts with the first submit.

    Args:
        config: A :class:`BackgroundConfig`; missing keys take their defaults. Unknown keys
            or out-of-range values raise :class:`~langmem_edge.errors.ConfigurationError`.
        name: The worker thread's name (shown in logs and thread dumps).
    """

    def __init__(self, config: BackgroundConfig | None = None, *,
                 name: str = "langmem-edge-extraction") -> None:
        self._core = _Core(resolve_config(config), name)
        self._finalizer = weakref.finalize(self, self._core.stop_soon)
        self._finalizer.atexit = False  # exit is handled by _close_open_executors, with a wait
        _OPEN.add(self)

    def __repr__(self) -> str:
        return f"BackgroundExecutor(name={self._core.name!r}, stats={self.stats()!r})"

    @property
    def config(self) -> BackgroundConfig:
        """The resolved configuration (defaults filled in)."""
        return dict(self._core.config)  # type: ignore[return-value]

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (submits now raise)."""
        with self._core.cond:
            return self._core.closed

    def stats(self) -> BackgroundStats:
        """The counters now (see :class:`BackgroundStats`)."""
        with self._core.cond:
            return self._core.stats()

    def set_aside(self) -> list[SetAsideJob]:
        """The jobs set aside (a permanent error on their one try), oldest first; the newest
        :data:`SET_ASIDE_KEPT` are kept. Run one again with ``submit(entry.key, entry.job)``."""
        with self._core.cond:
            return list(self._core.set_aside)

    def submit(self, key: str, job: Job, *, timeout: float | None = None) -> None:
        """Queue ``job`` to run under ``key`` after the delay, replacing a waiting job of ``key``.

        Returns at once unless ``max_pending`` jobs are waiting; then it waits for room, at
        most ``timeout`` seconds (None: as long as it takes).

        Raises:
            BackgroundClosedError: the executor is closed.
            InvalidInputError: ``key`` is not a non-empty string or ``job`` is not callable.
            LimitExceededError: the queue stayed full for ``timeout`` seconds; ``job`` was
                not queued.
        """
        _check_job(key, job)
        core = self._core
        deadline = None if timeout is None else time.monotonic() + timeout
        with core.cond:
            if core.offer(key, job):
                return
            core.counts["waited"] += 1
            while not core.offer(key, job):
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise LimitExceededError(
                        f"background queue {core.name!r} stayed full "
                        f"({core.config['max_pending']} jobs waiting) for {timeout} s; "
                        f"job for key {key!r} not queued"
                    )
                core.cond.wait(remaining)

    async def asubmit(self, key: str, job: Job, *, timeout: float | None = None) -> None:
        """:meth:`submit` without blocking the event loop when the queue is full."""
        _check_job(key, job)
        with self._core.cond:
            if self._core.offer(key, job):
                return
        await asyncio.to_thread(self.submit, key, job, timeout=timeout)

    def flush(self, timeout: float | None = None) -> BackgroundStats:
        """Run every waiting job now (ignoring the delay) and wait until none is left.

        Jobs submitted while the flush waits run at once too. Returns the counters; with a
        ``timeout`` (seconds) that expired first, ``pending`` is above 0. Called from a job on
        the worker thread, it returns at once (it cannot wait for itself).
        """
        core = self._core
        deadline = None if timeout is None else time.monotonic() + timeout
        with core.cond:
            if core.on_worker():
                return core.stats()
            core.flushing += 1
            core.flushes += 1
            core.cond.notify_all()
            try:
                while not core.settled():
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        break
                    core.cond.wait(remaining)
            finally:
                core.flushing -= 1
            return core.stats()

    def close(self, timeout: float | None = None) -> BackgroundStats:
        """Refuse new jobs, run every waiting one, stop the worker; idempotent.

        Returns the counters. If ``timeout`` (seconds) expired first, the jobs left are logged
        (a warning naming their keys) and ``pending`` is above 0; the worker keeps running
        them until the interpreter exits.
        """
        core = self._core
        with core.cond:
            core.closed = True
        stats = self.flush(timeout)
        with core.cond:
            core.stopping = True
            core.cond.notify_all()
            left = list(core.waiting) + ([core.running] if core.running else [])
            thread = None if core.on_worker() else core.thread
        if left:
            logger.warning("background executor %r closed with %d job(s) unfinished, keys %r",
                           core.name, len(left), left)
        elif thread is not None:
            thread.join()  # nothing waits and nothing runs: the worker is exiting now
        self._finalizer.detach()
        _OPEN.discard(self)
        return stats

    async def aflush(self, timeout: float | None = None) -> BackgroundStats:
        """:meth:`flush` in a helper thread, so the event loop keeps running."""
        return await asyncio.to_thread(self.flush, timeout)

    async def aclose(self, timeout: float | None = None) -> BackgroundStats:
        """:meth:`close` in a helper thread, so the event loop keeps running."""
        return await asyncio.to_thread(self.close, timeout)

    def __enter__(self) -> BackgroundExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> BackgroundExecutor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _check_job(key: object, job: object) -> None:
    if not isinstance(key, str) or not key:
        raise InvalidInputError(f"background job key must be a non-empty string, got {key!r}")
    if not callable(job):
        raise InvalidInputError(f"background job must be callable, got {type(job).__name__}")


_OPEN: weakref.WeakSet[BackgroundExecutor] = weakref.WeakSet()
"""Executors not yet closed, held weakly: closed at interpreter exit."""


def _register_exit(hook: Callable[[], None]) -> None:
    """Run ``hook`` at interpreter exit before thread pools refuse work.

    ``atexit`` hooks run after ``threading``'s exit hooks, the first of which makes every
    ``ThreadPoolExecutor.submit`` raise "cannot schedule new futures after interpreter
    shutdown" (``concurrent.futures.thread``); ``threading``'s own hooks run newest first,
    so one registered after that module's runs before it. ``threading._register_atexit``
    (Python 3.9+) is the only way to get there; without it, ``atexit``."""
    register = getattr(threading, "_register_atexit", None)
    if callable(register):
        register(hook)
    else:  # pragma: no cover - every supported Python has it
        atexit.register(hook)


def _close_open_executors() -> None:
    """Close every executor still open, each given its ``exit_timeout``."""
    for executor in list(_OPEN):
        try:
            executor.close(executor.config["exit_timeout"])
        except Exception:  # pragma: no cover - never let one executor stop the others
            logger.exception("closing background executor %r at exit failed", executor)


_register_exit(_close_open_executors)
