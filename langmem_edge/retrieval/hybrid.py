"""Glue between a resolved :class:`~langmem_edge.retrieval.config.HybridConfig` and fusion.

The store runs the channels (vector, keyword and key, :mod:`langmem_edge.store.keyword`),
each restricted to the namespace
prefix and filter and cut at :func:`channel_depth`, then calls :func:`fuse`. A channel whose
weight is 0 is not run (:func:`active_channels`). A channel that failed is passed as missing
(or empty): fusion ranks by the others, and :func:`fuse` never raises for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from langmem_edge.retrieval.config import CHANNELS, HybridConfig
from langmem_edge.retrieval.fusion import FusedHit, rrf_fuse

__all__ = ["active_channels", "channel_depth", "fuse"]


def active_channels(config: HybridConfig) -> list[str]:
    """Channels with a weight > 0, in :data:`~langmem_edge.retrieval.config.CHANNELS` order."""
    weights = config["weights"]
    return [c for c in CHANNELS if weights.get(c, 0.0) > 0]


def channel_depth(config: HybridConfig, *, limit: int, offset: int = 0) -> int:
    """How many results each channel should return: ``max(depth, offset + limit)``."""
    return max(int(config["depth"]), offset + limit)


def fuse(
    rankings: Mapping[str, Sequence[tuple[str, float]]],
    config: HybridConfig,
    *,
    limit: int | None = None,
) -> list[FusedHit]:
    """Weighted RRF of the channels' rankings with the config's weights and ``rrf_k``.

    Every active channel appears in each hit's explanation, ranked or not, so a caller can
    tell "the keyword channel did not find it" from "the keyword channel did not run".
    """
    names = active_channels(config)
    lists = {name: list(rankings.get(name, ())) for name in names}
    return rrf_fuse(lists, weights=config["weights"], rrf_k=config["rrf_k"], limit=limit)
