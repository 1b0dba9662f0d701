"""ChromaStore before and after the keyword channel moved into the database (issues 33, 34).

    python benchmarks/store_keyword.py --before /tmp/lm-main            # the figures
    python benchmarks/store_keyword.py --before /tmp/lm-main --items 2000 --big 0   # quick

``--before`` is a source tree of the code to compare against (the change protocol's layout:
``git archive <commit> | tar -x -C /tmp/lm-main``); ``--after`` defaults to this checkout.
Each side runs in its own child process with its own code first on ``sys.path`` and its own
store folder under ``--tmp`` (tmpfs by default); the parent sends both the same commands,
round by round, the order alternated per round, so load from other processes hits both
alike. Vectors are seeded random unit vectors keyed by the text (``--dims``, 64 by default:
no model is timed), texts a random 3-14 words of ``_common.WORDS`` (37 words: every word is in
about a fifth of the texts, the worst case for a search that fetches the rows holding a
query word), or with ``--vocab N`` of N synthetic words drawn Zipf-like (rank r with weight
1/r, as words of prose are), queries 1-4 words drawn the same way.

Measured, medians over ``--rounds`` rounds of ``--queries`` calls:

- a ``put`` of a new item into a populated namespace, and the Chroma calls it makes (each
  side's ``store._call`` counted);
- a raw Chroma ``upsert`` of the same rows (a copy of the item row the put wrote, with a new
  id, and its vector row: two upserts, the least a put can do), on the after side;
- ``hybrid_search`` (k=10) in one namespace of ``--items / --namespaces`` items, and on the
  after side ``keyword_search`` (the keyword channel alone) on the same queries;
- keyword agreement: for every query, the keys of the hybrid top 10 and of the keyword
  channel's top 10 (``explain_search``), after against before;
- with ``--big`` items (100,000 by default, in ``--namespaces`` namespaces): the first
  ``hybrid_search`` in a new process (the store opened first, timed apart) against the same
  process's warm median (issue 34: first <= 2x warm).

The load average is printed before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _common import WORDS, median, table  # noqa: E402

WORKER = r'''
import json, sys, time, zlib, random
import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp

import langmem_edge
from langmem_edge import ChromaStore
from langmem_edge.store.layout import item_id

DIMS = int(sys.argv[2])


class Lookup(Embeddings):
    def vec(self, text):
        rng = np.random.default_rng(zlib.crc32(text.encode()))
        v = rng.standard_normal(DIMS).astype(np.float32)
        return (v / np.linalg.norm(v)).tolist()

    def embed_documents(self, texts):
        return [self.vec(t) for t in texts]

    def embed_query(self, text):
        return self.vec(text)


class Count:
    def __init__(self, inner):
        self.inner, self.names = inner, []

    def __call__(self, fn, *a, **k):
        self.names.append(getattr(getattr(fn, "__self__", None), "name", "client").rsplit(
            "-", 1)[-1] + "." + fn.__name__)
        return self.inner(fn, *a, **k)


store = ChromaStore.from_path(sys.argv[1], index={"dims": DIMS, "embed": Lookup(),
                                                   "fields": ["text"]})
counter = Count(store._call)
store._call = counter
reply = lambda obj: (sys.stdout.write(json.dumps(obj) + "\n"), sys.stdout.flush())
reply({"file": langmem_edge.__file__})
for line in sys.stdin:
    cmd = json.loads(line)
    op = cmd["op"]
    if op == "load":
        t = time.perf_counter()
        items = cmd["items"]
        for start in range(0, len(items), 1000):
            store.batch([PutOp(("bench", ns), key, {"text": text, "n": i})
                         for i, (ns, key, text) in enumerate(items[start:start + 1000])])
        reply({"seconds": time.perf_counter() - t})
    elif op == "puts":
        times, calls = [], []
        for ns, key, text in cmd["items"]:
            counter.names.clear()
            t = time.perf_counter()
            store.put(("bench", ns), key, {"text": text, "n": 0})
            times.append(time.perf_counter() - t)
            calls.append(list(counter.names))
        reply({"times": times, "calls": calls})
    elif op == "raw":
        times = []
        for ns, key, text in cmd["items"]:
            store_id = item_id(("bench", ns), key)
            got = store._items.get(ids=[store_id],
                                   include=["metadatas", "documents", "embeddings"])
            meta, doc, emb = got["metadatas"][0], got["documents"][0], got["embeddings"][0]
            new_id = "raw" + store_id[3:]
            t = time.perf_counter()
            store._items.upsert(ids=[new_id], embeddings=[emb], metadatas=[meta],
                                documents=[doc])
            times.append(time.perf_counter() - t)
            store._items.delete(ids=[new_id])
        reply({"times": times})
    elif op == "hybrid":
        times, results, keyword = [], [], []
        for ns, query in cmd["queries"]:
            t = time.perf_counter()
            found = store.hybrid_search(("bench", ns), query=query, limit=10)
            times.append(time.perf_counter() - t)
            results.append([r.key for r in found])
        if cmd.get("explain"):
            for ns, query in cmd["queries"]:
                ex = store.explain_search(("bench", ns), query=query, limit=50)
                ranked = sorted((e.channels["keyword"]["rank"], e.item.key) for e in ex
                                if e.channels["keyword"]["rank"] is not None)
                keyword.append([k for _, k in ranked][:10])
        kw_times = []
        if hasattr(store, "keyword_search"):
            for ns, query in cmd["queries"]:
                t = time.perf_counter()
                store.keyword_search(("bench", ns), query, limit=10)
                kw_times.append(time.perf_counter() - t)
        reply({"times": times, "results": results, "keyword": keyword, "kw_times": kw_times})
    elif op == "close":
        store.close()
        reply({})
        break
'''


VOCAB: list[str] = list(WORDS)
WEIGHTS: list[float] | None = None


def words(rng: random.Random, n: int) -> str:
    if WEIGHTS is None:
        return " ".join(rng.choice(VOCAB) for _ in range(n))
    return " ".join(rng.choices(VOCAB, weights=WEIGHTS, k=n))


def text_of(rng: random.Random) -> str:
    return words(rng, rng.randint(3, 14))


def query_of(rng: random.Random, namespaces: int) -> tuple[str, str]:
    return f"ns{rng.randrange(namespaces)}", words(rng, rng.randint(1, 4))


class Side:
    """One child process holding one store of one side's code."""

    def __init__(self, name: str, code: Path, folder: Path, dims: int) -> None:
        self.name = name
        env = {**os.environ, "PYTHONPATH": str(code)}
        t = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(folder), str(dims)], cwd=str(code), env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        hello = self.read()
        self.open_seconds = time.perf_counter() - t
        assert hello["file"].startswith(str(code)), (hello, code)

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.name} worker died")
        out: dict[str, Any] = json.loads(line)
        return out

    def ask(self, **cmd: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return self.read()

    def close(self) -> None:
        self.ask(op="close")
        self.proc.wait(timeout=60)


def ms(x: float) -> str:
    return f"{x * 1000:.2f}"


def load_items(n: int, namespaces: int, seed: int) -> list[tuple[str, str, str]]:
    rng = random.Random(seed)
    return [(f"ns{i % namespaces}", f"item{i}", text_of(rng)) for i in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", type=Path, required=True)
    ap.add_argument("--after", type=Path, default=HERE.parent)
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--big", type=int, default=100_000)
    ap.add_argument("--namespaces", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--dims", type=int, default=64)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--vocab", type=int, default=0)
    ap.add_argument("--tmp", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    args = ap.parse_args()
    global VOCAB, WEIGHTS
    if args.vocab:
        VOCAB = [f"{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}x{i}" for i in range(args.vocab)]
        WEIGHTS = [1.0 / (r + 1) for r in range(args.vocab)]
    root = Path(tempfile.mkdtemp(prefix="store-keyword-", dir=args.tmp))
    print(f"load average before: {os.getloadavg()}")
    codes = {"before": args.before.resolve(), "after": args.after.resolve()}
    try:
        rng = random.Random(args.seed)
        items = load_items(args.items, args.namespaces, args.seed)
        sides = {n: Side(n, c, root / n, args.dims) for n, c in codes.items()}
        for side in sides.values():
            print(f"{side.name}: loaded {args.items:,} items in "
                  f"{side.ask(op='load', items=items)['seconds']:.1f} s")
        put_t: dict[str, list[float]] = {n: [] for n in sides}
        hyb_t: dict[str, list[float]] = {n: [] for n in sides}
        kw_t: list[float] = []
        raw_t: list[float] = []
        calls: dict[str, list[list[str]]] = {n: [] for n in sides}
        agree = {"hybrid": [], "keyword": []}
        serial = 0
        for rnd in range(args.rounds):
            new = []
            for _ in range(args.queries):
                serial += 1
                new.append((f"ns{rng.randrange(args.namespaces)}", f"new{serial}",
                            text_of(rng)))
            queries = [query_of(rng, args.namespaces) for _ in range(args.queries)]
            order = list(sides) if rnd % 2 == 0 else list(reversed(sides))
            out: dict[str, dict[str, Any]] = {}
            for name in order:
                got = sides[name].ask(op="puts", items=new)
                put_t[name] += got["times"]
                calls[name] += got["calls"]
                if name == "after":
                    raw_t += sides[name].ask(op="raw", items=new)["times"]
            for name in order:
                out[name] = sides[name].ask(op="hybrid", queries=queries, explain=True)
                hyb_t[name] += out[name]["times"]
                kw_t += out[name]["kw_times"]
            for kind, field in (("hybrid", "results"), ("keyword", "keyword")):
                agree[kind] += [a == b for a, b in zip(out["before"][field],
                                                       out["after"][field], strict=True)]
        for side in sides.values():
            side.close()
        p_b, p_a, raw = median(put_t["before"]), median(put_t["after"]), median(raw_t)
        h_b, h_a = median(hyb_t["before"]), median(hyb_t["after"])
        n_calls = {n: sum(len(c) for c in v) / len(v) for n, v in calls.items()}
        print(f"\n{args.items:,} items in {args.namespaces} namespaces, {args.rounds} rounds "
              f"of {args.queries}; p50 ms\n")
        print(table(["figure", "before", "after", "after / before"], [
            ["put of a new item", ms(p_b), ms(p_a), f"{p_a / p_b:.2f}"],
            ["Chroma calls per new put", f"{n_calls['before']:.1f}",
             f"{n_calls['after']:.1f}", ""],
            ["raw upsert of the put's rows (item + vector)", "", ms(raw), ""],
            ["put / raw upsert", f"{p_b / raw:.2f}", f"{p_a / raw:.2f}", ""],
            ["hybrid_search k=10", ms(h_b), ms(h_a), f"{h_a / h_b:.2f}"],
            ["keyword_search k=10 (the channel alone)", "", ms(median(kw_t)), ""],
        ]))
        for name in sides:
            print(f"{name}: calls of one new put: {calls[name][-1]}")
        for kind, flags in agree.items():
            print(f"{kind} top 10 identical before/after: {sum(flags)} of {len(flags)}")
        if args.big:
            big_items = load_items(args.big, args.namespaces, args.seed + 1)
            for name, code in codes.items():
                folder = root / f"big-{name}"
                side = Side(name, code, folder, args.dims)
                print(f"\n{name}: loaded {args.big:,} items in "
                      f"{side.ask(op='load', items=big_items)['seconds']:.1f} s")
                side.close()
            rows = []
            big_kw: list[float] = []
            for rnd in range(args.rounds):
                order = list(codes) if rnd % 2 == 0 else list(reversed(codes))
                for name in order:
                    qs = [query_of(rng, args.namespaces) for _ in range(args.queries)]
                    side = Side(name, codes[name], root / f"big-{name}", args.dims)
                    first = side.ask(op="hybrid", queries=qs[:1])["times"][0]
                    got = side.ask(op="hybrid", queries=qs[1:])
                    warm = median(got["times"])
                    side.close()
                    rows.append((name, rnd, side.open_seconds, first, warm))
                    if got["kw_times"]:
                        big_kw.extend(got["kw_times"])
            print(f"\nfirst hybrid_search in a new process vs warm, {args.big:,} items "
                  f"({args.big // args.namespaces:,} a namespace); ms\n")
            print(table(["side", "round", "process start + open", "first", "warm p50",
                         "first / warm"],
                        [[n, r, ms(o), ms(f), ms(w), f"{f / w:.1f}"]
                         for n, r, o, f, w in rows]))
            print(f"after: keyword_search p50 {ms(median(big_kw))} ms (the keyword channel "
                  "alone, warm)")
            for name in codes:
                mine = [r for r in rows if r[0] == name]
                print(f"{name}: median first {ms(median([r[3] for r in mine]))} ms, warm "
                      f"{ms(median([r[4] for r in mine]))} ms, first / warm "
                      f"{median([r[3] / r[4] for r in mine]):.1f}")
    finally:
        print(f"\nload average after: {os.getloadavg()}")
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
