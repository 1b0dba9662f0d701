"""Recall latency of ``AgentMemory`` at 1k / 10k / 100k memories in one profile.

The store holds 100 profiles: the measured one with N memories, 99 others with
``--others`` memories each (default 100). Memories are written in bulk with precomputed
vectors (``FakeEmbeddings``: hashed bag of words, or ``--embed minilm`` for real
all-MiniLM-L6-v2 vectors), then ``--queries`` recalls are timed. Each query is embedded
first, on its own clock, and the store's embedder serves the recall's query embedding from
a cache, so the recall figure excludes query embedding (as the issue's target does).

Reported per backend and size (milliseconds):

* ``load``: the first recall of the profile (it builds the per-process index);
* ``recall p50 / p95``: warm ``profile.recall(query)`` with the default config (thinking
  level medium, model-free, relevance fill on, access counts written behind);
* ``search p50``: the baseline, one ``store.search(query=..., limit=50)`` on the same
  namespace and filter as the vector channel, measured in the same run;
* ``outside the store``: recall time minus the time spent in ``store.batch`` and
  ``store.nearest_keys`` (the memory layer's own work: sync probe handling, BM25, key and
  temporal channels, fusion, fill);
* ``recall / search``: recall p50 / search p50;
* ``embed p50``: the query embedding, timed separately.

``--only-bulk`` measures bulk writes instead (real default model, ChromaStore on a folder):
``Profile.remember_many`` of ``--bulk-n`` distinct texts against the embedding model's own
throughput on the same texts (``embed_documents`` of the wrapped model, cache bypassed, in
batches of the bulk chunk, measured just before), and one-at-a-time ``remember`` of
``--before-n`` texts as the "before"; medians of ``--rounds``.

``--only-cold`` measures the first recall of a profile in a new process: the profile is
built with ``remember_many`` (fake vectors), or copied from ``--store`` (a folder built
so), then a child process opens the store and times its first ``recall`` (median of
``--rounds`` children; wall time and the child's CPU time), with a warm recall of the same
child as the baseline, and the size of the profile's index image in the store. With
``--before REPO`` the children of that checkout's code alternate with this code's, each
code on its own copy of the store.

Usage::

    python benchmarks/recall_bench.py                                # both backends, all sizes
    python benchmarks/recall_bench.py --backend memory --sizes 1000  # a quick run
    python benchmarks/recall_bench.py --backend chroma --sizes 1000,10000,100000 --queries 30
    python benchmarks/recall_bench.py --only-bulk --bulk-n 2000 --before-n 200
    python benchmarks/recall_bench.py --only-cold --sizes 10000,100000
    python benchmarks/recall_bench.py --only-cold --sizes 10000 --store /path/to/c10k \\
        --before /path/to/old-checkout --rounds 5          # before / after, alternating
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_core.embeddings import Embeddings  # noqa: E402
from langgraph.store.base import BaseStore, PutOp  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402

from langmem_edge.memory import AgentMemory, MemoryRecord  # noqa: E402
from langmem_edge.memory.records import new_memory_id, scope_of, utcnow  # noqa: E402
from langmem_edge.testing import FakeEmbeddings  # noqa: E402

DIMS = 384
PROFILES = 100
NAMESPACE = ("bench",)
WRITE_BATCH = 1000
VOCABULARY = 5000


class QueryCache(Embeddings):
    """Embeds documents with ``inner``; serves queries embedded beforehand from a cache."""

    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner
        self.cache: dict[str, list[float]] = {}

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        vec = self.cache.get(text)
        if vec is None:
            vec = self.cache[text] = self.inner.embed_query(text)
        return vec

    def timed_embed(self, text: str) -> float:
        """Embed a query into the cache; returns the seconds it took."""
        start = time.perf_counter()
        self.cache[text] = self.inner.embed_query(text)
        return time.perf_counter() - start


class TimedStore(BaseStore):
    """A store that forwards to another and adds up the time spent in it."""

    def __init__(self, inner: BaseStore) -> None:
        self.inner = inner
        self.index_config = getattr(inner, "index_config", None)
        self.spent = 0.0

    def batch(self, ops: Any) -> list[Any]:
        start = time.perf_counter()
        try:
            return self.inner.batch(ops)
        finally:
            self.spent += time.perf_counter() - start

    async def abatch(self, ops: Any) -> list[Any]:
        return self.batch(ops)


class TimedNearestStore(TimedStore):
    """``TimedStore`` over a store with ``nearest_keys`` (recall's fast vector channel)."""

    def nearest_keys(self, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return self.inner.nearest_keys(*args, **kwargs)
        finally:
            self.spent += time.perf_counter() - start

    async def anearest_keys(self, *args: Any, **kwargs: Any) -> Any:
        return self.nearest_keys(*args, **kwargs)


def make_timed(inner: BaseStore) -> TimedStore:
    return TimedNearestStore(inner) if hasattr(inner, "nearest_keys") else TimedStore(inner)


def make_embedder(kind: str) -> Embeddings:
    if kind == "fake":
        return FakeEmbeddings(DIMS)
    from langmem_edge.embeddings import default_embeddings

    return default_embeddings()


def sentences(rng: random.Random, n: int) -> Iterator[str]:
    """Synthetic memory texts: 8-14 words, Zipf-distributed over a fixed vocabulary."""
    words = [f"w{i}" for i in range(VOCABULARY)]
    weights = [1.0 / (i + 1) for i in range(VOCABULARY)]
    templates = ["The user {}", "User mentioned {}", "Remember that {}", "{}"]
    for _ in range(n):
        body = " ".join(rng.choices(words, weights, k=rng.randint(8, 14)))
        yield rng.choice(templates).format(body)


def record_values(profile: str, n: int, rng: random.Random) -> Iterator[tuple[dict[str, Any],
                                                                              Any]]:
    """``(value, index argument)`` of ``n`` memories of ``profile``."""
    now = utcnow()
    for text in sentences(rng, n):
        kind = rng.choices(["fact", "event", "instruction", "task"], [70, 15, 10, 5])[0]
        created = now - timedelta(days=rng.uniform(0, 365))
        record = MemoryRecord(
            id=new_memory_id(), profile=profile, text=text, kind=kind,
            fact_type=None if kind == "fact" else kind,
            key=f"topic.{text.split()[-1]}" if rng.random() < 0.1 else None,
            created_at=created, updated_at=created, valid_from=created,
            access_count=rng.choice([0, 0, 0, 1, 2, 5]),
            embedding_status="skipped" if kind == "task" else "complete",
            session_id="s1" if kind == "task" else None,
        )
        yield record.to_value(), (False if kind == "task" else ["text"])


def load(store: BaseStore, size: int, others: int, seed: int) -> list[str]:
    """Write the 100 profiles; returns the measured profile's texts."""
    rng = random.Random(seed)
    texts: list[str] = []
    for p in range(PROFILES):
        name = f"bench-{p:03d}"
        ns = (*NAMESPACE, "profiles", name, "memories")
        n = size if p == 0 else others
        ops: list[PutOp] = []
        for value, index in record_values(name, n, rng):
            if p == 0:
                texts.append(value["text"])
            ops.append(PutOp(ns, value["id"], value, index=index))
            if len(ops) == WRITE_BATCH:
                store.batch(ops)
                ops = []
        if ops:
            store.batch(ops)
    return texts


@contextmanager
def open_store(backend: str, embedder: Embeddings) -> Iterator[BaseStore]:
    index = {"dims": DIMS, "embed": embedder, "fields": ["text"]}
    if backend == "memory":
        yield InMemoryStore(index=index)  # type: ignore[arg-type]
        return
    from langmem_edge.store import ChromaStore

    with tempfile.TemporaryDirectory(prefix="recall-bench-") as folder:
        store = ChromaStore.from_path(folder, index=index)
        try:
            yield store
        finally:
            store.close()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bench(backend: str, size: int, args: argparse.Namespace) -> dict[str, Any]:
    embedder = QueryCache(make_embedder(args.embed))
    with open_store(backend, embedder) as store:
        t0 = time.perf_counter()
        texts = load(store, size, args.others, args.seed)
        load_s = time.perf_counter() - t0
        timed_store = make_timed(store)
        memory = AgentMemory(timed_store, namespace=NAMESPACE)
        profile = memory.profile("bench-000")
        rng = random.Random(args.seed + 1)
        queries = [" ".join(rng.sample(t.split()[-6:], 3)) for t in rng.sample(texts,
                                                                                 args.queries)]
        cold = timed(lambda: profile.recall("warm up " + queries[0]))
        ns = (*NAMESPACE, "profiles", "bench-000", "memories")
        flt = {"profile": "bench-000", "scope": scope_of(None), "status": "active"}
        embeds, recalls, searches, counts, own = [], [], [], [], []
        gc.collect()
        for q in queries:
            embeds.append(embedder.timed_embed(q))
            timed_store.spent = 0.0
            start = time.perf_counter()
            res = profile.recall(q)
            recalls.append(time.perf_counter() - start)
            own.append(recalls[-1] - timed_store.spent)
            counts.append(res.count)
            searches.append(timed(lambda q=q: store.search(ns, query=q, filter=flt, limit=50)))
        memory.flush()
    ms = 1000.0
    return {
        "backend": backend, "size": size, "total": size + (PROFILES - 1) * args.others,
        "write_s": load_s, "load": cold * ms,
        "p50": statistics.median(recalls) * ms, "p95": pct(recalls, 0.95) * ms,
        "search": statistics.median(searches) * ms,
        "embed": statistics.median(embeds) * ms,
        "own": statistics.median(own) * ms, "own95": pct(own, 0.95) * ms,
        "hits": statistics.mean(counts),
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| backend | memories in profile | in store | load (first recall) | recall p50 | "
        "recall p95 | outside the store p50 / p95 | store.search p50 | recall / search | "
        "query embed p50 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['backend']} | {r['size']:,} | {r['total']:,} | {r['load']:.0f} ms | "
            f"{r['p50']:.1f} ms | {r['p95']:.1f} ms | {r['own']:.1f} / {r['own95']:.1f} ms | "
            f"{r['search']:.1f} ms | {r['p50'] / r['search']:.2f}x | {r['embed']:.2f} ms |"
        )
    return "\n".join(lines)


def bench_bulk(args: argparse.Namespace, seed: int) -> dict[str, float]:
    """One round of ``--only-bulk``: model alone, ``remember_many``, one-at-a-time
    ``remember``, each on distinct texts (the content-hash cache never serves them)."""
    from langmem_edge.embeddings import default_embeddings
    from langmem_edge.store import ChromaStore

    rng = random.Random(seed)
    bulk = [f"({seed}-{i}) {t}" for i, t in enumerate(sentences(rng, args.bulk_n))]
    single = [f"({seed}-one-{i}) {t}" for i, t in enumerate(sentences(rng, args.before_n))]
    cached = default_embeddings()
    inner = cached.inner  # type: ignore[attr-defined]
    chunk = AgentMemory(InMemoryStore()).config.limits.bulk_chunk
    model_s = sum(timed(lambda i=i: inner.embed_documents(bulk[i:i + chunk]))
                  for i in range(0, len(bulk), chunk))
    index = {"dims": DIMS, "embed": cached, "fields": ["text"]}
    with tempfile.TemporaryDirectory(prefix="bulk-bench-") as folder:
        store = ChromaStore.from_path(folder, index=index)  # type: ignore[arg-type]
        try:
            memory = AgentMemory(store, namespace=NAMESPACE)
            bulk_s = timed(lambda: memory.profile("bulk").remember_many(bulk))
            one = memory.profile("one")
            single_s = timed(lambda: [one.remember(t) for t in single])
        finally:
            store.close()
    return {"model": len(bulk) / model_s, "bulk": len(bulk) / bulk_s,
            "single": len(single) / single_s}


def run_bulk(args: argparse.Namespace) -> None:
    """``--only-bulk``: the table of bulk-write throughput."""
    from langmem_edge.embeddings import default_embeddings

    default_embeddings().embed_documents(["warm-up sentence"])  # load the model once
    rounds = [bench_bulk(args, args.seed + r) for r in range(args.rounds)]
    med = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    ratio = statistics.median(r["bulk"] / r["model"] for r in rounds)
    before = statistics.median(r["single"] / r["model"] for r in rounds)
    print(f"### Bulk writes on ChromaStore (folder), default model, median of {args.rounds}\n")
    print("| what | memories | memories/s | vs model alone |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| model alone (embed_documents) | {args.bulk_n:,} | {med['model']:,.0f} | 1.00x |")
    print(f"| remember_many (verify off) | {args.bulk_n:,} | {med['bulk']:,.0f} | "
          f"{ratio:.2f}x |")
    print(f"| remember, one at a time (before) | {args.before_n:,} | {med['single']:,.0f} | "
          f"{before:.2f}x |")


COLD_CHILD = "--cold-child"
ROOT = Path(__file__).resolve().parents[1]


def cold_child(folder: str, queries: list[str]) -> None:
    """In a new process: open the store, time the first recall and a warm one."""
    from langmem_edge.store import ChromaStore

    index = {"dims": DIMS, "embed": FakeEmbeddings(DIMS), "fields": ["text"]}
    store = ChromaStore.from_path(folder, index=index)  # type: ignore[arg-type]
    profile = AgentMemory(store, namespace=NAMESPACE).profile("bench-000")
    cpu = time.process_time()
    first = timed(lambda: profile.recall(queries[0]))
    cpu = time.process_time() - cpu
    warm = timed(lambda: profile.recall(queries[1]))
    store.close()
    print(f"{cpu} {first} {warm}")


def run_child(repo: Path, folder: str, queries: list[str]) -> tuple[float, float, float]:
    """One new process of the code in ``repo`` (its own ``recall_bench.py``) on ``folder``:
    ``(first recall CPU s, first recall wall s, warm recall wall s)``."""
    out = subprocess.run([sys.executable, str(repo / "benchmarks" / "recall_bench.py"),
                          COLD_CHILD, folder, *queries],
                         check=True, capture_output=True, text=True).stdout
    cpu, first, warm = (float(x) for x in out.split()[-3:])
    return cpu, first, warm


def image_bytes(folder: str) -> int:
    """Bytes of the measured profile's index image in the store (its items' JSON values)."""
    import json

    from langmem_edge.store import ChromaStore

    store = ChromaStore.from_path(folder)
    try:
        items = store.search((*NAMESPACE, "profiles", "bench-000", "image"), limit=100_000)
        return sum(len(json.dumps(it.value).encode()) for it in items)
    finally:
        store.close()


def build_cold(folder: str, size: int, seed: int) -> float:
    """Write the ``--only-cold`` profile of ``size`` memories into ``folder``; seconds."""
    from langmem_edge.store import ChromaStore

    texts = list(sentences(random.Random(seed), size))
    index = {"dims": DIMS, "embed": FakeEmbeddings(DIMS), "fields": ["text"]}
    store = ChromaStore.from_path(folder, index=index)  # type: ignore[arg-type]
    try:
        start = time.perf_counter()
        AgentMemory(store, namespace=NAMESPACE).profile("bench-000").remember_many(texts)
        return time.perf_counter() - start
    finally:
        store.close()


def run_cold(args: argparse.Namespace) -> None:
    """``--only-cold``: build each size with ``remember_many`` (or copy ``--store``), time
    first recalls in new processes; with ``--before REPO``, that code's children too,
    alternating with this code's, each code on its own copy of the store (after one
    untimed child, so each finds an image of its own format)."""
    import shutil

    codes = [("after", ROOT)] + ([("before", Path(args.before))] if args.before else [])
    print("### First recall in a new process (ChromaStore folder, fake vectors)\n")
    print("| memories | code | built in | first recall p50 | its CPU p50 | warm recall p50 "
          "| first / warm | image in the store |")
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.store and len(sizes) != 1:
        raise SystemExit("--store holds one profile: give one --sizes")
    for size in sizes:
        texts = list(sentences(random.Random(args.seed), size))
        queries = [" ".join(t.split()[-3:]) for t in texts[:2]]
        with tempfile.TemporaryDirectory(prefix="cold-bench-") as tmp:
            if args.store:
                src, built = args.store, "copied"
            else:
                src = f"{tmp}/built"
                built = f"{build_cold(src, size, args.seed):.0f} s"
            folders = {}
            for label, repo in codes:
                folders[label] = f"{tmp}/{label}"
                shutil.copytree(src, folders[label])
                run_child(repo, folders[label], queries)  # untimed: its image, its format
            runs: dict[str, list[tuple[float, float, float]]] = {label: [] for label, _ in codes}
            for _ in range(args.rounds):
                for label, repo in codes:
                    runs[label].append(run_child(repo, folders[label], queries))
            for label, _ in codes:
                c, f, w = (statistics.median(r[i] for r in runs[label]) * 1000 for i in range(3))
                kb = image_bytes(folders[label]) / 1024
                print(f"| {size:,} | {label} | {built} | {f:,.0f} ms | {c:,.0f} ms | "
                      f"{w:,.1f} ms | {f / w:,.0f}x | {kb:,.0f} KB |", flush=True)
            if args.verbose:
                for label, _ in codes:
                    print(f"# {label} runs (cpu, first, warm s): {runs[label]}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="memory,chroma",
                        help="memory, chroma, or both comma-separated (default both)")
    parser.add_argument("--sizes", default="1000,10000,100000",
                        help="memories in the measured profile, comma-separated")
    parser.add_argument("--others", type=int, default=100,
                        help="memories in each of the 99 other profiles (default 100)")
    parser.add_argument("--queries", type=int, default=30, help="timed recalls (default 30)")
    parser.add_argument("--embed", choices=["fake", "minilm"], default="fake",
                        help="vectors: hashed bag of words (default) or all-MiniLM-L6-v2")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--only-bulk", action="store_true",
                        help="measure remember_many against the model (real default model)")
    parser.add_argument("--bulk-n", type=int, default=2000, help="memories per bulk write")
    parser.add_argument("--before-n", type=int, default=200,
                        help="memories written one at a time (the before)")
    parser.add_argument("--only-cold", action="store_true",
                        help="first recall of a remember_many-built profile in a new process")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of --only-bulk/cold")
    parser.add_argument("--store", default=None,
                        help="--only-cold: copy this store folder (built by --only-cold's "
                             "profile) instead of building one; never written")
    parser.add_argument("--before", default=None,
                        help="--only-cold: a checkout of the code before, whose children "
                             "alternate with this code's")
    parser.add_argument("--verbose", action="store_true", help="--only-cold: every run")
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [COLD_CHILD]:
        cold_child(argv[1], argv[2:])
        return 0
    args = parser.parse_args(argv)
    if args.only_bulk:
        run_bulk(args)
        return 0
    if args.only_cold:
        run_cold(args)
        return 0
    rows = []
    for backend in args.backend.split(","):
        for size in (int(s) for s in args.sizes.split(",")):
            row = bench(backend.strip(), size, args)
            print(f"# {backend} {size:,}: wrote {row['total']:,} memories in "
                  f"{row['write_s']:.0f} s; {row['hits']:.1f} candidates a recall",
                  file=sys.stderr, flush=True)
            rows.append(row)
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
