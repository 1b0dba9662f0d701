"""The keyword (BM25) channel without a per-process mirror: which database-side route?

Raw chromadb, one embedded folder on /dev/shm. Every route ranks a profile's documents by the
package's own BM25 (Lucene idf, k1 1.2, b 0.75: ``langmem_edge.retrieval.bm25``) over the
package's own terms (``langmem_edge.retrieval.text.Analyzer``: tokenise, stopwords, Snowball
stems, imported, so the terms match), with the statistics (N, average length, document
frequencies) of that profile only. Routes, timed interleaved query by query (order shuffled):

- **i mirror**: today's per-process ``KeywordIndex`` (``langmem_edge/retrieval/index.py``),
  already loaded (its change-protocol sync read, one Chroma call in the store, is not timed:
  the index here has no source). Baseline for latency and the reference ranking.
- **ii fts**: the record's document is its analysed terms, space-padded (``" t1 t2 t1 "``);
  one ``get(where=<profile>, where_document={"$or": [{"$contains": " t "}, ...,
  {"$contains": "#stats#"}]}, include=["documents"])``: every document holding a query term
  (Chroma's full-text index), plus the profile's stats row (its document ``" #stats# N L "``:
  N documents, L terms in all). df is counted from the returned documents (exact: every
  document holding the term is returned), tf from the document, N and the average length
  from the stats row. 1 Chroma call.
- **iii list**: the same, with the distinct terms in a list metadata field ``terms`` and the
  filter ``{"$or": [{"terms": {"$contains": t}}, ...]}`` on it (Chroma 1.5.9 stores list
  metadata; ``$contains`` tests membership; ``$in`` on a list field matches nothing: checked
  below). 1 Chroma call.
- **iv whole**: ``get(where=<profile>, include=["documents"])``, every document of the
  profile, scored in process, kept nowhere. 1 Chroma call.
- **v postings**: postings kept in the database, one row per (profile, term) in a second
  collection, its document ``"id:tf:len id:tf:len ..."``; one ``get(ids=[...terms, stats])``
  reads exactly the query's postings. 1 Chroma call, but a write of one document must
  rewrite the posting row of each of its terms (a read-modify-write per term, racy across
  writers: the kind of protocol issue 34 removes); timed here for reads only, as a bound.

"ii/iii approx" scores the same candidates with N and the average length taken from the
candidates themselves (no stats row at all); its agreement is reported, its cost is ii's.
The stats row stands for per-profile counters: exact under concurrent writers only as one
counter row per writer (all matched by the same ``#stats#`` term, so still one call).

Data: the LoCoMo turns of PATH (``[date] speaker: text [shares caption]``, as the LoCoMo
benchmarks embed them), copied until the collection holds ``--rows`` documents (copies after
the first drop one random word each, so copies are near-duplicates, not ties); consecutive
documents form profiles of 100, 1,000 and 10,000 (metadata ``g100``, ``g1000``,
``g10000``: each document sits in one profile of each size, all in one collection).
Queries: ``--queries`` LoCoMo questions (seeded sample), each against a random profile of each
size. The data is read from PATH at run time and never written into the repository.

Each route runs first on the folder as Chroma leaves it (no SQLite planner statistics), then
after ``ANALYZE`` (``langmem_edge._sqlite_stats.refresh``, a child process: the package's own
mechanism), route i timed in both phases as the same-run baseline.

Run (from the project root; ~4 minutes on 2 shared cores with the defaults)::

    python benchmarks/keyword_channel.py [PATH] [--rows 20000] [--queries 50]
    python benchmarks/keyword_channel.py --queries 200          # the figures below, ~15 min
    python benchmarks/keyword_channel.py --rows 100000          # a bigger collection

Figures (2026-12-04, chromadb 1.5.9, ``--queries 200``, 20,000 documents in one collection,
/dev/shm, 2 cores shared, load average 2.8-4.9; p50 / p95 ms, "x i" = p50 over route i's p50
in the same phase; every exact route agreed with route i on the top 10 of every query, 1.000):

| profile docs | route | no statistics | x i | after ANALYZE | x i | agreement, approx |
| --- | --- | --- | --- | --- | --- | --- |
| 100 | i mirror | 0.56 / 1.89 | 1 | 0.35 / 0.51 | 1 | |
| 100 | ii fts | 308 / 667 | 547 | 388 / 659 | 1125 | 0.987 |
| 100 | iii list | 12.7 / 36.9 | 23 | 14.1 / 38.0 | 41 | 0.987 |
| 100 | iv whole | 7.87 / 18.9 | 14 | 6.07 / 15.1 | 18 | |
| 100 | v postings | 1.35 / 7.22 | 2.4 | 1.95 / 10.2 | 5.7 | |
| 1,000 | i mirror | 0.51 / 2.93 | 1 | 0.41 / 4.56 | 1 | |
| 1,000 | ii fts | 321 / 691 | 630 | 407 / 630 | 996 | 0.860 |
| 1,000 | iii list | 21.7 / 69.1 | 43 | 25.1 / 56.2 | 62 | 0.860 |
| 1,000 | iv whole | 34.3 / 78.2 | 67 | 39.8 / 73.0 | 97 | |
| 1,000 | v postings | 1.86 / 9.86 | 3.7 | 4.06 / 12.8 | 9.9 | |
| 10,000 | i mirror | 0.58 / 4.98 | 1 | 0.47 / 4.47 | 1 | |
| 10,000 | ii fts | 433 / 1126 | 743 | 544 / 985 | 1146 | 0.824 |
| 10,000 | iii list | 142 / 431 | 243 | 162 / 494 | 341 | 0.824 |
| 10,000 | iv whole | 401 / 755 | 688 | 501 / 804 | 1056 | |
| 10,000 | v postings | 6.05 / 18.8 | 10 | 8.25 / 23.7 | 17 | |

Every database route is one Chroma call; route i makes none here (its sync read is one in the
store). ``ANALYZE`` (0.1 s, statistics present afterwards) changed none of these reads: each
is bounded by the documents it returns (iii, iv, v) or by the full-text match over the whole
collection before the profile filter applies (ii), not by the metadata plan. "approx" (N and
the average length from the candidates, no stats row) loses 13-18 % of the top 10 on
profiles of 1,000 and more.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import chromadb  # noqa: E402
import numpy as np  # noqa: E402
from chromadb.config import Settings  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo  # noqa: E402
from _common import median, percentile, table  # noqa: E402
from _keyword_core import KeywordIndex, KeywordRow  # noqa: E402

from langmem_edge._sqlite_stats import refresh  # noqa: E402
from langmem_edge.retrieval.config import DEFAULT_KEYWORD_CONFIG  # noqa: E402
from langmem_edge.retrieval.text import Analyzer  # noqa: E402

LEVELS = (100, 1_000, 10_000)
STATS = "#stats#"
K = 10
K1 = float(DEFAULT_KEYWORD_CONFIG["k1"])
B = float(DEFAULT_KEYWORD_CONFIG["b"])
DIMS = 16
"""Vector size of the rows: the routes never read vectors, so a small one keeps the build
short (Chroma needs some vector per row; ours are random)."""

ROUTES = ("i mirror", "ii fts", "iii list", "iv whole", "v postings")


# ---------------------------------------------------------------- corpus


def corpus(path: Path, rows: int, analyzer: Analyzer, seed: int
           ) -> tuple[list[str], list[list[str]], list[str]]:
    """``rows`` texts, their analysed terms, and the questions of PATH."""
    convs = locomo.load(path)
    base = [f"[{t.date}] {t.line}" for c in convs for t in c.turns]
    rng = random.Random(seed)
    texts: list[str] = []
    copy = 0
    while len(texts) < rows:
        for text in base:
            if len(texts) == rows:
                break
            words = text.split()
            if copy and len(words) > 1:
                del words[rng.randrange(len(words))]
            texts.append(" ".join(words))
        copy += 1
    questions = [q.text for c in convs for q in c.questions]
    return texts, [analyzer.terms(t) for t in texts], questions


def profile_of(n: int, level: int) -> str:
    return str(n // level)


def doc_id(n: int) -> str:
    return f"d{n}"


# ---------------------------------------------------------------- BM25


def bm25_top(docs: dict[str, list[str]], terms: Sequence[str], n: int, avglen: float
             ) -> list[str]:
    """Top ``K`` ids of ``docs`` for ``terms``: the formula of ``rank_documents``, df
    counted from ``docs`` (exact when ``docs`` holds every document with a query term)."""
    counts = {i: Counter(d) for i, d in docs.items()}
    scores: dict[str, float] = {}
    for term in terms:
        holders = [(i, c[term]) for i, c in counts.items() if term in c]
        if not holders:
            continue
        df = len(holders)
        idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        for i, tf in holders:
            norm = K1 * ((1.0 - B) + B * len(docs[i]) / avglen) if avglen else K1
            scores[i] = scores.get(i, 0.0) + idf * tf * (K1 + 1.0) / (tf + norm)
    return [i for i, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:K]]


def split_result(got: dict[str, Any]) -> tuple[dict[str, list[str]], tuple[int, float] | None]:
    """Documents by id (terms) and the stats row's (N, average length), if returned."""
    docs: dict[str, list[str]] = {}
    stats = None
    for ident, document in zip(got["ids"], got["documents"], strict=True):
        if ident.startswith("stats:"):
            _, n, total = document.split()
            stats = (int(n), int(total) / max(int(n), 1))
        else:
            docs[ident] = document.split()
    return docs, stats


def score_candidates(got: dict[str, Any], terms: Sequence[str]) -> tuple[list[str], list[str]]:
    """(exact ranking with the stats row, approximate ranking from the candidates alone)."""
    docs, stats = split_result(got)
    n, avglen = stats or (0, 0.0)
    exact = bm25_top(docs, terms, n, avglen)
    approx_len = statistics.fmean(len(d) for d in docs.values()) if docs else 0.0
    approx = bm25_top(docs, terms, len(docs), approx_len)
    return exact, approx


# ---------------------------------------------------------------- build


def build(folder: str, docs: list[list[str]]) -> tuple[Any, Any, float]:
    client = chromadb.PersistentClient(folder, settings=Settings(anonymized_telemetry=False))
    col = client.create_collection("keyword-docs", embedding_function=None)
    post = client.create_collection("keyword-postings", embedding_function=None)
    batch = min(client.get_max_batch_size(), 5_000)
    rng = np.random.default_rng(3)
    start = time.perf_counter()
    for lo in range(0, len(docs), batch):
        part = range(lo, min(lo + batch, len(docs)))
        col.add(
            ids=[doc_id(n) for n in part],
            embeddings=rng.standard_normal((len(part), DIMS)).astype(np.float32),
            documents=[" " + " ".join(docs[n]) + " " if docs[n] else " " for n in part],
            metadatas=[
                {**{f"g{lv}": profile_of(n, lv) for lv in LEVELS},
                 "terms": sorted(set(docs[n])) or ["#empty#"]}
                for n in part
            ],
        )
    # stats rows (one per profile and level) and posting rows
    stat_rows: dict[str, Any] = {"ids": [], "documents": [], "metadatas": []}
    post_rows: dict[str, Any] = {"ids": [], "documents": []}
    for lv in LEVELS:
        groups: dict[str, list[int]] = {}
        for n in range(len(docs)):
            groups.setdefault(profile_of(n, lv), []).append(n)
        for pid, members in groups.items():
            total = sum(len(docs[n]) for n in members)
            stat_rows["ids"].append(f"stats:g{lv}:{pid}")
            stat_rows["documents"].append(f" {STATS} {len(members)} {total} ")
            stat_rows["metadatas"].append({f"g{lv}": pid, "terms": [STATS]})
            postings: dict[str, list[str]] = {}
            for n in members:
                for term, tf in Counter(docs[n]).items():
                    postings.setdefault(term, []).append(f"{doc_id(n)}:{tf}:{len(docs[n])}")
            for term, entries in postings.items():
                post_rows["ids"].append(f"g{lv}:{pid}:{term}")
                post_rows["documents"].append(" ".join(entries))
            post_rows["ids"].append(f"stats:g{lv}:{pid}")
            post_rows["documents"].append(f"{STATS} {len(members)} {total}")
    for rows_, target in ((stat_rows, col), (post_rows, post)):
        count = len(rows_["ids"])
        for lo in range(0, count, batch):
            part = {k: v[lo : lo + batch] for k, v in rows_.items()}
            target.add(embeddings=rng.standard_normal((len(part["ids"]), DIMS))
                       .astype(np.float32), **part)
    return col, post, time.perf_counter() - start


def mirror(texts: list[str]) -> dict[int, KeywordIndex]:
    """Route i: one loaded ``KeywordIndex`` per level (namespace = the profile), fed the raw
    texts (it analyses them itself)."""
    out: dict[int, KeywordIndex] = {}
    for lv in LEVELS:
        index = KeywordIndex()
        index.apply(
            KeywordRow(doc_id(n), (profile_of(n, lv),), doc_id(n),
                       {"text": text})
            for n, text in enumerate(texts)
        )
        out[lv] = index
    return out


# ---------------------------------------------------------------- routes


def routes(col: Any, post: Any, indexes: dict[int, KeywordIndex]
           ) -> dict[str, Callable[[int, str, list[str], str], tuple[list[str], list[str]]]]:
    """``name -> fn(level, profile, terms, question) -> (ranking, approximate ranking)``."""

    def mirror_route(lv: int, pid: str, terms: list[str], q: str) -> tuple[list[str], list[str]]:
        hits = indexes[lv].search_keyword(q, namespace_prefix=(pid,), limit=K)
        ranking = [i for i, _ in hits]
        return ranking, ranking

    def fts(lv: int, pid: str, terms: list[str], q: str) -> tuple[list[str], list[str]]:
        got = col.get(
            where={f"g{lv}": pid},
            where_document={"$or": [{"$contains": f" {t} "} for t in terms]
                            + [{"$contains": STATS}]},
            include=["documents"],
        )
        return score_candidates(got, terms)

    def listed(lv: int, pid: str, terms: list[str], q: str) -> tuple[list[str], list[str]]:
        got = col.get(
            where={"$and": [{f"g{lv}": pid},
                            {"$or": [{"terms": {"$contains": t}} for t in [*terms, STATS]]}]},
            include=["documents"],
        )
        return score_candidates(got, terms)

    def whole(lv: int, pid: str, terms: list[str], q: str) -> tuple[list[str], list[str]]:
        got = col.get(where={f"g{lv}": pid}, include=["documents"])
        docs, _ = split_result(got)
        avglen = statistics.fmean(len(d) for d in docs.values()) if docs else 0.0
        ranking = bm25_top(docs, terms, len(docs), avglen)
        return ranking, ranking

    def postings(lv: int, pid: str, terms: list[str], q: str) -> tuple[list[str], list[str]]:
        got = post.get(ids=[f"g{lv}:{pid}:{t}" for t in terms] + [f"stats:g{lv}:{pid}"],
                       include=["documents"])
        n, avglen = 0, 0.0
        scores: dict[str, float] = {}
        lists: dict[str, str] = {}
        for ident, document in zip(got["ids"], got["documents"], strict=True):
            if ident.startswith("stats:"):
                _, size, total = document.split()
                n, avglen = int(size), int(total) / max(int(size), 1)
            else:
                lists[ident.rsplit(":", 1)[1]] = document
        for term in terms:  # the query's term order, as rank_documents sums
            if term not in lists:
                continue
            entries = lists[term].split()
            idf = math.log(1.0 + (n - len(entries) + 0.5) / (len(entries) + 0.5))
            for entry in entries:
                ident, tf_s, len_s = entry.split(":")
                tf = float(tf_s)
                norm = K1 * ((1.0 - B) + B * int(len_s) / avglen) if avglen else K1
                scores[ident] = scores.get(ident, 0.0) + idf * tf * (K1 + 1.0) / (tf + norm)
        ranking = [i for i, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:K]]
        return ranking, ranking

    return {"i mirror": mirror_route, "ii fts": fts, "iii list": listed, "iv whole": whole,
            "v postings": postings}


def agreement(got: Sequence[str], ref: Sequence[str]) -> float | None:
    if not ref:
        return None if not got else 0.0
    return len(set(got) & set(ref)) / len(ref)


def phase(fns: dict[str, Callable[..., tuple[list[str], list[str]]]], questions: list[str],
          analyzer: Analyzer, rows: int, seed: int) -> dict[tuple[str, int], dict[str, list[Any]]]:
    """Every route on every question at each level, routes in a shuffled order per query."""
    rng = random.Random(seed)
    out: dict[tuple[str, int], dict[str, list[Any]]] = {}
    for q in questions:
        terms = analyzer.query_terms(q)
        if not terms:
            continue
        for lv in LEVELS:
            pid = str(rng.randrange(rows // lv))
            order = list(fns)
            rng.shuffle(order)
            got: dict[str, tuple[list[str], list[str]]] = {}
            for name in order:
                t0 = time.perf_counter()
                got[name] = fns[name](lv, pid, terms, q)
                seconds = time.perf_counter() - t0
                out.setdefault((name, lv), {"t": [], "agree": [], "approx": []})["t"].append(
                    seconds)
            ref = got["i mirror"][0]
            for name, (ranking, approx) in got.items():
                cell = out[(name, lv)]
                cell["agree"].append(agreement(ranking, ref))
                cell["approx"].append(agreement(approx, ref))
    return out


def mean(values: list[Any]) -> str:
    kept = [v for v in values if v is not None]
    return f"{statistics.fmean(kept):.3f}" if kept else "-"


def report(title: str, res: dict[tuple[str, int], dict[str, list[Any]]]) -> None:
    print(f"\n### {title}\n")
    body = []
    for lv in LEVELS:
        base = median(res[("i mirror", lv)]["t"])
        for name in ROUTES:
            cell = res[(name, lv)]
            t = cell["t"]
            calls = 0 if name == "i mirror" else 1
            approx = mean(cell["approx"]) if name in ("ii fts", "iii list") else ""
            body.append([f"{lv:,}", name, f"{median(t) * 1000:.2f}",
                         f"{percentile(t, 95) * 1000:.2f}", f"{median(t) / base:.1f}",
                         mean(cell["agree"]), approx, calls])
    print(table(["profile docs", "route", "p50 ms", "p95 ms", "x i", "top-10 agreement",
                 "agreement, stats from candidates", "Chroma calls"], body))


def check_list_operators(col: Any) -> str:
    """What ``$contains`` and ``$in`` do on the list field (documented in the docstring)."""
    got = col.get(ids=["d0"], include=["metadatas"])
    term = got["metadatas"][0]["terms"][0]
    contains = col.get(where={"terms": {"$contains": term}}, limit=1, include=[])["ids"]
    within = col.get(where={"terms": {"$in": [term]}}, limit=1, include=[])["ids"]
    return (f"list metadata: $contains {term!r} -> {len(contains)} row(s) found; "
            f"$in [{term!r}] -> {len(within)} row(s)")


def has_stats(folder: str) -> bool:
    db = sqlite3.connect(f"file:{folder}/chroma.sqlite3?mode=ro", uri=True)
    try:
        return bool(db.execute("SELECT count(*) FROM sqlite_master WHERE name='sqlite_stat1'")
                    .fetchone()[0])
    finally:
        db.close()


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("path", nargs="?", type=Path,
                   default=ROOT.parent / "shared" / "datasets" / "locomo" / "locomo_dev.json")
    p.add_argument("--rows", type=int, default=20_000, help="documents in the collection")
    p.add_argument("--queries", type=int, default=50)
    p.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    p.add_argument("--seed", type=int, default=9)
    args = p.parse_args(argv)
    if args.rows < max(LEVELS):
        p.error(f"--rows must be at least {max(LEVELS)}")
    analyzer = Analyzer(language=DEFAULT_KEYWORD_CONFIG["language"],
                        stopwords=DEFAULT_KEYWORD_CONFIG["stopwords"])
    texts, docs, questions = corpus(args.path, args.rows, analyzer, args.seed)
    questions = random.Random(args.seed).sample(questions, min(args.queries, len(questions)))
    load = os.getloadavg()[0]
    print(f"chromadb {chromadb.__version__}; {len(docs):,} documents "
          f"(profiles of {', '.join(f'{lv:,}' for lv in LEVELS)}); {len(questions)} questions; "
          f"load average {load:.2f}")
    folder = tempfile.mkdtemp(prefix="keyword-", dir=args.dir)
    try:
        col, post, seconds = build(folder, docs)
        print(f"build: {seconds:.1f} s; {check_list_operators(col)}")
        t0 = time.perf_counter()
        indexes = mirror(texts)
        print(f"route i's index load (in process): "
              f"{time.perf_counter() - t0:.1f} s for {len(LEVELS)} levels")
        fns = routes(col, post, indexes)
        res = phase(fns, questions, analyzer, args.rows, args.seed)
        report(f"no planner statistics (as Chroma leaves a folder); load average "
               f"{os.getloadavg()[0]:.2f}", res)
        t0 = time.perf_counter()
        outcome = refresh(folder, min_rows=0)
        print(f"\nANALYZE: {outcome!r} in {time.perf_counter() - t0:.1f} s; "
              f"sqlite_stat1 present: {has_stats(folder)}")
        res = phase(fns, questions, analyzer, args.rows, args.seed)
        report(f"after ANALYZE; load average {os.getloadavg()[0]:.2f}", res)
        print(f"\nload average {load:.2f} before, {os.getloadavg()[0]:.2f} after")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
