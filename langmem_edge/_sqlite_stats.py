"""SQLite planner statistics for an embedded Chroma folder.

An embedded Chroma keeps every collection's metadata in SQLite (``<folder>/chroma.sqlite3``)
and never runs ``ANALYZE``. Without statistics SQLite answers a filtered ``get``
(``where={"p4": ...}``) by walking every row of the collection and testing each against the
filter, so reading a 20-row namespace costs in proportion to the whole store. With
statistics it starts from the metadata index and reads only the matching rows. Measured
(``python benchmarks/chroma_filter_cost.py --analyze``): see ``docs/store.md``.

:class:`PlannerStatistics` keeps them current. When a store opens on a folder holding at
least :data:`MIN_ROWS` rows, and again each time it has written :data:`CHECK_EVERY` rows, it
asks a child process to run ``ANALYZE`` if the folder has no statistics yet or has grown
:data:`GROWTH`-fold since they were taken. A child process, never this one: Chroma links its
own copy of SQLite, and two copies of SQLite in one process release each other's file locks
(https://www.sqlite.org/howtocorrupt.html, section 2.2). The child runs on a daemon thread;
a failure is logged, never raised (statistics only make reads faster).

A server's folder belongs to the server; run :func:`refresh` on it from any process
(``python -m langmem_edge._sqlite_stats <folder>``): SQLite shares one file safely between
processes, and the server picks the statistics up at its next query.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["CHECK_EVERY", "GROWTH", "MIN_ROWS", "PlannerStatistics", "refresh"]

logger = logging.getLogger(__name__)

DB_FILE = "chroma.sqlite3"
"""The SQLite file inside an embedded Chroma folder."""

MIN_ROWS = 1_000
"""Rows (of every collection in the folder) below which no statistics are taken: a walk of
fewer rows costs less than the child process."""

GROWTH = 2.0
"""Growth of the folder's rows since the last statistics that takes them again (the plans
depend on proportions, which change slowly; each doubling is enough)."""

CHECK_EVERY = 2_000
"""Rows a store writes between two checks of the folder's growth."""

ANALYSIS_LIMIT = 2_000
"""``PRAGMA analysis_limit``: index entries ``ANALYZE`` samples per index, so the write lock it
holds stays short on a large folder (SQLite's own recommendation for periodic runs)."""

TIMEOUT_SECONDS = 120.0
"""Longest a child may take (it waits up to 30 s for SQLite's write lock)."""

_CHILD = """
import sqlite3, sys, urllib.parse
path, min_rows, growth, limit = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
db = sqlite3.connect("file:" + urllib.parse.quote(path) + "?mode=rw", uri=True, timeout=30)
try:
    rows = db.execute("SELECT count(*) FROM embeddings").fetchone()[0]
    try:
        got = db.execute("SELECT stat FROM sqlite_stat1 WHERE tbl = 'embeddings'").fetchone()
    except sqlite3.OperationalError:
        got = None
    taken = int(got[0].split()[0]) if got else 0
    if rows >= min_rows and (taken == 0 or rows >= growth * taken):
        db.execute(f"PRAGMA analysis_limit = {limit}")
        db.execute("ANALYZE")
        db.commit()
        print(f"analyzed {rows}")
    else:
        print(f"kept {taken} {rows}")
finally:
    db.close()
"""


def folder_of(client: Any) -> str | None:
    """The folder of an embedded (persistent) Chroma client; ``None`` for a server's or an
    in-memory client."""
    try:
        settings = client.get_settings()
    except Exception:  # pragma: no cover - a client without settings: nothing to do
        return None
    if not getattr(settings, "is_persistent", False):
        return None
    if "fastapi" in str(getattr(settings, "chroma_api_impl", "")).lower():
        return None
    folder = getattr(settings, "persist_directory", None)
    return str(folder) if folder else None


def refresh(folder: str, *, min_rows: int | None = None, growth: float | None = None) -> str:
    """Run ``ANALYZE`` on ``folder``'s SQLite file in a child process if it holds at least
    ``min_rows`` rows (default :data:`MIN_ROWS`) and has no statistics or grew ``growth``-fold
    (default :data:`GROWTH`) since they were taken.

    Returns the child's one-line report (``"analyzed <rows>"`` or ``"kept <then> <now>"``);
    raises ``FileNotFoundError`` without the file and ``RuntimeError`` if the child fails.
    """
    db = os.path.join(folder, DB_FILE)
    if not os.path.isfile(db):
        raise FileNotFoundError(f"no Chroma folder at {folder!r} (no {DB_FILE})")
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", _CHILD, db,
         str(MIN_ROWS if min_rows is None else min_rows),
         str(GROWTH if growth is None else growth), str(ANALYSIS_LIMIT)],
        capture_output=True, text=True, timeout=TIMEOUT_SECONDS, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"ANALYZE of {db!r} failed: {done.stderr.strip()[-500:]}")
    return done.stdout.strip()


class PlannerStatistics:
    """Keeps the planner statistics of one embedded Chroma folder current (module docs).

    ``folder`` ``None`` (a server, an in-memory client) makes every method a no-op.
    :meth:`for_client` makes one for a store or saver that just opened.
    """

    def __init__(self, folder: str | None) -> None:
        self.folder = folder
        self._written = 0
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.last_report: str | None = None

    @classmethod
    def for_client(cls, client: Any, count: Callable[[], int]) -> PlannerStatistics:
        """The statistics of ``client``'s folder, checked now if it has one; ``count``
        returns the rows of the opener's main collection (called only for a folder)."""
        statistics = cls(folder_of(client))
        if statistics.folder is not None:
            statistics.opened(int(count()))
        return statistics

    def opened(self, rows: int) -> None:
        """The store opened on a folder of ``rows`` rows (its items collection)."""
        if self.folder is not None and rows >= MIN_ROWS:
            self._start()

    def wrote(self, rows: int) -> None:
        """The store wrote ``rows`` rows: every :data:`CHECK_EVERY`, check the growth."""
        if self.folder is None:
            return
        with self._lock:
            self._written += rows
            if self._written < CHECK_EVERY:
                return
            self._written = 0
        self._start()

    def _start(self) -> None:
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return  # one child at a time; the next check comes soon enough
            self._thread = threading.Thread(target=self._run, daemon=True,
                                            name="chroma-planner-statistics")
            self._thread.start()

    def _run(self) -> None:
        assert self.folder is not None
        try:
            self.last_report = refresh(self.folder)
            logger.debug("planner statistics of %s: %s", self.folder, self.last_report)
        except Exception as e:
            logger.warning("planner statistics of %s not refreshed: %s", self.folder, e)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a running child; whether none is running any more."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
            return not thread.is_alive()
        return True


def main(argv: list[str] | None = None) -> int:
    """``python -m langmem_edge._sqlite_stats <folder>``: refresh a folder's statistics (a
    server's folder while it runs, too) whatever its size or growth."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m langmem_edge._sqlite_stats <chroma folder>", file=sys.stderr)
        return 2
    try:
        print(refresh(args[0], min_rows=1, growth=1.0))
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover - exercised through a subprocess in the tests
    raise SystemExit(main())
