"""The per-call BM25 (``rank_fields``) against the ``BM25Index`` it replaced, built and
searched once a call as the profile index used it (thirty-third session, issue 34).

    git worktree add /tmp/before f9cd04f
    python benchmarks/bm25_per_call.py /tmp/before [--docs 100,1000] [--queries 50]

Loads ``langmem_edge/retrieval/bm25.py`` from the older tree beside this tree's, ranks the
same random corpus (a document of 5-25 words from 2,000; a seventh of them refused by
``accept``) for the same 4-word queries with both, asserts the rankings are equal (ids and
scores), and prints the median milliseconds a call of each.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from langmem_edge.retrieval.bm25 import rank_fields  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", help="a checkout that still has BM25Index")
    parser.add_argument("--docs", default="100,1000", help="corpus sizes")
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    path = Path(args.before) / "langmem_edge" / "retrieval" / "bm25.py"
    spec = importlib.util.spec_from_file_location("before_bm25", path)
    assert spec is not None and spec.loader is not None
    before = importlib.util.module_from_spec(spec)
    sys.modules["before_bm25"] = before
    spec.loader.exec_module(before)
    rng = random.Random(1)
    vocab = [f"w{i}" for i in range(2000)]
    print("| documents | BM25Index built + searched, ms | rank_fields, ms | ratio |")
    print("| --- | --- | --- | --- |")
    for n in (int(x) for x in args.docs.split(",")):
        docs = {f"m{i:05d}": {"text": rng.choices(vocab, k=rng.randint(5, 25))}
                for i in range(n)}

        def accept(d: str) -> bool:
            return int(d[1:]) % 7 != 0

        old_ms, new_ms = [], []
        for _ in range(args.queries):
            query = rng.choices(vocab, k=4)
            began = time.perf_counter()
            index = before.BM25Index()
            for doc_id, fields in docs.items():
                index.upsert(doc_id, fields)
            want = index.search(query, limit=30, accept=accept)
            old_ms.append(1000 * (time.perf_counter() - began))
            began = time.perf_counter()
            got = rank_fields(docs, query, limit=30, accept=accept)
            new_ms.append(1000 * (time.perf_counter() - began))
            assert [(h.id, h.score) for h in got] == [(h.id, h.score) for h in want], query
        a, b = statistics.median(old_ms), statistics.median(new_ms)
        print(f"| {n:,} | {a:.3f} | {b:.3f} | {b / a:.2f}x |")


if __name__ == "__main__":
    main()
