"""ChromaStore vs InMemoryStore: put throughput and search latency, measured in one run.

    python benchmarks/store_bench.py                 # 10,000 items, 200 queries
    python benchmarks/store_bench.py --items 2000 --queries 50 --skip-model

Part 1 uses the same precomputed 384-d vectors for every backend (the embedding "model" is a
dictionary lookup, so query embedding is excluded), so it measures the stores alone: put
throughput (items/s, batches of ``--batch`` puts) and search p50/p95 (``limit=10``) for
ChromaStore on a folder, ChromaStore on a ``chroma run`` server this script starts and stops,
and InMemoryStore with an index. Ratios are against InMemoryStore measured in the same run.
For ChromaStore it also times ``hybrid_search`` (vector + BM25 keyword + key, fused) against
its own vector-only search, the two interleaved query by query (so both see the same load);
``--only-search`` runs this part alone.

Part 2 uses the real default model (all-MiniLM-L6-v2, offline): items/s of ``store.batch`` puts
against the model's own embedding throughput on the same texts (cache bypassed), i.e. how much
the store adds on top of the time the model needs.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import WORDS, chroma_server, median, percentile, table, timed  # noqa: E402
from langchain_core.embeddings import Embeddings  # noqa: E402
from langgraph.store.base import BaseStore, PutOp  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402

from langmem_edge import ChromaStore  # noqa: E402
from langmem_edge._chroma import SYNC_THRESHOLD  # noqa: E402


class LookupEmbeddings(Embeddings):
    """Precomputed vectors by text: the same for every backend, ~free to "compute"."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vectors[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vectors[text]


def make_corpus(n: int, queries: int, dims: int, seed: int = 7):  # type: ignore[no-untyped-def]
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    texts = [f"{i} " + " ".join(rng.choices(WORDS, k=12)) for i in range(n)]
    qtexts = [f"q{i} " + " ".join(rng.choices(WORDS, k=5)) for i in range(queries)]
    mat = nrng.standard_normal((n + queries, dims)).astype(np.float32)
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    vectors = {t: mat[i].tolist() for i, t in enumerate(texts + qtexts)}
    return texts, qtexts, vectors


def run_store(store: BaseStore, texts: list[str], queries: list[str], batch: int
              ) -> dict[str, float]:
    put_seconds = 0.0
    for start in range(0, len(texts), batch):
        ops = [
            PutOp(("bench", f"user{i % 10}"), f"item{i}", {"text": t, "n": i})
            for i, t in enumerate(texts[start : start + batch], start=start)
        ]
        put_seconds += timed(lambda ops=ops: store.batch(ops))
    for q in queries[:5]:  # warm-up
        store.search(("bench",), query=q, limit=10)
    hybrid = isinstance(store, ChromaStore)
    if hybrid:
        store.hybrid_search(("bench",), query=queries[0], limit=10)  # loads the keyword index
    lat: list[float] = []
    hyb: list[float] = []
    for q in queries:  # interleaved, so both see the same machine load
        lat.append(timed(lambda q=q: store.search(("bench",), query=q, limit=10)))
        if hybrid:
            hyb.append(timed(lambda q=q: store.hybrid_search(("bench",), query=q, limit=10)))
    out = {
        "put_per_s": len(texts) / put_seconds,
        "p50_ms": median(lat) * 1000,
        "p95_ms": percentile(lat, 95) * 1000,
    }
    if hyb:
        out["hybrid_p50_ms"] = median(hyb) * 1000
        out["hybrid_p95_ms"] = percentile(hyb, 95) * 1000
    return out


def part1(args: argparse.Namespace) -> str:
    texts, queries, vectors = make_corpus(args.items, args.queries, args.dims)
    index = {"dims": args.dims, "embed": LookupEmbeddings(vectors), "fields": ["text"]}
    results: dict[str, dict[str, float]] = {}
    results["InMemoryStore"] = run_store(InMemoryStore(index=index), texts, queries, args.batch)
    with tempfile.TemporaryDirectory() as folder:
        with ChromaStore.from_path(folder, index=index) as store:
            results["ChromaStore (folder)"] = run_store(store, texts, queries, args.batch)
    if not args.skip_server:
        with chroma_server() as url, ChromaStore.from_url(url, index=index) as store:
            results["ChromaStore (server)"] = run_store(store, texts, queries, args.batch)
    base = results["InMemoryStore"]
    rows = [
        [
            name,
            f"{r['put_per_s']:,.0f}",
            f"{r['put_per_s'] / base['put_per_s']:.2f}x",
            f"{r['p50_ms']:.2f}",
            f"{r['p95_ms']:.2f}",
            f"{base['p50_ms'] / r['p50_ms']:.1f}x",
            f"{r['hybrid_p50_ms']:.2f} / {r['hybrid_p95_ms']:.2f}" if "hybrid_p50_ms" in r
            else "-",
            f"{r['hybrid_p50_ms'] / r['p50_ms']:.2f}x" if "hybrid_p50_ms" in r else "-",
        ]
        for name, r in results.items()
    ]
    return (
        f"### Store alone: {args.items:,} items, {args.dims}-d precomputed vectors, "
        f"{args.queries} queries, puts in batches of {args.batch}\n\n"
        + table(
            ["backend", "put items/s", "put vs InMemory", "search p50 ms", "search p95 ms",
             "search speed-up vs InMemory", "hybrid p50 / p95 ms", "hybrid / vector p50"],
            rows,
        )
    )


def part_put_raw(args: argparse.Namespace) -> str:
    """Put throughput against raw Chroma writing the same rows: every write call our store
    makes (marker, vectors, items) is recorded, then replayed as raw calls on fresh
    collections of a fresh folder, in the same run. The ratio is what the store adds (the
    read of old rows, planning, the settle marker) on top of Chroma's own writes."""
    import chromadb

    texts, _, vectors = make_corpus(args.items, 1, args.dims)
    index = {"dims": args.dims, "embed": LookupEmbeddings(vectors), "fields": ["text"]}
    recorded: list[tuple[str, str, dict]] = []
    with (
        tempfile.TemporaryDirectory() as folder,
        ChromaStore.from_path(folder, index=index) as store,
    ):
        inner = store._call

        def recording(fn, *a, **kw):  # type: ignore[no-untyped-def]
            if fn.__name__ in ("upsert", "delete"):
                recorded.append((fn.__self__.name, fn.__name__, kw))
            return inner(fn, *a, **kw)

        store._call = recording
        ours = 0.0
        for start in range(0, len(texts), args.batch):
            ops = [PutOp(("bench", f"user{i % 10}"), f"item{i}", {"text": t, "n": i})
                   for i, t in enumerate(texts[start : start + args.batch], start=start)]
            ours += timed(lambda ops=ops: store.batch(ops))
    with tempfile.TemporaryDirectory() as folder:
        client = chromadb.PersistentClient(folder)
        cols = {}
        for name in dict.fromkeys(n for n, _, _ in recorded):
            cols[name] = client.get_or_create_collection(
                name, embedding_function=None,
                metadata={"hnsw:space": "cosine", "hnsw:sync_threshold": SYNC_THRESHOLD,
                          "hnsw:batch_size": SYNC_THRESHOLD})
        raw = sum(timed(lambda c=cols[n], m=m, kw=kw: getattr(c, m)(**kw))
                  for n, m, kw in recorded)
    return (
        f"### Puts against raw Chroma writing the same rows: {args.items:,} items, "
        f"batches of {args.batch}\n\n"
        + table(["what", "items/s", "ratio"], [
            ["raw Chroma, the same write calls", f"{args.items / raw:,.0f}", "1.00x"],
            ["ChromaStore.batch puts", f"{args.items / ours:,.0f}", f"{raw / ours:.2f}x"],
        ])
    )


def part_listing(args: argparse.Namespace) -> str:
    """Query-less ``search(ns, limit=10)`` (page 1 and page 10) on a 1k-item namespace of a
    10-namespace store, against one raw Chroma ``get(where=namespace, limit=10)`` of the same
    rows in the same run, and ``delete_prefix`` / ``list_namespaces`` beside them."""
    n, per = args.items, args.items // 10
    with tempfile.TemporaryDirectory() as folder, ChromaStore.from_path(folder) as store:
        for start in range(0, n, 500):
            store.batch([PutOp(("bench", f"user{i % 10}"), f"item{i}", {"text": f"t {i}", "n": i})
                         for i in range(start, min(n, start + 500))])
        ns = ("bench", "user3")
        where = {"p2": "bench\x1fuser3"}
        store.search(ns, limit=10)  # the first listing of a prefix reads it once
        rounds = range(args.queries)
        raw = [timed(lambda: store._items.get(where=where, limit=10, include=["documents"]))
               for _ in rounds]
        first = [timed(lambda: store.search(ns, limit=10)) for _ in rounds]
        tenth = [timed(lambda: store.search(ns, limit=10, offset=90)) for _ in rounds]
        fiftieth = [timed(lambda: store.search(ns, limit=10, offset=490)) for _ in rounds]
        listed = [timed(lambda: store.list_namespaces(prefix=("bench",))) for _ in range(5)]
        cold = ChromaStore.from_path(folder)
        cold_first = timed(lambda: cold.search(ns, limit=10))
        cold.close()
        deleted = timed(lambda: store.delete_prefix(ns))
    base = median(raw)
    rows = [
        ["raw Chroma get(where=namespace, limit=10)", f"{base * 1000:.2f}", "1.00x"],
        ["search(ns, limit=10)", f"{median(first) * 1000:.2f}", f"{median(first) / base:.2f}x"],
        ["search(ns, limit=10, offset=90)", f"{median(tenth) * 1000:.2f}",
         f"{median(tenth) / base:.2f}x"],
        ["search(ns, limit=10, offset=490)", f"{median(fiftieth) * 1000:.2f}",
         f"{median(fiftieth) / base:.2f}x"],
        ["first listing of the prefix in a new process", f"{cold_first * 1000:.2f}",
         f"{cold_first / base:.2f}x"],
        [f"list_namespaces(prefix=('bench',)) over {n:,} items", f"{median(listed) * 1000:.2f}",
         f"{median(listed) / base:.2f}x"],
        [f"delete_prefix of {per:,} items (once)", f"{deleted * 1000:.2f}", "-"],
    ]
    return (
        f"### Listing without a query: {n:,} items in 10 namespaces, p50 of {args.queries}\n\n"
        + table(["what", "p50 ms", "vs raw get"], rows)
    )


def part2(args: argparse.Namespace) -> str:
    from langmem_edge.embeddings import CachedEmbeddings, default_embeddings

    model = default_embeddings()
    inner = model.inner if isinstance(model, CachedEmbeddings) else model
    rng = random.Random(11)
    n = args.model_items
    texts = [f"note {i}: " + " ".join(rng.choices(WORDS, k=14)) for i in range(n)]
    inner.embed_documents(texts[:32])  # warm-up
    model_s = 0.0
    for start in range(0, n, args.batch):
        chunk = texts[start : start + args.batch]
        model_s += timed(lambda chunk=chunk: inner.embed_documents(chunk))
    with tempfile.TemporaryDirectory() as folder:
        # the store gets the bare model, so it pays for every embedding itself
        with ChromaStore.from_path(folder, index={"dims": 384, "embed": inner,
                                                  "fields": ["text"]}) as store:
            store_s = 0.0
            for start in range(0, n, args.batch):
                ops = [PutOp(("m",), f"k{i}", {"text": t})
                       for i, t in enumerate(texts[start : start + args.batch], start=start)]
                store_s += timed(lambda ops=ops: store.batch(ops))
    overhead = store_s / model_s - 1
    return (
        f"### With the real default model: {n:,} items, batches of {args.batch}\n\n"
        + table(
            ["what", "items/s", "seconds"],
            [
                ["model alone (embed_documents)", f"{n / model_s:,.0f}", f"{model_s:.2f}"],
                ["ChromaStore.batch puts (embeds + writes)", f"{n / store_s:,.0f}",
                 f"{store_s:.2f}"],
            ],
        )
        + f"\n\nStore overhead on top of the model: {overhead * 100:+.1f} %"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--batch", type=int, default=100, help="puts per store.batch call")
    parser.add_argument("--model-items", type=int, default=2_000)
    parser.add_argument("--skip-server", action="store_true")
    parser.add_argument("--skip-model", action="store_true")
    parser.add_argument("--only-listing", action="store_true", help="run the listing part alone")
    parser.add_argument("--only-put-raw", action="store_true", help="run the put-vs-raw part alone")
    parser.add_argument("--only-search", action="store_true",
                        help="run the store-alone part (puts, vector and hybrid search) alone")
    args = parser.parse_args(argv)
    started = time.time()
    if args.only_search:
        print(part1(args))
        return
    if args.only_put_raw:
        print(part_put_raw(args))
        return
    print(part_listing(args))
    if args.only_listing:
        return
    print()
    print(part_put_raw(args))
    print()
    print(part1(args))
    if not args.skip_model:
        print()
        print(part2(args))
    print(f"\n(total {time.time() - started:.0f} s)")


if __name__ == "__main__":
    main()
