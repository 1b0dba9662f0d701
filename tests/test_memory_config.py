"""MemoryConfig: DESIGN.md's numbers are the documented defaults; overrides are checked."""

from __future__ import annotations

import pytest

import langmem_edge.memory as memory_pkg
from langmem_edge.errors import ConfigurationError
from langmem_edge.memory import MemoryConfig
from langmem_edge.memory.config import load_config
from langmem_edge.memory.records import FACT_TYPES_BY_KIND


def test_defaults_are_the_design_numbers() -> None:
    c = MemoryConfig()
    assert c.confidence_by_source == {
        "explicit": 0.9,
        "reflection": 0.85,
        "consolidation": 0.8,
        "pre-compaction": 0.6,
        "turn": 0.5,
    }
    assert c.recall.min_confidence == 0.1
    v = c.verification
    assert (v.enabled, v.max_candidates, v.min_cosine, v.replace_threshold) == (True, 3, 0.6, 0.75)
    r = c.recall
    assert r.rrf_k == 60 and r.limit == 20
    assert (r.weights["vector"], r.weights["keyword"], r.weights["key"]) == (1.0, 1.0, 1.5)
    assert (r.fill_recency_weight, r.fill_access_weight, r.recency_half_life_days) == (
        0.7,
        0.3,
        30.0,
    )
    assert c.composite.weights == {
        "cosine": 0.5,
        "recency": 0.2,
        "confidence": 0.15,
        "tags": 0.1,
        "source": 0.05,
    }
    assert c.limits.max_profile_chars == 100 and c.limits.max_list_page == 500
    assert FACT_TYPES_BY_KIND == {
        "fact": ("preference", "identity", "relationship", "decision", "reflection"),
        "event": ("event", "workflow-outcome", "workflow-failure"),
        "instruction": ("instruction", "skill"),
        "task": ("task",),
    }


def test_partial_overrides_keep_other_defaults() -> None:
    c = load_config({"recall": {"weights": {"key": 2.0}}, "confidence_by_source": {"turn": 0.4}})
    assert c.recall.weights["key"] == 2.0 and c.recall.weights["vector"] == 1.0
    assert c.confidence_by_source["turn"] == 0.4 and c.confidence_by_source["explicit"] == 0.9
    assert load_config(c) is c and load_config(None) == MemoryConfig()


@pytest.mark.parametrize(
    "bad",
    [
        {"recal": {}},
        {"recall": {"weights": {"bm42": 1.0}}},
        {"verification": {"min_cosine": 2}},
        {"confidence_by_source": {"explicit": 1.5}},
        {"index": {"retention_seconds": 10}},  # the change log went: an unknown field
        {"index": {"page_size": 0}},
        "not a dict",
    ],
)
def test_bad_config_is_a_configuration_error(bad: object) -> None:
    with pytest.raises(ConfigurationError):
        load_config(bad)  # type: ignore[arg-type]


def test_public_names() -> None:
    """Every exported name resolves (docs/reference.md lists exactly these:
    tests/test_reference.py)."""
    for name in memory_pkg.__all__:
        assert getattr(memory_pkg, name) is not None
