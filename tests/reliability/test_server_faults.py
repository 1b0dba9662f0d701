"""Server faults: the Chroma server is SIGKILLed and restarted during a write loop.

The test owns its server (``chroma run`` on its own folder and a free port,
:class:`helpers.ChromaProcess`), not the session's. One store, one memory and one saver are
opened once and kept for the whole run; a thread kills the server and starts it again on the
same folder and port while the main thread writes (store puts, ``remember``, checkpoints).
Each write either returns (after the caller's bounded retries) or raises
``BackendUnavailableError``; nothing else is raised; every write that returned is read back
afterwards through the same objects and through fresh ones, and the same objects keep
writing once the server is back.

Quick: :data:`QUICK_OUTAGES` outage; long: :data:`LONG_OUTAGES`.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from langmem_edge.errors import BackendUnavailableError

from .helpers import (
    CHECKPOINT_WRITES,
    ChromaProcess,
    checkpoint_config,
    long_size,
    open_memory,
    open_saver,
    open_store,
    put_checkpoint,
)

QUICK_OUTAGES = 1
"""Server kills of the quick variant."""

LONG_OUTAGES = 8
"""Server kills of the long variant."""

UP_SECONDS = 2.0
"""Writing time with the server up, before each kill and after the last restart."""

DOWN_SECONDS = 1.5
"""How long the server stays dead before it is started again."""

NS = ("faults", "items")


def _outages(server: ChromaProcess, count: int, stop: threading.Event,
             log: list[dict[str, float]]) -> None:
    for _ in range(count):
        time.sleep(UP_SECONDS)
        t0 = time.monotonic()
        server.kill()
        time.sleep(DOWN_SECONDS)
        server.start()
        log.append({"down_seconds": round(time.monotonic() - t0, 2)})
    time.sleep(UP_SECONDS)
    stop.set()


def test_writes_succeed_or_raise_unavailable_and_none_is_lost(
    tmp_path: Path, long_run: bool
) -> None:
    outages = long_size(LONG_OUTAGES) if long_run else QUICK_OUTAGES
    with ChromaProcess(tmp_path / "server") as server:
        store, saver = open_store(server.url), open_saver(server.url)
        profile = open_memory(store).profile("faults")
        acked: list[tuple[str, str, Any]] = []
        errors: dict[str, int] = {}
        worst = 0.0
        stop, log = threading.Event(), []
        killer = threading.Thread(target=_outages, args=(server, outages, stop, log))
        killer.start()
        n = 0
        while not stop.is_set():
            n += 1
            kind = ("put", "remember", "checkpoint")[n % 3]
            t0 = time.monotonic()
            try:
                if kind == "put":
                    store.put(NS, f"k{n}", {"text": f"item w{n} amber", "n": n})
                    acked.append((kind, f"k{n}", n))
                elif kind == "remember":
                    rec = profile.remember(f"fact w{n} cedar", key=f"topic.w{n}")
                    acked.append((kind, rec.id, f"fact w{n} cedar"))
                else:
                    acked.append((kind, put_checkpoint(saver, f"t{n}", f"v{n}"), n))
                errors.setdefault("none", 0)
                errors["none"] += 1
            except BackendUnavailableError:
                errors["BackendUnavailableError"] = errors.get("BackendUnavailableError", 0) + 1
            except Exception as e:  # anything else is a finding
                errors[type(e).__name__] = errors.get(type(e).__name__, 0) + 1
            worst = max(worst, time.monotonic() - t0)
        killer.join()

        def lost(store: Any, saver: Any) -> list[str]:
            prof = open_memory(store).profile("faults") if store is not None else profile
            missing = []
            for kind, ident, val in acked:
                if kind == "put":
                    item = store.get(NS, ident)
                    ok = item is not None and item.value["n"] == val
                elif kind == "remember":
                    rec = prof.get(ident)
                    ok = rec is not None and rec.text == val
                else:
                    tup = saver.get_tuple(checkpoint_config(f"t{val}", ident))
                    ok = tup is not None and len(tup.pending_writes) == CHECKPOINT_WRITES
                if not ok:
                    missing.append(f"{kind} {ident}")
            return missing

        same = lost(store, saver)
        store.put(NS, "after", {"text": "after the outages", "n": -1})
        assert store.get(NS, "after") is not None
        assert profile.remember("fact after the outages").status == "active"
        fresh_store, fresh_saver = open_store(server.url), open_saver(server.url)
        fresh = lost(fresh_store, fresh_saver)
        for obj in (store, saver, fresh_store, fresh_saver):
            obj.close()
    figures = {"outages": outages, "writes_tried": n, "acknowledged": len(acked),
               "by_outcome": errors, "lost_same_objects": len(same), "lost_fresh": len(fresh),
               "slowest_call_seconds": round(worst, 2), "restarts": log}
    print("\nserver faults: " + json.dumps(figures))
    assert same == [] and fresh == []
    assert set(errors) <= {"none", "BackendUnavailableError"}, errors
    assert errors.get("BackendUnavailableError", 0) >= 1, "no write met the outage"
