"""Post-turn extraction off the reply's path: :class:`TurnExtractor`.

After a turn, the thread's messages are handed to a
:class:`~langmem_edge.graphs.background.BackgroundExecutor` under the key
``"<profile>/<thread>"``; the reply does not wait. The job, on the executor's worker thread:

1. ingests the thread's messages not yet ingested into the episodic tier
   (``profile.ingest(messages, session_id=thread, contact=...)``: idempotent, and it writes
   what they teach through the semantic tier), in calls of at most ``max_messages_per_call``
   (500) messages, oldest first;
2. when the thread is over the compaction budget, builds its window with compaction
   (``profile.episodic.window(thread, budget, compact=True)``) up to
   :data:`DEFAULT_COMPACTION_PASSES` times, each pass summarising one more range into an
   overlay and writing that range's pre-compaction flush (at most 10 durable facts,
   confidence 0.6) before the range leaves the model's view (see
   :mod:`langmem_edge.graphs.compaction` for why this runs here).

**Nothing is lost between turns.** Messages wait in a per-key buffer until a job has ingested
them, so a job replaced by a newer one (the executor debounces per key), a job that failed
every retry, or a state trimmed in the meantime (``trim_state``) leaves its messages for the
next job of the thread. The job closes over the profile (and so over its store), never over
context variables: the graph's store is never lost on the way to the worker.

Retries, logging (with the key) and the counters are the executor's, reached through
:class:`BackgroundJobs` (``stats``, ``flush``, ``close``: ``close`` runs what waits). A batch
refused with an error a retry cannot mend
(:data:`~langmem_edge.graphs.background_config.PERMANENT_ERRORS`: bad input, a limit) does not stop
the job's other batches; its messages are not queued again, and the job then raises that
error, so the executor sets it aside after this one try (``set_aside``) instead of retrying
what would fail the same way. Over-long messages never get there: they are cut to fit
(:mod:`langmem_edge.graphs.history`), and extraction never writes a memory over
``max_fact_chars``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from langmem_edge._lru import LRU
from langmem_edge.graphs.background import BackgroundExecutor
from langmem_edge.graphs.background_config import PERMANENT_ERRORS, BackgroundStats
from langmem_edge.graphs.history import EntryCache, total_tokens
from langmem_edge.graphs.run import MemoryRun
from langmem_edge.memory.core.plans import Call, Plan, run_async, run_sync
from langmem_edge.memory.transfer import list_sessions

__all__ = [
    "DEFAULT_COMPACTION_PASSES",
    "DEFAULT_REMEMBERED_THREADS",
    "BackgroundJobs",
    "TurnExtractor",
]

logger = logging.getLogger(__name__)

DEFAULT_COMPACTION_PASSES = 3
"""Overlays one post-turn job may add to a thread (each summarises one range)."""
DEFAULT_REMEMBERED_THREADS = 1024
"""Threads whose ingested message ids are kept in memory; a thread forgotten here is
ingested again whole by its next job (harmless: ingest is idempotent)."""


class _Thread:
    """A thread's buffer: messages waiting to be ingested, ids already ingested."""

    def __init__(self) -> None:
        self.waiting: dict[str, BaseMessage] = {}
        self.done: set[str] = set()
        self.latest: Sequence[BaseMessage] = ()


def _ident(message: BaseMessage) -> str:
    return message.id or f"obj:{id(message)}"


class TurnExtractor:
    """Hands each finished turn to a background job (see the module docstring); its
    counters, flush and close are :class:`BackgroundJobs`'.

    Args:
        executor: The executor to submit to; ``None``: one of its own (closed by
            :meth:`close`).
        compaction_budget: Token budget over which the job compacts the thread; ``None``:
            never.
        compaction_passes: At most this many new overlays a job. Default
            :data:`DEFAULT_COMPACTION_PASSES` (3).
        cache: Where messages' stored forms are kept (shared with compaction); ``None``:
            a cache of its own.
    """

    def __init__(self, executor: BackgroundExecutor | None = None, *,
                 compaction_budget: int | None = None,
                 compaction_passes: int = DEFAULT_COMPACTION_PASSES,
                 cache: EntryCache | None = None) -> None:
        self.owns_executor = executor is None
        self.executor = executor if executor is not None else BackgroundExecutor()
        self.compaction_budget = compaction_budget
        self.compaction_passes = compaction_passes
        self.cache = cache if cache is not None else EntryCache()
        self._threads: LRU[str, _Thread] = LRU(DEFAULT_REMEMBERED_THREADS)
        self._swept: set[str] = set()  # profiles whose owed sessions this process wrote
        self._lock = threading.Lock()

    def _queue(self, run: MemoryRun, messages: Sequence[BaseMessage]) -> tuple[str, Any]:
        assert run.thread is not None
        key = f"{run.profile.name}/{run.thread}"
        with self._lock:
            state = self._threads.get_or_make(key, _Thread)
            for m in messages:
                ident = _ident(m)
                if ident not in state.done:
                    state.waiting.setdefault(ident, m)
            state.latest = list(messages)
        return key, self._job(state, run)

    def _unrecorded(self, run: MemoryRun, key: str) -> list[Any]:
        """The stored forms of the thread's messages no job has ingested yet."""
        assert run.thread is not None
        with self._lock:
            state = self._threads.get(key)
            waiting = [m for m in state.waiting.values()] if state else []
        config = run.memory.config.episodic
        return [e.stored for e in self.cache.entries(waiting, run.thread, config)]

    def _record_plan(self, run: MemoryRun, key: str) -> Plan[None]:
        """Store the thread's messages no job has ingested, their memories owed
        (``ingest(..., extract=False)``); a failure (the store is down) is logged and left
        to the job."""
        stored = self._unrecorded(run, key)
        step = run.memory.config.episodic.max_messages_per_call
        try:
            for start in range(0, len(stored), step):
                yield Call(run.profile.ingest, run.profile.aingest,
                           (stored[start:start + step],),
                           {"session_id": run.thread, "contact": run.contact,
                            "extract": False})
        except Exception as e:  # the job stores them when it runs
            logger.warning("turn of %s not recorded before the reply (%r); its background "
                           "job will store it", key, e)

    def submit(self, run: MemoryRun, messages: Sequence[BaseMessage]) -> None:
        """Record the turn's messages in the episodic tier, their memories owed
        (durable before the reply returns, visible to ``langmem-edge pending`` from any
        process), then queue the job that writes those memories. A recording that fails
        (the store is down) is left to the job. A run without a thread has no session:
        nothing is recorded or queued."""
        if run.thread and messages:
            key, job = self._queue(run, messages)
            run_sync(self._record_plan(run, key))
            self.executor.submit(key, job)

    async def asubmit(self, run: MemoryRun, messages: Sequence[BaseMessage]) -> None:
        """Async :meth:`submit` (never blocks the event loop)."""
        if run.thread and messages:
            key, job = self._queue(run, messages)
            await run_async(self._record_plan(run, key))
            await self.executor.asubmit(key, job)

    def _sweep(self, run: MemoryRun, after_failure: bool) -> None:
        """Write what the profile's other sessions owe: at its first job in this process
        (sessions a process that died left behind) and after a job that had failed (an
        outage may have left others)."""
        name = run.profile.name
        with self._lock:
            first = name not in self._swept
            self._swept.add(name)
        if not (first or after_failure):
            return
        for info in list_sessions(run.memory, name):
            if info.pending and info.session_id != run.thread:
                logger.info("profile %r: session %r owed %d message(s)' memories; writing "
                            "them", name, info.session_id, info.pending)
                run.profile.ingest([], session_id=info.session_id)

    def _job(self, state: _Thread, run: MemoryRun) -> Callable[[], None]:
        profile, thread, contact = run.profile, run.thread, run.contact
        assert thread is not None
        config = run.memory.config.episodic
        budget, passes, cache = self.compaction_budget, self.compaction_passes, self.cache

        tries = 0

        def ingest_turn() -> None:
            nonlocal tries
            tries += 1
            with self._lock:
                waiting = list(state.waiting.items())
                latest = state.latest
            stored = [e.stored for e in cache.entries([m for _, m in waiting], thread, config)]
            step = config.max_messages_per_call
            refused: Exception | None = None
            for start in range(0, len(stored), step):
                try:
                    profile.ingest(stored[start:start + step], session_id=thread,
                                   contact=contact)
                except PERMANENT_ERRORS as e:  # the same every time: the next batches land
                    refused = refused or e
            with self._lock:
                for ident, _ in waiting:
                    state.waiting.pop(ident, None)
                    state.done.add(ident)
            if refused is not None:
                raise refused  # the executor sets the job aside (logged, counted)
            self._sweep(run, after_failure=tries > 1)
            if budget is None or total_tokens(cache.entries(latest, thread, config)) <= budget:
                return
            for _ in range(passes):
                window = profile.episodic.window(thread, budget, compact=True,
                                                 contact=contact)
                if window.new_overlay is None:
                    break

        return ingest_turn


class BackgroundJobs:
    """The post-turn jobs of an object that holds a :class:`TurnExtractor` (its
    ``extractor``): counters, flush and close, sync and async."""

    extractor: TurnExtractor

    def stats(self) -> BackgroundStats:
        """Counters of the post-turn jobs (submitted, replaced, completed, failed, retried,
        pending)."""
        return self.extractor.executor.stats()

    def flush(self) -> BackgroundStats:
        """Run every waiting post-turn job now and wait for them."""
        return self.extractor.executor.flush()

    async def aflush(self) -> BackgroundStats:
        """Async :meth:`flush`."""
        return await self.extractor.executor.aflush()

    def close(self) -> BackgroundStats:
        """Run the waiting post-turn jobs; stop the executor if it was made here (one given
        is only flushed: its owner closes it)."""
        x = self.extractor
        return x.executor.close() if x.owns_executor else x.executor.flush()

    async def aclose(self) -> BackgroundStats:
        """Async :meth:`close`."""
        x = self.extractor
        return await (x.executor.aclose() if x.owns_executor else x.executor.aflush())
