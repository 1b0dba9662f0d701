"""Where recall's ranked lists come from: its channels over the profile read for the
operation (keyword, exact key, dates, vectors ranked in process or by the store) and, for a
profile too large to read whole, the store's candidates. :mod:`.recall` fuses and scores
them; :class:`Scope` is what a recall may return."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, cast

from langgraph.store.base import GetOp, SearchOp

from langmem_edge.memory.core.dates import DateWindow
from langmem_edge.memory.core.plans import Call, Plan, batch
from langmem_edge.memory.core.stores import KeywordSearch, NearestKeys
from langmem_edge.memory.index.profile_index import ProfileIndex, admits
from langmem_edge.memory.index.store_io import (
    LOAD_LIMIT,
    plan_query_vector,
)
from langmem_edge.memory.index.store_io import fill as fill_index
from langmem_edge.memory.records import LIVE
from langmem_edge.memory.semantic.context import ProfileContext

__all__ = ["Scope", "confidence", "key_channel", "keyword_channel", "plan_nearest",
           "plan_store_candidates", "plan_widening_nearest", "temporal_channel", "vector_hits",
           "vector_ops"]

logger = logging.getLogger(__name__)


@dataclass
class Scope:
    """What a recall may return."""

    profile: str
    scopes: tuple[str, ...]
    kinds: tuple[str, ...] | None
    writer: str | None
    min_confidence: float
    t: float
    as_of: bool

    def admits(self, v: dict[str, Any]) -> bool:
        """Whether a stored value may be returned: this profile's, active unless an
        ``at(ts)`` view asks, and :func:`~langmem_edge.memory.index.profile_index.admits`."""
        return (v.get("profile") == self.profile
                and (self.as_of or v.get("status") == "active")
                and admits(v, t=self.t, as_of=self.as_of, scopes=self.scopes, kinds=self.kinds,
                           writer=self.writer, min_confidence=self.min_confidence))


def keyword_channel(index: ProfileIndex, query: str, depth: int, accept: Callable[[str], bool]
                    ) -> list[tuple[str, float]]:
    """BM25 hits of the profile index (the seam a store-side keyword search replaces)."""
    hits = index.keyword(query, limit=depth, admissible=accept)
    return sorted(hits, key=lambda h: (-h[1], -confidence(index, h[0])))  # stable


def confidence(index: ProfileIndex, mid: str) -> float:
    """Equal channel scores rank the more confident memory first (a reflection's learning,
    0.85, before a per-turn fact saying the same, 0.5), then the older."""
    return float(index.values.get(mid, {}).get("confidence", 0.0))


def key_channel(index: ProfileIndex, query: str, depth: int, accept: Callable[[str], bool]
                ) -> list[tuple[str, float]]:
    """Memories whose key matches the query (:meth:`ProfileIndex.match_keys`): 2 when the
    key is the query; else, when a word of the key's last segment (``ui_theme`` in
    ``preference.ui_theme``) occurs in the query, the share of all the key's words that do."""
    hits: list[tuple[str, float]] = []
    for sk, score in index.match_keys(query):
        hits.extend((mid, score) for mid in index.by_key.get(sk, ()) if accept(mid))
    hits.sort(key=lambda h: (h[1], h[0]), reverse=True)  # ids are time-ordered: newest first
    return hits[:depth]


def temporal_channel(index: ProfileIndex, window: DateWindow, depth: int,
                     accept: Callable[[str], bool]) -> list[tuple[str, float]]:
    """Admissible memories whose ``valid_from`` falls in ``window``, newest first."""
    hits = [(mid, ts) for mid, ts in index.valid_from_between(window.start.timestamp(),
                                                              window.end.timestamp())
            if accept(mid)]
    hits.sort(key=lambda h: (-h[1], h[0]))
    return hits[:depth]


def vector_ops(ctx: ProfileContext, scope: Scope, text: str, depth: int) -> list[SearchOp]:
    ops = []
    for s in scope.scopes:
        flt: dict[str, Any] = {"scope": s}
        if scope.as_of:
            flt["profile"] = ctx.profile
        else:
            flt[LIVE] = ctx.profile  # active records of this profile
        if scope.kinds is not None and len(scope.kinds) == 1:
            flt["kind"] = scope.kinds[0]
        if scope.writer is not None:
            flt["writer"] = scope.writer
        ops.append(SearchOp(ctx.layout.memories, filter=flt, limit=depth, query=text))
    return ops


def vector_hits(ctx: ProfileContext, results: Sequence[Any], scope: Scope, depth: int
                 ) -> list[tuple[str, float]]:
    floor = ctx.config.recall.vector_min_score
    best: dict[str, float] = {}
    for items in results:
        for item in items:
            if item.score is None or item.score < floor:
                continue
            # the copy read with the search is the one to judge (one batch read both)
            v = ctx.index.values.get(item.key)
            if v is not None and scope.admits(v):
                best[item.key] = max(best.get(item.key, -1.0), float(item.score))
    return sorted(best.items(), key=lambda h: (-h[1], -confidence(ctx.index, h[0]), h[0]))[:depth]


def plan_nearest(ctx: ProfileContext, text: str, depth: int, accept: Callable[[str], bool]
                  ) -> Plan[list[tuple[str, float]]]:
    """The vector channel on a :class:`NearestKeys` store: keys only, admitted by the index.

    Asks for ``depth`` keys and a quarter more (plus 5), and four times more while too few
    are admissible, the store had more to give and the last ones still clear
    ``vector_min_score``."""
    floor = ctx.config.recall.vector_min_score
    if ctx.index.vectors is not None and ctx.index.complete:  # read with the profile
        query = yield from plan_query_vector(ctx.store, text)
        ranked = [h for h in ctx.index.nearest(query, accept) if h[1] >= floor]
        ranked.sort(key=lambda h: (-h[1], -confidence(ctx.index, h[0]), h[0]))
        return ranked[:depth]
    hits = yield from plan_widening_nearest(ctx, text, depth + depth // 4 + 5, floor=floor,
                                            keep=accept, enough=depth,
                                            most=len(ctx.index.values))
    hits.sort(key=lambda h: (-h[1], -confidence(ctx.index, h[0]), h[0]))
    return hits[:depth]


def plan_widening_nearest(ctx: ProfileContext, text: str, ask: int, *, floor: float,
                          keep: Callable[[str], bool], enough: int, most: int,
                          skip: Collection[str] = (), read_missing: bool = False
                          ) -> Plan[list[tuple[str, float]]]:
    """The profile's records the store finds nearest to ``text`` (``nearest_keys``, keys
    only, superseded ones too) that score at least ``floor``, are not in ``skip`` and that
    ``keep`` accepts, as ``(key, score)`` in the store's order. Asks for ``ask`` and four
    times more while fewer than ``enough`` are kept, the store had more to give, the last
    still cleared ``floor`` and ``ask`` is under ``most``. ``read_missing``: the values of
    the close records ``ctx.index`` lacks are read each round (``keep`` judges by them)."""
    near = cast(NearestKeys, ctx.store)
    while True:
        found = yield Call(near.nearest_keys, near.anearest_keys,
                           (ctx.layout.memories, text),
                           {"limit": ask, "first_text_only": True})  # a record embeds one
        close = [h for h in found if h.score >= floor and h.namespace == ctx.layout.memories
                 and h.key not in skip]
        missing = [h.key for h in close if h.key not in ctx.index.values] if read_missing else []
        if missing:
            got = yield batch(ctx.store, [GetOp(ctx.layout.memories, k) for k in missing])
            for it in got:
                if it is not None and it.value.get("id") == it.key:
                    ctx.index.apply(it.value)
        hits = [(h.key, float(h.score)) for h in close if keep(h.key)]
        if (len(hits) >= enough or len(found) < ask or found[-1].score < floor
                or ask >= most):
            return hits
        ask *= 4


def plan_store_candidates(ctx: ProfileContext, query: str, limit: int | None,
                          vector_texts: Sequence[tuple[str, str]], depth: int
                          ) -> Plan[dict[str, list[tuple[str, float]]]]:
    """A large profile's recall (``index/store_io.py`` ``WHOLE_READ_MAX``): the store ranks
    its memories by vector (``nearest_keys``) and by keyword (``keyword_search``, BM25 with
    the profile's statistics); an exact key is a filtered search, and the most recently
    written memories stand in for the relevance fill's pool. Those candidates are read (with
    the profile's access counts) into ``ctx.index``, so every channel and the fill work on
    them as on a whole profile. Returns the store's rankings, by channel, to be admitted."""
    ask = 2 * depth + 10
    layout = ctx.layout
    out: dict[str, list[tuple[str, float]]] = {}
    for label, text in vector_texts:
        try:
            near = cast(NearestKeys, ctx.store)
            found = yield Call(near.nearest_keys, near.anearest_keys,
                               (layout.memories, text),
                               {"limit": ask, "first_text_only": True})
            out[label] = [(h.key, float(h.score)) for h in found
                          if h.namespace == layout.memories
                          and h.score >= ctx.config.recall.vector_min_score]
        except Exception as e:
            logger.warning("vector search failed (%s); channel %s skipped", e, label)
    if ctx.config.recall.keyword_source == "local":
        ranked = cast(KeywordSearch, ctx.store)
        found = yield Call(ranked.keyword_search, ranked.akeyword_search,
                           (layout.memories, query), {"limit": ask})
        out["keyword"] = [(h.key, float(h.score)) for h in found
                          if h.namespace == layout.memories]
    wanted = {k for hits in out.values() for k, _ in hits}
    key_op = SearchOp(layout.memories, filter={"key": query.strip()}, limit=ask)
    recent_op = SearchOp(layout.memories, limit=max(ask, (limit or 0) * 2))
    counts_op = SearchOp(layout.access, limit=LOAD_LIMIT)
    got = yield batch(ctx.store, [key_op, recent_op, counts_op,
                                  *(GetOp(layout.memories, k) for k in sorted(wanted))])
    keyed, recent, counts, *items = got
    fill_index(ctx.index, [it for it in [*keyed, *recent, *items] if it is not None], counts,
               complete=False)
    return out


