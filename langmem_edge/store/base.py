"""``ChromaStore``: a LangGraph ``BaseStore`` on Chroma, embedded or on a server.

Behaves as ``InMemoryStore`` does wherever ``InMemoryStore`` defines the behaviour (namespaces,
filters, scores, ``index=False`` items returned without a score), and persists. Where
InMemoryStore leaves it open, it follows langgraph's SQL stores:

- ``search`` without a query returns items newest-updated first (then by key).
- ``created_at`` survives updates; ``updated_at`` moves.
- Filters accept dotted keys (``{"a.b": 1}``) as well as nested dicts; a literal top-level
  key wins over a dotted path.

Within one ``batch``, reads run before writes and the last write to a key wins, as in
InMemoryStore. Writes go vectors first, then items, then stale vectors are deleted: a crash in
between leaves at worst an orphan vector row, which search ignores.

The layout lives in :mod:`langmem_edge.store.layout`; the vector channel in
:mod:`langmem_edge.store.ranking`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypedDict, Unpack

from chromadb.api import ClientAPI
from langchain_core.embeddings import Embeddings
from langchain_core.runnables.config import run_in_executor
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    tokenize_path,
)

from langmem_edge import _chroma
from langmem_edge._options import check_keys
from langmem_edge._sqlite_stats import PlannerStatistics
from langmem_edge._twins import threaded
from langmem_edge.embeddings import default_embeddings
from langmem_edge.errors import (
    ConfigurationError,
    InvalidInputError,
)
from langmem_edge.retrieval import HybridConfig
from langmem_edge.retrieval.config import resolve_hybrid_config
from langmem_edge.retrieval.text import Analyzer
from langmem_edge.store import layout
from langmem_edge.store.api import NamespaceErrorsMixin
from langmem_edge.store.hybrid import HybridMixin
from langmem_edge.store.keyword import KeywordMixin
from langmem_edge.store.listing import ListingHints, ListingMixin
from langmem_edge.store.names import Generations, ItemNames
from langmem_edge.store.ranking import RANKINGS, Ranking
from langmem_edge.store.rewrites import RewriteMixin
from langmem_edge.store.search import SearchMixin
from langmem_edge.store.ttl import TTLMixin
from langmem_edge.store.upgrade import GET_PAGE, MOVE_DATA, UpgradeMixin
from langmem_edge.store.writes import WriteMixin

logger = logging.getLogger(__name__)

__all__ = ["ChromaStore"]


DEFAULT_COLLECTION_PREFIX = "langmem_edge"
"""Collections are named ``<prefix>-rows<dims>`` and ``<prefix>-vectors``."""


DEFAULT_MAX_VALUE_BYTES = 4 * 1024 * 1024
"""Largest value accepted, as UTF-8 JSON (4 MiB). Chroma stores it as a metadata string."""

DEFAULT_EF_SEARCH = 1000
"""HNSW search breadth of the vectors collection (Chroma's default is 100). Measured on random
384-d unit vectors (the hard case; ``benchmarks/store_peers.py``, docs/store.md): at 10,000
rows, a k=10 query's recall@10 against exact goes from 0.54 to 0.99 unfiltered (1.1 to 2.5 ms)
and from 0.98 to 1.00 under a namespace ``where``; at 100,000 rows 0.10 to 0.59 unfiltered and
0.53 to 0.99 filtered."""



class ChromaStoreOptions(TypedDict, total=False):
    """``ChromaStore``'s keyword options, as ``from_path`` and ``from_url`` pass them on (see
    the constructor for each; ``tests/test_store_options.py`` holds the two lists equal)."""

    index: IndexConfig | None
    ttl: TTLConfig | None
    ranking: Ranking
    hybrid: HybridConfig | None
    collection_prefix: str
    max_value_bytes: int
    ef_search: int
    retry: _chroma.RetryConfig | None


class ChromaStore(
    NamespaceErrorsMixin, SearchMixin, HybridMixin, KeywordMixin, ListingMixin, RewriteMixin,
    WriteMixin, TTLMixin, UpgradeMixin, BaseStore,
):
    """A LangGraph store on Chroma.

    Args:
        client: A chromadb client (``PersistentClient``, ``HttpClient``, ...). Not closed by
            :meth:`close` unless the store created it (``from_path`` / ``from_url``).
        index: ``{"dims", "embed", "fields"}`` as langgraph's ``IndexConfig``. ``embed`` may be
            an ``Embeddings``, a callable, a ``"provider:model"`` string, or omitted for
            :func:`~langmem_edge.embeddings.default_embeddings` (offline all-MiniLM-L6-v2).
            ``fields`` defaults to ``["$"]`` (the whole value). Without ``index``, search
            with a query returns unranked items, as InMemoryStore does.
        ttl: langgraph ``TTLConfig``: ``default_ttl`` (minutes, default none),
            ``refresh_on_read`` (default True), ``sweep_interval_minutes`` (default 5).
        ranking: How ``search(query=...)`` ranks: ``"vector"`` (default: InMemoryStore's
            order and cosine scores, so it is a drop-in) or ``"hybrid"`` (weighted RRF of
            vector, BM25 keyword and exact-key channels; see :mod:`langmem_edge.store.search`).
            :meth:`hybrid_search` and :meth:`explain_search` rank hybrid whatever this says.
        hybrid: :class:`~langmem_edge.retrieval.HybridConfig`: channel ``weights`` (vector 1,
            keyword 1, key 1.5), ``rrf_k`` (60), ``depth`` (50) and the ``keyword`` analyser
            and BM25 options. Keyword text comes from the index ``fields``.
        collection_prefix: Collections are ``<prefix>-rows<dims>`` (the items) and
            ``<prefix>-vectors``;
            stores with different prefixes see nothing of each other.
        max_value_bytes: Largest value as UTF-8 JSON (default 4 MiB).
        ef_search: HNSW search breadth of the vectors collection (default 1000; Chroma's
            own is 100): exact results up to about that many vectors; a search in a
            namespace returned recall@10 0.986 against exact among 10,000 random vectors and
            0.552 among 100,000 (docs/store.md, "Exactness"). A store opened with another
            value than the collection's changes it; Chroma applies the change when a process
            next loads the index.
        retry: How transient server failures are retried (see ``RetryConfig``).

    Example:
        ```python
        from langmem_edge import ChromaStore, default_embeddings

        store = ChromaStore.from_path(
            "./memory", index={"dims": 384, "embed": default_embeddings(), "fields": ["text"]}
        )
        store.put(("users", "alice"), "theme", {"text": "Prefers dark mode"})
        store.search(("users", "alice"), query="what theme?")
        ```
    """

    supports_ttl: bool = True

    def __init__(
        self,
        client: ClientAPI,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        ranking: Ranking = "vector",
        hybrid: HybridConfig | None = None,
        collection_prefix: str = DEFAULT_COLLECTION_PREFIX,
        max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
        ef_search: int = DEFAULT_EF_SEARCH,
        retry: _chroma.RetryConfig | None = None,
    ) -> None:
        self._client = client
        self._owns_client = False
        self._call = _chroma.ChromaCaller(retry)
        self.collection_prefix = _chroma.validate_collection_prefix(collection_prefix)
        if max_value_bytes <= 0:
            raise ConfigurationError(f"max_value_bytes must be > 0, got {max_value_bytes}")
        self.max_value_bytes = max_value_bytes
        if isinstance(ef_search, bool) or not isinstance(ef_search, int) or ef_search < 1:
            raise ConfigurationError(f"ef_search must be an integer >= 1, got {ef_search!r}")
        self.ef_search = ef_search
        check_keys("ttl", ttl, TTLConfig.__annotations__)
        self.ttl_config: TTLConfig | None = dict(ttl) if ttl else None  # type: ignore[assignment]
        self.index_config, self.embeddings, self._fields = _prepare_index(index)
        if ranking not in RANKINGS:
            raise ConfigurationError(f"ranking must be one of {RANKINGS}, got {ranking!r}")
        self.ranking = ranking
        self.hybrid_config = resolve_hybrid_config(hybrid)
        keyword = self.hybrid_config["keyword"]
        self._analyzer = Analyzer(language=keyword["language"], stopwords=keyword["stopwords"])
        dims = self.index_config["dims"] if self.index_config else None
        self._items = self._open_rows(dims, ef_search)
        self._vectors = _chroma.open_collection(
            client, f"{collection_prefix}-vectors", schema_version=layout.SCHEMA_VERSION,
            call=self._call, ef_search=ef_search, way_out=MOVE_DATA)
        self._write_lock = threading.RLock()
        self._max_batch = max(1, int(self._call(client.get_max_batch_size)))
        self._write_epoch = 0
        self._written_floor = 0
        self._last_written: dict[str, int] = {}
        self._names = ItemNames()
        self._gens = Generations()
        self._listing_hints = ListingHints()
        self._stamp_lock = threading.Lock()
        self._last_stamp = 0  # microseconds; see WriteMixin._stamps
        self._prefix_share: dict[tuple[str, ...], float] = {}  # see SearchMixin._gather
        self._large_prefixes: dict[tuple[str, ...], int] = {}  # see _rank_in_process
        self._large_keyword_scopes: dict[tuple[str, ...], int] = {}  # see KeywordMixin
        self._clock: Callable[[], float] = time.time  # epoch seconds; tests may replace it
        self._statistics = PlannerStatistics.for_client(
            client, lambda: self._call(self._items.count))

    # -- construction -------------------------------------------------------------------

    @classmethod
    def from_path(cls, path: str, **options: Unpack[ChromaStoreOptions]) -> ChromaStore:
        """A store on an embedded Chroma folder (created if missing); ``options`` are the
        constructor's."""
        store = cls(_chroma.open_persistent_client(str(path)), **options)
        store._owns_client = True
        return store

    @classmethod
    def from_url(
        cls, url: str, *, headers: dict[str, str] | None = None,
        **options: Unpack[ChromaStoreOptions],
    ) -> ChromaStore:
        """A store on a Chroma server (``chroma run``), e.g. ``http://127.0.0.1:8000``;
        ``options`` are the constructor's."""
        client = _chroma.open_http_client(url, headers=headers, retry=options.get("retry"))
        store = cls(client, **options)
        store._owns_client = True
        return store

    def setup(self) -> None:
        """Make sure the collections exist. The constructor already did; kept so code written
        for ``SqliteStore``/``PostgresStore`` (which must call ``setup()``) runs unchanged."""
        self._open(self._items.name, self.ef_search)
        _chroma.open_collection(self._client, self._vectors.name,
                                schema_version=layout.SCHEMA_VERSION, call=self._call,
                                ef_search=self.ef_search)

    asetup = threaded(setup)

    def close(self) -> None:
        """Stop the TTL sweeper; release the client if this store created it."""
        self.stop_ttl_sweeper(timeout=5)
        self._statistics.wait(timeout=30)
        if self._owns_client:
            closer = getattr(self._client, "close", None)
            if callable(closer):
                try:
                    closer()
                except Exception:  # pragma: no cover - best effort on shutdown
                    logger.debug("closing the Chroma client failed", exc_info=True)

    def __enter__(self) -> ChromaStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> ChromaStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.close)  # joining the sweeper must not block the loop

    # -- BaseStore ------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute ``ops``: reads first (in order), then writes (the last write to a key wins)."""
        return self._batch(ops, None)

    def batch_vectors(
        self, ops: Sequence[Op], /
    ) -> tuple[list[Result], dict[int, list[Any]]]:
        """``batch``, and for each query-less search among ``ops`` (by its position) the
        vector of each item it returned, in order: the vector of the item's first indexed
        text (as Chroma returns it: a numpy array), None for an item without vectors. The
        vectors come with the rows, in the same Chroma ``get`` (each item row holds its first
        vector), so a caller that reads a namespace whole and ranks it by vector in process
        needs no second read.

        An item with several indexed texts gets its first one's vector only.
        """
        vectors: dict[tuple[str, str], Any] = {}
        checked = [layout.checked_op(op) for op in ops]
        results = self._batch(checked, vectors)
        out: dict[int, list[Any]] = {}
        joined: dict[tuple[str, ...], str] = {}
        for i, op in enumerate(checked):
            if isinstance(op, SearchOp) and not op.query and results[i] is not None:
                out[i] = [vectors.get((joined.get(it.namespace) or joined.setdefault(
                    it.namespace, _chroma.join_labels(it.namespace)), it.key))
                    for it in results[i]]  # type: ignore[union-attr]
        return results, out

    async def abatch_vectors(
        self, ops: Sequence[Op], /
    ) -> tuple[list[Result], dict[int, list[Any]]]:
        """``batch_vectors`` on a worker thread."""
        return await run_in_executor(None, self.batch_vectors, list(ops))

    def _batch(self, ops: Iterable[Op], vectors: dict[tuple[str, str], Any] | None
               ) -> list[Result]:
        ops = [layout.checked_op(op) for op in ops]
        now = self._clock()
        epoch = self._write_epoch
        results: list[Result] = [None] * len(ops)
        refresh: dict[str, dict[str, Any]] = {}

        gets = [(i, op) for i, op in enumerate(ops) if isinstance(op, GetOp)]
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:  # the last put of a key wins, in its place (its update time follows)
            if isinstance(op, PutOp):
                puts.pop((op.namespace, op.key), None)
                puts[(op.namespace, op.key)] = op
        rows = None
        if gets and puts:  # one read for both: the gets' rows and the rows the puts replace
            rows = self._get_rows(list(dict.fromkeys(
                layout.item_id(*nk) for nk in [*((op.namespace, op.key) for _, op in gets),
                                               *puts])), documents=True,
                vectors=self._row_dims > 0)
        if gets:
            self._run_gets(gets, results, refresh, now, rows and rows.metas)
        searches = [(i, op) for i, op in enumerate(ops) if isinstance(op, SearchOp)]
        if searches:
            self._run_searches(searches, results, refresh, now, vectors)
        for i, op in enumerate(ops):
            if isinstance(op, ListNamespacesOp):
                results[i] = self._list_namespaces(op, now)
        if puts:
            self._run_puts(list(puts.values()), now, rows)
        if refresh:
            self._refresh_ttl(refresh, now, read_at=epoch)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` on a worker thread, so the event loop is never blocked."""
        return await run_in_executor(None, self.batch, list(ops))

    # -- reads --------------------------------------------------------------------------------

    def _run_gets(
        self,
        gets: list[tuple[int, GetOp]],
        results: list[Result],
        refresh: dict[str, dict[str, Any]],
        now: float,
        read: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        """Answer ``gets`` from one read by ids (or from ``read``, rows read already)."""
        if read is None:
            ids = list(dict.fromkeys(layout.item_id(op.namespace, op.key) for _, op in gets))
            rows = self._get_items(ids=ids, now=now)
        else:
            rows = {iid: meta for iid, meta in read.items() if meta["exp"] > now}
        for i, op in gets:
            meta = rows.get(layout.item_id(op.namespace, op.key))
            if meta is None:
                continue
            results[i] = layout.row_to_item(meta)
            if self._should_refresh(op.refresh_ttl):
                refresh[layout.item_id(op.namespace, op.key)] = meta

    def _list_namespaces(self, op: ListNamespacesOp, now: float) -> list[tuple[str, ...]]:
        clauses: list[dict[str, Any] | None] = []
        for cond in op.match_conditions or ():
            if cond.match_type == "prefix":
                path = tuple(cond.path)
                lead = path.index("*") if "*" in path else len(path)
                clauses.append(layout.prefix_where(path[:lead]))  # labels past a "*": below
        namespaces = self._live_namespaces(layout.and_where(clauses), now)
        matched = [
            ns for ns in namespaces if all(_matches(c, ns) for c in (op.match_conditions or ()))
        ]
        if op.max_depth is not None:
            matched = list({ns[: op.max_depth] for ns in matched})
        matched.sort()
        return matched[op.offset : op.offset + op.limit]

    def _live_namespaces(self, where: dict[str, Any] | None, now: float) -> set[tuple[str, ...]]:
        """The namespaces of the live items matching ``where``.

        Reads ids only (the expiry checked inside Chroma) and names them from
        :class:`~langmem_edge.store.names.ItemNames`, which is exact forever (an id is a hash
        of its namespace and key); only ids this process never saw have their rows read, so a
        listing costs about one id-only ``get`` once the items were seen."""
        alive = layout.and_where([where, {"exp": {"$gt": now}}])
        ids = self._call(self._items.get, where=alive, include=[])["ids"]
        unknown = [i for i in ids if i not in self._names]
        for start in range(0, len(unknown), GET_PAGE):
            self._get_items(ids=unknown[start : start + GET_PAGE])
        namespaces = set()
        for iid in ids:
            name = self._names.get(iid)
            if name is not None:  # None: deleted between the two reads
                namespaces.add(name[0])
        return namespaces

    def _get_items(self, *, ids: list[str], now: float | None = None) -> dict[str, dict[str, Any]]:
        """Item rows by id; with ``now``, only those alive then.

        Expiry is checked in Python: a ``where`` next to ``ids`` makes Chroma scan every row.
        """
        return self._get_rows(ids, now=now).metas

    def _get_rows(
        self, ids: list[str], *, now: float | None = None, documents: bool = False,
        vectors: bool = False,
    ) -> layout.Rows:
        """Item rows by id (as :meth:`_get_items`) and, with ``documents``, their documents,
        with ``vectors`` their embeddings, in the same ``get`` (empty otherwise)."""
        if not ids:
            return layout.Rows({}, {}, {})
        include = ["documents", *(["embeddings"] if vectors else [])]
        res = self._call(self._items.get, ids=ids, include=include)
        docs = res.get("documents") or [None] * len(res["ids"])
        rows = self._read_rows(res["ids"], docs)
        embs = res.get("embeddings") if vectors else None
        alive = [i for i, row in enumerate(rows)
                 if row is not None and (now is None or row["exp"] > now)]
        out_ids = res["ids"]
        return layout.Rows(
            {out_ids[i]: rows[i] for i in alive},  # type: ignore[misc]
            {out_ids[i]: docs[i] for i in alive} if documents else {},
            {out_ids[i]: [float(x) for x in embs[i]] for i in alive}
            if embs is not None else {},
        )

    def _read_rows(self, ids: list[str], docs: list[str | None]) -> list[dict[str, Any] | None]:
        """The fields of item rows read with their documents (:func:`layout.read_row`), in
        order, learnt as names and generations; None for a row gone meanwhile.

        A row with a TTL whose document's expiry has passed needs its metadata too (one more
        ``get``, of those rows alone): a read that refreshed the TTL wrote the new expiry to
        the metadata only (:meth:`_refresh_ttl`)."""
        rows = [layout.read_row(d) for d in docs]
        now = self._clock()
        check = [i for i, row in enumerate(rows)
                 if row is not None and row["ttl"] and row["exp"] <= now]
        if check:
            got = self._call(self._items.get, ids=[ids[i] for i in check],
                             include=["metadatas"])
            metas = dict(zip(got["ids"], got["metadatas"], strict=True))
            for i in check:
                meta = metas.get(ids[i])
                if meta is None:
                    rows[i] = None  # gone meanwhile
                else:
                    rows[i]["exp"] = meta["exp"]  # type: ignore[index]
        named = [(iid, row) for iid, row in zip(ids, rows, strict=True) if row is not None]
        self._names.learn([i for i, _ in named], [r for _, r in named])
        self._gens.learn([i for i, _ in named], [r for _, r in named])
        return rows

    def _scan_items(
        self, where: dict[str, Any] | None, now: float | None = None,
        vectors: dict[tuple[str, str], Any] | None = None,
    ) -> list[dict[str, Any]]:
        """Every item row matching ``where`` (its fields, :meth:`_read_rows`); with ``now``,
        only those alive then. With ``vectors``, the first vector of each row that has one is
        put there, by its ``(ns, k)`` (read in the same ``get``s).

        One page of ``GET_PAGE`` rows first; past it, every id again (a cheap id-only read,
        0.55 s for 100k) and then the rows not read yet by id, a page at a time: Chroma reads
        rows by id ~20 % faster than by ``where`` and ``offset`` (100k rows: 13.1 s against
        16.2 s; reading them on two threads saved nothing more). The id listing starts at 0,
        never at ``GET_PAGE``: a row of the first page deleted in between shifts every later
        row back by one, and an offset listing then skipped the row that moved into the first
        page's range (tests/test_store_chroma.py).
        """
        include = ["documents", "embeddings"] if vectors is not None and self._row_dims else [
            "documents"]
        res = self._call(self._items.get, where=where, include=include, limit=GET_PAGE)
        pages = [res]
        if len(res["ids"]) == GET_PAGE:
            seen = set(res["ids"])
            listed = self._call(self._items.get, where=where, include=[])
            rest = [i for i in listed["ids"] if i not in seen]
            pages.extend(
                self._call(self._items.get, ids=rest[i : i + GET_PAGE], include=include)
                for i in range(0, len(rest), GET_PAGE)
            )
        out: list[dict[str, Any]] = []
        for page in pages:
            rows = self._read_rows(page["ids"], page["documents"] or [None] * len(page["ids"]))
            embs = page["embeddings"] if "embeddings" in include else [None] * len(rows)
            for m, emb in zip(rows, embs, strict=True):
                if m is None or (now is not None and m["exp"] <= now):
                    continue
                out.append(m)
                if vectors is not None and emb is not None and m.get("nv"):
                    vectors[(m["ns"], m["k"])] = emb
        return out

def _prepare_index(
    index: IndexConfig | None,
) -> tuple[IndexConfig | None, Embeddings | None, list[tuple[str, Any]]]:
    check_keys("index", index, IndexConfig.__annotations__)
    if not index:
        return None, None, []
    config: dict[str, Any] = dict(index)
    dims = config.get("dims")
    if not isinstance(dims, int) or dims <= 0:
        raise ConfigurationError(f"index['dims'] must be a positive int, got {dims!r}")
    embed = config.get("embed")
    embeddings = default_embeddings() if embed is None else ensure_embeddings(embed)
    fields = config.get("fields") or ["$"]
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
        raise ConfigurationError(f"index['fields'] must be a list of JSON paths, got {fields!r}")
    tokenized = [(p, tokenize_path(p) if p != "$" else p) for p in fields]
    return config, embeddings, tokenized  # type: ignore[return-value]


def _matches(cond: MatchCondition, ns: Sequence[str]) -> bool:
    path = cond.path
    if len(ns) < len(path):
        return False
    pairs = (
        zip(ns, path, strict=False)
        if cond.match_type == "prefix"
        else zip(reversed(ns), reversed(path), strict=False)
    )
    if cond.match_type not in ("prefix", "suffix"):
        raise InvalidInputError(f"Unsupported match type: {cond.match_type!r}")
    return all(p == "*" or n == p for n, p in pairs)
