"""Hybrid recall of messages with the keyword side ranked by the store: what
``recall_conversation`` does on a :class:`~langmem_edge.memory.core.stores.KeywordSearch`
store (``ChromaStore``), keeping nothing in process.

Every message row carries its keyword fields (:mod:`.embedded`: ``text``, ``context`` (the
turns before it, written with it), ``after`` (the turns after it, written into it by the
ingest that brings them), ``name`` and ``day``, put as keyword-only ``index`` paths),
analysed once when written. A recall asks the store for BM25F over the messages in scope
with the tier's field weights (``recall_context_weight`` for both sides, so BM25F sees the
one context the scan builds, ``recall_name_weight``, ``recall_date_weight``; the store's
``k1`` and ``b``), reads the values of the hits its vector search did not return (one
batch), and fuses them (:func:`~.recall.hybrid_ranking_plan`); the second keyword round is
one more keyword search and read. A write by any process is in the next recall.

What it costs and finds against the scan (other stores) and the per-process message index
it replaced is in ``docs/retrieval.md`` ("The keyword side kept by the store"). Messages
written before their rows carried keyword fields are found by the vector side only, until
they are written again; messages written before ``after`` existed have the turns before
them only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from langgraph.store.base import GetOp, Item, SearchOp

from langmem_edge.memory.core.plans import Call, Plan, StoreStep
from langmem_edge.memory.core.stores import KeywordSearch
from langmem_edge.memory.episodic.extraction import StoredMessage
from langmem_edge.memory.episodic.recall import hybrid_ranking_plan, message_day, stands_alone

if TYPE_CHECKING:
    from langmem_edge.memory.episodic.tier import EpisodicTier

__all__ = ["store_hybrid_plan"]

Ranking = list[tuple[str, float]]


def store_hybrid_plan(tier: EpisodicTier, query: str, prefix: tuple[str, ...],
                flt: dict[str, Any], limit: int) -> Plan[list[StoredMessage]]:
    """The store's vector ranking fused with the store's BM25F over each message's keyword
    fields (the module docstring); ``tier.store`` is a
    :class:`~langmem_edge.memory.core.stores.KeywordSearch` store."""
    cfg = tier.config
    depth = max(cfg.recall_depth, limit)
    (near,) = yield StoreStep((SearchOp(prefix, filter=flt, limit=depth, query=query),))
    items = {it.key: it for it in near if it.value.get("profile") == tier.profile}
    vector = [(it.key, float(it.score)) for it in items.values() if it.score is not None]
    weights = {"text": 1.0, "context": cfg.recall_context_weight,
               "after": cfg.recall_context_weight,
               "name": cfg.recall_name_weight, "day": cfg.recall_date_weight}

    def rank(q: str) -> Plan[Ranking]:
        hits = yield from _store_ranking(tier, q, prefix, flt, depth, weights)
        items.update((yield from _values(tier, hits, items)))
        return [(k, s) for _, k, s in hits if k in items]

    keyword = yield from rank(query)
    days = {k: str(it.value.get("day") or message_day(it.value.get("ts")))
            for k, it in items.items()}

    def text(key: str) -> str:
        return str(getattr(items.get(key), "value", {}).get("text", ""))

    fused = yield from hybrid_ranking_plan(
        query, keyword=keyword, vector=vector, days=days, rank=rank, text=text, config=cfg,
        limit=limit, alone=lambda key: stands_alone(text(key)),
        bare=lambda key: stands_alone(text(key)) or _contextless(items.get(key)))
    return [StoredMessage.from_value(key, items[key].value, score=score)
            for key, score in fused if key in items]


def _contextless(item: Item | None) -> bool:
    """Whether a message row lost its keyword context to a long message just before it (the
    row's context holds the turns before it only: a later message that is not its session's
    first, with no ``context``); rows written before embedded fields are taken to have one."""
    return (item is not None and "embed_text" in item.value and "context" not in item.value
            and "after" not in item.value and int(item.value.get("seq", 0)) > 0)


def _store_ranking(tier: EpisodicTier, query: str, prefix: tuple[str, ...],
                   flt: dict[str, Any], limit: int, weights: dict[str, float]
                   ) -> Plan[list[tuple[tuple[str, ...], str, float]]]:
    """The store's BM25F ranking of the messages under ``prefix``: ``(namespace, key,
    score)``. The profile is the prefix's; a filter beyond it (contact, role) goes to the
    store."""
    extra = {k: v for k, v in flt.items() if k != "profile"}
    store = cast(KeywordSearch, tier.store)
    hits = yield Call(store.keyword_search, store.akeyword_search,
                      (prefix, query), {"limit": limit, "filter": flt if extra else None,
                                        "field_weights": weights})
    return [(tuple(h.namespace), h.key, float(h.score)) for h in hits
            if tuple(h.namespace[:len(prefix)]) == prefix]


def _values(tier: EpisodicTier, hits: Sequence[tuple[tuple[str, ...], str, float]],
            known: dict[str, Item]) -> Plan[dict[str, Item]]:
    """The items of ``hits`` not in ``known``, read in one batch (this profile's only)."""
    missing = {k: ns for ns, k, _ in hits if k not in known}
    if not missing:
        return {}
    got = yield StoreStep(tuple(GetOp(ns, k) for k, ns in missing.items()))
    return {it.key: it for it in got
            if it is not None and it.value.get("profile") == tier.profile}
