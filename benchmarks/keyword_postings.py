"""What a database-side keyword channel costs on local Chroma, route by route (issues 33, 34).

    python benchmarks/keyword_postings.py [--messages 3000] [--others 5] [--queries 40]

Builds one ``ChromaStore`` folder (tmpfs) holding a profile of ``--messages`` chat-like
messages and ``--others`` profiles of 1,000 (``episodic_recall.build``'s sentences: a
2,000-word Zipf-like vocabulary, sessions of 20), runs ``ANALYZE`` (as the store does on a
grown folder), then adds to every message row a ``kq`` array of its terms qualified by its
scope (``<hash of the messages prefix>:<term>``, and ``<hash>:`` alone): what a layout whose
term lists carry their scope would store. Then it times, on the big profile:

- single Chroma calls: the scope's ids, one term's rows with the scope's ``where`` (today's
  form: ``p4 = ... AND kt $contains t``) against the same term qualified (``kq $contains
  h:t``, no scope clause), ids only, for terms from the most common to a rare one;
- whole routes, query by query (4 words of a stored message), against the exact BM25F top
  10 (every document of the scope read, untimed):

  - ``fetch``: today's ``keyword_search`` (the documents of every row holding a query term,
    one id-only count);
  - ``tagged``: one id-only ``get`` per query term on ``kq`` (its posting list: exact df),
    N from ``h:``, then the documents of the ``--depth`` rows with the best binary BM25
    (the idf sum of the terms they hold), scored exactly;
  - ``tagged-capped``: as ``tagged``, but a term's ``get`` stops at ``--cap`` rows; a term
    past it is counted (ids only, no limit) and brings no candidates of its own.

Printed: medians, p95, calls and top-10 agreement, with the load average before and after.
Figures and what they decide: docs/retrieval.md, "A keyword channel kept by Chroma".
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import percentile, table  # noqa: E402
from episodic_recall import DIMS, SESSION, _sentences  # noqa: E402

from langmem_edge import AgentMemory, ChromaStore  # noqa: E402
from langmem_edge.memory.core.layout import ProfileLayout  # noqa: E402
from langmem_edge.retrieval.bm25 import weighted_tf  # noqa: E402
from langmem_edge.retrieval.keywords import (  # noqa: E402
    bm25_idf,
    decode_keyword_document,
    rank_documents,
)
from langmem_edge.store import layout  # noqa: E402
from langmem_edge.testing import FakeEmbeddings  # noqa: E402

WEIGHTS = {"text": 1.0, "context": 0.5, "name": 1.0, "day": 1.0}
"""The episodic tier's BM25F weights (``EpisodicConfig`` defaults)."""


def tag_of(scope_value: str) -> str:
    return hashlib.blake2b(scope_value.encode(), digest_size=6).hexdigest()


def open_store(root: str) -> ChromaStore:
    return ChromaStore.from_path(root, index={"dims": DIMS, "embed": FakeEmbeddings(DIMS),
                                              "fields": ["text"]})


def build(root: str, size: int, others: int, seed: int) -> list[str]:
    store = open_store(root)
    rng = random.Random(seed)
    memory = AgentMemory(store)
    texts = []
    for j, n in enumerate([size] + [1000] * others):
        profile = memory.profile(f"user:{j}")
        got = _sentences(rng, n)
        texts = texts or got
        for s in range(0, n, SESSION):
            profile.ingest([{"role": "user" if i % 2 == 0 else "assistant", "content": t}
                            for i, t in enumerate(got[s:s + SESSION])],
                           session_id=f"s{s // SESSION}", extract=False)
    items, offset = store._items, 0
    while True:  # the scope-qualified term lists
        got = items.get(include=["metadatas"], limit=2000, offset=offset)
        if not got["ids"]:
            break
        offset += len(got["ids"])
        ids, metas = [], []
        for iid, meta in zip(got["ids"], got["metadatas"], strict=True):
            if meta.get("kt") and meta.get("p4"):
                tag = tag_of(str(meta["p4"]))
                ids.append(iid)
                metas.append({"kq": [f"{tag}:{t}" for t in meta["kt"]] + [f"{tag}:"]})
        if ids:
            items.update(ids=ids, metadatas=metas)
    subprocess.run([sys.executable, "-m", "langmem_edge._sqlite_stats", root], check=True)
    return texts


class Routes:
    def __init__(self, store: ChromaStore, prefix: tuple[str, ...], depth: int, cap: int):
        self.store, self.prefix, self.depth, self.cap = store, prefix, depth, cap
        self.items = store._items
        self.scope = layout.prefix_where(prefix)
        self.tag = tag_of(str(next(iter(self.scope.values()))))
        cfg = store.hybrid_config["keyword"]
        self.k1, self.b = cfg["k1"], cfg["b"]
        self.calls = 0
        got = self.items.get(where=self.scope, include=["documents"])
        self.all = self._tfs(dict(zip(got["ids"], got["documents"], strict=True)))
        self.n = len(self.all)
        self.avglen = statistics.mean(length for _, length in self.all.values())

    def get(self, **kw: Any) -> dict[str, Any]:
        self.calls += 1
        return self.items.get(**kw)

    @staticmethod
    def _tfs(docs: dict[str, str]) -> dict[str, tuple[dict[str, float], float]]:
        out = {}
        for iid, doc in docs.items():
            tf = weighted_tf(decode_keyword_document(doc).fields, WEIGHTS, 0.0)
            if tf[0]:
                out[iid] = tf
        return out

    def exact(self, terms: list[str]) -> list[str]:
        return [h.id for h in rank_documents(self.all, terms, n=len(self.all),
                                             avglen=self.avglen, k1=self.k1, b=self.b,
                                             limit=10)]

    def fetch(self, query: str, terms: list[str]) -> list[str]:
        self.calls += 2
        hits = self.store.keyword_search(self.prefix, query, limit=self.depth,
                                         field_weights=WEIGHTS)
        return [layout.item_id(h.namespace, h.key) for h in hits[:10]]

    def tagged(self, query: str, terms: list[str], cap: int | None = None) -> list[str]:
        lists: dict[str, list[str] | None] = {}
        df: dict[str, int] = {}
        for t in dict.fromkeys(terms):
            where = {"kq": {"$contains": f"{self.tag}:{t}"}}
            ids = self.get(where=where, include=[], limit=cap + 1 if cap else None)["ids"]
            if cap and len(ids) > cap:
                lists[t] = None
                df[t] = len(self.get(where=where, include=[])["ids"])
            else:
                lists[t], df[t] = ids, len(ids)
        n = len(self.get(where={"kq": {"$contains": f"{self.tag}:"}}, include=[])["ids"])
        binary: dict[str, float] = {}
        for t, ids in lists.items():
            for i in ids or ():
                binary[i] = binary.get(i, 0.0) + bm25_idf(df[t], n)
        top = sorted(binary, key=lambda i: (-binary[i], i))[: self.depth]
        if not top:
            return []
        got = self.get(ids=top, include=["documents"])
        tfs = self._tfs(dict(zip(got["ids"], got["documents"], strict=True)))
        scores: dict[str, float] = {}
        for t, d in df.items():
            if not d:
                continue
            idf = bm25_idf(d, n)
            for i, (tf, length) in tfs.items():
                if t in tf:
                    norm = self.k1 * ((1 - self.b) + self.b * length / self.avglen)
                    scores[i] = scores.get(i, 0.0) + idf * tf[t] * (self.k1 + 1) / (tf[t] + norm)
        return sorted(scores, key=lambda i: (-scores[i], i))[:10]

    def one_call(self, query: str, terms: list[str], docs: bool = False) -> list[str]:
        """One ``get`` with an ``$or`` of the qualified terms, the rows' ``kq`` read (exact df
        of every query term among the rows returned, which are all rows holding one)."""
        uniq = list(dict.fromkeys(terms))
        if not uniq:
            return []
        qual = {f"{self.tag}:{t}": t for t in uniq}
        clauses = [{"kq": {"$contains": q}} for q in qual]
        where = clauses[0] if len(clauses) == 1 else {"$or": clauses}
        got = self.get(where=where, include=["metadatas", "documents"] if docs else ["metadatas"])
        held: dict[str, list[str]] = {}
        df: dict[str, int] = {}
        for iid, meta in zip(got["ids"], got["metadatas"], strict=True):
            mine = [qual[q] for q in meta.get("kq", ()) if q in qual]
            held[iid] = mine
            for t in mine:
                df[t] = df.get(t, 0) + 1
        n = self.n
        binary = {i: sum(bm25_idf(df[t], n) for t in ts) for i, ts in held.items()}
        top = sorted(binary, key=lambda i: (-binary[i], i))[: self.depth]
        return top[:10]

    def ids_or(self, query: str, terms: list[str]) -> list[str]:
        uniq = list(dict.fromkeys(terms))
        clauses = [{"kq": {"$contains": f"{self.tag}:{t}"}} for t in uniq]
        where = clauses[0] if len(clauses) == 1 else {"$or": clauses}
        return self.get(where=where, include=[])["ids"][:10]


def single_calls(r: Routes) -> list[list[object]]:
    def timed(**kw: Any) -> tuple[float, int]:
        xs, rows = [], 0
        for _ in range(7):
            start = time.perf_counter()
            rows = len(r.items.get(**kw)["ids"])
            xs.append((time.perf_counter() - start) * 1000)
        return statistics.median(xs), rows

    out: list[list[object]] = []
    ms, rows = timed(where=r.scope, include=[])
    out.append(["the scope's ids", rows, f"{ms:.2f}", ""])
    for term in ("w0000", "w0010", "w0100", "w1500"):
        scoped, rows = timed(where=layout.and_where([r.scope, {"kt": {"$contains": term}}]),
                             include=[])
        tagged, _ = timed(where={"kq": {"$contains": f"{r.tag}:{term}"}}, include=[])
        out.append([f"term {term}", rows, f"{scoped:.2f}", f"{tagged:.2f}"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--others", type=int, default=5)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--depth", type=int, default=60)
    parser.add_argument("--cap", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--folder", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}", flush=True)
    root = tempfile.mkdtemp(dir=args.folder)
    try:
        started = time.perf_counter()
        texts = build(root, args.messages, args.others, args.seed)
        store = open_store(root)
        print(f"built {store._items.count():,} rows in {time.perf_counter() - started:.0f} s",
              flush=True)
        r = Routes(store, ProfileLayout(("langmem_edge",), "user:0").messages, args.depth,
                   args.cap)
        print(table(["ids-only get", "rows", "scope where, ms", "qualified term, ms"],
                    single_calls(r)))
        routes = {"fetch": r.fetch, "tagged": r.tagged,
                  "tagged-capped": lambda q, t: r.tagged(q, t, args.cap),
                  "one-call": r.one_call, "ids-or": r.ids_or}
        ms: dict[str, list[float]] = {k: [] for k in routes}
        calls: dict[str, list[int]] = {k: [] for k in routes}
        agree: dict[str, list[float]] = {k: [] for k in routes}
        rng = random.Random(args.seed + 1)
        for _ in range(args.queries):
            words = rng.choice(texts).rstrip(".").split()[2:]
            query = " ".join(rng.sample(words, min(4, len(words))))
            terms = store._analyzer.query_terms(query)
            truth = set(r.exact(terms))
            order = list(routes)
            rng.shuffle(order)
            for name in order:
                r.calls = 0
                start = time.perf_counter()
                top = routes[name](query, terms)
                ms[name].append((time.perf_counter() - start) * 1000)
                calls[name].append(r.calls)
                agree[name].append(len(truth & set(top)) / max(1, len(truth)))
        print(table(["route", "p50 ms", "p95 ms", "Chroma calls", "top-10 agreement"],
                    [[name, f"{statistics.median(ms[name]):.1f}",
                      f"{percentile(ms[name], 95):.1f}", f"{statistics.mean(calls[name]):.1f}",
                      f"{statistics.mean(agree[name]):.3f}"] for name in routes]))
        print(f"load average after: {os.getloadavg()}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
