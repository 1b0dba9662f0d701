"""ChromaSaver through its sync API (the conformance suite only calls the async one), plus
what the suite does not cover: call counts, DeltaChannel history and pruning, TTL, large
states, encryption, errors. Runs on an embedded folder and on the session's Chroma server."""

from __future__ import annotations

import asyncio
import base64
import os
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from checkpointer_helpers import (
    CallSpy,
    config,
    drop_server_collection,
    make_checkpoint,
    put_chain,
    unique_prefix,
)
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.serde.base import CipherProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.types import ERROR, INTERRUPT, RESUME, _DeltaSnapshot

from langmem_edge._chroma import SCHEMA_KEY
from langmem_edge.checkpointers import ChromaSaver
from langmem_edge.checkpointers.layout import SCHEMA_VERSION
from langmem_edge.errors import (
    BackendError,
    BackendUnavailableError,
    ConfigurationError,
    DecryptionError,
    InvalidInputError,
    LimitExceededError,
)


@pytest.fixture(params=["embedded", pytest.param("server", marks=pytest.mark.server)])
def backend(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Any]:
    """A factory of savers on one backend; every saver it makes shares one collection."""
    prefix = unique_prefix("sync")
    made: list[ChromaSaver] = []

    def make(**kwargs: Any) -> ChromaSaver:
        kwargs.setdefault("collection_prefix", prefix)
        if request.param == "embedded":
            saver = ChromaSaver.from_path(str(tmp_path / "chroma"), **kwargs)
        else:
            url = request.getfixturevalue("chroma_server_url")
            saver = ChromaSaver.from_url(url, **kwargs)
        made.append(saver)
        return saver

    make.kind = request.param  # type: ignore[attr-defined]
    yield make
    for saver in made:
        saver.close()
    if request.param == "server":
        names = {s.collection_name for s in made}
        for name in names:
            drop_server_collection(request.getfixturevalue("chroma_server_url"), name)


@pytest.fixture
def saver(backend: Any) -> ChromaSaver:
    return backend()


def ids(tuples: Any) -> list[str]:
    return [t.checkpoint["id"] for t in tuples]


# ----------------------------------------------------------------------------- core


def test_put_get_roundtrip_latest_and_specific(saver: ChromaSaver) -> None:
    tid = str(uuid.uuid4())
    stored = put_chain(saver, tid, 3, values=lambda i: {"msg": f"hello {i}", "n": i})
    latest = saver.get_tuple(config(tid))
    assert latest is not None
    assert latest.config == stored[-1]
    assert latest.checkpoint["channel_values"] == {"msg": "hello 2", "n": 2}
    assert latest.metadata["step"] == 2
    assert latest.parent_config == stored[1]
    first = saver.get_tuple(stored[0])
    assert first is not None and first.checkpoint["channel_values"]["msg"] == "hello 0"
    assert first.parent_config is None
    assert saver.get_tuple(config(tid, checkpoint_id=str(uuid.uuid4()))) is None
    assert saver.get_tuple(config(str(uuid.uuid4()))) is None
    assert saver.get(config(tid))["id"] == stored[-1]["configurable"]["checkpoint_id"]


def test_namespaces_are_separate_heads(saver: ChromaSaver) -> None:
    tid = str(uuid.uuid4())
    root = put_chain(saver, tid, 2)
    child = put_chain(saver, tid, 3, ns="child:1")
    assert saver.get_tuple(config(tid)).config == root[-1]
    assert saver.get_tuple(config(tid, "child:1")).config == child[-1]
    assert len(list(saver.list(config(tid)))) == 2
    assert len(list(saver.list({"configurable": {"thread_id": tid}}))) == 5


def test_missing_thread_id_is_invalid_input(saver: ChromaSaver) -> None:
    with pytest.raises(InvalidInputError, match="thread_id"):
        saver.get_tuple({"configurable": {}})
    with pytest.raises(InvalidInputError, match="checkpoint_id"):
        saver.put_writes(config("t"), [("a", 1)], "task")


def test_put_writes_order_idempotence_and_special_channels(saver: ChromaSaver) -> None:
    tid = str(uuid.uuid4())
    (cfg,) = put_chain(saver, tid, 1)
    saver.put_writes(cfg, [("b", "t2-0"), ("c", "t2-1")], "task-2", task_path="~p:b")
    saver.put_writes(cfg, [("a", "t1-0")], "task-1", task_path="~p:a")
    saver.put_writes(cfg, [("a", "again")], "task-1", task_path="~p:a")  # kept: first wins
    saver.put_writes(cfg, [(ERROR, "boom")], "task-3")
    saver.put_writes(cfg, [(ERROR, "boom 2")], "task-3")  # special: replaced
    saver.put_writes(cfg, [(INTERRUPT, {"q": 1})], "task-3")
    tup = saver.get_tuple(cfg)
    assert tup is not None
    # writes_sort_key order: (task_path, task_id, idx); "" sorts first
    assert tup.pending_writes == [
        ("task-3", INTERRUPT, {"q": 1}),
        ("task-3", ERROR, "boom 2"),
        ("task-1", "a", "t1-0"),
        ("task-2", "b", "t2-0"),
        ("task-2", "c", "t2-1"),
    ]
    saver.put_writes(cfg, [], "task-9")  # no-op
    assert len(saver.get_tuple(cfg).pending_writes) == 5


def test_two_writes_to_one_special_channel_in_one_call_keep_the_last(saver: ChromaSaver) -> None:
    """A node with two interrupts writes ``__resume__`` twice in one call (langgraph's own
    ``test_interrupt_multiple``): Chroma refused the whole batch for its duplicate id."""
    tid = str(uuid.uuid4())
    (cfg,) = put_chain(saver, tid, 1)
    saver.put_writes(cfg, [(RESUME, ["a"]), ("x", 1), (RESUME, ["a", "b"])], "task-1")
    tup = saver.get_tuple(cfg)
    assert tup is not None
    assert sorted(tup.pending_writes, key=str) == sorted(
        [("task-1", RESUME, ["a", "b"]), ("task-1", "x", 1)], key=str
    )


def test_list_filters_before_limit_and_order(saver: ChromaSaver) -> None:
    tid = str(uuid.uuid4())
    long_text = "x" * 2000  # too long to index: filtered in Python
    stored = put_chain(
        saver,
        tid,
        6,
        metadata=lambda i: {
            "source": "input" if i % 2 == 0 else "loop",
            "step": i,
            "parents": {},
            "score": i * 1.5,
            "flag": i == 3,
            "note": long_text if i == 4 else "short",
            "tags": ["a", str(i)],
        },
    )
    want = [c["configurable"]["checkpoint_id"] for c in stored]
    assert ids(saver.list(config(tid))) == want[::-1]
    assert ids(saver.list(config(tid), filter={"source": "input"})) == [want[4], want[2], want[0]]
    assert ids(saver.list(config(tid), filter={"step": 3, "flag": True})) == [want[3]]
    assert ids(saver.list(config(tid), filter={"score": 3.0})) == [want[2]]
    assert ids(saver.list(config(tid), filter={"note": long_text})) == [want[4]]
    assert ids(saver.list(config(tid), filter={"tags": ["a", "5"]})) == [want[5]]
    assert ids(saver.list(config(tid), filter={"missing": None})) == want[::-1]
    assert ids(saver.list(config(tid), filter={"source": "update"})) == []
    assert ids(saver.list(config(tid), before=stored[3])) == [want[2], want[1], want[0]]
    assert ids(saver.list(config(tid), before=stored[3], limit=2)) == [want[2], want[1]]
    assert ids(saver.list(config(tid), limit=1)) == [want[5]]
    assert list(saver.list(config(tid), limit=0)) == []
    assert ids(saver.list(stored[2])) == [want[2]]
    any_ns = {"configurable": {"thread_id": tid, "checkpoint_id": want[1]}}
    assert ids(saver.list(any_ns)) == [want[1]]
    with pytest.raises(InvalidInputError):
        list(saver.list(config(tid), limit=-1))


def test_list_across_threads_pages_and_pending_writes(backend: Any) -> None:
    saver = backend(list_page_size=2)
    threads = [str(uuid.uuid4()) for _ in range(3)]
    for tid in threads:
        (cfg,) = put_chain(saver, tid, 1, metadata=lambda i: {"source": "loop", "step": 7})
        saver.put_writes(cfg, [("ch", tid)], "task")
    everything = list(saver.list(None, filter={"step": 7}))
    assert {t.config["configurable"]["thread_id"] for t in everything} >= set(threads)
    mine = [t for t in everything if t.config["configurable"]["thread_id"] in threads]
    assert all(
        t.pending_writes == [("task", "ch", t.config["configurable"]["thread_id"])] for t in mine
    )
    assert ids(everything) == sorted(ids(everything), reverse=True)


def test_index_metadata_off_still_filters(backend: Any) -> None:
    saver = backend(index_metadata=False)
    tid = str(uuid.uuid4())
    put_chain(saver, tid, 3, metadata=lambda i: {"source": "loop", "step": i, "who": f"w{i}"})
    assert [t.metadata["who"] for t in saver.list(config(tid), filter={"who": "w1"})] == ["w1"]
    row = saver.collection.get(include=["metadatas"], where={"ct": tid}, limit=1)
    fields = row["metadatas"][0]
    assert "m.who" not in fields and "m.step" in fields  # run_id/source/step always indexed


def test_delete_thread_removes_everything_of_that_thread_only(saver: ChromaSaver) -> None:
    keep, drop = str(uuid.uuid4()), str(uuid.uuid4())
    put_chain(saver, keep, 2)
    cfgs = put_chain(saver, drop, 2) + put_chain(saver, drop, 1, ns="child")
    saver.put_writes(cfgs[0], [("a", 1)], "t")
    saver.delete_thread(drop)
    assert saver.get_tuple(config(drop)) is None
    assert saver.get_tuple(config(drop, "child")) is None
    assert saver.collection.get(where={"t": drop}, include=[])["ids"] == []
    assert len(list(saver.list(config(keep)))) == 2


# ----------------------------------------------------------------------------- optional three


def test_delete_for_runs_moves_the_head_back(saver: ChromaSaver) -> None:
    tid = str(uuid.uuid4())
    runs = ["run-a", "run-a", "run-b"]
    stored = put_chain(
        saver, tid, 3, metadata=lambda i: {"source": "loop", "step": i, "run_id": runs[i]}
    )
    saver.put_writes(stored[2], [("x", 1)], "t")
    saver.delete_for_runs(["run-b"])
    latest = saver.get_tuple(config(tid))
    assert latest is not None and latest.config == stored[1]
    assert saver.get_tuple(stored[2]) is None
    assert (
        saver.collection.get(where={"g": stored[2]["configurable"]["checkpoint_id"]}, include=[])[
            "ids"
        ]
        == []
    )
    saver.delete_for_runs(["run-a"])
    assert saver.get_tuple(config(tid)) is None
    saver.delete_for_runs([])


def test_copy_thread_copies_every_namespace_and_write(saver: ChromaSaver) -> None:
    src, dst = str(uuid.uuid4()), str(uuid.uuid4())
    root = put_chain(saver, src, 3, values=lambda i: {"v": i})
    child = put_chain(saver, src, 2, ns="sub:1")
    saver.put_writes(root[-1], [("w", "x"), (ERROR, "e")], "task", task_path="p")
    saver.copy_thread(src, dst)
    got = list(saver.list(config(dst)))
    assert ids(got) == ids(saver.list(config(src)))
    assert got[0].checkpoint["channel_values"] == {"v": 2}
    assert got[0].pending_writes == saver.get_tuple(config(src)).pending_writes
    assert got[0].parent_config == config(dst, "", root[1]["configurable"]["checkpoint_id"])
    assert (
        saver.get_tuple(config(dst, "sub:1")).checkpoint["id"]
        == (child[-1]["configurable"]["checkpoint_id"])
    )
    # a newer checkpoint already on the target stays its head
    newer = put_chain(saver, dst, 1)
    saver.copy_thread(src, dst)
    assert saver.get_tuple(config(dst)).config == newer[0]
    saver.copy_thread(str(uuid.uuid4()), dst)  # missing source: no-op


def test_prune_keep_latest_and_delete(saver: ChromaSaver) -> None:
    a, b = str(uuid.uuid4()), str(uuid.uuid4())
    ca = put_chain(saver, a, 4) + put_chain(saver, a, 2, ns="n")
    cb = put_chain(saver, b, 3)
    saver.put_writes(ca[3], [("k", "v")], "t")
    saver.put_writes(ca[1], [("old", "v")], "t")
    saver.prune([a], strategy="keep_latest")
    assert ids(saver.list(config(a))) == [ca[3]["configurable"]["checkpoint_id"]]
    assert ids(saver.list(config(a, "n"))) == [ca[5]["configurable"]["checkpoint_id"]]
    assert saver.get_tuple(config(a)).pending_writes == [("t", "k", "v")]
    # 2 checkpoints + 2 heads + 1 write + its group's write marker
    assert len(saver.collection.get(where={"t": a}, include=[])["ids"]) == 6
    assert len(list(saver.list(config(b)))) == 3
    saver.prune([b], strategy="delete")
    assert saver.get_tuple(config(b)) is None and len(cb) == 3
    with pytest.raises(InvalidInputError, match="strategy"):
        saver.prune([a], strategy="keep_some")


# ----------------------------------------------------------------------------- delta channels


def delta_chain(saver: ChromaSaver, tid: str, snapshots: set[int], n: int) -> list[Any]:
    """A chain whose channel "ch" is a delta channel: a snapshot at ``snapshots``, else a
    write of the step number; metadata carries LangGraph's delta counters."""
    stored: list[Any] = []
    parent = None
    for step in range(n):
        cfg = config(tid)
        if parent:
            cfg["configurable"]["checkpoint_id"] = parent["configurable"]["checkpoint_id"]
        values = {"ch": _DeltaSnapshot(step)} if step in snapshots else {}
        md: dict[str, Any] = {"source": "loop", "step": step, "parents": {}}
        if step not in snapshots:
            md["counters_since_delta_snapshot"] = {"ch": [1, 1]}
        parent = saver.put(cfg, make_checkpoint(values, {"ch": step + 1}), md, {"ch": step + 1})
        stored.append(parent)
        if step not in snapshots:
            saver.put_writes(parent, [("ch", step)], str(uuid.uuid4()))
    return stored


def history(saver: ChromaSaver, cfg: Any) -> tuple[Any, list[Any]]:
    got = saver.get_delta_channel_history(config=cfg, channels=["ch"])["ch"]
    seed = got.get("seed")
    return (seed.value if isinstance(seed, _DeltaSnapshot) else seed), [w[2] for w in got["writes"]]


def test_delta_channel_history_walks_the_parent_chain(saver: ChromaSaver) -> None:
    tid = str(uuid.uuid4())
    stored = delta_chain(saver, tid, {0, 3}, 6)
    assert history(saver, stored[-1]) == (3, [4])
    assert history(saver, stored[2]) == (0, [1])
    saver.put_writes(stored[-1], [("ch", "pending")], "late")  # the target's own: excluded
    assert history(saver, stored[-1]) == (3, [4])
    no_seed = delta_chain(saver, str(uuid.uuid4()), set(), 4)
    assert history(saver, no_seed[-1]) == (None, [0, 1, 2])


def test_prune_keep_latest_keeps_what_delta_channels_need(saver: ChromaSaver) -> None:
    tid = str(uuid.uuid4())
    stored = delta_chain(saver, tid, {0, 3}, 7)
    before = history(saver, stored[-1])
    saver.prune([tid], strategy="keep_latest")
    kept = ids(saver.list(config(tid)))
    assert kept == [c["configurable"]["checkpoint_id"] for c in stored[3:]][::-1]
    assert history(saver, stored[-1]) == before == (3, [4, 5])
    # a snapshot at the head needs no ancestor
    tid2 = str(uuid.uuid4())
    stored2 = delta_chain(saver, tid2, {0, 4}, 5)
    saver.prune([tid2])
    assert ids(saver.list(config(tid2))) == [stored2[-1]["configurable"]["checkpoint_id"]]


# ----------------------------------------------------------------------------- call counts


def test_put_and_put_writes_are_one_chroma_write_each(backend: Any) -> None:
    saver = backend()
    tid = str(uuid.uuid4())
    with CallSpy(saver) as spy:
        (cfg,) = put_chain(saver, tid, 1, values=lambda i: {"a": 1, "b": [1, 2]})
        assert (spy.writes, spy.counts["get"]) == (1, 0)
        saver.put_writes(cfg, [("a", 1), ("b", 2), ("c", 3)], "task")
        assert (spy.writes, spy.counts["get"]) == (2, 0)
    (bare,) = put_chain(saver, str(uuid.uuid4()), 1)
    with CallSpy(saver) as spy:
        assert saver.get_tuple(config(tid)) is not None  # head known: one ranged get
        assert saver.get_tuple(bare) is not None  # by id, no pending writes: one get by ids
        assert spy.counts["get"] == 2
        assert saver.get_tuple(cfg).pending_writes  # by id with writes: + the group
        assert spy.counts["get"] == 4
    cold = backend()  # another process: does not know the head yet
    with CallSpy(cold) as spy:
        assert cold.get_tuple(config(tid)).config == cfg
        assert spy.counts["get"] == 2
        assert cold.get_tuple(config(tid)).config == cfg
        assert spy.counts["get"] == 3


def test_a_stale_head_hint_is_never_trusted(backend: Any) -> None:
    one, two = backend(), backend()
    tid = str(uuid.uuid4())
    put_chain(one, tid, 1)
    assert one.get_tuple(config(tid)) is not None
    newer = put_chain(two, tid, 1)[0]
    assert one.get_tuple(config(tid)).config == newer
    two.delete_thread(tid)
    assert one.get_tuple(config(tid)) is None


def test_async_twins_do_not_block_the_event_loop(saver: ChromaSaver) -> None:
    original = saver.collection.upsert

    def slow_upsert(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.3)
        return original(*args, **kwargs)

    object.__setattr__(saver.collection, "upsert", slow_upsert)

    async def main() -> int:
        ticks = 0
        done = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0.01)

        task = asyncio.create_task(ticker())
        await saver.aput(config("async"), make_checkpoint(), {"step": 0}, {})
        done.set()
        await task
        return ticks

    try:
        assert asyncio.run(main()) >= 10
    finally:
        object.__delattr__(saver.collection, "upsert")


# ----------------------------------------------------------------------------- TTL


def test_ttl_sweep_deletes_threads_untouched_for_default_ttl(backend: Any) -> None:
    saver = backend(ttl={"default_ttl": 10})
    old, fresh = str(uuid.uuid4()), str(uuid.uuid4())
    put_chain(saver, old, 2)
    put_chain(saver, old, 1, ns="child")
    assert saver.sweep_ttl() == 0
    now = time.time()
    put_chain(saver, fresh, 1)
    assert saver.sweep_ttl(now=now + 9 * 60) == 0
    # 11 minutes later both are stale
    later = now + 11 * 60
    assert saver.sweep_ttl(now=later) >= 2
    assert saver.get_tuple(config(old)) is None and saver.get_tuple(config(fresh)) is None
    put_chain(saver, fresh, 1)
    assert saver.sweep_ttl(now=time.time() + 60) == 0
    assert saver.get_tuple(config(fresh)) is not None


def test_ttl_keep_latest_prunes_once_until_touched_again(backend: Any) -> None:
    saver = backend(ttl={"default_ttl": 1, "strategy": "keep_latest"})
    tid = str(uuid.uuid4())
    stored = put_chain(saver, tid, 3)
    later = time.time() + 120
    assert saver.sweep_ttl(now=later) == 1
    assert ids(saver.list(config(tid))) == [stored[-1]["configurable"]["checkpoint_id"]]
    assert saver.sweep_ttl(now=later) == 0  # already pruned
    put_chain(saver, tid, 2)
    assert saver.sweep_ttl(now=time.time() + 120) == 1
    assert len(list(saver.list(config(tid)))) == 1


def test_ttl_sweeper_thread_runs_and_stops(backend: Any) -> None:
    saver = backend(ttl={"default_ttl": 0.001, "sweep_interval_minutes": 0.005})
    tid = str(uuid.uuid4())
    put_chain(saver, tid, 2)
    future = saver.start_ttl_sweeper()
    deadline = time.monotonic() + 20
    while saver.get_tuple(config(tid)) is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert saver.get_tuple(config(tid)) is None
    assert saver.stop_ttl_sweeper(timeout=10)
    assert future.result(timeout=1) is None
    assert backend().start_ttl_sweeper().result(timeout=1) is None  # no TTL: nothing runs


@pytest.mark.parametrize(
    "ttl",
    [
        {"default_ttl": 0},
        {"default_ttl": 5, "strategy": "archive"},
        {"default_ttl": 5, "sweep_interval_minutes": -1},
        {"default_ttl": 5, "ttl": 3},
    ],
)
def test_bad_ttl_config_is_refused(backend: Any, ttl: Any) -> None:
    with pytest.raises(ConfigurationError):
        backend(ttl=ttl)


# ----------------------------------------------------------------------------- limits, errors


def test_large_state_round_trips_and_over_limit_is_refused(backend: Any) -> None:
    saver = backend(max_payload_bytes=8 * 1024 * 1024)
    tid = str(uuid.uuid4())
    big = os.urandom(5 * 1024 * 1024)
    (cfg,) = put_chain(saver, tid, 1, values=lambda i: {"blob": big, "text": "é" * 100_000})
    got = saver.get_tuple(cfg)
    assert got.checkpoint["channel_values"]["blob"] == big
    too_big = make_checkpoint({"blob": os.urandom(9 * 1024 * 1024)})
    with pytest.raises(LimitExceededError, match="max_payload_bytes"):
        saver.put(cfg, too_big, {"step": 1}, {"blob": 1})
    assert saver.get_tuple(config(tid)).config == cfg  # nothing written
    with pytest.raises(LimitExceededError):
        saver.put_writes(cfg, [("blob", os.urandom(9 * 1024 * 1024))], "task")
    assert saver.get_tuple(cfg).pending_writes == []


class AesGcmCipher(CipherProtocol):
    """AES-GCM from ``cryptography``: a real cipher for ``EncryptedSerializer``."""

    def __init__(self, key: bytes) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        self._aead = AESGCM(key)

    def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
        nonce = os.urandom(12)
        return "aesgcm", nonce + self._aead.encrypt(nonce, plaintext, None)

    def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
        assert ciphername == "aesgcm"
        return self._aead.decrypt(ciphertext[:12], ciphertext[12:], None)


def pycryptodome_serde(key: bytes) -> EncryptedSerializer:
    pytest.importorskip(
        "Crypto.Cipher",
        reason="pycryptodome is not installed (pip install pycryptodome); "
        "EncryptedSerializer.from_pycryptodome_aes needs it",
    )
    return EncryptedSerializer.from_pycryptodome_aes(key=key)


@pytest.mark.parametrize("cipher", ["pycryptodome", "cryptography"])
def test_encrypted_serializer(backend: Any, cipher: str) -> None:
    def serde(key: bytes) -> EncryptedSerializer:
        if cipher == "pycryptodome":
            return pycryptodome_serde(key)
        return EncryptedSerializer(AesGcmCipher(key))

    key = b"k" * 32
    saver = backend(serde=serde(key))
    tid = str(uuid.uuid4())
    secret = "the launch code is 0000"
    (cfg,) = put_chain(saver, tid, 1, values=lambda i: {"secret": secret})
    saver.put_writes(cfg, [("secret", secret)], "task")
    tup = saver.get_tuple(config(tid))
    assert tup.checkpoint["channel_values"] == {"secret": secret}
    assert tup.pending_writes == [("task", "secret", secret)]
    raw = saver.collection.get(where={"t": tid}, include=["metadatas"])["metadatas"]
    blobs = [base64.b64decode(md["p"]) for md in raw if "p" in md]
    assert blobs and all(secret.encode() not in b for b in blobs)
    with pytest.raises(DecryptionError):
        backend(serde=serde(b"w" * 32)).get_tuple(cfg)
    with pytest.raises(DecryptionError):
        backend().get_tuple(cfg)  # plain serde cannot read it


def test_chroma_failures_come_out_as_our_backend_errors(saver: ChromaSaver) -> None:
    saver.client.delete_collection(saver.collection_name)
    with pytest.raises(BackendError) as info:
        saver.get_tuple(config("t", checkpoint_id="x"))
    assert info.value.__cause__ is not None


def test_unreachable_server_is_backend_unavailable() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(BackendUnavailableError):
        ChromaSaver.from_url(
            f"http://127.0.0.1:{port}", retry={"attempts": 2, "initial_wait": 0.01}
        )


def test_options_are_validated(backend: Any) -> None:
    for bad in ({"collection_prefix": "x"}, {"max_payload_bytes": 0}, {"list_page_size": 0}):
        with pytest.raises(ConfigurationError):
            backend(**bad)


def test_schema_version_is_recorded_and_newer_layouts_refused(saver: ChromaSaver) -> None:
    assert saver.collection.metadata[SCHEMA_KEY] == SCHEMA_VERSION
    prefix = unique_prefix("schema")
    saver.client.get_or_create_collection(
        f"{prefix}-checkpoints",
        metadata={SCHEMA_KEY: SCHEMA_VERSION + 1},
        embedding_function=None,
    )
    try:
        with pytest.raises(ConfigurationError, match="newer"):
            ChromaSaver(saver.client, collection_prefix=prefix)
    finally:
        saver.client.delete_collection(f"{prefix}-checkpoints")


def test_context_manager_closes_only_its_own_client(tmp_path: Any) -> None:
    with ChromaSaver.from_path(str(tmp_path / "a")) as saver:
        put_chain(saver, "t", 1)
    assert saver.client._closed  # noqa: SLF001 - chromadb exposes no public flag
    from langmem_edge._chroma import open_persistent_client

    client = open_persistent_client(str(tmp_path / "b"))
    with ChromaSaver(client) as borrowed:
        put_chain(borrowed, "t", 1)
    assert not client._closed  # noqa: SLF001
    assert isinstance(ChromaSaver(client).get_tuple(config("t")), CheckpointTuple)
    client.close()
