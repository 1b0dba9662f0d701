"""SIGKILL probe: does a memory acknowledged before a hard kill stay findable afterwards?

A child process opens an embedded ChromaStore on ``--folder`` (index dims 384 with
``langmem_edge.testing.FakeEmbeddings``: no model loads) and loops: ``profile.remember(...)``
of a distinctive text and ``store.put(...)`` of a plain item, printing each acknowledged
write to stdout as one JSON line, flushed. The parent SIGKILLs it at a random moment.

The next child (a fresh process) first checks every write the killed one acknowledged, then
writes in turn; after the last cycle one more fresh process checks every acknowledged write
of the whole run. Each acknowledged write is checked layer by layer:

- ``row``:    the raw Chroma item row exists (items collection, by id);
- ``get``:    ``store.get`` / ``profile.get`` return it;
- ``vecrow``: the raw Chroma vector row exists (vectors collection, ``get`` by id; this reads
  Chroma's SQLite record segment, not the HNSW index);
- ``hnsw``:   a raw Chroma ``query`` with the row's own vector (k=10) returns it: the HNSW
  index (plus whatever log Chroma applies at query time) has it;
- ``search``: ``store.search(namespace, query=<its text>)`` has it in the top 10;
- ``recall``: ``profile.recall(<its text>)`` has it in the top 10 (memories only).

A miss is charged to the lowest layer that lost it, so the report says whether Chroma's
HNSW index, the metadata rows, the store's search path or the memory tier lost it.

Usage::

    python benchmarks/kill_probe.py --cycles 100 --folder /tmp/kill-probe
    python benchmarks/kill_probe.py --minutes 15 --folder /tmp/kill-probe   # as many as fit
    python benchmarks/kill_probe.py --minutes 10 --sync-threshold 10 --folder /tmp/kp-sync10

The folder is wiped at the start unless ``--keep`` is given. ``--sync-threshold N``
pre-creates the store's collections with ``hnsw:sync_threshold`` N (and ``hnsw:batch_size``
min(N, 100)) instead of Chroma's 1000 (and 100), so Chroma persists its HNSW index (and
purges the write-ahead log behind it) every N writes instead of every 1000: the same code
path, hit often enough for a kill to land inside it. ``get_or_create_collection`` keeps an
existing collection's metadata, so the store opens them as they are.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's langmem_edge

NAMESPACE = ("probe",)
PROFILE = "probe-user"
ITEM_NS = ("probe-items",)
PREFIX = "langmem_edge"
LAYERS = ("row", "get", "vecrow", "hnsw", "search", "recall")
WORDS = (
    "amber basil cedar delta ember fjord garnet harbor iris juniper kelp lantern meadow "
    "nickel orchid pepper quartz raven saffron tundra umber violet willow xenon yarrow zephyr"
).split()


def _open(folder: str) -> tuple[Any, Any]:
    from langmem_edge import AgentMemory, ChromaStore
    from langmem_edge.testing import FakeEmbeddings

    emb = FakeEmbeddings(384)
    store = ChromaStore.from_path(
        folder, index={"dims": 384, "embed": emb, "fields": ["text"]}, collection_prefix=PREFIX
    )
    memory = AgentMemory(store, namespace=NAMESPACE, model=None, embeddings=emb)
    store._probe_folder = folder
    return store, memory


def _precreate(folder: str, sync_threshold: int) -> None:
    """Create the store's collections with a small HNSW sync threshold (see --sync-threshold)."""
    from langmem_edge import _chroma
    from langmem_edge.store import layout

    client = _chroma.open_persistent_client(folder)
    for part in ("items", "vectors", "sync"):
        client.get_or_create_collection(
            f"{PREFIX}-{part}",
            metadata={"hnsw:space": "cosine", _chroma.SCHEMA_KEY: layout.SCHEMA_VERSION,
                      "hnsw:sync_threshold": sync_threshold,
                      "hnsw:batch_size": min(sync_threshold, 100)},
            embedding_function=None,
        )


def _text(rng: random.Random, run: str, n: int) -> str:
    words = " ".join(rng.sample(WORDS, 4))
    return f"probe {run} number {n} token{rng.getrandbits(40):x} {words}"


# -- checking -----------------------------------------------------------------------------


def check(store: Any, memory: Any, acks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Check each acknowledged write, layer by layer; return one result per write."""
    from langmem_edge.store.layout import item_id

    client = store._client  # the probe reads Chroma directly on purpose
    items = client.get_collection(f"{PREFIX}-items")
    vectors = client.get_collection(f"{PREFIX}-vectors")
    profile = memory.profile(PROFILE)
    memories_ns = (*NAMESPACE, "profiles", PROFILE, "memories")
    results = []
    for ack in acks:
        ns = memories_ns if ack["kind"] == "memory" else ITEM_NS
        key = ack["id"]
        iid = item_id(ns, key)
        got: dict[str, bool] = {}
        got["row"] = bool(items.get(ids=[iid], include=[])["ids"])
        if ack["kind"] == "memory":
            got["get"] = profile.get(key) is not None and store.get(ns, key) is not None
        else:
            got["get"] = store.get(ns, key) is not None
        # by the key field, not by a computed id: vector ids are a layout detail (keys are
        # unique in this probe)
        row = vectors.get(where={"k": key}, include=["embeddings"])
        got["vecrow"] = bool(row["ids"])
        if got["vecrow"]:
            vid = row["ids"][0]
            hits = vectors.query(query_embeddings=[row["embeddings"][0]], n_results=10,
                                 include=[])
            got["hnsw"] = vid in hits["ids"][0]
        else:
            got["hnsw"] = False
        diag = _seq_diag(store, vectors, row["ids"][0]) if got["vecrow"] and not got["hnsw"] \
            else None
        found = store.search(ns, query=ack["text"], limit=10)
        got["search"] = any(it.key == key for it in found)
        if ack["kind"] == "memory":
            res = profile.recall(ack["text"], limit=10)
            got["recall"] = any(c.id == key for c in res.candidates)
        results.append({**ack, "found": got, **({"diag": diag} if diag else {})})
    return results


def _seq_diag(store: Any, vectors: Any, vid: str) -> dict[str, Any]:
    """For a vector row the HNSW index lost: its log sequence number, and the sequence
    number up to which Chroma says the collection's HNSW index was persisted (and the
    write-ahead log purged)."""
    import sqlite3

    db = sqlite3.connect(f"file:{store._probe_folder}/chroma.sqlite3?mode=ro", uri=True)
    try:
        seq = db.execute(
            "select e.seq_id from embeddings e join segments s on e.segment_id = s.id "
            "where e.embedding_id = ? and s.collection = ?", (vid, str(vectors.id))).fetchone()
        hnsw = db.execute(
            "select m.seq_id from max_seq_id m join segments s on m.segment_id = s.id "
            "where s.collection = ? and s.scope = 'VECTOR'", (str(vectors.id),)).fetchone()
        log_min = db.execute(
            "select min(seq_id) from embeddings_queue where topic like ?",
            (f"%{vectors.id}",)).fetchone()
    finally:
        db.close()
    return {"row_seq": seq and seq[0], "hnsw_persisted_seq": hnsw and hnsw[0],
            "log_min_seq": log_min and log_min[0]}


def first_loss(found: dict[str, bool]) -> str | None:
    """The lowest layer that lost the write (None: found everywhere)."""
    for layer in LAYERS:
        if layer in found and not found[layer]:
            return layer
    return None


# -- the child ----------------------------------------------------------------------------


def child(args: argparse.Namespace) -> None:
    if args.precreate:
        _precreate(args.folder, args.precreate)
        return
    store, memory = _open(args.folder)
    if args.check:
        acks = [json.loads(line) for line in Path(args.check).read_text().splitlines() if line]
        results = check(store, memory, acks)
        Path(args.check + ".result").write_text(json.dumps(results))
    if args.check_only:
        store.close()
        return
    rng = random.Random(args.run)
    profile = memory.profile(PROFILE)
    print(json.dumps({"kind": "ready"}), flush=True)
    n = 0
    while True:
        n += 1
        text = _text(rng, args.run, n)
        rec = profile.remember(text, key=f"probe.{args.run}.{n}")
        print(json.dumps({"kind": "memory", "id": rec.id, "key": rec.key, "text": text,
                          "run": args.run}), flush=True)
        itext = _text(rng, args.run, n) + " item"
        store.put(ITEM_NS, f"{args.run}-{n}", {"text": itext})
        print(json.dumps({"kind": "item", "id": f"{args.run}-{n}", "text": itext,
                          "run": args.run}), flush=True)


# -- the parent ---------------------------------------------------------------------------


def _spawn(folder: str, run: str, check_file: str | None, check_only: bool = False
           ) -> subprocess.Popen[str]:
    cmd = [sys.executable, __file__, "--child", "--folder", folder, "--run", run]
    if check_file:
        cmd += ["--check", check_file]
    if check_only:
        cmd += ["--check-only"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)


def _read_acks(proc: subprocess.Popen[str], lines: list[str], ready: threading.Event) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        if not line.endswith("\n"):
            break  # cut mid-line by the kill: not acknowledged
        if '"ready"' in line:
            ready.set()
        else:
            lines.append(line)
    ready.set()


def _collect(check_file: str, tally: dict[str, Any], verbose: bool) -> None:
    result_file = Path(check_file + ".result")
    if not result_file.exists():
        tally["check_failed"] += 1
        return
    for res in json.loads(result_file.read_text()):
        tally["checked"][res["kind"]] += 1
        layer = first_loss(res["found"])
        if layer is not None:
            tally["lost"][(res["kind"], layer)] += 1
            tally["misses"].append(res)
            if verbose:
                print(f"  MISS {res['kind']} {res['id']} first lost at {layer}: {res['found']}",
                      flush=True)


def parent(args: argparse.Namespace) -> None:
    folder = args.folder
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)
    if args.sync_threshold:
        cmd = [sys.executable, __file__, "--child", "--folder", folder, "--precreate",
               str(args.sync_threshold)]
        subprocess.run(cmd, check=True, env={**os.environ, "ANONYMIZED_TELEMETRY": "False"})
    work = Path(folder + "-acks")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    rng = random.Random(args.seed)
    tally: dict[str, Any] = {"checked": collections.Counter(), "lost": collections.Counter(),
                             "misses": [], "check_failed": 0, "acked": 0, "crashes": []}
    started = time.monotonic()
    pending: str | None = None
    cycles = 0
    all_acks: list[str] = []
    while cycles < args.cycles and (time.monotonic() - started) < args.minutes * 60:
        run = f"r{cycles:04d}"
        proc = _spawn(folder, run, pending)
        lines: list[str] = []
        ready = threading.Event()
        reader = threading.Thread(target=_read_acks, args=(proc, lines, ready), daemon=True)
        reader.start()
        if not ready.wait(120) or proc.poll() is not None:
            proc.kill()
            proc.wait()
            err = proc.stderr.read() if proc.stderr else ""
            raise SystemExit(f"writer {run} did not start: {err[-3000:]}")
        if pending:
            _collect(pending, tally, args.verbose)
        time.sleep(rng.uniform(0.05, args.max_delay))
        crashed = proc.poll() is not None  # it died on its own: a write raised
        if not crashed:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        reader.join(5)
        err = proc.stderr.read() if proc.stderr and crashed else ""
        if proc.stderr:
            proc.stderr.close()
        cycles += 1
        if crashed:
            last = (err.strip().splitlines() or ["(no output)"])[-1]
            tally["crashes"].append((run, last))
            print(f"cycle {cycles}: WRITER FAILED before the kill: {last}", flush=True)
            if len(tally["crashes"]) >= 3 and all(
                c[0] >= f"r{cycles - 3:04d}" for c in tally["crashes"][-3:]
            ):
                print("three writers in a row failed: the folder is broken; stopping", flush=True)
        tally["acked"] += len(lines)
        all_acks += lines
        pending = str(work / f"{run}.jsonl")
        Path(pending).write_text("".join(lines))
        if args.verbose and not crashed:
            print(f"cycle {cycles}: {len(lines)} writes acknowledged", flush=True)
        if len(tally["crashes"]) >= 3 and all(
            c[0] >= f"r{cycles - 3:04d}" for c in tally["crashes"][-3:]
        ):
            break
    # the last killed writer's acks, then everything, each from a fresh process
    for check_file in [pending, str(work / "all.jsonl")]:
        if check_file is None:
            continue
        if check_file.endswith("all.jsonl"):
            Path(check_file).write_text("".join(all_acks))
            final: dict[str, Any] = {"checked": collections.Counter(),
                                     "lost": collections.Counter(), "misses": [],
                                     "check_failed": 0}
            target = final
        else:
            target = tally
        proc = _spawn(folder, "final", check_file, check_only=True)
        _, err = proc.communicate(timeout=1800)
        if proc.returncode != 0:
            print(err[-3000:], file=sys.stderr)
        _collect(check_file, target, args.verbose)
    elapsed = time.monotonic() - started
    print(f"\n{cycles} SIGKILL cycles in {elapsed:.0f} s; {tally['acked']} acknowledged writes")
    print("checked right after each kill (by the next fresh process):",
          dict(tally["checked"]), "lost:", {f"{k}/{la}": v for (k, la), v in tally["lost"].items()}
          or "none", f"(checks that failed to run: {tally['check_failed']})")
    print("checked at the end (fresh process, every acknowledged write):",
          dict(final["checked"]), "lost:",
          {f"{k}/{la}": v for (k, la), v in final["lost"].items()} or "none")
    print(f"writers that failed on their own (a write raised): {len(tally['crashes'])}")
    for run, last in tally["crashes"][:3]:
        print(f"  {run}: {last}")
    for miss in (tally["misses"] + final["misses"])[:20]:
        print(f"  {miss['kind']} {miss['id']} run {miss['run']}: {miss['found']} "
              f"{miss.get('diag', '')}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folder", default="/tmp/langmem-edge-kill-probe",
                    help="the embedded Chroma folder (wiped first unless --keep)")
    ap.add_argument("--cycles", type=int, default=1_000_000, help="SIGKILL cycles to run")
    ap.add_argument("--minutes", type=float, default=15.0, help="stop after this long")
    ap.add_argument("--max-delay", type=float, default=3.0,
                    help="kill at a uniform moment up to this many seconds after start")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--sync-threshold", type=int, default=0,
                    help="pre-create the collections with this hnsw:sync_threshold "
                    "(default: Chroma's, 1000)")
    ap.add_argument("--keep", action="store_true", help="do not wipe --folder first")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--run", default="r", help=argparse.SUPPRESS)
    ap.add_argument("--check", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--check-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--precreate", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
    else:
        parent(args)


if __name__ == "__main__":
    main()
