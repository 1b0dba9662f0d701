"""BM25: scores equal a brute-force computation; incremental updates equal a rebuild."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langmem_edge.errors import ConfigurationError
from langmem_edge.retrieval.bm25 import BM25Index

VOCAB = ["apple", "banana", "cherry", "date", "elder", "fig"]
NAMESPACES = [("a",), ("a", "x"), ("b",)]


def brute_force(
    docs: dict[str, tuple[tuple[str, ...], dict[str, list[str]]]],
    query: list[str],
    prefix: tuple[str, ...],
    *,
    k1: float = 1.2,
    b: float = 0.75,
    weights: dict[str, float] | None = None,
) -> dict[str, float]:
    """BM25F-lite straight from the formula, over the documents under ``prefix``."""
    weights = weights or {}
    inside = {i: f for i, (ns, f) in docs.items() if ns[: len(prefix)] == prefix}
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
    st.tuples(
        st.sampled_from(NAMESPACES),
        st.fixed_dictionaries(
            {"text": st.lists(st.sampled_from(VOCAB), max_size=8)},
            optional={"context": st.lists(st.sampled_from(VOCAB), max_size=8)},
        ),
    ),
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(
    docs=docs_strategy,
    query=st.lists(st.sampled_from([*VOCAB, "zzz"]), min_size=1, max_size=4),
    prefix=st.sampled_from([(), ("a",), ("a", "x"), ("b",)]),
)
def test_scores_match_brute_force(docs, query, prefix) -> None:  # type: ignore[no-untyped-def]
    weights = {"context": 0.5}
    index = BM25Index(field_weights=weights)
    for doc_id, (ns, fields) in docs.items():
        index.upsert(doc_id, fields, namespace=ns)
    expected = brute_force(docs, query, prefix, weights=weights)
    got = index.search(query, namespace_prefix=prefix)
    assert {h.id for h in got} == {i for i, s in expected.items()}
    for h in got:
        assert h.score == pytest.approx(expected[h.id], rel=1e-9)
    # sorted by score desc, then id asc
    assert [(-h.score, h.id) for h in got] == sorted((-h.score, h.id) for h in got)


@settings(max_examples=100, deadline=None)
@given(
    first=docs_strategy,
    second=docs_strategy,
    drop=st.sets(st.sampled_from([f"d{i}" for i in range(12)])),
)
def test_incremental_updates_equal_a_rebuild(first, second, drop) -> None:  # type: ignore[no-untyped-def]
    live = BM25Index()
    for doc_id, (ns, fields) in first.items():
        live.upsert(doc_id, fields, namespace=ns)
    for doc_id, (ns, fields) in second.items():
        live.upsert(doc_id, fields, namespace=ns)
    for doc_id in drop:
        live.remove(doc_id)
    final = {**first, **second}
    for doc_id in drop:
        final.pop(doc_id, None)
    rebuilt = BM25Index()
    for doc_id, (ns, fields) in final.items():
        rebuilt.upsert(doc_id, fields, namespace=ns)
    assert live.ids() == rebuilt.ids()
    for prefix in [(), ("a",), ("b",)]:
        assert live.prefix_stats(prefix) == pytest.approx(rebuilt.prefix_stats(prefix))
        assert live.search(VOCAB, namespace_prefix=prefix) == rebuilt.search(
            VOCAB, namespace_prefix=prefix
        )


@pytest.mark.parametrize("seed", range(6))
def test_vectorised_search_matches_a_pure_python_reference(seed: int) -> None:
    """Random updates (upserts, re-upserts, removals) over several namespaces and weighted
    fields; every search equals the formula computed from scratch, ties ordered by id."""
    rng = random.Random(seed)
    vocab = [f"t{i}" for i in range(rng.choice([4, 12, 40]))]
    namespaces = [(), ("a",), ("a", "x"), ("a", "y", "z"), ("b",), ("b", "a")]
    prefixes = [(), ("a",), ("a", "x"), ("b",), ("a", "y"), ("nowhere",)]
    # Dyadic weights keep weighted tfs and lengths exact, so the reference's scores (and ties)
    # are bit-for-bit the index's whatever the order documents came and went in.
    weights = {"context": 0.5, "title": 2.0, "skip": 0.0}
    k1, b = rng.choice([(1.2, 0.75), (0.0, 0.75), (2.0, 1.0), (1.2, 0.0)])
    index = BM25Index(k1=k1, b=b, field_weights=weights)
    docs: dict[str, tuple[tuple[str, ...], dict[str, list[str]]]] = {}
    ties_seen = 0
    for step in range(400):
        doc_id = f"d{rng.randrange(60)}"
        roll = rng.random()
        if roll < 0.55:
            fields = {
                name: rng.choices(vocab, k=rng.randint(0, size))
                for name, size in [("text", 8), ("context", 6), ("title", 3), ("skip", 3)]
                if name == "text" or rng.random() < 0.5
            }
            if docs and rng.random() < 0.2:  # a copy of another document: guaranteed ties
                ns, fields = docs[rng.choice(sorted(docs))]
            else:
                ns = rng.choice(namespaces)
            index.upsert(doc_id, fields, namespace=ns)
            docs[doc_id] = (ns, fields)
        elif roll < 0.8:
            assert index.remove(doc_id) == (docs.pop(doc_id, None) is not None)
        else:
            query = rng.choices([*vocab, "absent"], k=rng.randint(1, 5))
            prefix = rng.choice(prefixes)
            limit = rng.choice([None, 1, 3, 10])
            accept = rng.choice([None, lambda d: int(d[1:]) % 3 != 0])
            expected = brute_force(docs, query, prefix, k1=k1, b=b, weights=weights)
            ranked = sorted(
                (-v, i) for i, v in expected.items() if accept is None or accept(i)
            )[:limit]
            got = index.search(query, namespace_prefix=prefix, limit=limit, accept=accept)
            assert [h.id for h in got] == [i for _, i in ranked], (step, query, prefix)
            for h, (neg, _) in zip(got, ranked, strict=True):
                assert h.score == pytest.approx(-neg, rel=1e-9)
            ties_seen += len(got) - len({h.score for h in got})
    assert index.ids() == sorted(docs)
    assert ties_seen > 0


def test_statistics_come_from_the_prefix_only() -> None:
    index = BM25Index()
    index.upsert("mine", {"text": ["apple", "banana"]}, namespace=("u", "alice"))
    index.upsert("other", {"text": ["apple"]}, namespace=("u", "bob"))
    alone = BM25Index()
    alone.upsert("mine", {"text": ["apple", "banana"]}, namespace=("u", "alice"))
    assert index.search(["apple"], namespace_prefix=("u", "alice")) == alone.search(
        ["apple"], namespace_prefix=("u", "alice")
    )
    # adding data elsewhere never changes a prefix's scores
    index.upsert("more", {"text": ["apple"] * 5}, namespace=("u", "carol"))
    assert index.search(["apple"], namespace_prefix=("u", "alice")) == alone.search(["apple"])
    assert [h.id for h in index.search(["apple"], namespace_prefix=("u", "bob"))] == ["other"]


def test_limit_accept_and_empty_queries() -> None:
    index = BM25Index()
    for i in range(5):
        index.upsert(f"d{i}", {"text": ["apple"] * (i + 1) + ["pad"] * 3})
    assert [h.id for h in index.search(["apple"], limit=2)] == ["d4", "d3"]
    odd = index.search(["apple"], accept=lambda d: d in {"d1", "d3"})
    assert [h.id for h in odd] == ["d3", "d1"]
    assert index.search([]) == []
    assert index.search(["nothing"]) == []
    assert BM25Index().search(["apple"]) == []


def test_weighted_field_counts_less() -> None:
    index = BM25Index(field_weights={"context": 0.5})
    index.upsert("in_text", {"text": ["apple", "x"], "context": ["y", "z"]})
    index.upsert("in_context", {"text": ["x", "y"], "context": ["apple", "z"]})
    assert [h.id for h in index.search(["apple"])] == ["in_text", "in_context"]
    index2 = BM25Index(field_weights={"context": 0.0})
    index2.upsert("only_context", {"text": ["x"], "context": ["apple"]})
    assert index2.search(["apple"]) == []


def test_remove_and_len() -> None:
    index = BM25Index()
    index.upsert("a", {"text": ["apple"]}, namespace=("n",))
    assert "a" in index and len(index) == 1 and index.namespace_of("a") == ("n",)
    assert index.remove("a") and not index.remove("a")
    assert len(index) == 0 and index.search(["apple"]) == []
    assert index.prefix_stats(("n",)) == (0, 0.0)


@pytest.mark.parametrize("kwargs", [{"k1": -1}, {"b": 1.5}, {"field_weights": {"x": -1}}])
def test_bad_parameters(kwargs) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigurationError):
        BM25Index(**kwargs)


def test_rank_documents_scores_as_the_index() -> None:
    """``rank_documents`` (the store's keyword channel, given N and the average length)
    gives the index's scores bit for bit and its order, field weights included."""
    from langmem_edge.retrieval.bm25 import weighted_tf
    from langmem_edge.retrieval.keywords import rank_documents

    rng = random.Random(3)
    words = [f"w{i}" for i in range(15)]
    weights = {"context": 0.5}
    index = BM25Index(field_weights=weights)
    docs = {}
    for i in range(60):
        fields = {"text": [rng.choice(words) for _ in range(rng.randint(0, 9))],
                  "context": [rng.choice(words) for _ in range(rng.randint(0, 4))]}
        if any(fields.values()):
            index.upsert(f"d{i:02d}", fields)
            docs[f"d{i:02d}"] = weighted_tf(fields, weights)
    n, avglen = index.prefix_stats()
    for query in (["w1"], ["w2", "w3", "w2"], ["w4", "nope"], ["nope"]):
        want = index.search(query, limit=10)
        assert rank_documents(docs, query, n=n, avglen=avglen, limit=10) == want
