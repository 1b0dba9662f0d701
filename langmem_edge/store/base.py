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

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal

from chromadb.api import ClientAPI
from langchain_core.embeddings import Embeddings
from langchain_core.runnables.config import run_in_executor
from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    GetOp,
    IndexConfig,
    ListNamespacesOp,
    MatchCondition,
    NotProvided,
    Op,
    PutOp,
    Result,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)
from langgraph.store.base import InvalidNamespaceError as _LanggraphNamespaceError

from langmem_edge import _chroma
from langmem_edge.embeddings import default_embeddings, text_hash
from langmem_edge.errors import (
    ConfigurationError,
    EmbeddingError,
    InvalidInputError,
    InvalidNamespaceError,
)
from langmem_edge.retrieval import (
    ChromaKeywordSource,
    HybridConfig,
    KeywordIndex,
    SyncWriter,
    encode_document,
    resolve_hybrid_config,
)
from langmem_edge.store import layout
from langmem_edge.store.names import ItemNames
from langmem_edge.store.search import RANKINGS, Ranking, SearchMixin
from langmem_edge.store.ttl import TTLMixin

logger = logging.getLogger(__name__)

__all__ = ["ChromaStore"]

DEFAULT_COLLECTION_PREFIX = "langmem_edge"
"""Collections are named ``<prefix>-items`` and ``<prefix>-vectors``."""

DEFAULT_MAX_VALUE_BYTES = 4 * 1024 * 1024
"""Largest value accepted, as UTF-8 JSON (4 MiB). Chroma stores it as a metadata string."""

GET_PAGE = 5000
"""Rows read per call when scanning items (filters, listing, sweeping)."""


class ChromaStore(SearchMixin, TTLMixin, BaseStore):
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
        collection_prefix: Collections are ``<prefix>-items``, ``<prefix>-vectors`` and
            ``<prefix>-sync``; stores with different prefixes see nothing of each other.
        max_value_bytes: Largest value as UTF-8 JSON (default 4 MiB).
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
        retry: _chroma.RetryConfig | None = None,
    ) -> None:
        self._client = client
        self._owns_client = False
        self._call = _chroma.ChromaCaller(retry)
        self.collection_prefix = _chroma.validate_collection_prefix(collection_prefix)
        if max_value_bytes <= 0:
            raise ConfigurationError(f"max_value_bytes must be > 0, got {max_value_bytes}")
        self.max_value_bytes = max_value_bytes
        self.ttl_config: TTLConfig | None = dict(ttl) if ttl else None  # type: ignore[assignment]
        self.index_config, self.embeddings, self._fields = _prepare_index(index)
        if ranking not in RANKINGS:
            raise ConfigurationError(f"ranking must be one of {RANKINGS}, got {ranking!r}")
        self.ranking = ranking
        self.hybrid_config = resolve_hybrid_config(hybrid)
        self._items, self._vectors, self._sync = (
            _chroma.open_collection(
                client,
                f"{collection_prefix}-{part}",
                schema_version=layout.SCHEMA_VERSION,
                reads_from=layout.READS_FROM,
                call=self._call,
            )
            for part in ("items", "vectors", "sync")
        )
        self._writer = SyncWriter()
        self._write_lock = threading.Lock()
        self._names = ItemNames()
        self._prefix_share: dict[tuple[str, ...], float] = {}  # see SearchMixin._gather
        self._keywords = KeywordIndex(
            ChromaKeywordSource(self._items, self._sync, call=self._call),
            config=self.hybrid_config["keyword"],
        )
        self._clock: Callable[[], float] = time.time  # epoch seconds; tests may replace it
        self._sweeper: threading.Thread | None = None
        self._sweeper_stop = threading.Event()

    # -- construction -------------------------------------------------------------------

    @classmethod
    def from_path(cls, path: str, **kwargs: Any) -> ChromaStore:
        """A store on an embedded Chroma folder (created if missing)."""
        store = cls(_chroma.open_persistent_client(str(path)), **kwargs)
        store._owns_client = True
        return store

    @classmethod
    def from_url(
        cls, url: str, *, headers: dict[str, str] | None = None, **kwargs: Any
    ) -> ChromaStore:
        """A store on a Chroma server (``chroma run``), e.g. ``http://127.0.0.1:8000``."""
        client = _chroma.open_http_client(url, headers=headers, retry=kwargs.get("retry"))
        store = cls(client, **kwargs)
        store._owns_client = True
        return store

    def setup(self) -> None:
        """Make sure the collections exist. The constructor already did; kept so code written
        for ``SqliteStore``/``PostgresStore`` (which must call ``setup()``) runs unchanged."""
        for collection in (self._items, self._vectors, self._sync):
            _chroma.open_collection(
                self._client,
                collection.name,
                schema_version=layout.SCHEMA_VERSION,
                call=self._call,
            )

    async def asetup(self) -> None:
        """``setup`` on a worker thread."""
        await run_in_executor(None, self.setup)

    def close(self) -> None:
        """Stop the TTL sweeper; release the client if this store created it."""
        self.stop_ttl_sweeper(timeout=5)
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
        self.close()

    # -- BaseStore ------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute ``ops``: reads first (in order), then writes (the last write to a key wins)."""
        ops = list(ops)
        for op in ops:
            _validate_op(op)
        now = self._clock()
        results: list[Result] = [None] * len(ops)
        refresh: dict[str, dict[str, Any]] = {}

        gets = [(i, op) for i, op in enumerate(ops) if isinstance(op, GetOp)]
        if gets:
            self._run_gets(gets, results, refresh, now)
        searches = [(i, op) for i, op in enumerate(ops) if isinstance(op, SearchOp)]
        if searches:
            self._run_searches(searches, results, refresh, now)
        for i, op in enumerate(ops):
            if isinstance(op, ListNamespacesOp):
                results[i] = self._list_namespaces(op, now)
        puts = {(op.namespace, op.key): op for op in ops if isinstance(op, PutOp)}
        if puts:
            self._run_puts(list(puts.values()), now)
        if refresh:
            self._refresh_ttl(refresh, now, skip={layout.item_id(*k) for k in puts})
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` on a worker thread, so the event loop is never blocked."""
        return await run_in_executor(None, self.batch, list(ops))

    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | None | NotProvided = NOT_PROVIDED,
    ) -> None:
        """``BaseStore.put``, raising our :class:`~langmem_edge.errors.InvalidNamespaceError`
        (which has a ``.code`` and is also langgraph's) for a bad namespace."""
        with _namespace_errors():
            super().put(namespace, key, value, index, ttl=ttl)

    async def aput(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | None | NotProvided = NOT_PROVIDED,
    ) -> None:
        """``BaseStore.aput``, with the namespace errors of :meth:`put`."""
        with _namespace_errors():
            await super().aput(namespace, key, value, index, ttl=ttl)

    # -- reads --------------------------------------------------------------------------------

    def _run_gets(
        self,
        gets: list[tuple[int, GetOp]],
        results: list[Result],
        refresh: dict[str, dict[str, Any]],
        now: float,
    ) -> None:
        ids = list(dict.fromkeys(layout.item_id(op.namespace, op.key) for _, op in gets))
        rows = self._get_items(ids=ids, now=now)
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
        namespaces = {
            tuple(m["ns"].split(layout.NS_SEP))
            for m in self._scan_items(layout.and_where(clauses), now)
        }
        matched = [
            ns for ns in namespaces if all(_matches(c, ns) for c in (op.match_conditions or ()))
        ]
        if op.max_depth is not None:
            matched = list({ns[: op.max_depth] for ns in matched})
        matched.sort()
        return matched[op.offset : op.offset + op.limit]

    def _get_items(self, *, ids: list[str], now: float | None = None) -> dict[str, dict[str, Any]]:
        """Item rows by id; with ``now``, only those alive then.

        Expiry is checked in Python: a ``where`` next to ``ids`` makes Chroma scan every row.
        """
        if not ids:
            return {}
        res = self._call(self._items.get, ids=ids, include=["metadatas"])
        self._names.learn(res["ids"], res["metadatas"])
        return {
            iid: meta
            for iid, meta in zip(res["ids"], res["metadatas"], strict=True)
            if now is None or meta["exp"] > now
        }

    def _scan_items(
        self, where: dict[str, Any] | None, now: float | None = None
    ) -> list[dict[str, Any]]:
        """Every item row matching ``where``; with ``now``, only those alive then.

        One page of ``GET_PAGE`` rows first; past it, the remaining ids (a cheap id-only
        read, 0.55 s for 100k) and then their rows by id, a page at a time: Chroma reads rows
        by id ~20 % faster than by ``where`` and ``offset`` (100k rows: 13.1 s against 16.2 s;
        reading them on two threads saved nothing more).
        """
        res = self._call(self._items.get, where=where, include=["metadatas"], limit=GET_PAGE)
        pages = [res]
        if len(res["ids"]) == GET_PAGE:
            seen = set(res["ids"])  # a write in between may shift the offset: no row twice
            listed = self._call(self._items.get, where=where, include=[], offset=GET_PAGE)
            rest = [i for i in listed["ids"] if i not in seen]
            pages.extend(
                self._call(self._items.get, ids=rest[i : i + GET_PAGE], include=["metadatas"])
                for i in range(0, len(rest), GET_PAGE)
            )
        out: list[dict[str, Any]] = []
        for page in pages:
            self._names.learn(page["ids"], page["metadatas"])
            out.extend(m for m in page["metadatas"] if now is None or m["exp"] > now)
        return out

    # -- writes ---------------------------------------------------------------------------

    def _run_puts(self, puts: list[PutOp], now: float) -> None:
        plans: list[tuple[PutOp, str | None, tuple[float | None, float] | None]] = []
        for op in puts:  # validate everything before writing anything
            if not isinstance(op.key, str) or not op.key:
                raise InvalidInputError(f"key must be a non-empty string, got {op.key!r}")
            if not op.namespace:
                raise InvalidInputError("Namespace cannot be empty.")
            if op.value is None:
                plans.append((op, None, None))
                continue
            encoded = layout.encode_value(op.namespace, op.key, op.value, self.max_value_bytes)
            ttl = self._ttl_minutes(op.ttl)
            plans.append((op, encoded, (ttl, layout.expiry(now, ttl))))

        ids = [layout.item_id(op.namespace, op.key) for op, _, _ in plans]
        old = self._get_items(ids=ids)
        texts = {
            iid: self._texts(op)
            for iid, (op, vj, _) in zip(ids, plans, strict=True)
            if vj is not None
        }
        vectors = self._vectors_for(texts, old)
        # index=False on an existing item keeps its vectors and keyword text, as InMemoryStore
        # and SqliteStore keep theirs: the put changes the value, not what it was indexed as.
        keep = [
            iid
            for iid, (op, vj, _) in zip(ids, plans, strict=True)
            if vj is not None and op.index is False and iid in old
        ]
        kept_docs: dict[str, str] = {}
        if keep:
            got = self._call(self._items.get, ids=keep, include=["documents"])
            kept_docs = dict(zip(got["ids"], got["documents"] or [], strict=False))

        vec_ids, vec_embs, vec_metas = [], [], []
        item_ids, item_metas, item_docs = [], [], []
        stale: list[str] = []
        deletes: list[str] = []
        for iid, (op, value_json, ttl_exp) in zip(ids, plans, strict=True):
            prev = old.get(iid)
            prev_nv = int(prev["nv"]) if prev else 0
            if value_json is None:
                if prev:
                    deletes.append(iid)
                    stale.extend(layout.vector_id(iid, j) for j in range(prev_nv))
                continue
            pairs = texts[iid]
            n_vectors = len(pairs)
            document = _keyword_document(pairs)
            if iid in kept_docs:
                n_vectors = prev_nv
                document = kept_docs[iid] or document
            for j, (_, path, text) in enumerate(pairs):
                vec_ids.append(layout.vector_id(iid, j))
                vec_embs.append(vectors[(iid, j)])
                vec_metas.append(
                    layout.vector_metadata(op.namespace, op.key, path, text_hash(text))
                )
            stale.extend(layout.vector_id(iid, j) for j in range(n_vectors, prev_nv))
            ttl, exp = ttl_exp  # type: ignore[misc]
            item_ids.append(iid)
            item_metas.append(
                layout.item_metadata(
                    op.namespace,
                    op.key,
                    value_json,
                    op.value,  # type: ignore[arg-type]
                    created_at=float(prev["ca"]) if prev else now,
                    updated_at=now,
                    exp=exp,
                    ttl_minutes=ttl,
                    n_vectors=n_vectors,
                )
            )
            item_docs.append(document)
        self._write(
            vectors=(vec_ids, vec_embs, vec_metas),
            items=(item_ids, item_metas, item_docs),
            deletes=deletes,
            stale=stale,
        )

    def _write(
        self,
        *,
        vectors: tuple[list[str], list[list[float]], list[dict[str, Any]]] = ([], [], []),
        items: tuple[list[str], list[dict[str, Any]], list[str]] = ([], [], []),
        deletes: list[str] = (),  # type: ignore[assignment]
        stale: list[str] = (),  # type: ignore[assignment]
    ) -> None:
        """Apply one write following the keyword index's change protocol
        (:mod:`langmem_edge.retrieval.chroma_sync`): rows carry this writer's sequence number,
        deletes leave tombstones, and the marker goes last, so any process that sees the
        marker sees everything this write did. Vectors go first, then items, then removals:
        a crash in between leaves at worst orphan vector rows, which search ignores."""
        with self._write_lock:
            seq = self._writer.next_seq()
            stamp = self._writer.stamp(seq)
            vec_ids, vec_embs, vec_metas = vectors
            if vec_ids:
                self._call(
                    self._vectors.upsert, ids=vec_ids, embeddings=vec_embs, metadatas=vec_metas
                )
            item_ids, item_metas, item_docs = items
            if item_ids:
                self._call(
                    self._items.upsert,
                    ids=item_ids,
                    embeddings=[layout.ITEM_VECTOR] * len(item_ids),
                    metadatas=[{**m, **stamp} for m in item_metas],
                    documents=item_docs,
                )
                self._names.learn(item_ids, item_metas)
            if deletes:
                self._call(self._sync.upsert, **self._writer.tombstones(deletes, seq))
                self._call(self._items.delete, ids=list(deletes))
            if stale:
                self._call(self._vectors.delete, ids=list(stale))
            self._call(self._sync.upsert, **self._writer.marker(seq))

    def _texts(self, op: PutOp) -> list[tuple[str, str, str]]:
        """(field, path, text) for each text to index: the configured field, the vector path
        as InMemoryStore names it (``field.i`` for the i-th of several), the text."""
        if not self.embeddings or op.index is False or op.value is None:
            return []
        if op.index is None:
            fields = self._fields
        else:
            if not isinstance(op.index, list) or not all(isinstance(p, str) for p in op.index):
                raise InvalidInputError(
                    f"index must be False, None or a list of JSON paths, got {op.index!r}"
                )
            fields = [(p, tokenize_path(p) if p != "$" else p) for p in op.index]
        triples: list[tuple[str, str, str]] = []
        for path, tokens in fields:
            found = get_text_at_path(op.value, tokens)
            if len(found) > 1:
                triples.extend((path, f"{path}.{i}", t) for i, t in enumerate(found))
            elif found:
                triples.append((path, path, found[0]))
        return triples

    def _vectors_for(
        self, texts: dict[str, list[tuple[str, str, str]]], old: dict[str, dict[str, Any]]
    ) -> dict[tuple[str, int], list[float]]:
        """A vector for every (item id, j): reused when the text is unchanged, else embedded."""
        if not any(texts.values()):
            return {}
        reuse: dict[str, list[float]] = {}
        old_vec_ids = [
            layout.vector_id(iid, j)
            for iid in texts
            if iid in old
            for j in range(int(old[iid]["nv"]))
        ]
        if old_vec_ids:
            res = self._call(
                self._vectors.get, ids=old_vec_ids, include=["metadatas", "embeddings"]
            )
            for meta, emb in zip(res["metadatas"], res["embeddings"], strict=True):
                reuse[meta["h"]] = [float(x) for x in emb]
        missing = list(
            dict.fromkeys(
                t for pairs in texts.values() for _, _, t in pairs if text_hash(t) not in reuse
            )
        )
        fresh: dict[str, list[float]] = {}
        if missing:
            assert self.embeddings is not None
            try:
                embedded = self.embeddings.embed_documents(missing)
            except Exception as e:
                raise EmbeddingError(f"embedding {len(missing)} text(s) failed: {e}") from e
            dims = self.index_config["dims"] if self.index_config else None
            for text, vec in zip(missing, embedded, strict=True):
                if dims and len(vec) != dims:
                    raise EmbeddingError(
                        f"the embedding model returned {len(vec)} dimensions; index.dims is {dims}"
                    )
                fresh[text] = [float(x) for x in vec]
        out: dict[tuple[str, int], list[float]] = {}
        for iid, pairs in texts.items():
            for j, (_, _, text) in enumerate(pairs):
                out[(iid, j)] = reuse.get(text_hash(text)) or fresh[text]
        return out


@contextmanager
def _namespace_errors() -> Iterator[None]:
    """Re-raise langgraph's ``InvalidNamespaceError`` as ours (a subclass of both)."""
    try:
        yield
    except _LanggraphNamespaceError as e:
        if isinstance(e, InvalidNamespaceError):
            raise
        raise InvalidNamespaceError(str(e)) from e


def _validate_op(op: Op) -> None:
    """langgraph's label rules, then ours (no control characters), for any op."""
    if not isinstance(op, (GetOp, PutOp, SearchOp, ListNamespacesOp)):
        raise InvalidInputError(f"Unknown operation type: {type(op).__name__}")
    with _namespace_errors():
        validate_op_namespace(op)
    if isinstance(op, (GetOp, PutOp)):
        layout.check_labels(op.namespace, namespace=op.namespace)
    elif isinstance(op, SearchOp):
        layout.check_labels(op.namespace_prefix, namespace=op.namespace_prefix)
    else:
        for cond in op.match_conditions or ():
            layout.check_labels(cond.path, namespace=cond.path)


def _prepare_index(
    index: IndexConfig | None,
) -> tuple[IndexConfig | None, Embeddings | None, list[tuple[str, Any]]]:
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


def _keyword_document(triples: list[tuple[str, str, str]]) -> str:
    """The item row's document: its indexed texts by configured field (several values of one
    field, as ``a[*].b`` gives, joined by newlines), for the keyword channel."""
    fields: dict[str, list[str]] = {}
    for field, _, text in triples:
        fields.setdefault(field, []).append(text)
    return encode_document({f: "\n".join(texts) for f, texts in fields.items()})


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
