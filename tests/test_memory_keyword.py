"""The keyword channel of the profile index: the package's one BM25 over analysed texts, the
ranking kept to the admissible records."""

from __future__ import annotations

import heapq
import math
import random

from langmem_edge.retrieval.bm25 import rank_fields
from langmem_edge.retrieval.text import default_analyzer


def analyse(text: str) -> list[str]:
    return default_analyzer().terms(text)


def test_analyse_lowercases_drops_stop_words_and_stems() -> None:
    assert analyse("The user LIVES in Singapore, living happily") == [
        "user", "live", "singapor", "live", "happili"]
    assert analyse("") == []


def _brute(docs: dict[str, str], query: str, limit: int, ok: set[str]
           ) -> list[tuple[str, float]]:
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
    best = heapq.nsmallest(limit, scores.items(), key=lambda x: (-round(x[1], 9), x[0]))
    return best


def test_admitted_ranking_matches_a_brute_force_okapi() -> None:
    rng = random.Random(3)
    words = [f"w{i}" for i in range(120)]
    weights = [1 / (i + 1) for i in range(120)]
    docs = {}
    for row in range(600):
        if row % 5:  # a fifth never written
            docs[f"d{row:04d}"] = " ".join(rng.choices(words, weights, k=rng.randint(2, 12)))
        else:
            rng.choices(words, weights, k=rng.randint(2, 12))
    fields = {d: {"text": analyse(text)} for d, text in docs.items()}
    ok = {d for d in docs if int(d[1:]) % 3 != 0}
    for _ in range(25):
        query = " ".join(rng.choices(words, weights, k=rng.randint(1, 4)))
        got = rank_fields(fields, analyse(query), limit=8, accept=ok.__contains__)
        want = _brute(docs, query, 8, ok)
        assert [h.id for h in got] == [d for d, _ in want]
        assert all(abs(h.score - s) < 1e-9 for h, (_, s) in zip(got, want, strict=True))
    assert rank_fields(fields, analyse("nothing here"), limit=5) == []
