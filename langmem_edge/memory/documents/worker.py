"""The background of ``documents.add``: one thread that chunks and embeds documents.

``documents.add`` stores the text and a ``processing`` record in the caller's call, then hands
the rest (chunking, embedding, the ``ready`` or ``failed`` record) to this worker, so a long
PDF never holds up a reply. There is one mechanism for both faces: ``documents.aadd`` hands
its work to the same thread (the plan is driven by ``run_sync`` there); ``wait=True`` runs
the same plan in the call instead.

The graphs' ``BackgroundExecutor`` sits a layer above memory, so the documents room has this
small one. Its thread is a ``ThreadPoolExecutor``'s: the interpreter joins it at exit, so
documents added just before a process ends are still processed. A process killed mid-way
leaves the record ``processing``; adding the same content again after
:data:`~langmem_edge.memory.documents.plans.STALE_PROCESSING_SECONDS` starts it over.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures

__all__ = ["DEFAULT_DOCUMENT_WORKERS", "DocumentWorker"]

logger = logging.getLogger(__name__)

DEFAULT_DOCUMENT_WORKERS = 1
"""Threads processing documents at once (embedding is CPU-bound: more rarely helps)."""


class DocumentWorker:
    """Runs document jobs on background threads; made lazily, shared by an ``AgentMemory``'s
    profiles.

    Args:
        workers: Threads. Default :data:`DEFAULT_DOCUMENT_WORKERS` (1).
    """

    def __init__(self, *, workers: int = DEFAULT_DOCUMENT_WORKERS) -> None:
        self._workers = max(1, workers)
        self._pool: ThreadPoolExecutor | None = None
        self._jobs: dict[tuple[tuple[str, ...], str], Future[object]] = {}
        self._lock = threading.Lock()

    def submit(self, root: tuple[str, ...], document_id: str,
               job: Callable[[], object]) -> Future[object]:
        """Run ``job`` (the processing of ``document_id`` of the profile at ``root``) in the
        background; a job already queued for it is returned instead."""
        key = (root, document_id)
        with self._lock:
            running = self._jobs.get(key)
            if running is not None and not running.done():
                return running
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._workers,
                                                thread_name_prefix="langmem-edge-documents")
            future = self._pool.submit(self._guarded, job)
            self._jobs[key] = future
        # outside the lock: a future already done runs the callback right here
        future.add_done_callback(lambda f: self._forget(key, f))
        return future

    @staticmethod
    def _guarded(job: Callable[[], object]) -> object:
        try:
            return job()
        except Exception:  # the job records its failure; this is the last guard
            logger.exception("a document job failed")
            return None

    def _forget(self, key: tuple[tuple[str, ...], str], future: Future[object]) -> None:
        with self._lock:
            if self._jobs.get(key) is future:
                del self._jobs[key]

    def pending(self, root: tuple[str, ...], document_id: str) -> Future[object] | None:
        """The job of this document still queued or running, or ``None``."""
        with self._lock:
            return self._jobs.get((root, document_id))

    def wait(self, root: tuple[str, ...] | None = None, document_id: str | None = None,
             timeout: float | None = None) -> bool:
        """Wait for the jobs (of one profile, or of one document); ``False`` on timeout."""
        with self._lock:
            futures = [f for (r, d), f in self._jobs.items()
                       if (root is None or r == root)
                       and (document_id is None or d == document_id)]
        if not futures:
            return True
        _, not_done = wait_futures(futures, timeout=timeout)
        return not not_done

    def close(self) -> None:
        """Finish the queued jobs and stop the threads (a later submit starts new ones)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
