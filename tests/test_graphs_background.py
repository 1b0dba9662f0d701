"""BackgroundExecutor: debounce per key, flush, close, retries, backpressure, async, exit."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from langgraph.store.memory import InMemoryStore

from langmem_edge.errors import (
    BackgroundClosedError,
    ConfigurationError,
    InvalidInputError,
    LimitExceededError,
)
from langmem_edge.graphs.background import BackgroundExecutor
from langmem_edge.graphs.background_config import BackgroundConfig, BackgroundStats
from langmem_edge.memory import AgentMemory
from langmem_edge.testing import FakeEmbeddings

LONG_DELAY: BackgroundConfig = {"delay_seconds": 3600.0, "retry_wait_initial": 0.0}
"""Jobs never come due by themselves in a test: only flush/close runs them."""

SHORT_DELAY: BackgroundConfig = {"delay_seconds": 0.01, "retry_wait_initial": 0.0}

WAIT = 10.0
"""Upper bound of any wait on an event in these tests (a hang fails, it is never a timing)."""


@pytest.fixture
def make_executor() -> Iterator[Callable[..., BackgroundExecutor]]:
    made: list[BackgroundExecutor] = []

    def make(config: BackgroundConfig | None = None, **kw: object) -> BackgroundExecutor:
        ex = BackgroundExecutor(config, **kw)  # type: ignore[arg-type]
        made.append(ex)
        return ex

    yield make
    for ex in made:
        ex.close(WAIT)


def recorder() -> tuple[list[str], Callable[[str], Callable[[], None]]]:
    ran: list[str] = []
    lock = threading.Lock()

    def job(label: str) -> Callable[[], None]:
        def run() -> None:
            with lock:
                ran.append(label)

        return run

    return ran, job


def wait_until(predicate: Callable[[], bool]) -> None:
    """Wait (bounded) for a state another thread reaches; fails the test on a hang."""
    done = threading.Event()
    for _ in range(int(WAIT / 0.005)):
        if predicate():
            return
        done.wait(0.005)
    pytest.fail("the expected state was never reached")


def test_a_later_submit_replaces_the_waiting_job_of_its_key(make_executor) -> None:
    ex = make_executor(LONG_DELAY)
    ran, job = recorder()
    ex.submit("thread-1", job("turn 1"))
    ex.submit("thread-2", job("other thread"))
    ex.submit("thread-1", job("turn 2"))
    assert ex.stats().pending == 2 and ran == []  # nothing runs before its delay
    stats = ex.flush(WAIT)
    assert sorted(ran) == ["other thread", "turn 2"]
    assert stats == BackgroundStats(submitted=3, replaced=1, completed=2, pending=0)


def test_a_job_runs_by_itself_once_its_delay_passed(make_executor) -> None:
    ex = make_executor(SHORT_DELAY)
    done = threading.Event()
    ex.submit("t", done.set)
    assert done.wait(WAIT)
    wait_until(lambda: ex.stats().completed == 1)


def test_a_running_job_is_not_replaced_and_jobs_of_a_key_run_in_order(make_executor) -> None:
    ex = make_executor(SHORT_DELAY)
    started, release = threading.Event(), threading.Event()
    ran, job = recorder()

    def first() -> None:
        started.set()
        assert release.wait(WAIT)
        ran.append("first")

    ex.submit("t", first)
    assert started.wait(WAIT)
    ex.submit("t", job("second"))  # first is running: this one waits its turn
    release.set()
    stats = ex.flush(WAIT)
    assert ran == ["first", "second"]
    assert (stats.replaced, stats.completed) == (0, 2)


def test_flush_runs_every_waiting_job_and_waits_for_them(make_executor) -> None:
    ex = make_executor(LONG_DELAY)
    ran, job = recorder()
    for i in range(20):
        ex.submit(f"thread-{i}", job(str(i)))
    stats = ex.flush(WAIT)
    assert sorted(ran, key=int) == [str(i) for i in range(20)]
    assert (stats.completed, stats.pending) == (20, 0)
    assert ex.flush(WAIT).completed == 20  # nothing waits: returns at once


def test_close_flushes_then_refuses_jobs(make_executor) -> None:
    ex = make_executor(LONG_DELAY, name="bg-test")
    ran, job = recorder()
    ex.submit("t", job("pending at close"))
    worker = next(t for t in threading.enumerate() if t.name == "bg-test")
    stats = ex.close(WAIT)
    assert ran == ["pending at close"] and stats.completed == 1
    assert ex.closed and not worker.is_alive()
    with pytest.raises(BackgroundClosedError, match="bg-test.*closed.*'t'"):
        ex.submit("t", job("too late"))
    assert ex.close(WAIT) == stats  # idempotent
    assert ran == ["pending at close"]


def test_a_failing_job_is_retried_then_logged_with_its_key_and_counted(
    make_executor, caplog: pytest.LogCaptureFixture
) -> None:
    ex = make_executor({**LONG_DELAY, "max_attempts": 3})
    tries: list[int] = []

    def broken() -> None:
        tries.append(1)
        raise RuntimeError("extractor down")

    after = threading.Event()
    with caplog.at_level(logging.WARNING, logger="langmem_edge.graphs.background"):
        ex.submit("thread-42", broken)
        ex.submit("thread-43", after.set)
        stats = ex.flush(WAIT)
    assert len(tries) == 3
    assert (stats.failed, stats.retried, stats.completed) == (1, 2, 1)
    assert after.is_set()  # the worker survived the failure
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "thread-42" in errors[0].getMessage()
    assert "extractor down" in caplog.text


def test_a_flaky_job_succeeds_on_retry(make_executor) -> None:
    ex = make_executor({**LONG_DELAY, "max_attempts": 3})
    tries: list[int] = []

    def flaky() -> None:
        tries.append(1)
        if len(tries) < 2:
            raise ConnectionError("blip")

    ex.submit("t", flaky)
    stats = ex.flush(WAIT)
    assert len(tries) == 2 and (stats.completed, stats.failed, stats.retried) == (1, 0, 1)


def test_a_full_queue_makes_submit_wait_never_drop(make_executor) -> None:
    ex = make_executor({**LONG_DELAY, "max_pending": 2})
    ran, job = recorder()
    ex.submit("a", job("a"))
    ex.submit("b", job("b"))
    ex.submit("a", job("a2"))  # a replacement needs no room: returns at once
    with pytest.raises(LimitExceededError, match="stayed full.*'c'"):
        ex.submit("c", job("c"), timeout=0)
    assert ex.stats().pending == 2

    blocked = threading.Thread(target=ex.submit, args=("c", job("c")))
    blocked.start()
    wait_until(lambda: ex.stats().waited == 2)  # the timed-out submit and this one
    assert blocked.is_alive()  # backpressure: it waits for room
    stats = ex.flush(WAIT)  # frees room; the waiting submit gets in and is flushed too
    blocked.join(WAIT)
    assert not blocked.is_alive()
    stats = ex.flush(WAIT)
    assert sorted(ran) == ["a2", "b", "c"]
    assert (stats.submitted, stats.replaced, stats.completed) == (4, 1, 3)


def test_a_job_may_submit_on_a_full_queue_without_deadlock(make_executor) -> None:
    ex = make_executor({**LONG_DELAY, "max_pending": 1})
    ran, job = recorder()

    def spawner() -> None:
        ex.submit("child-1", job("child-1"))
        ex.submit("child-2", job("child-2"))  # over the bound: the worker never waits

    ex.submit("parent", spawner)
    ex.flush(WAIT)
    assert sorted(ran) == ["child-1", "child-2"]


async def test_aclose_and_aflush_keep_the_event_loop_running(make_executor) -> None:
    ex = make_executor(LONG_DELAY)
    started, gate = threading.Event(), threading.Event()
    outcome: list[bool] = []

    def job() -> None:
        started.set()
        outcome.append(gate.wait(WAIT))  # only the event loop opens the gate

    ex.submit("t", job)
    flushing = asyncio.create_task(ex.aflush(WAIT))
    while not started.is_set():
        await asyncio.sleep(0.005)
    gate.set()
    assert (await flushing).completed == 1

    started.clear()
    gate.clear()
    await ex.asubmit("t", job)
    closing = asyncio.create_task(ex.aclose(WAIT))
    while not started.is_set():
        await asyncio.sleep(0.005)
    gate.set()
    stats = await closing
    assert outcome == [True, True] and stats.completed == 2 and ex.closed


async def test_asubmit_waits_for_room_without_blocking_the_loop(make_executor) -> None:
    ex = make_executor({**LONG_DELAY, "max_pending": 1})
    ran, job = recorder()
    await ex.asubmit("a", job("a"))
    submitting = asyncio.create_task(ex.asubmit("b", job("b")))
    while ex.stats().waited == 0:
        await asyncio.sleep(0.005)  # the loop runs while asubmit waits for room
    assert not submitting.done()
    await ex.aflush(WAIT)
    await submitting
    await ex.aflush(WAIT)
    assert sorted(ran) == ["a", "b"]


def test_a_job_closing_over_a_profile_writes_its_memories_after_flush(make_executor) -> None:
    store = InMemoryStore(index={"dims": 64, "embed": FakeEmbeddings(64), "fields": ["text"]})
    profile = AgentMemory(store).profile("user:alice")
    conversation = [
        {"role": "user", "content": "Hi, I live in Singapore and I prefer dark mode."},
        {"role": "assistant", "content": "Noted!"},
    ]
    ex = make_executor(LONG_DELAY)

    def extract() -> None:  # what the middleware submits: it closes over profile and store
        profile.ingest(conversation, session_id="thread-1")

    ex.submit("thread-1", extract)
    assert profile.list().memories == []
    stats = ex.flush(WAIT)
    assert stats.completed == 1 and stats.failed == 0
    contents = " ".join(m.text for m in profile.list().memories)
    assert "Singapore" in contents and "dark mode" in contents


def test_config_is_checked() -> None:
    with pytest.raises(ConfigurationError, match="unknown.*delay"):
        BackgroundExecutor({"delay": 1.0})  # type: ignore[typeddict-unknown-key]
    with pytest.raises(ConfigurationError, match="max_pending.*>= 1"):
        BackgroundExecutor({"max_pending": 0})
    with pytest.raises(ConfigurationError, match="max_attempts.*integer"):
        BackgroundExecutor({"max_attempts": 2.5})  # type: ignore[typeddict-item]
    ex = BackgroundExecutor({"delay_seconds": 0.5})
    assert ex.config["delay_seconds"] == 0.5 and ex.config["max_pending"] == 256
    with pytest.raises(InvalidInputError, match="key"):
        ex.submit("", lambda: None)
    with pytest.raises(InvalidInputError, match="callable"):
        ex.submit("t", "not a job")  # type: ignore[arg-type]
    ex.close()


def test_a_dropped_executor_is_collected_and_its_worker_runs_what_waits() -> None:
    ran, job = recorder()
    ex = BackgroundExecutor(LONG_DELAY, name="bg-dropped")
    ex.submit("t", job("before drop"))
    worker = next(t for t in threading.enumerate() if t.name == "bg-dropped")
    ref = weakref.ref(ex)
    del ex
    gc.collect()
    assert ref() is None  # neither the worker nor the exit hook keeps it alive
    worker.join(WAIT)
    assert not worker.is_alive() and ran == ["before drop"]


EXIT_SCRIPT = """
import sys
from pathlib import Path
from langmem_edge.graphs.background import BackgroundExecutor

out = Path(sys.argv[1])
executor = BackgroundExecutor({"delay_seconds": 3600.0})
executor.submit("thread-1", lambda: out.write_text("extracted"))
"""


POOL_EXIT_SCRIPT = """
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from langmem_edge.graphs.background import BackgroundExecutor

out = Path(sys.argv[1])

def job():  # as a structured-output model chain does: work in a thread pool
    with ThreadPoolExecutor(max_workers=2) as pool:
        out.write_text(pool.submit(lambda: "extracted in a pool").result())

executor = BackgroundExecutor({"delay_seconds": 3600.0, "max_attempts": 1})
executor.submit("thread-1", job)
"""


def test_a_job_using_a_thread_pool_still_runs_at_interpreter_exit(tmp_path: Path) -> None:
    out = tmp_path / "done.txt"
    script = tmp_path / "pool_exit_probe.py"
    script.write_text(POOL_EXIT_SCRIPT)
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(script), str(out)], timeout=60, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert out.exists(), done.stderr  # before: "cannot schedule new futures after shutdown"
    assert out.read_text() == "extracted in a pool"


def test_waiting_jobs_run_at_interpreter_exit(tmp_path: Path) -> None:
    out = tmp_path / "done.txt"
    script = tmp_path / "exit_probe.py"
    script.write_text(EXIT_SCRIPT)
    root = str(Path(__file__).resolve().parents[1])  # this checkout's package, not another
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, str(script), str(out)], check=True, timeout=60, env=env)
    assert out.read_text() == "extracted"


# -- outages: retried until the backend answers ------------------------------------------------


class Backend:
    """A backend that is down until ``up()``: a job over it raises BackendUnavailableError."""

    def __init__(self) -> None:
        self.down = True
        self.calls: list[str] = []

    def up(self) -> None:
        self.down = False

    def job(self, name: str) -> Callable[[], None]:
        def run() -> None:
            self.calls.append(name)
            if self.down:
                from langmem_edge.errors import BackendUnavailableError

                raise BackendUnavailableError("Chroma did not answer")
        return run


def test_an_outage_is_retried_past_max_attempts_until_the_backend_answers(
        make_executor, caplog: pytest.LogCaptureFixture) -> None:
    """The issue: 3 tries over ~4 s, then the job was lost although the process reconnected
    3 s after the server came back."""
    backend = Backend()
    ex = make_executor({"delay_seconds": 0.0, "max_attempts": 1, "retry_wait_initial": 0.05,
                        "retry_wait_max": 0.1})
    with caplog.at_level(logging.WARNING, logger="langmem_edge.graphs.background"):
        ex.submit("carol/t0", backend.job("t0"))
        deadline = time.monotonic() + WAIT
        while len(backend.calls) < 5 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert ex.stats().retrying == 1 and ex.stats().failed == 0
        backend.up()
        stats = ex.flush(WAIT)
    assert (stats.completed, stats.failed, stats.pending) == (1, 0, 0)
    assert stats.retried == len(backend.calls) - 1 >= 4
    lines = [r for r in caplog.records if "carol/t0" in r.getMessage()]
    assert lines and all(r.exc_info is None for r in lines)  # one line each, no traceback
    assert all("did not answer" in r.getMessage() for r in lines)


def test_a_flush_during_an_outage_tries_each_job_once_and_returns(make_executor) -> None:
    backend = Backend()
    ex = make_executor({**LONG_DELAY, "retry_wait_initial": 30.0})
    for key in ("a", "b"):
        ex.submit(key, backend.job(key))
    started = time.monotonic()
    stats = ex.flush(WAIT)
    assert time.monotonic() - started < WAIT / 2
    assert sorted(backend.calls) == ["a", "b"] and (stats.pending, stats.retrying) == (2, 2)
    backend.up()
    stats = ex.flush(WAIT)  # the backoff (30 s) is not waited for: a flush tries them now
    assert (stats.completed, stats.pending, stats.failed) == (2, 0, 0)


def test_a_job_that_completes_brings_the_retries_forward(make_executor) -> None:
    """The backend answers again (another thread's turn went through): the jobs waiting for
    their retry run now, not after their backoff."""
    backend = Backend()
    ex = make_executor({"delay_seconds": 0.0, "retry_wait_initial": 600.0,
                        "retry_wait_max": 600.0})
    ex.submit("old", backend.job("old"))
    deadline = time.monotonic() + WAIT
    while ex.stats().retrying == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    backend.up()
    ex.submit("new", backend.job("new"))
    while ex.stats().completed < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ex.stats().completed == 2 and backend.calls == ["old", "new", "old"]


def test_an_outage_longer_than_retry_for_seconds_gives_up(make_executor) -> None:
    backend = Backend()
    ex = make_executor({"delay_seconds": 0.0, "retry_wait_initial": 0.05,
                        "retry_wait_max": 0.05, "retry_for_seconds": 0.3})
    ex.submit("k", backend.job("k"))
    deadline = time.monotonic() + WAIT
    while ex.stats().failed == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ex.stats().failed == 1 and ex.stats().pending == 0 and len(backend.calls) >= 3


def test_close_during_an_outage_returns_and_names_what_is_lost(
        make_executor, caplog: pytest.LogCaptureFixture) -> None:
    backend = Backend()
    ex = BackgroundExecutor({**LONG_DELAY, "retry_wait_initial": 30.0})
    ex.submit("lost", backend.job("lost"))
    with caplog.at_level(logging.WARNING, logger="langmem_edge.graphs.background"):
        stats = ex.close(WAIT)
    assert stats.pending == 1 and backend.calls == ["lost"]
    assert any("unfinished" in r.getMessage() and "lost" in r.getMessage()
               for r in caplog.records)
