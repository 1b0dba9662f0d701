"""Search for ``ChromaStore``: unranked listing, vector ranking, and hybrid ranking.

Two rankings, chosen store-wide by ``ChromaStore(ranking=...)`` for ``search(query=...)`` and
per call by :meth:`SearchMixin.hybrid_search`:

``"vector"`` (the default)
    InMemoryStore's order and scores exactly: cosine similarity of the query to the item's
    best-matching vector; items without vectors follow, unscored, when the page is not full.
    The default because ``ChromaStore`` is a drop-in for ``InMemoryStore``: code that
    thresholds ``SearchItem.score`` as a cosine keeps working.

``"hybrid"``
    Weighted reciprocal rank fusion of three channels, each restricted to the namespace prefix,
    the filter and live items before ranks are counted: vector (as above), keyword (BM25 over
    the index ``fields`` texts, stemmed, stopwords removed; :mod:`langmem_edge.store.keyword`) and
    exact key (key segments split on ``. : / _ -`` equal to a query token).
    ``score = sum(weight / (rrf_k + rank))`` over the channels that ranked the item (higher is
    better; with the defaults at most ``3.5 / 61``, about 0.057). A channel that fails is
    logged and left out; a query without usable terms ranks by vector alone.

The channels run one after the other: measured on two cores, running the keyword side on a
thread saved nothing (docs/retrieval.md).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from langchain_core.embeddings import Embeddings
from langgraph.store.base import Result, SearchOp

from langmem_edge import _chroma
from langmem_edge._twins import threaded
from langmem_edge.errors import ConfigurationError, EmbeddingError, InvalidInputError
from langmem_edge.retrieval import HybridConfig
from langmem_edge.retrieval.vectors import cosine_distances
from langmem_edge.store import filters, layout
from langmem_edge.store.listing import newest_first
from langmem_edge.store.names import Generations, ItemNames
from langmem_edge.store.ranking import (
    ADMIT_SLACK,
    CANDIDATE_FACTOR,
    ExplainedItem,
    Hit,
    KeyHit,
    Ranking,
    current_hits,
    passes,
    pool_vector_hits,
    search_item,
    validate_search_op,
)

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

MAX_UNFILTERED_CANDIDATES = 400
"""Largest neighbour list asked for without a ``where`` before letting Chroma filter. Measured
at 10k vectors: an unfiltered k=160 query 10 ms, k=1,142 55 ms; a query filtered to a tenth
of the rows ~20 ms whatever k: past ~400 candidates filtering is cheaper."""

UNFILTERED_MIN_SHARE = 0.5
"""Share of a query's neighbours that a prefix must have held (the last time it was asked
unfiltered) for its next search to ask Chroma without a ``where`` first. Below it the
``where`` goes with the query: at 10,000 items in 10 namespaces the unfiltered tries returned
0.972 of the exact top ten, the filtered query all of it (``benchmarks/store_peers.py``)."""

MIN_SHARE_SAMPLE = 20
"""Neighbours an unfiltered round must return for its prefix share to be remembered."""

MAX_SHARES_KEPT = 4096
"""Prefixes whose share of the neighbours a store remembers (then it starts over); also the
prefixes remembered as too large to rank in process."""

LOCAL_RANK_ROWS = 300
"""Largest number of vector rows under a prefix that a filtered round ranks in process (their
vectors read by ``where`` and scored with numpy) instead of by Chroma's filtered query.
Chroma evaluates a filtered query by scanning the collection: measured on chromadb 1.5.9 with
384-dim vectors (``benchmarks/chroma_filter_cost.py --vectors``, ``docs/benchmarks.md``), a
query filtered to 20 rows of 60k costs ~10x reading those rows' vectors and scoring them, to
200 rows ~2.5x, to 1,000 rows 0.2-0.7x (reading vectors costs ~25 us a row)."""



class SearchMixin:
    """Search behaviour of ``ChromaStore`` (needs its collections, caller and index)."""

    embeddings: Embeddings | None
    ranking: Ranking
    hybrid_config: HybridConfig
    _call: _chroma.ChromaCaller
    _clock: Callable[[], float]
    _items: Any
    _vectors: Any
    _fields: list[tuple[str, Any]]
    _get_items: Callable[..., dict[str, dict[str, Any]]]
    _scan_items: Callable[..., list[dict[str, Any]]]
    _should_refresh: Callable[[bool | None], bool]
    _refresh_ttl: Callable[..., None]
    _write_lock: threading.Lock
    _names: ItemNames
    _gens: Generations
    _write_epoch: int
    _prefix_share: dict[tuple[str, ...], float]
    _large_prefixes: dict[tuple[str, ...], int]
    _list_together: Callable[..., dict[int, list[tuple[ExplainedItem, dict[str, Any]]]]]
    _read_rows: Callable[..., list[dict[str, Any] | None]]

    # -- entry points ------------------------------------------------------------------------

    def _run_searches(
        self,
        searches: list[tuple[int, SearchOp]],
        results: list[Result],
        refresh: dict[str, dict[str, Any]],
        now: float,
        rows_vectors: dict[tuple[str, str], Any] | None = None,
    ) -> None:
        """Answer ``searches``; ``rows_vectors``: where query-less ones put the first vector
        of each item they read (``batch_vectors``)."""
        for _, op in searches:
            validate_search_op(op)
        queries = sorted({op.query for _, op in searches if op.query})
        vectors = self._embed_queries(queries) if queries else {}
        listed = (self._list_together(searches, now, rows_vectors) if len(searches) > 1
                  else {})
        for i, op in searches:
            found = listed.get(i)
            if found is None and not op.query:
                found = self._search_unranked(op, now, rows_vectors)
            if found is None:
                found = self._search_one(op, vectors, self.ranking, self.hybrid_config, now)
            results[i] = [e.item for e, _ in found]
            if self._should_refresh(op.refresh_ttl):
                for e, meta in found:
                    if meta.get("ttl"):  # only an item with a TTL has an expiry to push back
                        refresh[layout.item_id(e.item.namespace, e.item.key)] = meta

    def nearest_keys(
        self, namespace_prefix: tuple[str, ...], /, query: str, *, limit: int = 10,
        first_text_only: bool = False,
    ) -> list[KeyHit]:
        """The ``limit`` items under ``namespace_prefix`` nearest to ``query``, without their
        values: ``KeyHit(namespace, key, score)``, best first, score as in ``search``.

        For callers that keep the values themselves and only need the vector ranking, as
        ``AgentMemory`` does with its profile index. No value is read, so there is no
        ``filter`` and no expiry check: an item whose TTL ran out may still be returned until
        the sweeper deletes it. Each item is scored by its current vectors as this process
        last saw its row (see :class:`~langmem_edge.store.names.Generations`); items it has
        not seen have their rows read once. Costs one id-only vector query, plus those reads.

        ``first_text_only``: rank each item by its first indexed text alone, one Chroma call
        a round instead of two (the later texts' rows are not asked). Exact for a caller
        whose items embed one text each (the episodic tier's messages); an item with several
        is then found by its first only.

        Raises:
            ConfigurationError: The store has no index config (nothing is embedded).
            EmbeddingError: Embedding the query failed.
            InvalidInputError: Bad prefix, limit or first_text_only.
        """
        prefix = tuple(namespace_prefix)
        if not all(isinstance(label, str) for label in prefix):
            raise InvalidInputError(f"namespace_prefix must hold strings, got {prefix!r}")
        layout.checked_op(SearchOp(prefix))
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise InvalidInputError(f"limit must be an integer >= 0, got {limit!r}")
        if not self.embeddings:
            raise ConfigurationError("nearest_keys needs a store created with an index config")
        if not isinstance(query, str) or not query:
            raise InvalidInputError("query must be a non-empty string")
        if not isinstance(first_text_only, bool):
            raise InvalidInputError(f"first_text_only must be a bool, got {first_text_only!r}")
        try:
            vector = self.embeddings.embed_query(query)
        except Exception as e:
            raise EmbeddingError(f"embedding the search query failed: {e}") from e
        op = SearchOp(prefix, None, limit, 0, query, False)
        # no filter or expiry to reject anything: only the prefix's share sets the widening
        hits = self._gather(
            op, vector, limit, lambda hits, _: self._current(hits)[:limit], factor=1,
            first_text_only=first_text_only,
        )
        # no prefix: nothing asked for the names yet
        self._learn_names([h.row for h in hits if h.item_id not in self._names])
        out = []
        for h in hits:
            name = self._names.get(h.item_id)
            if name is not None:
                out.append(KeyHit(name[0], name[1], h.score))
        return out

    anearest_keys = threaded(nearest_keys)

    # -- plumbing ------------------------------------------------------------------------------

    def _embed_queries(self, queries: list[str]) -> dict[str, list[float]]:
        """Query vectors; in hybrid ranking a failure only drops the vector channel."""
        if not self.embeddings or not queries:
            return {}
        try:
            return {q: self.embeddings.embed_query(q) for q in queries}
        except Exception as e:
            if self.ranking == "hybrid":
                logger.warning("embedding the query failed; ranking without vectors: %s", e)
                return {}
            raise EmbeddingError(f"embedding the search query failed: {e}") from e

    def _search_one(
        self,
        op: SearchOp,
        vectors: dict[str, list[float]],
        ranking: Ranking,
        cfg: HybridConfig,
        now: float,
    ) -> list[tuple[ExplainedItem, dict[str, Any]]]:
        if op.query and ranking == "hybrid":
            return self._search_hybrid(op, vectors.get(op.query), cfg, now)
        if op.query and op.query in vectors:
            return self._search_vector(op, vectors[op.query], now)
        return self._search_unranked(op, now)

    def _search_where(self, op: SearchOp) -> dict[str, Any] | None:
        return layout.and_where(
            [layout.prefix_where(op.namespace_prefix), filters.pushdown_where(op.filter)]
        )

    # -- vector --------------------------------------------------------------------------------

    def _search_vector(
        self, op: SearchOp, query: list[float], now: float
    ) -> list[tuple[ExplainedItem, dict[str, Any]]]:
        want = op.offset + op.limit
        page = self._rank_vector(op, query, want, now)[op.offset : want]
        out = [(ExplainedItem(search_item(m, h.score), h.channels), m) for h, m in page]
        if len(out) < op.limit:
            # InMemoryStore's corner case: fill with items that have no vectors, unscored.
            where = layout.and_where([self._search_where(op), {"nv": 0}])
            rows = [m for m in self._scan_items(where, now) if passes(m, op.filter)]
            rows.sort(key=newest_first)
            out.extend(
                (ExplainedItem(search_item(m, None)), m) for m in rows[: op.limit - len(out)]
            )
        return out

    def _rank_vector(
        self, op: SearchOp, query: list[float], want: int, now: float
    ) -> list[tuple[Hit, dict[str, Any]]]:
        """Vector-channel hits that are alive and pass the filter, best first, >= ``want``."""
        # Without a filter, or with one Chroma evaluates whole, hardly anything but expiry
        # rejects a hit of a round that names the prefix (and the filter): that round asks
        # for about the page and reads its rows' documents with the distances (no ``get``
        # after the query: benchmarks/vector_hit_rows.py); too few kept widen it as before
        return self._gather(
            op,
            query,
            want,
            lambda hits, rows: self._admit(hits, op, want, now, rows),
            factor=CANDIDATE_FACTOR,
            rows_in_query=filters.pushed_whole(op.filter),
        )

    def _gather(
        self,
        op: SearchOp,
        query: list[float],
        want: int,
        admit: Callable[[list[Hit], dict[str, dict[str, Any]]], list[_T]],
        *,
        factor: int,
        first_text_only: bool = False,
        rows_in_query: bool = False,
    ) -> list[_T]:
        """Ask Chroma for neighbours until ``admit`` keeps ``want`` of them or none are left.

        The first round asks for ``want * factor`` per indexed path, plus 10. With
        ``rows_in_query``, a round that names the prefix asks for ``want`` per path plus 10
        and reads the item rows' documents with the distances, handing their rows to
        ``admit`` (which then reads only what they miss).

        Chroma evaluates a ``where`` by scanning every row it matches (a ``where`` matching
        all 10k rows turns a 3 ms query into a 40 ms one), so the first try asks for
        neighbours without it and keeps those under the prefix (:meth:`_within_prefix`); if
        too few survive, it widens the unfiltered query by the share of survivors, and past
        ``MAX_UNFILTERED_CANDIDATES`` lets Chroma filter (cheap exactly when the namespace is
        rare). Then the candidate count grows x4 until enough survive or none are left.
        The share of the neighbours under each prefix is remembered (a hint, per process):
        a prefix holding less than :data:`UNFILTERED_MIN_SHARE` of them is asked again at
        once with the filter (HNSW's neighbours of the whole store, kept to a small prefix,
        are approximate where the filtered query is not: at 100,000 items in 10 namespaces
        the first search of each in a process brought recall@10 to 0.947,
        ``benchmarks/store_peers.py``) and goes straight to the filtered query next time.
        ``admit(hits, rows)`` gets the hits under the prefix and the item rows already read.
        """
        if want <= 0:
            return []
        prefix = tuple(op.namespace_prefix)
        # no prefix: nothing for Chroma to filter on; a prefix seen to hold less than
        # UNFILTERED_MIN_SHARE of the neighbours: filter at once (exact, where HNSW's
        # neighbours of the whole store kept to the prefix missed some)
        share = self._prefix_share.get(prefix, 1.0)
        filtered = not prefix or share < UNFILTERED_MIN_SHARE
        paths = max(1, len(self._fields))
        first_filtered = want * (1 if rows_in_query else factor) * paths + 10
        n = first_filtered if filtered else want * factor * paths + 10
        rows: dict[str, dict[str, Any]] = {}
        documents: dict[str, str | None] = {}
        while True:
            read_documents = rows_in_query and filtered
            hits, returned = self._vector_round(
                op, query, n, filtered=filtered, first_text_only=first_text_only,
                hit_documents=documents if read_documents else None)
            if read_documents:  # expired ones too: ``admit`` rejects them without a read
                self._rows_from(documents, [h.item_id for h in hits], None, rows)
            if not filtered:
                seen = len(hits)
                hits = self._within_prefix(hits, prefix)
                if seen >= MIN_SHARE_SAMPLE:
                    if len(self._prefix_share) >= MAX_SHARES_KEPT:
                        self._prefix_share.clear()
                    self._prefix_share[prefix] = len(hits) / seen
                    if self._prefix_share[prefix] < UNFILTERED_MIN_SHARE:
                        # a minority of the store: its best lie anywhere in HNSW's
                        # approximate neighbours of the whole store; ask as the next
                        # search will, filtered (exact where the unfiltered round was not)
                        filtered, n = True, first_filtered
                        continue
            kept = admit(hits, rows)
            if len(kept) >= want or returned < n:
                return kept
            if filtered:
                n *= 4
                continue
            needed = n * want * 2 // max(1, len(kept))
            if kept and needed <= MAX_UNFILTERED_CANDIDATES:
                n = needed
            else:
                filtered = True

    def _vector_round(
        self, op: SearchOp, query: list[float], n: int, *, filtered: bool,
        first_text_only: bool = False, documents: dict[str, str] | None = None,
        hit_documents: dict[str, str | None] | None = None,
    ) -> tuple[list[Hit], int]:
        """One vector query for ``n`` neighbours, ids and distances only, on the item rows
        (first texts) and on the later texts' rows: the pooled hits, and how many rows Chroma
        returned at most (fewer than ``n``: nothing more to find).

        A prefix of at most :data:`LOCAL_RANK_ROWS` vector rows is ranked exactly in process,
        filtered or not (HNSW is approximate: among many near-equal vectors it missed a
        neighbour now and then even at ``ef_search`` 1000). Otherwise, when ``filtered``,
        Chroma gets the namespace clause and, on the item rows, the filter's pushed-down part
        too (the item rows mirror the value's leaves; a later text's row holds its prefix
        only, and the filter is checked on its item row); else the hits may lie anywhere in
        the store. ``first_text_only``: the item rows alone. ``documents``: where a prefix
        ranked in process puts every item row's document, read in the same ``get`` as the
        vectors (a hybrid search's keyword channel and results use them). ``hit_documents``:
        where a round Chroma answers puts the documents of the item rows it returns."""
        prefix = tuple(op.namespace_prefix)
        targets = [(self._items, self._search_where(op))]  # first texts, then later ones
        if not first_text_only:
            targets.append((self._vectors, layout.prefix_where(prefix)))
        if prefix and prefix not in self._large_prefixes:  # small: exact, whatever HNSW says
            local = self._rank_in_process(prefix, targets, query, n, documents)
            if local is not None:
                return local
        ids: list[str] = []
        dists: list[float] = []
        returned = 0
        for collection, where in targets:
            docs = hit_documents is not None and collection is self._items
            res = self._call(
                collection.query,
                query_embeddings=[query],
                n_results=n,
                where=where if filtered else None,
                include=["distances", "documents"] if docs else ["distances"],
            )
            found = (res.get("ids") or [[]])[0]
            if docs and found:
                hit_documents.update(zip(found, res["documents"][0], strict=True))  # type: ignore[union-attr]
            ids += found
            dists += res["distances"][0] if found else []
            returned = max(returned, len(found))
        return pool_vector_hits(ids, dists), returned

    def _rank_in_process(
        self, prefix: tuple[str, ...], targets: list[tuple[Any, dict[str, Any] | None]],
        query: list[float], n: int, documents: dict[str, str] | None = None,
    ) -> tuple[list[Hit], int] | None:
        """``_vector_round``'s filtered query answered in process: the prefix's item rows'
        vectors (placeholders left out) and later texts' rows, each collection read by its
        ``where`` (``targets``: ``(collection, where)``, item rows first; at most
        :data:`LOCAL_RANK_ROWS` of each), scored by exact cosine distance (Chroma's own
        measure, so scores agree to float32 rounding), the best ``n`` pooled. With
        ``documents``, the item rows' documents are read too and put there. None when the
        prefix holds more rows (remembered: later rounds ask Chroma at once)."""
        ids: list[str] = []
        embeddings: list[Any] = []
        for collection, where in targets:
            items = collection is self._items
            read = ["documents", "embeddings"] if items and documents is not None else [
                "embeddings"]
            res = self._call(collection.get, where=where, include=read,
                             limit=LOCAL_RANK_ROWS + 1)
            if len(res["ids"]) > LOCAL_RANK_ROWS:
                if len(self._large_prefixes) >= MAX_SHARES_KEPT:
                    self._large_prefixes.clear()
                self._large_prefixes[prefix] = len(res["ids"])
                return None
            if items and documents is not None:
                documents.update(zip(res["ids"], res["documents"] or [], strict=True))
            if items and res["ids"]:  # rows without vectors: not ranked
                keep = ~layout.placeholders(res["embeddings"])
                res = {"ids": [i for i, k in zip(res["ids"], keep, strict=True) if k],
                       "embeddings": [e for e, k in zip(res["embeddings"], keep, strict=True)
                                      if k]}
            ids += res["ids"]
            embeddings += list(res["embeddings"])
        if not ids:
            return [], 0
        distances = cosine_distances(embeddings, query)
        best = sorted(range(len(ids)), key=lambda i: (distances[i], ids[i]))[:n]
        return pool_vector_hits([ids[i] for i in best], [distances[i] for i in best]), len(best)

    def _rows_from(self, documents: Mapping[str, str | None], ids: list[str],
                   now: float | None, rows: dict[str, dict[str, Any]]) -> None:
        """The rows of ``ids`` not in ``rows`` yet, decoded from their ``documents`` (read
        with the vectors or the distances), into ``rows``; with ``now``, only those alive
        then."""
        todo = [i for i in dict.fromkeys(ids) if i not in rows and i in documents]
        if todo:
            read = self._read_rows(todo, [documents[i] for i in todo])
            rows.update((i, row) for i, row in zip(todo, read, strict=True)
                        if row is not None and (now is None or row["exp"] > now))

    def _within_prefix(self, hits: list[Hit], prefix: tuple[str, ...]) -> list[Hit]:
        """The hits whose items lie under ``prefix``, in order.

        Names come from :class:`~langmem_edge.store.names.ItemNames`; ids never seen are
        resolved from their first vector rows (a few fields each)."""
        if not prefix:
            return hits
        self._learn_names([h.row for h in hits if h.item_id not in self._names])
        return [h for h in hits if self._names.within(h.item_id, prefix)]

    def _learn_names(self, vector_ids: list[str]) -> None:
        """Name the items of ``vector_ids`` from those (small) vector rows; items whose row
        is gone, from their item rows."""
        rows = [v for v in vector_ids if ":" not in v]  # hits on item rows: read those
        vector_ids = [v for v in vector_ids if ":" in v]
        if rows:
            self._get_items(ids=rows)
        if not vector_ids:
            return
        res = self._call(self._vectors.get, ids=vector_ids, include=["metadatas"])
        named = [
            (layout.parse_vector_id(vid)[0], meta)
            for vid, meta in zip(res["ids"], res["metadatas"], strict=True)
            if "k" in meta
        ]
        self._names.learn([i for i, _ in named], [m for _, m in named])
        rest = [
            iid for iid in dict.fromkeys(layout.parse_vector_id(v)[0] for v in vector_ids)
            if iid not in self._names
        ]
        if rest:
            self._get_items(ids=rest)

    def _current(self, hits: list[Hit]) -> list[Hit]:
        """Hits scored by their items' current vector generation (:func:`current_hits`),
        from this process's hint; item rows are read for items the hint does not know or whose
        hit shows a generation it does not name (which also drops deleted items)."""
        unsure = [  # a hit on the row of an item seen without vectors: it may have some now
            h.item_id for h in hits
            if (gen := self._gens.get(h.item_id)) is None or gen == layout.NO_VECTORS
            or not set(h.gens) <= {gen, layout.ROW_GEN}
        ]
        if unsure:
            rows = self._get_items(ids=unsure)
            self._gens.forget(i for i in unsure if i not in rows)
        current = {h.item_id: g for h in hits if (g := self._gens.get(h.item_id)) is not None}
        return current_hits(hits, current)

    def _admit(
        self,
        hits: list[Hit],
        op: SearchOp,
        want: int,
        now: float,
        rows: dict[str, dict[str, Any]],
    ) -> list[tuple[Hit, dict[str, Any]]]:
        """The first ``want`` hits whose items are alive and pass the filter.

        Item rows not in ``rows`` are read in slices of the hit list (best first), so a page
        of 10 reads about 15 rows rather than every candidate's.
        """
        kept: list[Hit] = []
        current: dict[str, str] = {}
        start = 0
        while start < len(hits) and len(kept) < want:
            chunk = hits[start : start + max(want - len(kept), 1) + ADMIT_SLACK]
            start += len(chunk)
            missing = [h.item_id for h in chunk if h.item_id not in rows]
            if missing:
                rows.update(self._get_items(ids=missing))
            alive = {
                h.item_id: layout.current_generation(meta)
                for h in chunk
                if (meta := rows.get(h.item_id)) is not None
                and meta["exp"] > now
                and passes(meta, op.filter)
            }
            current.update(alive)
            # scored by the generation the row names: rows a crashed write left are ignored
            kept.extend(current_hits(chunk, alive))
        # re-ranked as one list (a hit rescored by its current generation may move)
        ranked = current_hits(kept, current)
        return [(h, rows[h.item_id]) for h in ranked]
