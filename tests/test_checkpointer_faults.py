"""Crash safety of ChromaSaver: every write, cut short at every one of its Chroma write calls.

For each operation the test first counts its write calls (``FaultyCaller(fail_at=None)``),
then, for every N, replays the same setup in a fresh folder, makes the Nth write call fail
(``InjectedFault`` in process; ``os._exit`` in a child process for the kill variant), opens a
*fresh* saver on the folder and checks that reads answer one of the states the prefix rules of
``docs/checkpointer.md`` ("Crash safety") allow, and that re-running the operation finishes it.
"""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from checkpointer_helpers import config, make_checkpoint, put_chain
from faults import EXIT_CODE, FaultyCaller, InjectedFault, run_child

from langmem_edge.checkpointers import ChromaSaver

pytestmark = pytest.mark.slow  # fault injection and killed writers

T, U, V = "thread-t", "thread-u", "thread-v"
NAMESPACES = ("", "sub")


def cid(cfg: Any) -> str:
    return cfg["configurable"]["checkpoint_id"]


def setup(saver: ChromaSaver) -> dict[str, Any]:
    """T: three checkpoints in "" (runs r1, r1, r2) and two in "sub" (r1, r2), writes on
    each; U: two checkpoints. Returns the stored configs and the checkpoint ``put`` adds."""
    runs = ["r1", "r1", "r2"]
    main = put_chain(
        saver, T, 3, metadata=lambda i: {"source": "loop", "step": i, "run_id": runs[i]}
    )
    sub = put_chain(
        saver, T, 2, ns="sub", metadata=lambda i: {"step": i, "run_id": runs[1 + i]}
    )
    for i, cfg in enumerate(main + sub):
        saver.put_writes(cfg, [("ch", i), ("other", f"v{i}")], f"task-{i}")
    other = put_chain(saver, U, 2)
    return {"main": main, "sub": sub, "other": other, "new": make_checkpoint({"x": 1})}


def state(saver: ChromaSaver, thread_id: str, ns: str) -> list[tuple[str, list[Any]]]:
    """``[(checkpoint id, pending writes)]`` newest first, after checking that ``list``,
    ``get_tuple`` (latest) and ``get_tuple`` by id agree with each other."""
    listed = list(saver.list(config(thread_id, ns)))
    latest = saver.get_tuple(config(thread_id, ns))
    if not listed:
        assert latest is None, "get_tuple found a checkpoint that list does not show"
        return []
    assert latest is not None, "get_tuple returned None while the thread has checkpoints"
    assert latest.config == listed[0].config, "get_tuple(latest) is not list()'s newest"
    assert latest.pending_writes == listed[0].pending_writes
    for tup in listed:
        by_id = saver.get_tuple(tup.config)
        assert by_id is not None and by_id.checkpoint["id"] == tup.checkpoint["id"]
        assert by_id.pending_writes == tup.pending_writes
    return [(t.checkpoint["id"], t.pending_writes) for t in listed]


def snapshot(saver: ChromaSaver) -> dict[tuple[str, str], list[tuple[str, list[Any]]]]:
    """:func:`state` of every (thread, namespace) the scenarios touch."""
    return {(t, ns): state(saver, t, ns) for t in (T, U, V) for ns in NAMESPACES}


Snapshot = dict[tuple[str, str], list[tuple[str, list[Any]]]]
Operation = Callable[[ChromaSaver, dict[str, Any]], Any]
Check = Callable[[Snapshot, Snapshot, Snapshot], None]
"""``check(before, after, result)``: ``after`` (read after a fault) is a state the prefix
rules allow between ``before`` and ``result`` (the operation finished by a retry)."""


def check_either(before: Snapshot, after: Snapshot, result: Snapshot) -> None:
    assert after in (before, result)


def check_between(before: Snapshot, after: Snapshot, result: Snapshot) -> None:
    """Each namespace shows a subset of its checkpoints (each one whole, as before) that
    contains every checkpoint the finished operation keeps."""
    for key, rows in after.items():
        old = dict(before[key])
        assert all(old.get(c) == w for c, w in rows), (key, rows, old)
        assert {c for c, _ in rows} >= {c for c, _ in result[key]}, (key, rows, result[key])


def check_all_or_nothing(threads: tuple[str, ...]) -> Check:
    """Each of ``threads`` is either untouched or done; other threads are untouched."""

    def check(before: Snapshot, after: Snapshot, result: Snapshot) -> None:
        for t in (T, U, V):
            mine = [k for k in after if k[0] == t]
            allowed = [{k: before[k] for k in mine}]
            if t in threads:
                allowed.append({k: result[k] for k in mine})
            assert {k: after[k] for k in mine} in allowed, t

    return check


def check_copy(before: Snapshot, after: Snapshot, result: Snapshot) -> None:
    """The target holds the *oldest* k checkpoints of each source namespace, each whole."""
    for ns in NAMESPACES:
        got, src = after[(V, ns)], before[(T, ns)]
        assert [w for _, w in got] == [w for _, w in src[len(src) - len(got) :]], (ns, got)
        assert after[(T, ns)] == src


def put_new(saver: ChromaSaver, stored: dict[str, Any]) -> None:
    cfg = config(T, "", cid(stored["main"][-1]))
    saver.put(cfg, stored["new"], {"source": "loop", "step": 9}, {"x": 1})


OPERATIONS: dict[str, tuple[Operation, Check]] = {
    "put": (put_new, check_either),
    "put_writes": (
        lambda s, st: s.put_writes(st["main"][-1], [("late", 1), ("late2", 2)], "late-task"),
        check_either,
    ),
    "delete_thread": (lambda s, st: s.delete_thread(T), check_all_or_nothing((T,))),
    "delete_for_runs": (lambda s, st: s.delete_for_runs(["r2"]), check_between),
    "copy_thread": (lambda s, st: s.copy_thread(T, V), check_copy),
    "prune_keep_latest": (lambda s, st: s.prune([T, U], strategy="keep_latest"), check_between),
    "prune_delete": (
        lambda s, st: s.prune([T, U], strategy="delete"),
        check_all_or_nothing((T, U)),
    ),
    "ttl_delete": (lambda s, st: s.sweep_ttl(now=10**10), check_all_or_nothing((T, U))),
    "ttl_keep_latest": (lambda s, st: s.sweep_ttl(now=10**10), check_between),
}

TTL: dict[str, Any] = {
    "ttl_delete": {"default_ttl": 1, "strategy": "delete"},
    "ttl_keep_latest": {"default_ttl": 1, "strategy": "keep_latest"},
}


def open_saver(folder: Path, name: str) -> ChromaSaver:
    saver = ChromaSaver.from_path(str(folder), ttl=TTL.get(name))
    saver._max_batch = 4  # small copy batches: copy_thread makes several write calls
    return saver


def count_writes(folder: Path, name: str) -> int:
    """How many Chroma write calls the operation makes on the standard setup."""
    operation, _ = OPERATIONS[name]
    with open_saver(folder, name) as saver:
        stored = setup(saver)
        counter = FaultyCaller(saver._call)
        saver._call = counter
        operation(saver, stored)
    return counter.count


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_every_crash_prefix_reads_consistently(name: str, tmp_path: Path) -> None:
    operation, check = OPERATIONS[name]
    total = count_writes(tmp_path / "count", name)
    assert total >= 1
    for n in range(1, total + 1):
        folder = tmp_path / f"fail-{n}"
        with open_saver(folder, name) as saver:
            stored = setup(saver)
            before = snapshot(saver)
            saver._call = FaultyCaller(saver._call, fail_at=n)
            with pytest.raises(InjectedFault):
                operation(saver, stored)
        with open_saver(folder, name) as fresh:
            after = snapshot(fresh)
            operation(fresh, stored)  # a retry finishes the job
            result = snapshot(fresh)
        assert result != before
        check(before, after, result)


# ----------------------------------------------------------------------------- kill variant

CHILD = """
import os, pickle
from pathlib import Path
from faults import FaultyCaller
from langmem_edge.checkpointers import ChromaSaver
from test_checkpointer_faults import OPERATIONS, open_saver
name = os.environ["OP"]
stored = pickle.loads(Path(os.environ["STORED"]).read_bytes())
saver = open_saver(Path(os.environ["FOLDER"]), name)
saver._call = FaultyCaller(saver._call, fail_at=int(os.environ["FAIL_AT"]), mode="exit")
OPERATIONS[name][0](saver, stored)
print("finished without a fault")
"""


@pytest.mark.parametrize("name", ["put", "delete_for_runs"])
def test_a_killed_process_leaves_a_readable_folder(name: str, tmp_path: Path) -> None:
    import pickle

    operation, check = OPERATIONS[name]
    total = count_writes(tmp_path / "count", name)
    for n in range(1, total + 1):
        folder = tmp_path / f"kill-{n}"
        with open_saver(folder, name) as saver:
            stored = setup(saver)
            before = snapshot(saver)
        (tmp_path / "stored.pkl").write_bytes(pickle.dumps(stored))
        child = run_child(
            CHILD,
            env={
                "OP": name,
                "FOLDER": str(folder),
                "STORED": str(tmp_path / "stored.pkl"),
                "FAIL_AT": str(n),
            },
        )
        assert child.returncode == EXIT_CODE, child.stderr[-2000:]
        with open_saver(folder, name) as fresh:
            after = snapshot(fresh)
            operation(fresh, stored)
            result = snapshot(fresh)
        check(before, after, result)


# ----------------------------------------------------------------------------- the two defects


def test_delete_for_runs_cut_between_delete_and_head_repair_keeps_the_thread(
    tmp_path: Path,
) -> None:
    """Regression: deleting groups (head included) before repairing heads left get_tuple
    returning None for a thread that still had checkpoints."""
    total = count_writes(tmp_path / "count", "delete_for_runs")
    for n in range(1, total + 1):
        with open_saver(tmp_path / f"f{n}", "delete_for_runs") as saver:
            stored = setup(saver)
            saver._call = FaultyCaller(saver._call, fail_at=n)
            with pytest.raises(InjectedFault):
                saver.delete_for_runs(["r2"])
        with open_saver(tmp_path / f"f{n}", "delete_for_runs") as fresh:
            latest = fresh.get_tuple(config(T))
            assert latest is not None, f"thread lost after a fault at write call {n}"
            assert latest.config in (stored["main"][1], stored["main"][2])
            assert fresh.get_tuple(config(T, "sub")) is not None


def test_a_late_put_of_an_older_checkpoint_does_not_become_latest(tmp_path: Path) -> None:
    """Regression: the head row was last-writer-wins, so a put of an older checkpoint id
    landing after a newer one made get_tuple(latest) return the older checkpoint."""
    older, newer = make_checkpoint({"v": "older"}), make_checkpoint({"v": "newer"})
    assert older["id"] < newer["id"]
    md = {"source": "loop", "step": 1, "parents": {}}
    with ChromaSaver.from_path(str(tmp_path)) as one, ChromaSaver.from_path(str(tmp_path)) as two:
        one.put(config(T), newer, md, {"v": 1})
        two.put(config(T), older, md, {"v": 1})  # another process, a slower writer
        for saver in (one, two):
            assert saver.get_tuple(config(T)).checkpoint["id"] == newer["id"]
    with ChromaSaver.from_path(str(tmp_path)) as fresh:
        assert fresh.get_tuple(config(T)).checkpoint["id"] == newer["id"]
        assert [t.checkpoint["id"] for t in fresh.list(config(T))] == [newer["id"], older["id"]]


@pytest.mark.parametrize("backend", ["embedded", pytest.param("server", marks=pytest.mark.server)])
def test_concurrent_puts_on_one_thread_leave_the_max_id_latest(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Several writers (each its own saver, as separate processes would be) put on one
    thread at once, in shuffled id order: latest is the max id, for every reader."""
    tid = str(uuid.uuid4())
    prefix = f"t-faults-{uuid.uuid4().hex[:10]}"

    def make() -> ChromaSaver:
        if backend == "embedded":
            return ChromaSaver.from_path(str(tmp_path), collection_prefix=prefix)
        url = request.getfixturevalue("chroma_server_url")
        return ChromaSaver.from_url(url, collection_prefix=prefix)

    checkpoints = [make_checkpoint({"i": i}) for i in range(16)]
    shuffled = checkpoints[:]
    random.Random(7).shuffle(shuffled)
    writers = [make() for _ in range(4)]
    barrier = threading.Barrier(len(writers))
    errors: list[BaseException] = []

    def work(saver: ChromaSaver, mine: list[Any]) -> None:
        try:
            barrier.wait()
            for cp in mine:
                saver.put(config(tid), cp, {"source": "loop", "step": 0, "parents": {}}, {})
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [
        threading.Thread(target=work, args=(w, shuffled[i :: len(writers)]))
        for i, w in enumerate(writers)
    ]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    newest = max(cp["id"] for cp in checkpoints)
    reader = make()
    try:
        for saver in [*writers, reader]:
            assert saver.get_tuple(config(tid)).checkpoint["id"] == newest
        assert next(iter(reader.list(config(tid)))).checkpoint["id"] == newest
    finally:
        for saver in [*writers, reader]:
            saver.close()
        if backend == "server":
            reader_client = ChromaSaver.from_url(
                request.getfixturevalue("chroma_server_url"), collection_prefix=prefix
            )
            reader_client.client.delete_collection(reader_client.collection_name)
            reader_client.close()


# ----------------------------------------------------------------------------- order key


def test_order_key_never_decreases_with_the_id() -> None:
    from langmem_edge.checkpointers.layout import order_key

    rng = random.Random(3)
    alphabet = "-0123456789abcdefABCXYZ_./:~ \x00\u00e9"
    ids = [make_checkpoint()["id"] for _ in range(50)]
    ids += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 20))) for _ in range(400)]
    ids.sort()
    keys = [order_key(i) for i in ids]
    assert keys == sorted(keys)
    assert all(0 <= k < 2**63 for k in keys)
    assert len({order_key(i) for i in ids[:50]}) > 1
