"""Weighted RRF, tie-breaks, the explanation, the exact-key channel and the config."""

from __future__ import annotations

import pytest

from langmem_edge.errors import ConfigurationError
from langmem_edge.retrieval.config import DEFAULT_HYBRID_CONFIG, resolve_hybrid_config
from langmem_edge.retrieval.fusion import rrf_fuse
from langmem_edge.retrieval.hybrid import active_channels, channel_depth, fuse
from langmem_edge.retrieval.keys import key_segments
from langmem_edge.retrieval.keywords import rank_keys
from langmem_edge.retrieval.text import key_tokens


def test_weighted_rrf_maths() -> None:
    hits = rrf_fuse(
        {"vector": [("a", 0.9), ("b", 0.8)], "keyword": [("b", 7.0), ("c", 3.0)]},
        weights={"vector": 1.0, "keyword": 2.0},
    )
    scores = {h.id: h.score for h in hits}
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["b"] == pytest.approx(1 / 62 + 2 / 61)
    assert scores["c"] == pytest.approx(2 / 62)
    assert [h.id for h in hits] == ["b", "c", "a"]


def test_explain_gives_rank_and_raw_score_in_every_channel() -> None:
    hits = rrf_fuse(
        {"vector": [("a", 0.9)], "keyword": [("b", 7.0), ("a", 3.0)], "key": []},
        weights={"vector": 1.0, "keyword": 1.0, "key": 1.5},
    )
    a = next(h for h in hits if h.id == "a")
    assert a.explain() == {
        "vector": {"rank": 1, "score": 0.9, "contribution": pytest.approx(1 / 61)},
        "keyword": {"rank": 2, "score": 3.0, "contribution": pytest.approx(1 / 62)},
        "key": {"rank": None, "score": None, "contribution": 0.0},
    }


def test_ties_are_deterministic() -> None:
    # equal fused scores: best rank, then number of channels, then id
    hits = rrf_fuse(
        {"x": [("b", 1.0), ("d", 0.5)], "y": [("a", 1.0), ("c", 0.5)]},
        weights={"x": 1.0, "y": 1.0},
    )
    assert [h.id for h in hits] == ["a", "b", "c", "d"]
    again = rrf_fuse(
        {"y": [("a", 1.0), ("c", 0.5)], "x": [("b", 1.0), ("d", 0.5)]},
        weights={"x": 1.0, "y": 1.0},
    )
    assert [h.id for h in again] == [h.id for h in hits]


def test_duplicates_keep_their_best_rank_and_limit_applies() -> None:
    hits = rrf_fuse({"x": [("a", 3.0), ("a", 2.0), ("b", 1.0)]}, weights={"x": 1.0}, limit=1)
    assert [(h.id, h.channels["x"].rank) for h in hits] == [("a", 1)]
    assert (
        rrf_fuse({"x": [("a", 3.0), ("a", 2.0), ("b", 1.0)]}, weights={"x": 1.0})[1]
        .channels["x"]
        .rank
        == 2
    )


def test_rrf_k_and_validation() -> None:
    hits = rrf_fuse({"x": [("a", 1.0)]}, weights={"x": 2.0}, rrf_k=0)
    assert hits[0].score == pytest.approx(2.0)
    with pytest.raises(ConfigurationError):
        rrf_fuse({"x": []}, weights={"x": -1.0})
    with pytest.raises(ConfigurationError):
        rrf_fuse({"x": []}, weights={"x": 1.0}, rrf_k=-1)


def test_fuse_with_config_skips_zero_weight_channels_and_missing_ones() -> None:
    cfg = resolve_hybrid_config({"weights": {"vector": 0}})
    assert active_channels(cfg) == ["keyword", "key"]
    hits = fuse({"vector": [("v", 1.0)], "keyword": [("k", 2.0)]}, cfg)
    assert [h.id for h in hits] == ["k"]
    assert set(hits[0].channels) == {"keyword", "key"}  # a failed key channel: still listed
    assert channel_depth(cfg, limit=10) == 50
    assert channel_depth(cfg, limit=40, offset=20) == 60


def test_config_defaults_merge_and_validation() -> None:
    cfg = resolve_hybrid_config()
    assert cfg["weights"] == {"vector": 1.0, "keyword": 1.0, "key": 1.5}
    assert cfg["rrf_k"] == 60 and cfg["keyword"]["k1"] == 1.2 and cfg["keyword"]["b"] == 0.75
    store = {"weights": {"key": 3}, "keyword": {"field_weights": {"context": 0.5}}}
    call = {"weights": {"vector": 0.5}}
    merged = resolve_hybrid_config(store, call)
    assert merged["weights"] == {"vector": 0.5, "keyword": 1.0, "key": 3.0}
    assert merged["keyword"]["field_weights"] == {"context": 0.5}
    merged["weights"]["vector"] = 99
    merged["keyword"]["field_weights"]["x"] = 1
    assert DEFAULT_HYBRID_CONFIG["weights"]["vector"] == 1.0  # defaults never mutated
    assert resolve_hybrid_config()["keyword"]["field_weights"] == {}
    for bad in (
        {"weights": {"sparse": 1}},
        {"weights": {"vector": -1}},
        {"rrf_k": "60"},
        {"depth": 0},
        {"keyword": {"b": 2}},
        {"keyword": {"stemmer": "x"}},
        {"fusion": "rrf"},
    ):
        with pytest.raises(ConfigurationError):
            resolve_hybrid_config(bad)


def test_key_channel_ranks_by_matched_segments_then_specificity() -> None:
    segments = {k: key_segments(key) for k, key in [
        ("theme", "preference.ui_theme"), ("ui", "preference.ui"),
        ("lang", "preference.language")]}
    got = rank_keys(segments, key_tokens("what UI theme?"))
    assert [d for d, _ in got] == ["theme", "ui"]
    assert got[0][1] == pytest.approx(2 + 2 / 3)
    assert got[1][1] == pytest.approx(1 + 1 / 2)
    both = {**segments, "bob": key_segments("preference.ui_theme")}
    # the id breaks the tie
    assert [d for d, _ in rank_keys(both, key_tokens("theme"))] == ["bob", "theme"]
    assert rank_keys(both, key_tokens("the of and")) == []  # stopwords never match a segment
    assert rank_keys(both, key_tokens("theme"), limit=1) == [("bob", pytest.approx(1 + 1 / 3))]
