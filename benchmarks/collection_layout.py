"""One collection for every profile, or one collection per profile? Raw chromadb, measured.

Layouts, both built in the same run and timed interleaved, call by call, on a random profile
per call (as a service with many users does):

- **a**: one collection ``layout-a`` holding every profile's items, each with a ``profile``
  metadata field; a profile's reads carry ``where={"profile": p}`` (today's shape).
- **b**: one collection per profile (``p-<i>``), Chroma's own multi-tenancy unit; a profile's
  reads carry no filter. Collection handles are cached by name (a handle holds the
  collection's id and configuration; fetching one is a Chroma call, timed on its own row).

Data: ``--profiles`` profiles (a list: one run per size) x ``--items`` items, ``--dims``-d
vectors made of a few Gaussian clusters per profile, precomputed from a seed (never Chroma's
embedding function: every write passes ``embeddings=``, collections are made with
``embedding_function=None``, and a socket guard counts and refuses any connection off
127.0.0.1, reported as ``outbound connections``). Cosine space.

Figures per layout (p50 / p95 ms): get by id, k=10 query within the profile, ``get`` listing
(limit 10), upsert of one row (an existing id, same vector, new document), the collection
handle fetch (b), collection creation (b; a's one creation is in the build time), build time,
disk size, Chroma calls per operation; recall@10 of the query against exact cosine (numpy)
over the profile's vectors; for layout a, recall and query latency again after
``collection.modify(configuration={"hnsw": {"ef_search": N}})`` for each ``--ef``. Cold: a
fresh child process per layout (interleaved, ``--cold-rounds`` each) times its first query
(client open excluded, handle fetch included), then a second one on the same profile, then
the first query on each of 20 other profiles, and reports its RSS after querying
``--touch`` random profiles. ``--server`` repeats the warm figures on a ``chroma run`` server
on 127.0.0.1 that the script starts and stops by its PID.

Run (from the project root; a few minutes on 2 shared cores)::

    python benchmarks/collection_layout.py                       # 100 and 1,000 profiles
    python benchmarks/collection_layout.py --profiles 10000      # 1,000,000 items
    python benchmarks/collection_layout.py --profiles 100,1000 --server

Figures (2026-12-04, chromadb 1.5.9, folders on /dev/shm, 2 cores shared with other jobs,
load average 3.9-6.2; ``--profiles 100,1000 --cold-rounds 2``; p50 / p95 ms; a/b = a's p50
over b's, same run; one Chroma call per operation in both layouts):

| profiles | operation | a: one collection | b: per profile | a/b |
| --- | --- | --- | --- | --- |
| 100 | get by id | 0.84 / 4.83 | 0.92 / 5.19 | 0.91 |
| 100 | query k=10 | 10.3 / 20.0 | 1.64 / 8.43 | 6.3 |
| 100 | listing (limit 10) | 1.78 / 6.12 | 0.91 / 6.05 | 1.9 |
| 100 | upsert of one row | 11.1 / 29.1 | 17.3 / 39.2 | 0.64 |
| 1,000 | get by id | 0.94 / 3.79 | 1.36 / 5.36 | 0.69 |
| 1,000 | query k=10 | 157 / 280 | 2.66 / 10.4 | 59 |
| 1,000 | listing (limit 10) | 9.91 / 27.6 | 1.66 / 8.12 | 6.0 |
| 1,000 | upsert of one row | 11.7 / 22.9 | 93.1 / 153 | 0.13 |
| 1,000 | upsert, same profile again | 12.3 / 27.2 | 86.7 / 170 | 0.14 |

After ``ANALYZE`` on both folders, a / b p50: 100 profiles listing 0.94 / 1.01, query 7.9 /
1.8, upsert 15.6 / 18.1; 1,000 profiles listing 1.05 / 1.30, query 87 / 2.2, upsert 13.8 /
54.6 (b's write cost grows with the number of collections in the folder). b's handle
fetch 0.15-0.4 ms; b's ``create_collection`` 0.8-1.2 ms p50.
Build: 1,000 profiles, a 109 s, b 96 s; disk a 233 MB, b 426 MB (100 profiles: 32 / 43 MB).
Recall@10 against exact: 1.000 for both layouts at 100 and 1,000 profiles, at every
ef_search (100, 200, 500, 1000; ``modify(configuration=...)`` is accepted and stored), with
no change in a's query time: a profile of 100 in a collection of 10,000+ is below the size
at which Chroma searches the HNSW graph under a filter; it ranks the filtered rows exactly.
Cold (fresh process): a's first query 0.65-3.0 s (loads the collection's whole index), b's
21-63 ms; a later profile's first query a 4-84 ms, b 14-52 ms; RSS after querying 200
profiles a +54-224 MB, b +316-636 MB (~1.6-3 MB per 100-item collection held), and the same
with ``chroma_segment_cache_policy="LRU"``, ``chroma_memory_limit_bytes=100 MB``: the
embedded client (Rust bindings) ignores both settings; its cache holds RLIMIT_NOFILE / 5
collection indexes (``chromadb/api/rust.py``), 4,000 here. Outbound connections: 0.
Not run: 10,000 profiles (a 1,000,000-row build is over 15 minutes here) and ``--server``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import chromadb  # noqa: E402
import numpy as np  # noqa: E402
from chromadb.config import Settings  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import chroma_server, median, percentile, table  # noqa: E402

from langmem_edge._sqlite_stats import refresh  # noqa: E402

A_NAME = "layout-a"
K = 10
CLUSTERS = 4
TOUCH_OTHERS = 20

OUTBOUND: list[str] = []
_connect = socket.socket.connect


def _guarded_connect(self: socket.socket, address: Any) -> Any:
    host = address[0] if isinstance(address, tuple) else str(address)
    if self.family in (socket.AF_INET, socket.AF_INET6) and host not in (
        "127.0.0.1", "::1", "localhost"
    ):
        OUTBOUND.append(str(host))
        raise ConnectionRefusedError(f"benchmark guard: no connection to {host}")
    return _connect(self, address)


socket.socket.connect = _guarded_connect  # type: ignore[method-assign]


# ---------------------------------------------------------------- data


def profile_vectors(i: int, items: int, dims: int) -> np.ndarray:
    """Profile ``i``'s unit vectors: ``CLUSTERS`` Gaussian clusters, the same for a seed."""
    rng = np.random.default_rng(1_000_003 + i)
    centres = rng.standard_normal((CLUSTERS, dims)).astype(np.float32)
    which = rng.integers(0, CLUSTERS, items)
    vecs = centres[which] + 0.6 * rng.standard_normal((items, dims)).astype(np.float32)
    return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def query_vector(i: int, n: int, dims: int) -> np.ndarray:
    """Query ``n`` on profile ``i``: near one of its clusters, like its items."""
    rng = np.random.default_rng(1_000_003 + i)
    centres = rng.standard_normal((CLUSTERS, dims)).astype(np.float32)
    qrng = np.random.default_rng((i, n))
    q = centres[qrng.integers(0, CLUSTERS)] + 0.6 * qrng.standard_normal(dims).astype(np.float32)
    return q / np.linalg.norm(q)


def exact_top(i: int, q: np.ndarray, items: int, dims: int) -> list[str]:
    sims = profile_vectors(i, items, dims) @ q
    return [item_id(i, j) for j in np.argsort(-sims, kind="stable")[:K]]


def item_id(i: int, j: int) -> str:
    return f"p{i}:{j}"


def b_name(i: int) -> str:
    return f"p-{i}"


def settings(lru_mb: int = 0) -> Settings:
    if lru_mb:
        return Settings(anonymized_telemetry=False, chroma_segment_cache_policy="LRU",
                        chroma_memory_limit_bytes=lru_mb * 1_000_000)
    return Settings(anonymized_telemetry=False)


def open_client(folder: str | None, url: str | None, lru_mb: int = 0) -> Any:
    if url:
        host, port = url.removeprefix("http://").split(":")
        return chromadb.HttpClient(host=host, port=int(port), settings=settings())
    return chromadb.PersistentClient(folder, settings=settings(lru_mb))


def create(client: Any, name: str, ef: int | None = None) -> Any:
    hnsw: dict[str, Any] = {"space": "cosine"}
    if ef:
        hnsw["ef_search"] = ef
    return client.create_collection(name, embedding_function=None, configuration={"hnsw": hnsw})


def rows(i: int, items: int, dims: int) -> dict[str, Any]:
    vecs = profile_vectors(i, items, dims)
    return {
        "ids": [item_id(i, j) for j in range(items)],
        "embeddings": vecs,
        "documents": [f"item {j} of profile {i}" for j in range(items)],
        "metadatas": [{"profile": f"p{i}", "n": j} for j in range(items)],
    }


def build(client_a: Any, client_b: Any, profiles: int, items: int, dims: int) -> dict[str, Any]:
    """Both layouts; returns build seconds and b's creation times."""
    batch = min(client_a.get_max_batch_size(), 5_000)
    start = time.perf_counter()
    col_a = create(client_a, A_NAME)
    pending: dict[str, list[Any]] = {"ids": [], "embeddings": [], "documents": [], "metadatas": []}
    for i in range(profiles):
        r = rows(i, items, dims)
        for key in pending:
            pending[key].extend(list(r[key]))
        if len(pending["ids"]) >= batch or i == profiles - 1:
            col_a.add(**pending)
            pending = {key: [] for key in pending}
    build_a = time.perf_counter() - start
    creates: list[float] = []
    start = time.perf_counter()
    for i in range(profiles):
        t0 = time.perf_counter()
        col = create(client_b, b_name(i))
        creates.append(time.perf_counter() - t0)
        col.add(**rows(i, items, dims))
    build_b = time.perf_counter() - start
    return {"build_a": build_a, "build_b": build_b, "creates": creates}


# ---------------------------------------------------------------- warm figures


class Handles:
    """Layout b's collection handles by name (fetched once; the fetch is timed separately)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.cache: dict[str, Any] = {}

    def __call__(self, i: int) -> Any:
        name = b_name(i)
        if name not in self.cache:
            self.cache[name] = self.client.get_collection(name, embedding_function=None)
        return self.cache[name]


def operations(col_a: Any, handles: Handles, items: int) -> dict[str, Callable[..., None]]:
    """``name -> fn(layout, profile, n, query, vector)`` for each timed operation."""

    def get_by_id(layout: str, i: int, n: int, q: Any, vec: Any) -> None:
        ident = item_id(i, n % items)
        got = (col_a if layout == "a" else handles(i)).get(ids=[ident])
        assert got["ids"] == [ident]

    def query(layout: str, i: int, n: int, q: Any, vec: Any) -> None:
        if layout == "a":
            col_a.query(query_embeddings=q, n_results=K, where={"profile": f"p{i}"})
        else:
            handles(i).query(query_embeddings=q, n_results=K)

    def listing(layout: str, i: int, n: int, q: Any, vec: Any) -> None:
        if layout == "a":
            got = col_a.get(where={"profile": f"p{i}"}, limit=K)
        else:
            got = handles(i).get(limit=K)
        assert len(got["ids"]) == K

    def upsert(layout: str, i: int, n: int, q: Any, vec: Any) -> None:
        j = n % items
        col = col_a if layout == "a" else handles(i)
        col.upsert(ids=[item_id(i, j)], embeddings=vec, documents=[f"item {j} v{n}"],
                   metadatas=[{"profile": f"p{i}", "n": j}])

    def upsert_again(layout: str, i: int, n: int, q: Any, vec: Any) -> None:
        upsert(layout, i, n, q, vec)  # the same row: a profile written a moment ago

    return {"get by id": get_by_id, "query k=10": query, "listing": listing, "upsert": upsert,
            "upsert, same profile again": upsert_again}


def warm(col_a: Any, client_b: Any, profiles: int, items: int, dims: int, ops: int,
         seed: int, prewarm: bool) -> dict[str, dict[str, list[float]]]:
    """Each operation ``ops`` times per layout, a random profile per call, a and b alternated
    (which goes first alternates too)."""
    rng = random.Random(seed)
    handles = Handles(client_b)
    fns = operations(col_a, handles, items)
    out: dict[str, dict[str, list[float]]] = {"a": {}, "b": {}}
    if prewarm:  # every profile queried once in each layout: the cold case is timed apart
        for i in range(profiles):
            q = [query_vector(i, 0, dims)]
            col_a.query(query_embeddings=q, n_results=K, where={"profile": f"p{i}"}, include=[])
            handles(i).query(query_embeddings=q, n_results=K, include=[])
        handles.cache.clear()
    # handle fetch: a profile whose handle is not cached yet
    fetch: list[float] = []
    for i in rng.sample(range(profiles), min(ops, profiles)):
        t0 = time.perf_counter()
        handles(i)
        fetch.append(time.perf_counter() - t0)
    out["b"]["handle fetch"] = fetch
    for n in range(ops):
        i = rng.randrange(profiles)
        handles(i)
        q = [query_vector(i, n, dims)]
        vec = profile_vectors(i, items, dims)[n % items : n % items + 1]
        order = ("a", "b") if n % 2 == 0 else ("b", "a")
        for name, fn in fns.items():
            for layout in order:
                t0 = time.perf_counter()
                fn(layout, i, n, q, vec)
                out[layout].setdefault(name, []).append(time.perf_counter() - t0)
    return out


def recall(query: Callable[[int, np.ndarray], list[str]], profiles: int, items: int, dims: int,
           count: int, seed: int) -> tuple[float, float]:
    """Mean recall@10 against exact, and the query's p50 ms, over ``count`` random profiles."""
    rng = random.Random(seed)
    hits: list[float] = []
    times: list[float] = []
    for n in range(count):
        i = rng.randrange(profiles)
        q = query_vector(i, 10_000 + n, dims)
        t0 = time.perf_counter()
        got = query(i, q)
        times.append(time.perf_counter() - t0)
        hits.append(len(set(got) & set(exact_top(i, q, items, dims))) / K)
    return float(np.mean(hits)), median(times) * 1000


def ef_figures(client_a: Any, col_a: Any, handles: Handles, profiles: int, items: int, dims: int,
               efs: Sequence[int], count: int) -> list[tuple[str, float, float]]:
    """Recall and query p50 of layout a at each ef_search (set by ``modify``), b alongside."""

    def qa(i: int, q: np.ndarray) -> list[str]:
        got = col_a.query(query_embeddings=[q], n_results=K, where={"profile": f"p{i}"},
                          include=[])
        return got["ids"][0]

    def qb(i: int, q: np.ndarray) -> list[str]:
        return handles(i).query(query_embeddings=[q], n_results=K, include=[])["ids"][0]

    out = [("b", *recall(qb, profiles, items, dims, count, 11))]
    for ef in [100, *efs]:
        col_a.modify(configuration={"hnsw": {"ef_search": ef}})
        fresh = client_a.get_collection(A_NAME, embedding_function=None)
        seen = fresh.configuration["hnsw"]["ef_search"]
        out.append((f"a ef_search={ef} (stored {seen})", *recall(qa, profiles, items, dims,
                                                                   count, 11)))
    col_a.modify(configuration={"hnsw": {"ef_search": 100}})
    return out


# ---------------------------------------------------------------- cold child


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def cold_child(args: argparse.Namespace) -> None:
    """Runs in a fresh process: first access of profiles; prints JSON."""
    rng = random.Random(args.seed)
    base_rss = rss_mb()
    client = open_client(args.folder, None, args.lru_mb)
    first = rng.randrange(args.n)
    q = [query_vector(first, 0, args.dims)]

    def one(i: int, qv: list[np.ndarray]) -> float:
        t0 = time.perf_counter()
        if args.layout.startswith("a"):
            col = client.get_collection(A_NAME, embedding_function=None)
            col.query(query_embeddings=qv, n_results=K, where={"profile": f"p{i}"})
        else:
            col = client.get_collection(b_name(i), embedding_function=None)
            col.query(query_embeddings=qv, n_results=K)
        return time.perf_counter() - t0

    out: dict[str, Any] = {"first": one(first, q), "second": one(first, q)}
    others = rng.sample(range(args.n), min(TOUCH_OTHERS, args.n))
    out["others"] = [one(i, [query_vector(i, 0, args.dims)]) for i in others]
    for i in rng.sample(range(args.n), min(args.touch, args.n)):
        one(i, [query_vector(i, 1, args.dims)])
    out["rss"] = rss_mb()
    out["base_rss"] = base_rss
    out["outbound"] = len(OUTBOUND)
    print(json.dumps(out))


def cold(folders: dict[str, str], args: argparse.Namespace, profiles: int
         ) -> dict[str, list[dict[str, Any]]]:
    variants = ["a", "b", f"b LRU {args.lru_mb} MB"] if args.lru_mb else ["a", "b"]
    out: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    for r in range(args.cold_rounds):
        for layout in (variants if r % 2 == 0 else variants[::-1]):
            cmd = [sys.executable, __file__, "--cold-child", "--layout", layout,
                   "--folder", folders[layout[0]], "--n", str(profiles),
                   "--dims", str(args.dims), "--touch", str(args.touch), "--seed", str(100 + r),
                   "--lru-mb", str(args.lru_mb if "LRU" in layout else 0)]
            res = subprocess.run(cmd, capture_output=True, text=True, check=True)
            out[layout].append(json.loads(res.stdout.strip().splitlines()[-1]))
    return out


# ---------------------------------------------------------------- report


def du_mb(folder: str) -> float:
    total = 0
    for root, _dirs, files in os.walk(folder):
        for f in files:
            total += os.path.getsize(os.path.join(root, f))
    return total / 1e6


def ms(samples: Sequence[float]) -> str:
    return f"{median(samples) * 1000:.2f} / {percentile(samples, 95) * 1000:.2f}"


def report(profiles: int, items: int, timings: dict[str, dict[str, list[float]]],
           mode: str) -> None:
    print(f"\n### {mode}: {profiles:,} profiles x {items} items; p50 / p95 ms, "
          "1 Chroma call per operation in both layouts (b: + 1 handle fetch when not cached)\n")
    body = []
    for name in timings["a"]:
        a, b = timings["a"][name], timings["b"][name]
        body.append([name, ms(a), ms(b), f"{median(a) / median(b):.2f}"])
    body.append(["handle fetch (b)", "-", ms(timings["b"]["handle fetch"]), "-"])
    print(table(["operation", "a: one collection", "b: collection per profile", "a/b p50"], body))


def run_size(profiles: int, args: argparse.Namespace, url: str | None) -> None:
    mode = "server" if url else "embedded"
    root = tempfile.mkdtemp(prefix="layout-", dir=args.dir)
    folders = {"a": os.path.join(root, "a"), "b": os.path.join(root, "b")}
    try:
        client_a = open_client(folders["a"], url)
        client_b = client_a if url else open_client(folders["b"], None)
        if url:
            for col in client_a.list_collections():
                client_a.delete_collection(col.name)
        load = os.getloadavg()[0]
        built = build(client_a, client_b, profiles, args.items, args.dims)
        creates = built["creates"]
        print(f"\nbuild ({mode}, {profiles:,} profiles): a {built['build_a']:.1f} s, "
              f"b {built['build_b']:.1f} s (b's create_collection p50 / p95 {ms(creates)} ms)")
        if not url:
            print(f"disk: a {du_mb(folders['a']):.1f} MB, b {du_mb(folders['b']):.1f} MB")
        col_a = client_a.get_collection(A_NAME, embedding_function=None)
        passes = ["as Chroma leaves the folder"]
        if not url and not args.no_analyze:
            passes.append("after ANALYZE on both folders")
        for n_pass, label in enumerate(passes):
            if n_pass:
                for folder in folders.values():
                    print(f"ANALYZE {os.path.basename(folder)}: {refresh(folder, min_rows=0)}")
            timings = warm(col_a, client_b, profiles, args.items, args.dims, args.ops,
                           args.seed + n_pass, not args.no_prewarm)
            report(profiles, args.items, timings, f"{mode}, {label}")
            handles = Handles(client_b)
            rows_ = ef_figures(client_a, col_a, handles, profiles, args.items, args.dims,
                               args.ef, args.recall_queries)
            print(f"\nrecall@10 against exact ({args.recall_queries} queries, random "
                  f"profiles; {label}):\n")
            print(table(["layout", "recall@10", "query p50 ms"],
                        [[n, f"{r:.3f}", f"{t:.2f}"] for n, r, t in rows_]))
        if not url and args.cold_rounds:
            got = cold(folders, args, profiles)
            body = []
            for layout, runs in got.items():
                body.append([
                    layout,
                    f"{median([r['first'] for r in runs]) * 1000:.1f}",
                    f"{median([r['second'] for r in runs]) * 1000:.2f}",
                    f"{median([x for r in runs for x in r['others']]) * 1000:.2f}",
                    f"{median([r['rss'] for r in runs]):.0f} "
                    f"(+{median([r['rss'] - r['base_rss'] for r in runs]):.0f})",
                    sum(r["outbound"] for r in runs),
                ])
            print(f"\ncold (fresh process, {args.cold_rounds} rounds per layout, medians):\n")
            print(table(["layout", "first query ms", "same profile again ms",
                         f"first query of {TOUCH_OTHERS} other profiles ms",
                         f"RSS MB after {args.touch} profiles (+ over import)",
                         "outbound connections"], body))
        print(f"\nload average {load:.2f} before, {os.getloadavg()[0]:.2f} after; "
              f"outbound connections refused: {len(OUTBOUND)}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--profiles", default="100,1000", help="comma list of profile counts")
    p.add_argument("--items", type=int, default=100)
    p.add_argument("--dims", type=int, default=384)
    p.add_argument("--ops", type=int, default=200, help="calls per operation and layout")
    p.add_argument("--ef", default="200,500,1000", help="ef_search values for layout a")
    p.add_argument("--recall-queries", type=int, default=100)
    p.add_argument("--cold-rounds", type=int, default=3)
    p.add_argument("--touch", type=int, default=200, help="profiles a cold child queries")
    p.add_argument("--no-prewarm", action="store_true",
                   help="skip querying every profile once before the timed calls")
    p.add_argument("--no-analyze", action="store_true",
                   help="skip the second pass after SQLite ANALYZE (embedded only)")
    p.add_argument("--lru-mb", type=int, default=100,
                   help="a third cold child: b with chroma_segment_cache_policy='LRU' and "
                   "this chroma_memory_limit_bytes (MB); 0 to skip")
    p.add_argument("--server", action="store_true", help="also on a chroma run server")
    p.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    p.add_argument("--seed", type=int, default=5)
    # the cold child's own arguments
    p.add_argument("--cold-child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--layout", help=argparse.SUPPRESS)
    p.add_argument("--folder", help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.cold_child:
        cold_child(args)
        return
    args.ef = [int(x) for x in args.ef.split(",") if x]
    print(f"chromadb {chromadb.__version__}; load average {os.getloadavg()[0]:.2f}; "
          f"{args.dims}-d vectors; folders under {args.dir}")
    for profiles in [int(x) for x in args.profiles.split(",")]:
        run_size(profiles, args, None)
        if args.server:
            with chroma_server() as url:
                run_size(profiles, args, url)


if __name__ == "__main__":
    main()
