"""Hybrid ranking of ``ChromaStore``: weighted RRF of the vector, keyword and key channels.

``hybrid_search`` / ``explain_search`` (and their async twins) rank hybrid whatever the
store's ``ranking``; ``search(query=...)`` does when ``ranking="hybrid"``. See
:mod:`langmem_edge.store.search` for the two rankings and :mod:`langmem_edge.retrieval`
for the channels and the fusion.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from langgraph.store.base import SearchItem, SearchOp

from langmem_edge._twins import threaded
from langmem_edge.errors import ConfigurationError, InvalidInputError
from langmem_edge.retrieval import HybridConfig
from langmem_edge.retrieval.config import resolve_hybrid_config
from langmem_edge.retrieval.fusion import FusedHit
from langmem_edge.retrieval.hybrid import active_channels, channel_depth, fuse
from langmem_edge.store import layout
from langmem_edge.store.ranking import (
    ADMIT_SLACK,
    CANDIDATE_FACTOR,
    RANKINGS,
    ExplainedItem,
    Hit,
    Ranking,
    passes,
    search_item,
    validate_search_op,
)

logger = logging.getLogger(__name__)

__all__ = ["PER_CALL_OPTIONS", "HybridMixin"]

PER_CALL_OPTIONS = frozenset({"weights", "rrf_k", "depth"})
"""Hybrid options a single call may override (the keyword analyser is store-wide)."""


class HybridMixin:
    """Hybrid search of ``ChromaStore`` (needs its vector round, keyword channels and rows)."""

    hybrid_config: HybridConfig
    _fields: list[tuple[str, Any]]
    _keyword_rankings: Callable[..., dict[str, list[tuple[str, float]]]]
    _clock: Callable[[], float]
    _write_epoch: int
    _get_items: Callable[..., dict[str, dict[str, Any]]]
    _read_rows: Callable[..., list[dict[str, Any] | None]]
    _embed_queries: Callable[[list[str]], dict[str, list[float]]]
    _search_one: Callable[..., list[tuple[ExplainedItem, dict[str, Any]]]]
    _vector_round: Callable[..., tuple[list[Hit], int]]
    _within_prefix: Callable[[list[Hit], tuple[str, ...]], list[Hit]]
    _current: Callable[[list[Hit]], list[Hit]]
    _rows_from: Callable[..., None]
    _should_refresh: Callable[[bool | None], bool]
    _refresh_ttl: Callable[..., None]

    def hybrid_search(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        hybrid: HybridConfig | None = None,
        refresh_ttl: bool | None = None,
    ) -> list[SearchItem]:
        """``search`` ranked by hybrid fusion whatever the store's ``ranking``.

        ``hybrid`` overrides ``weights``, ``rrf_k`` or ``depth`` for this call, e.g.
        ``{"weights": {"vector": 0.5}}``.
        """
        explained = self.explain_search(
            namespace_prefix,
            query=query,
            filter=filter,
            limit=limit,
            offset=offset,
            hybrid=hybrid,
            refresh_ttl=refresh_ttl,
        )
        return [e.item for e in explained]

    def explain_search(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        hybrid: HybridConfig | None = None,
        ranking: Ranking = "hybrid",
        refresh_ttl: bool | None = None,
    ) -> list[ExplainedItem]:
        """Search and return, for each result, its rank and raw score in every channel."""
        op = SearchOp(tuple(namespace_prefix), filter, limit, offset, query, False)
        layout.checked_op(op)
        validate_search_op(op)
        if ranking not in RANKINGS:
            raise InvalidInputError(f"ranking must be one of {RANKINGS}, got {ranking!r}")
        cfg = self._call_config(hybrid)
        now = self._clock()
        epoch = self._write_epoch
        vectors = self._embed_queries([query]) if query else {}
        found = self._search_one(op, vectors, ranking, cfg, now)
        if self._should_refresh(refresh_ttl):
            self._refresh_ttl(
                {layout.item_id(e.item.namespace, e.item.key): m for e, m in found},
                now,
                read_at=epoch,
            )
        return [e for e, _ in found]

    ahybrid_search = threaded(hybrid_search)
    aexplain_search = threaded(explain_search)

    def _call_config(self, hybrid: HybridConfig | None) -> HybridConfig:
        if not hybrid:
            return self.hybrid_config
        extra = set(hybrid) - PER_CALL_OPTIONS
        if extra:
            raise ConfigurationError(
                f"per-call hybrid options may only set {sorted(PER_CALL_OPTIONS)}; "
                f"{sorted(extra)} are store-wide (ChromaStore(hybrid=...))"
            )
        return resolve_hybrid_config(self.hybrid_config, hybrid)

    def _admit_lists(
        self,
        lists: dict[str, list[tuple[str, float]]],
        op: SearchOp,
        want: int,
        now: float,
        rows: dict[str, dict[str, Any]],
    ) -> dict[str, list[tuple[str, float]]]:
        """Several channels' rankings cut to their first ``want`` admitted items (alive, passing
        the filter), reading the item rows of all channels together: one ``get`` per round
        for the union of the candidates not yet in ``rows`` (which it fills)."""
        out: dict[str, list[tuple[str, float]]] = {name: [] for name in lists}
        pos = dict.fromkeys(lists, 0)
        rejected: set[str] = set()
        while True:
            slices = {}
            for name, ranked in lists.items():
                short = want - len(out[name])
                if short > 0 and pos[name] < len(ranked):
                    slices[name] = ranked[pos[name] : pos[name] + short + ADMIT_SLACK]
                    pos[name] += len(slices[name])
            if not slices:
                return out
            missing = {i for part in slices.values() for i, _ in part} - rows.keys() - rejected
            fetched = self._get_items(ids=sorted(missing), now=now) if missing else {}
            for iid in missing:
                meta = fetched.get(iid)
                if meta is not None and passes(meta, op.filter):
                    rows[iid] = meta
                else:
                    rejected.add(iid)
            for name, part in slices.items():
                room = want - len(out[name])
                out[name].extend([(i, sc) for i, sc in part if i in rows][:room])

    def _search_hybrid(
        self, op: SearchOp, query_vector: list[float] | None, cfg: HybridConfig, now: float
    ) -> list[tuple[ExplainedItem, dict[str, Any]]]:
        assert op.query
        want = op.offset + op.limit
        depth = channel_depth(cfg, limit=op.limit, offset=op.offset)
        channels = active_channels(cfg)
        rankings: dict[str, list[tuple[str, float]]] = {}
        rows: dict[str, dict[str, Any]] = {}
        found: dict[str, list[tuple[str, float]]] = {}

        # a small prefix's rows, read whole by the vector channel (no filter: every row)
        documents: dict[str, str] = {}
        if "vector" in channels and query_vector is not None:
            # One round (two when the namespace is rare): a slightly short vector list only
            # shortens that channel's contribution, and its rows are read with the others'.
            factor = CANDIDATE_FACTOR if op.filter else 1
            n = depth * factor * max(1, len(self._fields)) + 10
            filtered = not op.namespace_prefix  # no prefix: nothing for Chroma to filter on
            hits, returned = self._vector_round(op, query_vector, n, filtered=filtered,
                                                documents=None if op.filter else documents)
            if not filtered and not documents:  # read by the prefix: all within it
                hits = self._within_prefix(hits, tuple(op.namespace_prefix))
                if len(hits) < depth and returned == n:
                    hits, _ = self._vector_round(op, query_vector, n, filtered=True)
            self._rows_from(documents, [h.item_id for h in hits], now, rows)  # names, gens
            found["vector"] = [(h.item_id, h.score) for h in self._current(hits)]
        if {"keyword", "key"} & set(channels):
            try:
                # With a filter, rank every match: the filter may reject many.
                limit = None if op.filter else depth + ADMIT_SLACK
                found.update(self._keyword_rankings(
                    tuple(op.namespace_prefix), op.query,
                    [c for c in channels if c in ("keyword", "key")], limit,
                    documents=documents or None))
            except Exception:
                logger.warning("keyword channels failed; ranking by the others", exc_info=True)
        if op.filter:
            # Ranks are counted among the items that pass the whole filter, in every channel.
            rankings.update(self._admit_lists(found, op, depth, now, rows))
            fused = fuse(rankings, cfg, limit=want)[op.offset :]
        else:
            # The channels already kept to the prefix; only expiry is left to check, so the
            # rows of the fused list are read lazily, a page at a time (none when the
            # prefix's rows were read whole).
            fused = self._admit_fused(fuse(found, cfg), want, now, rows, documents)[op.offset :]
        return [
            (ExplainedItem(search_item(rows[h.id], h.score), h.explain()), rows[h.id])
            for h in fused
        ]

    def _admit_fused(
        self, fused: list[FusedHit], want: int, now: float, rows: dict[str, dict[str, Any]],
        documents: dict[str, str],
    ) -> list[FusedHit]:
        """The first ``want`` fused hits whose items are alive, reading rows in slices; from
        ``documents`` when they hold every row of the prefix (nothing to read)."""
        if documents:
            kept = []
            for h in fused:
                if len(kept) == want:
                    break
                self._rows_from(documents, [h.id], now, rows)
                if h.id in rows:
                    kept.append(h)
            return kept
        kept = []
        start = 0
        while start < len(fused) and len(kept) < want:
            chunk = fused[start : start + want - len(kept) + ADMIT_SLACK]
            start += len(chunk)
            rows.update(self._get_items(ids=[h.id for h in chunk], now=now))
            kept.extend(h for h in chunk if h.id in rows)
        return kept[:want]
