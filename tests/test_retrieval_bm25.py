"""BM25: scores equal a brute-force computation of the formula, ties ordered by id."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langmem_edge.errors import ConfigurationError
from langmem_edge.retrieval.bm25 import rank_documents, rank_fields, weighted_tf

VOCAB = ["apple", "banana", "cherry", "date", "elder", "fig"]


def brute_force(
    docs: dict[str, dict[str, list[str]]],
    query: list[str],
    *,
    k1: float = 1.2,
    b: float = 0.75,
    weights: dict[str, float] | None = None,
) -> dict[str, float]:
    """BM25F-lite straight from the formula, over ``docs``."""
    weights = weights or {}
    inside = docs
    tf: dict[str, Counter[str]] = {}
    length: dict[str, float] = {}
    for i, fields in inside.items():
        c: Counter[str] = Counter()
        n = 0.0
        for name, terms in fields.items():
            w = weights.get(name, 1.0)
            for t in terms:
                c[t] += w
            n += w * len(terms)
        tf[i], length[i] = c, n
    n_docs = len(inside)
    if not n_docs:
        return {}
    avg = sum(length.values()) / n_docs
    out: dict[str, float] = {}
    for t in dict.fromkeys(query):
        holders = [i for i in inside if tf[i][t] > 0]
        if not holders:
            continue
        idf = math.log(1 + (n_docs - len(holders) + 0.5) / (len(holders) + 0.5))
        for i in holders:
            f = tf[i][t]
            norm = k1 * (1 - b + b * length[i] / avg) if avg else k1
            out[i] = out.get(i, 0.0) + idf * f * (k1 + 1) / (f + norm)
    return out


docs_strategy = st.dictionaries(
    st.sampled_from([f"d{i}" for i in range(12)]),
    st.fixed_dictionaries(
        {"text": st.lists(st.sampled_from(VOCAB), max_size=8)},
        optional={"context": st.lists(st.sampled_from(VOCAB), max_size=8)},
    ),
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(docs=docs_strategy,
       query=st.lists(st.sampled_from([*VOCAB, "zzz"]), min_size=1, max_size=4))
def test_scores_match_brute_force(docs, query) -> None:  # type: ignore[no-untyped-def]
    weights = {"context": 0.5}
    expected = brute_force(docs, query, weights=weights)
    got = rank_fields(docs, query, field_weights=weights)
    assert {h.id for h in got} == set(expected)
    for h in got:
        assert h.score == pytest.approx(expected[h.id], rel=1e-9)
    # sorted by score desc, then id asc
    assert [(-h.score, h.id) for h in got] == sorted((-h.score, h.id) for h in got)


@pytest.mark.parametrize("seed", range(6))
def test_rankings_match_a_reference_with_ties_limits_and_accept(seed: int) -> None:
    """Random corpora of weighted fields; every ranking equals the formula computed from
    scratch, ties ordered by id, ``accept`` leaving documents out of the ranking but not of
    the statistics."""
    rng = random.Random(seed)
    vocab = [f"t{i}" for i in range(rng.choice([4, 12, 40]))]
    # Dyadic weights keep weighted tfs and lengths exact, so the reference's scores (and ties)
    # are bit-for-bit the ranking's.
    weights = {"context": 0.5, "title": 2.0, "skip": 0.0}
    k1, b = rng.choice([(1.2, 0.75), (0.0, 0.75), (2.0, 1.0), (1.2, 0.0)])
    ties_seen = 0
    for step in range(60):
        docs: dict[str, dict[str, list[str]]] = {}
        for d in range(rng.randint(0, 40)):
            if docs and rng.random() < 0.2:  # a copy of another document: guaranteed ties
                docs[f"d{d}"] = docs[rng.choice(sorted(docs))]
                continue
            docs[f"d{d}"] = {
                name: rng.choices(vocab, k=rng.randint(0, size))
                for name, size in [("text", 8), ("context", 6), ("title", 3), ("skip", 3)]
                if name == "text" or rng.random() < 0.5}
        query = rng.choices([*vocab, "absent"], k=rng.randint(1, 5))
        limit = rng.choice([None, 1, 3, 10])
        accept = rng.choice([None, lambda d: int(d[1:]) % 3 != 0])
        expected = brute_force(docs, query, k1=k1, b=b, weights=weights)
        ranked = sorted((-v, i) for i, v in expected.items() if accept is None or accept(i))
        ranked = ranked[:limit]
        got = rank_fields(docs, query, k1=k1, b=b, field_weights=weights, limit=limit,
                          accept=accept)
        assert [h.id for h in got] == [i for _, i in ranked], (step, query)
        for h, (neg, _) in zip(got, ranked, strict=True):
            assert h.score == -neg
        ties_seen += len(got) - len({h.score for h in got})
    assert ties_seen > 0


def test_statistics_come_from_the_documents_given() -> None:
    mine = {"mine": {"text": ["apple", "banana"]}}
    with_other = {**mine, "other": {"text": ["apple"]}}
    # another profile's documents change nothing when they are not given
    assert rank_fields(mine, ["apple"]) != rank_fields(with_other, ["apple"])[:1]
    assert rank_fields(with_other, ["apple"], accept=lambda d: d == "mine") == [
        h for h in rank_fields(with_other, ["apple"]) if h.id == "mine"]


def test_limit_accept_and_empty_queries() -> None:
    docs = {f"d{i}": {"text": ["apple"] * (i + 1) + ["pad"] * 3} for i in range(5)}
    assert [h.id for h in rank_fields(docs, ["apple"], limit=2)] == ["d4", "d3"]
    odd = rank_fields(docs, ["apple"], accept=lambda d: d in {"d1", "d3"})
    assert [h.id for h in odd] == ["d3", "d1"]
    assert rank_fields(docs, []) == []
    assert rank_fields(docs, ["nothing"]) == []
    assert rank_fields(docs, ["apple"], limit=0) == []
    assert rank_fields({}, ["apple"]) == []


def test_weighted_field_counts_less() -> None:
    weights = {"context": 0.5}
    docs = {"in_text": {"text": ["apple", "x"], "context": ["y", "z"]},
            "in_context": {"text": ["x", "y"], "context": ["apple", "z"]}}
    assert [h.id for h in rank_fields(docs, ["apple"], field_weights=weights)] == [
        "in_text", "in_context"]
    only = {"only_context": {"text": ["x"], "context": ["apple"]}}
    assert rank_fields(only, ["apple"], field_weights={"context": 0.0}) == []


@pytest.mark.parametrize("kwargs", [{"k1": -1}, {"b": 1.5}, {"field_weights": {"x": -1}},
                                    {"default_field_weight": -0.5}])
def test_bad_parameters(kwargs) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigurationError):
        rank_fields({"d": {"text": ["a"]}}, ["a"], **kwargs)


def test_rank_documents_given_statistics_scores_as_the_whole_corpus() -> None:
    """``rank_documents`` (the store's keyword channel: the documents holding a query term,
    N and the average length given) gives the whole corpus's scores bit for bit and its
    order, field weights included."""
    rng = random.Random(3)
    words = [f"w{i}" for i in range(15)]
    weights = {"context": 0.5}
    corpus = {}
    for i in range(60):
        fields = {"text": [rng.choice(words) for _ in range(rng.randint(0, 9))],
                  "context": [rng.choice(words) for _ in range(rng.randint(0, 4))]}
        if any(fields.values()):
            corpus[f"d{i:02d}"] = fields
    tfs = {i: weighted_tf(f, weights) for i, f in corpus.items()}
    n, avglen = len(tfs), sum(length for _, length in tfs.values()) / len(tfs)
    for query in (["w1"], ["w2", "w3", "w2"], ["w4", "nope"], ["nope"]):
        holders = {i: v for i, v in tfs.items() if set(query) & set(v[0])}
        want = rank_fields(corpus, query, field_weights=weights, limit=10)
        assert rank_documents(holders, query, n=n, avglen=avglen, limit=10) == want
