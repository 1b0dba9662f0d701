"""Configuration of hybrid retrieval: every number is a named, documented default.

Two TypedDicts, both ``total=False`` so callers name only what they change:

- :class:`KeywordConfig`: the analyser and BM25 (language, stopwords, ``k1``, ``b``, field
  weights).
- :class:`HybridConfig`: fusion (channel weights, ``rrf_k``, channel depth) plus a nested
  ``keyword`` config.

:func:`resolve_hybrid_config` merges defaults < store-level config < per-call overrides
(nested dicts merge key by key) and validates the result, so a store builds one complete
config per search and the channels never see a missing key.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypedDict

from langmem_edge._options import check_keys
from langmem_edge.errors import ConfigurationError
from langmem_edge.retrieval.bm25 import DEFAULT_B, DEFAULT_K1
from langmem_edge.retrieval.text import DEFAULT_LANGUAGE

__all__ = [
    "CHANNELS",
    "DEFAULT_CHANNEL_DEPTH",
    "DEFAULT_CONTEXT_FIELD_WEIGHT",
    "DEFAULT_HYBRID_CONFIG",
    "DEFAULT_KEYWORD_CONFIG",
    "DEFAULT_RRF_K",
    "DEFAULT_WEIGHTS",
    "HybridConfig",
    "KeywordConfig",
    "resolve_hybrid_config",
]

CHANNELS: tuple[str, ...] = ("vector", "keyword", "key")
"""Channel names, in the order the explanation lists them."""

DEFAULT_WEIGHTS: dict[str, float] = {"vector": 1.0, "keyword": 1.0, "key": 1.5}
"""RRF weight of each channel: vector 1, keyword 1, exact key 1.5 (a key match is a
deliberate, precise signal, so it outweighs either fuzzy channel)."""

DEFAULT_RRF_K = 60.0
"""The RRF constant ``k`` in ``weight / (k + rank)`` (Cormack et al. 2009)."""

DEFAULT_CHANNEL_DEPTH = 50
"""How many results each channel hands to fusion at least (``max(depth, offset + limit)``).
Deeper lists change little (an item at rank 50 adds under 1/110 of its weight) and cost
time in the vector channel."""

DEFAULT_CONTEXT_FIELD_WEIGHT = 0.5
"""Suggested BM25 weight of a ``context`` field (neighbouring text stored beside the main
text): half a main-text occurrence. Not applied unless configured in ``field_weights``."""


class KeywordConfig(TypedDict, total=False):
    """The keyword (BM25) channel.

    Attributes:
        language: Snowball stemmer language, or None for no stemming. Default ``"english"``.
        stopwords: Words dropped before stemming; None means the language's built-in list
            (English has one). Default None.
        k1: BM25 term-frequency saturation. Default 1.2.
        b: BM25 length normalisation in [0, 1]. Default 0.75.
        field_weights: ``{field path: weight}`` for BM25F-style field weighting; a path not
            listed weighs ``default_field_weight``. Default ``{}``.
        default_field_weight: Weight of unlisted fields. Default 1.0.
    """

    language: str | None
    stopwords: list[str] | None
    k1: float
    b: float
    field_weights: dict[str, float]
    default_field_weight: float


class HybridConfig(TypedDict, total=False):
    """Hybrid search: channel weights and fusion.

    Attributes:
        weights: ``{"vector", "keyword", "key"} -> weight`` for weighted RRF. A weight of 0
            turns the channel off (it is not run). Default vector 1, keyword 1, key 1.5.
        rrf_k: RRF constant. Default 60.
        depth: Results each channel contributes, at least. Default 50.
        keyword: The keyword channel's :class:`KeywordConfig`.
    """

    weights: dict[str, float]
    rrf_k: float
    depth: int
    keyword: KeywordConfig


DEFAULT_KEYWORD_CONFIG: KeywordConfig = {
    "language": DEFAULT_LANGUAGE,
    "stopwords": None,
    "k1": DEFAULT_K1,
    "b": DEFAULT_B,
    "field_weights": {},
    "default_field_weight": 1.0,
}
"""Every keyword-channel default."""

DEFAULT_HYBRID_CONFIG: HybridConfig = {
    "weights": dict(DEFAULT_WEIGHTS),
    "rrf_k": DEFAULT_RRF_K,
    "depth": DEFAULT_CHANNEL_DEPTH,
    "keyword": DEFAULT_KEYWORD_CONFIG,
}
"""Every hybrid-search default."""


CONVERSATION_HYBRID: HybridConfig = {
    "weights": {"vector": 0.5, "keyword": 1.0, "key": 1.5},
    "rrf_k": 5.0,
    "keyword": {"field_weights": {"context": DEFAULT_CONTEXT_FIELD_WEIGHT}},
}
"""Fusion tuned for conversational memory, for ``ChromaStore(hybrid=CONVERSATION_HYBRID)``.

On LoCoMo (dev half, 997 questions; ``benchmarks/locomo.py``) the defaults (``rrf_k`` 60,
weights 1/1/1.5) fuse to recall@5 0.607 against BM25 alone 0.697, because the small embedding
model's ranking pulls good keyword hits down. A sharper ``rrf_k`` (10) lets each channel's top
ranks dominate, and half weight on vectors keeps them as a tie-breaker. Chosen by
leave-one-conversation-out cross-validation (``benchmarks/locomo_cv.py``: every fold chose
``rrf_k`` 5, vector 0.5, context 0.5): 0.718 / 0.805 at @5 / @10 held out (``rrf_k`` 10, the
earlier preset: 0.704 / 0.807). The ``context`` field weight applies when items carry
neighbouring text in a ``context`` field. Measured on one benchmark: check it on your data
with ``explain_search``."""


def _number(name: str, value: Any, *, low: float = 0.0, high: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ConfigurationError(f"{name} must be a number, got {value!r}")
    if not low <= value <= high:
        raise ConfigurationError(f"{name} must be within [{low}, {high}], got {value!r}")
    return float(value)


def _merge(*layers: Mapping[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for layer in layers:
        for key, value in (layer or {}).items():
            if isinstance(value, Mapping):  # merged into a fresh dict: defaults stay untouched
                base = out.get(key)
                out[key] = _merge(base if isinstance(base, Mapping) else None, value)
            elif isinstance(value, list):
                out[key] = list(value)
            else:
                out[key] = value
    return out


def resolve_hybrid_config(
    *layers: Mapping[str, Any] | None,
) -> HybridConfig:
    """Merge ``layers`` over the defaults (later wins, nested dicts merge) and validate.

    Example: ``resolve_hybrid_config(store_config, {"weights": {"vector": 0.5}})``.

    Raises:
        ConfigurationError: an unknown key, channel or language, or a number out of range.
    """
    cfg = _merge(DEFAULT_HYBRID_CONFIG, *layers)
    check_keys("hybrid", cfg, HybridConfig.__annotations__)
    weights = cfg["weights"]
    bad = set(weights) - set(CHANNELS)
    if bad:
        raise ConfigurationError(f"unknown channel(s) {sorted(bad)}; channels are {CHANNELS}")
    cfg["weights"] = {c: _number(f"weights.{c}", weights.get(c, 0.0)) for c in CHANNELS}
    cfg["rrf_k"] = _number("rrf_k", cfg["rrf_k"])
    depth = cfg["depth"]
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ConfigurationError(f"depth must be an integer >= 1, got {depth!r}")
    kw = cfg["keyword"]
    check_keys("hybrid keyword", kw, KeywordConfig.__annotations__)
    kw["k1"] = _number("keyword.k1", kw["k1"])
    kw["b"] = _number("keyword.b", kw["b"], high=1.0)
    kw["default_field_weight"] = _number(
        "keyword.default_field_weight", kw["default_field_weight"]
    )
    kw["field_weights"] = {
        str(f): _number(f"keyword.field_weights[{f!r}]", w)
        for f, w in (kw.get("field_weights") or {}).items()
    }
    return cfg  # type: ignore[return-value]
