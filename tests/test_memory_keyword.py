"""The local keyword channel: analysis and the vectorised BM25 index."""

from __future__ import annotations

import heapq
import math
import random

import numpy as np

from langmem_edge.memory.index.keyword import BM25Index, analyse


def test_analyse_lowercases_drops_stop_words_and_stems() -> None:
    assert analyse("The user LIVES in Singapore, living happily") == [
        "user", "live", "singapor", "live", "happili"]
    assert analyse("") == []


def _brute(docs: dict[int, str], query: str, limit: int, ok: set[int]) -> list[tuple[int, float]]:
    terms = list(dict.fromkeys(analyse(query)))
    toks = {d: analyse(t) for d, t in docs.items()}
    n, avg = len(docs), sum(len(t) for t in toks.values()) / len(docs)
    scores = {}
    for d, words in toks.items():
        s = 0.0
        for term in terms:
            tf = words.count(term)
            if tf:
                df = sum(1 for w in toks.values() if term in w)
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                s += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(words) / avg))
        if s > 0 and d in ok:
            scores[d] = s
    return heapq.nlargest(limit, scores.items(), key=lambda x: (round(x[1], 9), x[0]))


def test_bm25_matches_a_brute_force_okapi() -> None:
    rng = random.Random(3)
    words = [f"w{i}" for i in range(120)]
    weights = [1 / (i + 1) for i in range(120)]
    index, docs = BM25Index(), {}
    for row in range(600):
        docs[row] = " ".join(rng.choices(words, weights, k=rng.randint(2, 12)))
        index.add(row, docs[row])
    for row in range(0, 600, 5):  # removed documents never rank
        index.remove(row)
        del docs[row]
    mask = np.array([row % 3 != 0 for row in range(600)])
    ok = {row for row in docs if row % 3 != 0}
    for _ in range(25):
        query = " ".join(rng.choices(words, weights, k=rng.randint(1, 4)))
        got = index.search(query, limit=8, mask=mask)
        want = _brute(docs, query, 8, ok)
        assert [r for r, _ in got] == [r for r, _ in want]
        assert all(abs(a - b) < 1e-9 for (_, a), (_, b) in zip(got, want, strict=True))
    assert index.dead_share() > 0
    assert index.search("nothing here", limit=5) == []
