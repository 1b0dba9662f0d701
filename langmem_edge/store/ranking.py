"""Ranking channels for ``ChromaStore.search(query=...)``: the seam where channels plug in.

A channel turns a query into a ranked list of :class:`Hit` (item id, raw score), restricted
to the search's namespace prefix and filter. The store then keeps the items that are alive
and pass the filter, in channel order.

This module holds the vector channel. Its raw score is the cosine similarity of the query to
the item's best-matching vector (max-pooled over its indexed paths), as ``InMemoryStore``
scores; Chroma's HNSW index nominates the candidates and reports their exact distances.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from langgraph.store.base import SearchItem, SearchOp

from langmem_edge.errors import InvalidInputError
from langmem_edge.store import filters, layout
from langmem_edge.store.layout import NO_VECTORS, ROW_GEN, parse_vector_id

Ranking = Literal["vector", "hybrid"]
RANKINGS: tuple[str, ...] = ("vector", "hybrid")

CANDIDATE_FACTOR = 3
"""First vector fetch: ``(offset + limit) * CANDIDATE_FACTOR * paths + 10`` rows."""

ADMIT_SLACK = 5
"""Extra item rows read per slice when admitting hits (covers a few expired/filtered ones)."""


@dataclass(frozen=True)
class ExplainedItem:
    """A search result with how each channel placed it.

    Attributes:
        item: The result (its ``score`` is the fused score in hybrid ranking).
        channels: ``{channel: {"rank", "score", "contribution"}}``: 1-based rank and raw
            score in that channel (None when the channel did not return the item) and what it
            added to the fused score.
    """

    item: SearchItem
    channels: dict[str, dict[str, float | int | None]] = field(default_factory=dict)


@dataclass(frozen=True)
class Hit:
    """One item nominated by a channel.

    Attributes:
        item_id: The item's Chroma id.
        score: The channel's raw score (higher is better).
        channels: Per-channel detail ``{channel: {"rank": r, "score": s}}`` (1-based ranks).
    """

    item_id: str
    score: float
    channels: dict[str, dict[str, float | int | None]] = field(default_factory=dict)
    gens: dict[str, float] = field(default_factory=dict)
    """Vector channel: the best score of each vector generation found (the item row says
    which one is current: :func:`current_hits`)."""
    row: str = ""
    """Vector channel: the id of the best-matching vector row."""


class KeyHit(NamedTuple):
    """One item found by :meth:`ChromaStore.nearest_keys`: where it is and how close."""

    namespace: tuple[str, ...]
    key: str
    score: float
    """Cosine similarity of the query to the item's best-matching vector."""


def pool_vector_hits(vector_ids: Sequence[str], distances: Sequence[float]) -> list[Hit]:
    """Vector hits from vector rows: cosine similarity (``1 - distance``), max-pooled per item.

    A vector row's id names its item and generation (:func:`layout.vector_id`), so both are
    known without reading the row's metadata. Chroma's HNSW index nominates the candidates;
    the distances it reports for them are exact cosine distances of the stored vectors. Ties
    are broken by item id so the order is deterministic. Until :func:`current_hits` has seen
    the item rows, a hit's score is its best over every generation found.
    """
    gens: dict[str, dict[str, float]] = {}
    rows: dict[str, tuple[float, str]] = {}
    for vid, distance in zip(vector_ids, distances, strict=True):
        iid, gen, _ = parse_vector_id(vid)
        score = 1.0 - float(distance)
        per = gens.setdefault(iid, {})
        if gen not in per or score > per[gen]:
            per[gen] = score
        if iid not in rows or score > rows[iid][0]:
            rows[iid] = (score, vid)
    return _ranked({iid: (rows[iid][0], per, rows[iid][1]) for iid, per in gens.items()})


def current_hits(hits: Sequence[Hit], current: Mapping[str, str]) -> list[Hit]:
    """The hits scored by their item's current vector generation only, re-ranked.

    ``current`` maps item ids to the generation their item row names
    (:func:`layout.current_generation`); a hit scores by the item row's own vector
    (:data:`~langmem_edge.store.layout.ROW_GEN`) and the rows of that generation; a hit whose
    item is not in it, has no vectors, or has no row of those (rows a crashed write left
    behind), is dropped.
    """
    kept: dict[str, tuple[float, dict[str, float], str]] = {}
    for h in hits:
        gen = current.get(h.item_id)
        if gen is None or gen == NO_VECTORS:
            continue
        gens = {g: s for g, s in h.gens.items() if g in (gen, ROW_GEN)}
        if not gens:
            continue
        score = max(gens.values())
        kept[h.item_id] = (score, gens, h.row if score == h.score else "")
    return _ranked(kept)


def _ranked(scored: Mapping[str, tuple[float, dict[str, float], str]]) -> list[Hit]:
    ordered = sorted(scored.items(), key=lambda kv: (-kv[1][0], kv[0]))
    return [
        Hit(iid, score, {"vector": {"rank": rank, "score": score}}, gens, row)
        for rank, (iid, (score, gens, row)) in enumerate(ordered, start=1)
    ]


def validate_search_op(op: SearchOp) -> None:
    filters.validate_filter(op.filter)
    if op.limit < 0 or op.offset < 0:
        raise InvalidInputError(
            f"search limit and offset must be >= 0, got limit={op.limit}, offset={op.offset}"
        )


def passes(meta: dict[str, Any], filter: dict[str, Any] | None) -> bool:
    """Whether an item row's value passes ``filter`` (decoded only when there is one)."""
    return not filter or filters.matches_filter(_value(meta), filter)


def _value(meta: dict[str, Any]) -> dict[str, Any]:
    """The row's value, decoded once: kept in the row for :func:`layout.row_to_item`."""
    value: dict[str, Any] | None = meta.get(layout.DECODED_VALUE)
    if value is None:
        value = meta[layout.DECODED_VALUE] = json.loads(meta["v"])
    return value


def search_item(meta: dict[str, Any], score: float | None) -> SearchItem:
    item = layout.row_to_item(meta)
    return SearchItem(
        namespace=item.namespace,
        key=item.key,
        value=item.value,
        created_at=item.created_at,
        updated_at=item.updated_at,
        score=score,
    )
