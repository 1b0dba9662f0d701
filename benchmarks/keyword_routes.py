"""Where should the keyword channel's ranking run? Measures the two routes on raw chromadb.

Usage (from the project root)::

    python benchmarks/keyword_routes.py [PATH] [--server] [--copies 6] [--queries 200]

Corpus: the LoCoMo turns of PATH (default ``../shared/datasets/locomo/locomo_dev.json``),
copied ``--copies`` times into namespaces ``("bench", "c<i>", <conversation>)`` (6 copies of
the 2,760 dev turns = 16,560 rows). Queries: LoCoMo questions of conv-26.

Scenarios: **all** = a search over the first 10,000 rows (prefix ``("bench",)`` on a
10,000-row collection); **ns** = a search inside one 419-row namespace of the full corpus.

Routes, each timed per query (p50 / p90 in ms):

- ``vector``: for scale, a k=10 Chroma vector query (384-d random vectors) with the same
  namespace ``where``.
- ``fts``: route (a). Documents hold analysed, space-padded terms; one ``get`` with the
  namespace ``where`` and ``where_document`` = ``$or`` of ``$contains " term "``, then BM25
  from the returned documents (N and average length assumed known, which flatters it).
- ``marker``: route (b). ``KeywordIndex.sync()`` (reads the writers' marker rows; nothing
  changed) + in-process BM25 search.
- ``marker+write``: route (b) when *another client* wrote one row just before each search
  (untimed): the sync reads markers, fetches the delta and applies it.
- ``load``: route (b)'s first sync (full load of the collection), once.
- ``hybrid``: a whole hybrid search as the store would run it (vector query for ``depth``
  results + keyword sync/search + key search + fusion), sequential; ``hybrid-threads``:
  the keyword side in a worker thread while the vector query runs. The ratio to ``vector``
  (k=10) is the issue's "hybrid p50 at most 2x vector-only" check (query embedding
  excluded: both use precomputed vectors).

``--server`` runs the same against a ``chroma run`` server started (and stopped) by this
script on 127.0.0.1, with the writer on a second ``HttpClient``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo  # noqa: E402

from langmem_edge.retrieval.chroma_sync import ChromaKeywordSource, SyncWriter  # noqa: E402
from langmem_edge.retrieval.config import resolve_hybrid_config  # noqa: E402
from langmem_edge.retrieval.hybrid import fuse  # noqa: E402
from langmem_edge.retrieval.index import KeywordIndex, encode_document  # noqa: E402
from langmem_edge.retrieval.text import Analyzer  # noqa: E402

BATCH = 1000
ALL_ROWS = 10_000
K1, B = 1.2, 0.75


def _ns_where(ns: Sequence[str]) -> dict[str, Any]:
    parts = [{f"n{i}": label} for i, label in enumerate(ns)]
    return parts[0] if len(parts) == 1 else {"$and": parts}


def _meta(ns: tuple[str, ...], key: str, value: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {f"n{i}": label for i, label in enumerate(ns)}
    meta.update({"ns": "\x1f".join(ns), "nd": len(ns), "k": key, "v": json.dumps(value),
                 "ca": 0.0, "ua": 0.0})
    return meta


def build(client: Any, rows: list[tuple[str, tuple[str, ...], str, str]], tag: str,
          analyzer: Analyzer) -> dict[str, Any]:
    """Create the route collections for ``rows`` = (id, namespace, key, text)."""
    rng = np.random.default_rng(0)
    fts = client.create_collection(f"fts-{tag}", embedding_function=None)
    items = client.create_collection(f"items-{tag}", embedding_function=None)
    sync = client.create_collection(f"sync-{tag}", embedding_function=None)
    vectors = client.create_collection(f"vec-{tag}", embedding_function=None,
                                       metadata={"hnsw:space": "cosine"})
    writer = SyncWriter("loader")
    for start in range(0, len(rows), BATCH):
        chunk = rows[start : start + BATCH]
        ids = [r[0] for r in chunk]
        metas = [_meta(r[1], r[2], {"text": r[3]}) for r in chunk]
        seq = writer.next_seq()
        fts.add(ids=ids, embeddings=[[1.0]] * len(ids), metadatas=metas,
                documents=[" " + " ".join(analyzer.terms(r[3])) + " " for r in chunk])
        items.add(ids=ids, embeddings=[[1.0]] * len(ids),
                  metadatas=[{**m, **writer.stamp(seq)} for m in metas],
                  documents=[encode_document({"text": r[3]}) for r in chunk])
        vecs = rng.normal(size=(len(ids), 384))
        vectors.add(ids=ids, embeddings=(vecs / np.linalg.norm(vecs, axis=1, keepdims=True)),
                    metadatas=metas)
    sync.upsert(**writer.marker(writer.seq))
    return {"fts": fts, "items": items, "sync": sync, "vectors": vectors, "writer": writer}


def fts_search(fts: Any, terms: list[str], where: dict[str, Any], n: int,
               avglen: float, limit: int = 10) -> list[tuple[str, float]]:
    clauses = [{"$contains": f" {t} "} for t in terms]
    wd = clauses[0] if len(clauses) == 1 else {"$or": clauses}
    got = fts.get(where=where, where_document=wd, include=["documents"])
    tfs = {i: Counter(d.split()) for i, d in zip(got["ids"], got["documents"], strict=True)}
    scores: dict[str, float] = {}
    for t in terms:
        holders = [i for i, tf in tfs.items() if t in tf]
        if not holders:
            continue
        idf = math.log(1 + (n - len(holders) + 0.5) / (len(holders) + 0.5))
        for i in holders:
            tf = tfs[i][t]
            dl = sum(tfs[i].values())
            scores[i] = scores.get(i, 0.0) + idf * tf * (K1 + 1) / (
                tf + K1 * (1 - B + B * dl / avglen))
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]


def timed(fn: Callable[[], Any], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        out.append(1000 * (time.perf_counter() - start))
    return out


def p(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def scenario(name: str, reader: Any, writer_client: Any, rows: list[tuple[str, ...]],
             prefix: tuple[str, ...], questions: list[str], analyzer: Analyzer,
             tag: str) -> dict[str, Any]:
    cols = build(reader, rows, tag, analyzer)  # type: ignore[arg-type]
    where = _ns_where(prefix)
    inside = [r for r in rows if tuple(r[1])[: len(prefix)] == prefix]
    n = len(inside)
    avglen = statistics.fmean(len(analyzer.terms(r[3])) for r in inside)
    terms = [analyzer.query_terms(q) for q in questions]
    queries = [(q, t) for q, t in zip(questions, terms, strict=True) if t]
    rng = np.random.default_rng(1)
    qvecs = rng.normal(size=(len(queries), 384))
    res: dict[str, Any] = {"rows": len(rows), "namespace_rows": n}
    # vector
    it = iter(range(10**9))
    res["vector"] = timed(lambda: cols["vectors"].query(
        query_embeddings=[qvecs[next(it) % len(queries)]], n_results=10, where=where),
        len(queries))
    # fts
    it2 = iter(range(10**9))
    res["fts"] = timed(lambda: fts_search(cols["fts"], queries[next(it2) % len(queries)][1],
                                          where, n, avglen), len(queries))
    # marker route
    index = KeywordIndex(ChromaKeywordSource(cols["items"], cols["sync"]))
    start = time.perf_counter()
    stats = index.sync()
    res["load"] = [1000 * (time.perf_counter() - start)]
    res["load_rows"] = stats.rows
    it3 = iter(range(10**9))

    def marker_search() -> None:
        index.sync()
        index.search_keyword(queries[next(it3) % len(queries)][0], namespace_prefix=prefix,
                             limit=10)

    res["marker"] = timed(marker_search, len(queries))
    # whole hybrid search (vector k=depth + keyword + key + fusion) vs vector only
    cfg = resolve_hybrid_config()
    depth = cfg["depth"]
    pool = ThreadPoolExecutor(max_workers=1)
    it4 = iter(range(10**9))

    def keyword_part(q: str) -> dict[str, list[tuple[str, float]]]:
        index.sync()
        return {"keyword": index.search_keyword(q, namespace_prefix=prefix, limit=depth),
                "key": index.search_key(q, namespace_prefix=prefix, limit=depth)}

    def vector_part(j: int) -> list[tuple[str, float]]:
        got = cols["vectors"].query(query_embeddings=[qvecs[j]], n_results=depth, where=where)
        return [(i, 1 - d) for i, d in zip(got["ids"][0], got["distances"][0], strict=True)]

    def hybrid(concurrent: bool) -> None:
        j = next(it4) % len(queries)
        if concurrent:
            fut = pool.submit(keyword_part, queries[j][0])
            ranks = {"vector": vector_part(j), **fut.result()}
        else:
            ranks = {"vector": vector_part(j), **keyword_part(queries[j][0])}
        fuse(ranks, cfg, limit=10)

    res["hybrid"] = timed(lambda: hybrid(False), len(queries))
    res["hybrid-threads"] = timed(lambda: hybrid(True), len(queries))
    pool.shutdown()
    # marker route after another client's write
    other_items = writer_client.get_collection(f"items-{tag}")
    other_sync = writer_client.get_collection(f"sync-{tag}")
    other = SyncWriter("other-process")
    times = []
    for j, (q, _) in enumerate(queries):
        seq = other.next_seq()
        ns = tuple(prefix) + ("extra",) * (3 - len(prefix))
        other_items.upsert(ids=[f"new-{j}"], embeddings=[[1.0]],
                           metadatas=[{**_meta(ns, f"new-{j}", {"text": q}), **other.stamp(seq)}],
                           documents=[encode_document({"text": f"fresh {q}"})])
        other_sync.upsert(**other.marker(seq))
        start = time.perf_counter()
        index.sync()
        hits = index.search_keyword(f"fresh {q}", namespace_prefix=prefix, limit=10)
        times.append(1000 * (time.perf_counter() - start))
        if not any(h[0] == f"new-{j}" for h in hits):
            raise AssertionError("the other client's write was not seen by the next search")
    res["marker+write"] = times
    for c in ("fts", "items", "sync", "vec"):
        reader.delete_collection(f"{c}-{tag}")
    print(f"  {name}: {res['rows']} rows, searched {n}; load {res['load'][0]:.0f} ms; "
          f"hybrid/vector p50 ratio {p(res['hybrid'], 50) / p(res['vector'], 50):.2f} "
          f"(threads {p(res['hybrid-threads'], 50) / p(res['vector'], 50):.2f})")
    for route in ("vector", "fts", "marker", "marker+write", "hybrid", "hybrid-threads"):
        print(f"    {route:<13} p50 {p(res[route], 50):7.2f} ms   p90 {p(res[route], 90):7.2f} ms")
    return res


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", nargs="?", type=Path, default=locomo.DEFAULT_PATH)
    parser.add_argument("--server", action="store_true")
    parser.add_argument("--copies", type=int, default=6)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args(argv)
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False)
    convs = locomo.load(args.path)
    rows = [(f"{c}-{conv.sample_id}-{t.dia_id}", ("bench", f"c{c}", conv.sample_id),
             locomo.opaque_key(t.dia_id), t.document)
            for c in range(args.copies) for conv in convs for t in conv.turns]
    questions = [q.text for q in convs[0].questions][: args.queries]
    random.Random(0).shuffle(questions)
    analyzer = Analyzer()
    folder = tempfile.mkdtemp(prefix="langmem-edge-routes-")
    proc = None
    try:
        if args.server:
            port = _free_port()
            log = open(Path(folder) / "server.log", "wb")  # noqa: SIM115
            exe = shutil.which("chroma")
            cmd = [exe] if exe else [sys.executable, "-m", "chromadb.cli.cli"]
            proc = subprocess.Popen([*cmd, "run", "--path", str(Path(folder) / "db"), "--host",
                                     "127.0.0.1", "--port", str(port)], stdout=log,
                                    stderr=subprocess.STDOUT)
            for _ in range(300):
                try:
                    reader = chromadb.HttpClient(host="127.0.0.1", port=port, settings=settings)
                    reader.heartbeat()
                    break
                except Exception:
                    time.sleep(0.2)
            writer = chromadb.HttpClient(host="127.0.0.1", port=port, settings=settings)
            mode = f"server (chroma run, 127.0.0.1:{port})"
        else:
            reader = chromadb.PersistentClient(path=str(Path(folder) / "db"), settings=settings)
            writer = chromadb.PersistentClient(path=str(Path(folder) / "db"), settings=settings)
            mode = "embedded (PersistentClient)"
        print(f"chromadb {chromadb.__version__}, {mode}, {len(questions)} queries")
        scenario("all", reader, writer, rows[:ALL_ROWS], ("bench",), questions, analyzer, "all")
        scenario("ns", reader, writer, rows, ("bench", "c0", convs[0].sample_id), questions,
                 analyzer, "ns")
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
