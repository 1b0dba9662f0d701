"""The keyword channel of the profile index: the package's one BM25, admitted by a slot mask."""

from __future__ import annotations

import heapq
import math
import random

import numpy as np

from langmem_edge.retrieval.bm25 import BM25Index
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


def test_accept_mask_matches_a_brute_force_okapi() -> None:
    rng = random.Random(3)
    words = [f"w{i}" for i in range(120)]
    weights = [1 / (i + 1) for i in range(120)]
    index, docs = BM25Index(), {}
    for row in range(600):
        doc_id = f"d{row:04d}"
        docs[doc_id] = " ".join(rng.choices(words, weights, k=rng.randint(2, 12)))
        index.upsert(doc_id, {"text": analyse(docs[doc_id])})
    for row in range(0, 600, 5):  # removed documents never rank
        index.remove(f"d{row:04d}")
        del docs[f"d{row:04d}"]
    ok = {d for d in docs if int(d[1:]) % 3 != 0}
    mask = np.zeros(index.slots, dtype=bool)
    for d in ok:
        mask[index.slot(d)] = True
    for _ in range(25):
        query = " ".join(rng.choices(words, weights, k=rng.randint(1, 4)))
        got = index.search(analyse(query), limit=8, accept_mask=mask)
        want = _brute(docs, query, 8, ok)
        assert [h.id for h in got] == [d for d, _ in want]
        assert all(abs(h.score - s) < 1e-9 for h, (_, s) in zip(got, want, strict=True))
        same = index.search(analyse(query), limit=8, accept=ok.__contains__)
        assert same == got  # the mask and the predicate admit the same documents
    assert index.search(analyse("nothing here"), limit=5) == []
