"""Planner statistics of an embedded Chroma folder (``langmem_edge._sqlite_stats``).

SQLite is only ever opened from child processes here too: Chroma links its own SQLite, and a
second copy in this process would release its file locks."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import chromadb
import pytest
from checkpointer_helpers import config, make_checkpoint
from langgraph.store.base import PutOp

from langmem_edge import ChromaStore, _sqlite_stats
from langmem_edge._sqlite_stats import PlannerStatistics, folder_of, refresh
from langmem_edge.checkpointers import ChromaSaver
from langmem_edge.testing import FakeEmbeddings

# The shape of the query Chroma 1.5's SQLite reader runs for get(where={"p2": <value>}).
_PLAN = """
import sqlite3, sys
db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
seg = db.execute("SELECT segment_id FROM embeddings LIMIT 1").fetchone()[0]
query = ("SELECT DISTINCT e.id, e.embedding_id FROM embeddings e WHERE e.segment_id = ? "
         "AND e.id IN (SELECT id FROM embedding_metadata WHERE key = 'p2' "
         "AND string_value = 'none') ORDER BY e.id")
print(" | ".join(row[3] for row in db.execute("EXPLAIN QUERY PLAN " + query, (seg,))))
"""


def _plan(folder: Path) -> str:
    done = subprocess.run([sys.executable, "-c", _PLAN, str(folder / "chroma.sqlite3")],
                          capture_output=True, text=True, check=True)
    return done.stdout


def _walks_every_row(plan: str) -> bool:
    """Whether SQLite reads the collection's rows one by one (the segment index) rather than
    starting from the rows the filter names."""
    return "(segment_id=?)" in plan


def _store(folder: Path) -> ChromaStore:
    return ChromaStore.from_path(str(folder),
                                 index={"dims": 8, "embed": FakeEmbeddings(8), "fields": ["t"]})


def _fill(store: ChromaStore, n: int, start: int = 0) -> None:
    for i in range(start, start + n, 250):
        store.batch([PutOp(("s", f"n{j % 50}"), f"k{j}", {"t": f"w{j}"}, index=False)
                     for j in range(i, min(i + 250, start + n))])


def test_a_store_that_grows_gets_statistics_and_filtered_reads_start_from_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_sqlite_stats, "CHECK_EVERY", 300)
    store = _store(tmp_path)
    try:
        _fill(store, 200)  # below MIN_ROWS: nothing taken
        store._statistics.wait()
        assert store._statistics.last_report is None
        assert _walks_every_row(_plan(tmp_path))  # no statistics: the plan walks every row
        _fill(store, 1_200, start=200)
        assert store._statistics.wait(timeout=60)
        assert (store._statistics.last_report or "").startswith("analyzed")
        assert not _walks_every_row(_plan(tmp_path))
        assert len(store.search(("s", "n7"), limit=100)) == 1_400 // 50  # reads unchanged
    finally:
        store.close()


def test_a_store_opened_on_a_large_folder_takes_statistics(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _fill(store, 1_100)
    store._statistics.wait()
    store.close()
    subprocess.run([sys.executable, "-c", "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]);"
                    " db.execute('DROP TABLE IF EXISTS sqlite_stat1'); db.commit()",
                    str(tmp_path / "chroma.sqlite3")], check=True)
    assert _walks_every_row(_plan(tmp_path))
    reopened = _store(tmp_path)
    try:
        assert reopened._statistics.wait(timeout=60)
        assert (reopened._statistics.last_report or "").startswith("analyzed")
        assert not _walks_every_row(_plan(tmp_path))
    finally:
        reopened.close()


def test_statistics_are_retaken_only_after_the_folder_grew(tmp_path: Path) -> None:
    store = _store(tmp_path)
    try:
        _fill(store, 1_100)  # fewer rows than CHECK_EVERY: the store took none
        store._statistics.wait()
        assert refresh(str(tmp_path)).startswith("analyzed")
        assert refresh(str(tmp_path)).startswith("kept")  # just taken: not again
        assert refresh(str(tmp_path), growth=1.0).startswith("analyzed")
    finally:
        store.close()


def test_writes_racing_analyze_are_all_kept(tmp_path: Path) -> None:
    """ANALYZE takes SQLite's write lock in another process while this one writes."""
    store = _store(tmp_path)
    stop = threading.Event()
    runs: list[str] = []

    def analyze() -> None:
        while not stop.is_set():
            runs.append(refresh(str(tmp_path), min_rows=1, growth=1.0))

    _fill(store, 50)
    thread = threading.Thread(target=analyze)
    thread.start()
    try:
        _fill(store, 2_000, start=50)
    finally:
        stop.set()
        thread.join()
    try:
        # with analysis_limit the row count ANALYZE records is an estimate: one above the
        # true count keeps the statistics ("kept <then> <now>", now below then), the only
        # other answer (seen once in CI)
        analyzed = [r for r in runs if r.startswith("analyzed")]
        kept = [r.split() for r in runs if not r.startswith("analyzed")]
        assert len(analyzed) >= 2
        assert all(k[0] == "kept" and int(k[2]) <= int(k[1]) for k in kept), kept
        assert sum(len(store.search(("s", f"n{n}"), limit=1_000)) for n in range(50)) == 2_050
    finally:
        store.close()


def test_servers_and_in_memory_clients_are_left_alone() -> None:
    assert folder_of(chromadb.EphemeralClient()) is None
    stats = PlannerStatistics(None)
    stats.opened(10**6)
    stats.wrote(10**6)
    assert stats.wait(timeout=0) and stats.last_report is None


def test_the_command_refreshes_a_folder_and_refuses_a_missing_one(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _fill(store, 10)
    store.close()
    run = [sys.executable, "-m", "langmem_edge._sqlite_stats"]
    done = subprocess.run([*run, str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("analyzed"), done.stderr
    missing = subprocess.run([*run, str(tmp_path / "nothing")], capture_output=True, text=True)
    assert missing.returncode == 1 and "no Chroma folder" in missing.stderr
    assert not (tmp_path / "nothing").exists()


@pytest.mark.slow  # grows a saver past the statistics threshold (28 s)
def test_a_saver_that_grows_gets_statistics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_sqlite_stats, "CHECK_EVERY", 200)
    saver = ChromaSaver.from_path(str(tmp_path))
    try:
        for n in range(1_100):
            saver.put(config(f"thread-{n % 40}"), make_checkpoint(), {"step": n}, {})
        assert saver._statistics.wait(timeout=60)
        assert saver._statistics.last_report is not None
        assert not _walks_every_row(_plan(tmp_path))
        assert saver.get_tuple(config("thread-7")) is not None
    finally:
        saver.close()
