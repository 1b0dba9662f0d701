"""Query-less search of ``ChromaStore``: newest-updated first, reading about what it returns.

Chroma's ``get`` cannot sort, so a listing reads a *window* of recently updated rows
(:meth:`ListingMixin._search_unranked`) whose threshold comes from :class:`ListingHints`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from langgraph.store.base import SearchOp

from langmem_edge._chroma import join_labels, split_labels
from langmem_edge.store import layout
from langmem_edge.store.ranking import ExplainedItem, passes, search_item

__all__ = [
    "MAX_LISTING_HINT",
    "MAX_EXPIRED_SKIPPED",
    "MAX_LISTING_KEYS",
    "MIN_WHOLE_LISTING",
    "MIN_OFFSET_BETWEEN",
    "ListingHints",
    "ListingMixin",
]

MAX_LISTING_HINT = 10_000
"""Listing positions whose update times a store remembers per (prefix, filter)."""

MIN_OFFSET_BETWEEN = 250
"""Offset from which a page without a filter is placed by id-only reads and only its rows are
read whole (:meth:`ListingMixin._page_between`) instead of reading every row from the newest
on (one ``get`` of ``offset + limit`` rows). ``benchmarks/listing_routes.py`` at 10,000 items
(p50, limit 10): offset 90, 7.1 ms counting against 5.2 reading; 290, 10.6 against 11.8; 590,
15.8 against 21.9."""

MAX_EXPIRED_SKIPPED = 1000
"""Most expired rows (not swept yet) a page placed by counting reads by id; with more, the page
is read from the newest row on."""

MAX_LISTING_KEYS = 4096
"""(prefix, filter) pairs whose listing hints a store remembers (then it starts over)."""

MIN_WHOLE_LISTING = 100
"""``offset + limit`` from which a query-less search is taken to read its whole prefix, so
that several in one batch share one Chroma read (:meth:`ListingMixin._list_together`)."""


class ListingMixin:
    """Query-less search (needs the store's item scan and search ``where``)."""

    _listing_hints: ListingHints
    _call: Callable[..., Any]
    _items: Any
    _scan_items: Callable[..., list[dict[str, Any]]]
    _get_rows: Callable[..., layout.Rows]
    _row_dims: int
    _search_where: Callable[[SearchOp], dict[str, Any] | None]

    def _search_unranked(
        self, op: SearchOp, now: float, vectors: dict[tuple[str, str], Any] | None = None
    ) -> list[tuple[ExplainedItem, dict[str, Any]]]:
        """Newest-updated first (then namespace, key): the page ``offset:offset + limit``.

        Chroma's ``get`` cannot sort, so the store reads a *window*: the rows updated at or
        after a threshold ``T``, sorted here. If at least ``offset + limit`` rows of the window
        pass the filter and are alive, they are exactly the first ones of the whole order
        (every row newer than the last of them is in the window), so the page is exact; if not,
        the whole prefix is read. ``T`` comes from :class:`ListingHints`, the update times
        this process saw at each position the last time it read the prefix in full: a
        hint, never trusted (a wrong one costs one read of the whole prefix, never a wrong
        page). So a page costs one ``get`` of about ``offset + limit`` rows once the prefix
        was read once in this process; from ``MIN_OFFSET_BETWEEN`` on, without a filter, an
        id-only count and one ``get`` of about ``limit`` rows (:meth:`_page_between`).
        """
        want = op.offset + op.limit
        if want <= 0:
            return []
        key = _hint_key(op)
        far = op.offset >= MIN_OFFSET_BETWEEN and not op.filter
        page = self._page_between(op, key, now, vectors) if far else None
        if page is not None:
            return page
        where = self._search_where(op)
        threshold = self._listing_hints.threshold(key, want)
        rows: list[dict[str, Any]] | None = None
        if threshold is not None:
            recent = layout.and_where([where, {"ua": {"$gte": threshold}}])
            window = [m for m in self._scan_items(recent, now, vectors)
                      if passes(m, op.filter)]
            if len(window) >= want:
                rows = window
        if rows is None:
            whole = [m for m in self._scan_items(where, now, vectors) if passes(m, op.filter)]
            return self._page_of_whole(op, whole)
        rows.sort(key=newest_first)
        self._listing_hints.refine(key, [float(m["ua"]) for m in rows])
        return _page(rows, op.offset, op.limit)

    def _page_of_whole(
        self, op: SearchOp, rows: list[dict[str, Any]]
    ) -> list[tuple[ExplainedItem, dict[str, Any]]]:
        """``op``'s page of every live row under its prefix that passes its filter (sorted
        here); the rows' update times become the prefix's listing hints."""
        rows.sort(key=newest_first)
        self._listing_hints.learn(_hint_key(op), [float(m["ua"]) for m in rows])
        return _page(rows, op.offset, op.limit)

    def _list_together(
        self, ops: list[tuple[int, SearchOp]], now: float,
        vectors: dict[tuple[str, str], Any] | None = None,
    ) -> dict[int, list[tuple[ExplainedItem, dict[str, Any]]]]:
        """The pages of the batch's whole-prefix listings (no query, ``offset + limit`` at
        least :data:`MIN_WHOLE_LISTING`) whose prefixes have one depth: one Chroma read of
        them all, ``p{d} $in [...]``, and with a filter among them, ``$and`` an ``$or`` of
        each listing's ``where`` (prefix and pushed-down filter); split here, each row checked
        against each listing's prefix and whole filter, each page as
        :meth:`_search_unranked` gives it when it reads the whole prefix. Chroma evaluates a
        ``where`` by scanning the collection, so three listings cost one scan, not three
        (measured at 60k rows: 12 ms against 31; ``docs/store.md``); the ``$in`` keeps the
        read on Chroma's index (an ``$or`` at the top of the ``where`` scans every row: 26.9 ms
        against 7.7 for two reads at 100,000 rows, ``benchmarks/profile_read.py``). Keyed by
        the ops' positions; ops not listed together are left to :meth:`_search_unranked`."""
        by_depth: dict[int, list[tuple[int, SearchOp]]] = {}
        for i, op in ops:
            if (not op.query and op.namespace_prefix
                    and op.offset + op.limit >= MIN_WHOLE_LISTING
                    and op.offset < MIN_OFFSET_BETWEEN):
                by_depth.setdefault(len(op.namespace_prefix), []).append((i, op))
        out: dict[int, list[tuple[ExplainedItem, dict[str, Any]]]] = {}
        for depth, group in by_depth.items():
            wheres: dict[str, dict[str, Any]] = {}
            for _, op in group:
                where = self._search_where(op)
                wheres.setdefault(json.dumps(where, sort_keys=True), where)
            if len(wheres) < 2:
                continue
            field = f"p{depth}"
            where = {field: {"$in": sorted({join_labels(op.namespace_prefix)
                                            for _, op in group})}}
            if any(op.filter for _, op in group):
                where = {"$and": [where, {"$or": list(wheres.values())}]}
            rows = self._scan_items(where, now, vectors)
            labels = [split_labels(m["ns"])[:depth] for m in rows]
            for i, op in group:
                prefix = tuple(op.namespace_prefix)
                out[i] = self._page_of_whole(op, [
                    m for m, ns in zip(rows, labels, strict=True)
                    if ns == prefix and passes(m, op.filter)])
        return out

    def _page_between(
        self, op: SearchOp, key: tuple[tuple[str, ...], str], now: float,
        vectors: dict[tuple[str, str], Any] | None = None,
    ) -> list[tuple[ExplainedItem, dict[str, Any]]] | None:
        """A later page without a filter, reading about ``3 * limit`` rows: those updated
        within ``[lo, hi]``, the hinted update times ``limit`` positions past the page's last
        and before its first (so up to ``limit`` rows written or deleted ahead of the page
        since the hints were taken leave it inside).

        Three id-only reads place it: the prefix's rows updated at or after ``lo``, then those
        updated after ``hi`` (their number, less the expired ones, is how many rows come
        before the window), then the expired rows of the store (few: the sweeper deletes
        them). The window is the first set less the other two, and only its rows are read
        whole. Each read names one range of ``ua`` and the prefix, which Chroma answers from
        its indexes; a range on both sides, or ``exp > now`` (true of nearly every row), made
        Chroma intersect sets of nearly every row (``benchmarks/listing_routes.py``). A row
        rewritten between the reads is newer than ``hi`` in the second and so not in the
        window; one rewritten later, or a window that does not reach the page, returns None
        (the caller reads from the newest row on)."""
        bounds = self._listing_hints.bounds(key, op.offset, op.limit, margin=op.limit)
        if bounds is None:
            return None
        lo, hi = bounds
        prefix = layout.prefix_where(tuple(op.namespace_prefix))
        since = self._call(self._items.get, where=layout.and_where([prefix, {"ua": {"$gte": lo}}]),
                           include=[])["ids"]
        newer = set(self._call(self._items.get,
                               where=layout.and_where([prefix, {"ua": {"$gt": hi}}]),
                               include=[])["ids"])
        expired = self._call(self._items.get, where={"exp": {"$lte": now}}, include=[],
                             limit=MAX_EXPIRED_SKIPPED + 1)["ids"]
        if len(expired) > MAX_EXPIRED_SKIPPED:
            return None
        gone = set(expired)
        start = op.offset - len(newer - gone)
        window = [i for i in since if i not in newer and i not in gone]
        if start < 0 or start + op.limit > len(window):
            return None
        rows = self._get_rows(window, now=now, vectors=vectors is not None and self._row_dims > 0)
        if any(not lo <= float(m["ua"]) <= hi for m in rows.metas.values()):
            return None  # rewritten after the reads: its place is not known
        if vectors is not None:
            vectors.update(((m["ns"], m["k"]), rows.vectors[i]) for i, m in rows.metas.items()
                           if m.get("nv") and i in rows.vectors)
        page = sorted(rows.metas.values(), key=newest_first)
        if start + op.limit > len(page):
            return None
        return _page(page, start, op.limit)


def _page(
    rows: list[dict[str, Any]], start: int, limit: int
) -> list[tuple[ExplainedItem, dict[str, Any]]]:
    return [(ExplainedItem(search_item(m, None)), m) for m in rows[start : start + limit]]


def newest_first(meta: dict[str, Any]) -> tuple[float, str, str]:
    return (-float(meta["ua"]), meta["ns"], meta["k"])


def _hint_key(op: SearchOp) -> tuple[tuple[str, ...], str]:
    return tuple(op.namespace_prefix), json.dumps(op.filter or {}, sort_keys=True, default=str)


class ListingHints:
    """Per process: for each (prefix, filter) listed, the update times of its rows in listing
    order, as last seen (at most ``MAX_LISTING_HINT`` positions; ``MAX_LISTING_KEYS`` keys,
    then it starts over). Only ever used as a window threshold that the read checks."""

    def __init__(self) -> None:
        self._times: dict[tuple[tuple[str, ...], str], list[float]] = {}
        self._lock = threading.Lock()

    def threshold(self, key: tuple[tuple[str, ...], str], want: int) -> float | None:
        """A ``ua`` threshold expected to keep ``want`` rows, or None (no hint)."""
        times = self._times.get(key)
        if not times or len(times) < want:
            return None
        return times[want - 1]

    def bounds(
        self, key: tuple[tuple[str, ...], str], offset: int, limit: int, margin: int = 0
    ) -> tuple[float, float] | None:
        """The hinted update times at positions ``offset + limit - 1 + margin`` (or the last
        known) and ``offset - margin`` (or the first), or None when the page's positions are
        not all known."""
        times = self._times.get(key)
        if not times or len(times) < offset + limit or limit <= 0:
            return None
        return (times[min(len(times) - 1, offset + limit - 1 + margin)],
                times[max(0, offset - margin)])

    def learn(self, key: tuple[tuple[str, ...], str], times: list[float]) -> None:
        """The whole prefix was read: ``times`` are its rows' update times, newest first."""
        with self._lock:
            if len(self._times) >= MAX_LISTING_KEYS:
                self._times.clear()
            self._times[key] = times[:MAX_LISTING_HINT]

    def refine(self, key: tuple[tuple[str, ...], str], window: list[float]) -> None:
        """A window was read: its times are exact for the first positions; keep the older
        hints behind them."""
        with self._lock:
            old = self._times.get(key, [])
            tail = [t for t in old if t < window[-1]] if window else old
            self._times[key] = (window + tail)[:MAX_LISTING_HINT]
