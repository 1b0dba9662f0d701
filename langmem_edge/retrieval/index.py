"""The keyword and exact-key channels' in-process index, kept exact by a change protocol.

**Where the data lives.** Chroma is the only source of truth: each item row's *document*
holds the text of the fields it indexes (:func:`encode_document`), its metadata holds the
namespace, the key and a change stamp (writer id ``kw`` + that writer's sequence number
``ks``). A :class:`KeywordIndex` is a per-process *cache* derived from those rows; it keeps
no files and can be rebuilt from Chroma at any time. See ``docs/retrieval.md`` for the
measurements that chose this over full-text queries inside Chroma.

**The change protocol** (what keeps every process's cache exact, on the embedded client and
on a server shared by several processes):

- Every writer (a store object in a process) has a random id and a counter. A write takes
  the next number ``s`` and first upserts its *marker* row ``(kw=id, ks=s, settled=False)``
  in the sync collection (with the tombstones of the items it deletes), then writes its
  item rows stamped ``(kw=id, ks=s)`` and deletes rows. When the writer falls idle it
  upserts the marker again as ``settled`` (the next write's marker implies it too).
  A writer's writes are serialised, so its rows and marker only move forward.
- Before each search, :meth:`KeywordIndex.sync` reads all markers (one small ``get``). A
  marker confirms every write up to ``ks`` when settled and up to ``ks - 1`` when not (write
  ``ks`` may be half done). If no confirmed number moved and no marker is unsettled, the
  cache is exact and nothing else is read. Otherwise, for each such writer, it fetches rows
  and tombstones with ``kw == id and ks > a`` (``a``: the number this process applied; one
  ``get`` each, all writers ``$or``-ed) and applies the confirmed number.
- Why this is exact: a write's marker goes before its rows, but a reader counts that write
  as applied only once a later marker confirms it, and a marker that confirms it is written
  after every row of it; a search reads markers before rows, so every confirmed write is
  fully visible to the row fetch, and an unconfirmed one is fetched again at every sync
  until it is. A writer that dies mid-write leaves its marker unsettled, so its rows are
  still fetched (at each sync, until :func:`~langmem_edge.retrieval.chroma_sync.purge_sync_rows`
  settles markers left unsettled for ten minutes). No clocks are compared for ordering, so
  skew between machines cannot lose a change.
- A tombstone only removes an item from the cache if the item row is really gone when the
  sync looks (one ``get`` by ids), so a delete by one process followed by a re-put by
  another cannot be applied out of order.
- A process that has not synced for ``full_reload_after`` seconds (default an hour) reloads
  everything instead, so purging tombstones and markers older than a day is safe.

The protocol is expressed against :class:`KeywordSource`, a three-method interface; the
Chroma implementation is :class:`langmem_edge.retrieval.chroma_sync.ChromaKeywordSource`.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from langmem_edge.retrieval.bm25 import BM25Index
from langmem_edge.retrieval.config import DEFAULT_KEYWORD_CONFIG, KeywordConfig
from langmem_edge.retrieval.keys import KeyIndex
from langmem_edge.retrieval.text import Analyzer

__all__ = [
    "DEFAULT_FULL_RELOAD_AFTER",
    "ChangeSet",
    "KeywordIndex",
    "KeywordRow",
    "KeywordSource",
    "Marker",
    "SyncStats",
    "Tombstone",
    "decode_document",
    "encode_document",
]

logger = logging.getLogger(__name__)

DEFAULT_FULL_RELOAD_AFTER = 3600.0
"""Seconds without a sync after which the next sync reloads everything (must stay well
under the age at which tombstones and markers may be purged)."""

Namespace = tuple[str, ...]


def encode_document(fields: Mapping[str, str]) -> str:
    """The Chroma document of an item: its indexed texts, ``{field path: text}`` as JSON.

    The texts are stored as written (not analysed), so a change of analyser settings never
    requires rewriting rows. Paths are the store's index ``fields`` (``"text"``,
    ``"context"``, ``"a.b[*]"`` flattened by the store to one text per path).
    """
    return json.dumps(dict(fields), ensure_ascii=False, separators=(",", ":"))


def decode_document(document: str | None) -> dict[str, str]:
    """Inverse of :func:`encode_document`; any other non-empty string is one field ``"$"``."""
    if not document:
        return {}
    if document.startswith("{"):
        try:
            data = json.loads(document)
        except ValueError:
            data = None
        if isinstance(data, dict):
            return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in data.items()}
    return {"$": document}


@dataclass(frozen=True, slots=True)
class KeywordRow:
    """An item as the keyword channels see it.

    Attributes:
        id: Item id. namespace: Its namespace. key: Its key.
        document: :func:`encode_document` output, or None/"" when no field is indexed (the
            item is still found by the exact-key channel).
    """

    id: str
    namespace: Namespace
    key: str
    document: str | None = None


@dataclass(frozen=True, slots=True)
class Tombstone:
    """A deleted item id (applied only if the item row is really gone)."""

    id: str


class Marker(NamedTuple):
    """A writer's marker: its last write's number, and whether that write is complete."""

    seq: int
    settled: bool = True

    @property
    def confirmed(self) -> int:
        """The last write number known complete."""
        return self.seq if self.settled else self.seq - 1


@dataclass(slots=True)
class ChangeSet:
    """Rows to (re)index and tombstones to check, as fetched from the source."""

    rows: list[KeywordRow] = field(default_factory=list)
    tombstones: list[Tombstone] = field(default_factory=list)


class KeywordSource(Protocol):
    """Where a :class:`KeywordIndex` reads from (Chroma, or a fake in tests)."""

    def markers(self) -> dict[str, Marker]:
        """``writer id -> Marker`` of every writer."""
        ...

    def changes(self, since: Mapping[str, int] | None) -> ChangeSet:
        """Rows and tombstones with ``ks > since[writer]`` for the writers named;
        ``since=None`` means every current row (tombstones not needed)."""
        ...

    def existing(self, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` have an item row now."""
        ...


@dataclass(frozen=True, slots=True)
class SyncStats:
    """What one :meth:`KeywordIndex.sync` did.

    Attributes:
        kind: ``"none"`` (no source), ``"unchanged"``, ``"delta"`` or ``"full"``.
        rows: Rows (re)indexed. removed: Items removed. seconds: Wall time.
    """

    kind: str
    rows: int = 0
    removed: int = 0
    seconds: float = 0.0


class KeywordIndex:
    """BM25 keyword channel + exact-key channel over the items of one store.

    Args:
        source: Where rows come from; None for a purely in-memory index fed by
            :meth:`apply` (tests, benchmarks).
        config: :class:`~langmem_edge.retrieval.config.KeywordConfig` (analyser and BM25).
        full_reload_after: See :data:`DEFAULT_FULL_RELOAD_AFTER`.
        clock: Monotonic clock, injectable for tests.

    Thread-safe: syncs, writes and searches are serialised by one lock.
    """

    def __init__(
        self,
        source: KeywordSource | None = None,
        *,
        config: KeywordConfig | None = None,
        full_reload_after: float = DEFAULT_FULL_RELOAD_AFTER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        cfg: dict[str, Any] = {**DEFAULT_KEYWORD_CONFIG, **(config or {})}
        self.config: KeywordConfig = cfg  # type: ignore[assignment]
        self.analyzer = Analyzer(language=cfg["language"], stopwords=cfg["stopwords"])
        self.bm25 = BM25Index(
            k1=cfg["k1"],
            b=cfg["b"],
            field_weights=cfg["field_weights"],
            default_field_weight=cfg["default_field_weight"],
        )
        self.keys = KeyIndex(stopwords=self.analyzer.stopwords)
        self.source = source
        self.full_reload_after = full_reload_after
        self._clock = clock
        self._lock = threading.RLock()
        self._applied: dict[str, int] = {}
        self._loaded = False
        self._last_sync = 0.0

    # ---------------------------------------------------------------- writes

    def _index_row(self, row: KeywordRow) -> None:
        fields = decode_document(row.document)
        terms = {name: self.analyzer.terms(text) for name, text in fields.items()}
        if any(terms.values()):
            self.bm25.upsert(row.id, terms, namespace=row.namespace)
        else:
            self.bm25.remove(row.id)
        self.keys.upsert(row.id, row.key, namespace=row.namespace)

    def apply(self, rows: Iterable[KeywordRow] = (), removed: Iterable[str] = ()) -> None:
        """Index ``rows`` (replacing same ids) and drop ``removed`` ids, as given.

        The store may call this after its own successful write so the next search needs no
        fetch for it; correctness never depends on it.
        """
        with self._lock:
            for row in rows:
                self._index_row(row)
            for doc_id in removed:
                self.bm25.remove(doc_id)
                self.keys.remove(doc_id)

    def clear(self) -> None:
        """Forget everything (the next sync reloads from the source)."""
        with self._lock:
            self.bm25.clear()
            self.keys.clear()
            self._applied = {}
            self._loaded = False

    # ---------------------------------------------------------------- sync

    def sync(self) -> SyncStats:
        """Bring the cache up to date with the source (see the module docstring)."""
        if self.source is None:
            return SyncStats("none")
        with self._lock:
            start = self._clock()
            markers = self.source.markers()
            stale = start - self._last_sync > self.full_reload_after
            if not self._loaded or stale:
                changes = self.source.changes(None)
                self.bm25.clear()
                self.keys.clear()
                for row in changes.rows:
                    self._index_row(row)
                stats = SyncStats("full", rows=len(changes.rows))
            else:
                since = {
                    w: self._applied.get(w, -1)
                    for w, m in markers.items()
                    if not m.settled or m.confirmed != self._applied.get(w)
                }
                if not since:
                    self._last_sync = start
                    return SyncStats("unchanged", seconds=self._clock() - start)
                changes = self.source.changes(since)
                for row in changes.rows:
                    self._index_row(row)
                fetched = {row.id for row in changes.rows}
                candidates = [t.id for t in changes.tombstones if t.id not in fetched]
                gone: list[str] = []
                if candidates:
                    alive = self.source.existing(list(dict.fromkeys(candidates)))
                    gone = [i for i in dict.fromkeys(candidates) if i not in alive]
                    for doc_id in gone:
                        self.bm25.remove(doc_id)
                        self.keys.remove(doc_id)
                stats = SyncStats("delta", rows=len(changes.rows), removed=len(gone))
            self._applied = {w: m.confirmed for w, m in markers.items()}
            self._loaded = True
            self._last_sync = start
            seconds = self._clock() - start
            if stats.kind == "full":
                logger.debug("keyword index reloaded: %d rows in %.3fs", stats.rows, seconds)
            return SyncStats(stats.kind, stats.rows, stats.removed, seconds)

    # ---------------------------------------------------------------- reads

    def __len__(self) -> int:
        return len(self.keys)

    def search_keyword(
        self,
        query: str,
        *,
        namespace_prefix: Namespace = (),
        limit: int | None = None,
        accept: Callable[[str], bool] | None = None,
    ) -> list[tuple[str, float]]:
        """BM25 ranking of the items under ``namespace_prefix``: ``(id, score)`` best first.

        A query with no usable terms (only stopwords, punctuation) returns ``[]``.
        """
        terms = self.analyzer.query_terms(query)
        with self._lock:
            hits = self.bm25.search(
                terms, namespace_prefix=namespace_prefix, limit=limit, accept=accept
            )
        return [(h.id, h.score) for h in hits]

    def search_key(
        self,
        query: str,
        *,
        namespace_prefix: Namespace = (),
        limit: int | None = None,
        accept: Callable[[str], bool] | None = None,
    ) -> list[tuple[str, float]]:
        """Exact-key ranking (see :mod:`langmem_edge.retrieval.keys`): ``(id, score)``."""
        with self._lock:
            return self.keys.search(
                query, namespace_prefix=namespace_prefix, limit=limit, accept=accept
            )
