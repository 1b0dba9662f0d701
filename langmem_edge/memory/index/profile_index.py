"""The per-process profile index: everything recall needs about one profile, in memory.

Recall needs more than ``store.search(query=...)`` offers on a generic ``BaseStore``: a keyword
channel (BM25 over the profile's texts), an exact key channel, and the relevance fill (every
active memory ranked by recency and use). Reading a whole profile on every recall costs
O(profile) store reads, so each ``AgentMemory`` keeps, per profile it touches, a
:class:`ProfileIndex`: the records' values, BM25 postings, a key map, and numpy columns for
admissibility masks and the fill. ``index/changes.py`` keeps it exact across processes.

**Access counts** are not written into records (a read-modify-write of a record to bump a
counter could bring back a record another process deleted meanwhile). Each writer keeps one
item per memory under ``(*R, "access", memory id)``, key = its writer id, value its own
cumulative ``count`` and ``last`` access: written blind (no read), never touching a record.
A memory's count is its record's ``access_count`` (carried over by ``update``) plus the sum
of its items plus this process's pending bumps.

The keyword channel is the package's one BM25 (:class:`langmem_edge.retrieval.bm25.BM25Index`,
keyed by memory id); each row records its document's BM25 slot, so an admissibility mask over
rows becomes a mask over slots with one numpy assignment. Rows are never reused (a deleted
record leaves a dead row; the index rebuilds its rows when dead ones outnumber live ones).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from langmem_edge.memory.config import IndexCacheConfig, RecallConfig
from langmem_edge.memory.core.dates import iso_to_epoch
from langmem_edge.memory.core.layout import ProfileLayout
from langmem_edge.memory.index.access import AccessWriter
from langmem_edge.memory.index.columns import Columns, ended_at, own_access
from langmem_edge.memory.index.log import SyncWriter, WriterPool
from langmem_edge.memory.index.values import RecordValues
from langmem_edge.memory.records import KINDS
from langmem_edge.retrieval.bm25 import BM25Index, BM25Snapshot
from langmem_edge.retrieval.text import default_analyzer

__all__ = [
    "Admissible",
    "IndexSnapshot",
    "ProfileIndex",
    "ended_at",
    "key_terms",
    "text_terms",
]

logger = logging.getLogger(__name__)

EXACT_KEY_SCORE = 2.0
"""Raw key-channel score of a key equal to the query (word matches score at most 1)."""

COMPACT_MIN_DEAD = 1024
"""Deleted rows tolerated before the index considers rebuilding its rows."""

WORD_TERMS_CACHE = 262_144
"""Whitespace-separated words whose analysed terms :func:`text_terms` keeps (per process)."""


_KEY_SPLIT = str.maketrans({c: " " for c in "._-:/"})
"""Key separators turned into spaces before analysis."""


@lru_cache(maxsize=65_536)
def key_terms(key: str, *, last: bool) -> frozenset[str]:
    """Analysed words of a key (``preference.ui_theme``), or of its last segment."""
    part = key.rsplit(".", 1)[-1] if last else key
    return frozenset(default_analyzer().terms(part.translate(_KEY_SPLIT)))


@lru_cache(maxsize=WORD_TERMS_CACHE)
def _word_terms(word: str) -> tuple[str, ...]:
    return tuple(default_analyzer().terms(word))


def text_terms(text: str) -> list[str]:
    """``default_analyzer().terms(text)``, analysed word by word through a cache.

    The analyser's tokens never span whitespace (its word pattern matches no space, and
    NFKC never joins a character to a space before it), and stopwords, month names and stems
    are decided per token, so the terms of a text are the terms of its whitespace-separated
    words in order. Words repeat across memories, so loading a profile analyses each
    distinct word once instead of every text in full (about 40 % of building the index).
    """
    out: list[str] = []
    for word in text.split():
        out.extend(_word_terms(word))
    return out


@dataclass(frozen=True)
class IndexSnapshot:
    """A :class:`ProfileIndex` as arrays (:meth:`ProfileIndex.snapshot`), its values aside.

    ``ids`` are the records in the index's order (row ``i`` of every column is ``ids[i]``);
    ``columns`` the numeric columns by name (:data:`~.columns.COLUMN_DTYPES`); ``codes`` the
    scope and writer strings in code order; ``keyed`` ``(row, scope, key)`` of every record
    with a key; ``bm25`` the keyword postings."""

    ids: list[str]
    columns: dict[str, np.ndarray]
    codes: list[str]
    keyed: list[tuple[int, str, str]]
    bm25: BM25Snapshot


class ProfileIndex:
    """Everything recall needs about one profile, in memory, kept exact by the change protocol
    (:mod:`langmem_edge.memory.index.changes`)."""

    def __init__(self, layout: ProfileLayout, cache: IndexCacheConfig, recall: RecallConfig,
                 writers: WriterPool | None = None, access: AccessWriter | None = None
                 ) -> None:
        self.layout = layout
        self.profile = layout.profile
        self.cache = cache
        self.recall_config = recall
        self.lock = threading.RLock()
        self.counts: dict[str, dict[str, tuple[int, str]]] = {}
        """Access counts read from the store: ``{memory id: {writer: (count, last ISO)}}``."""
        self.access_writer = access if access is not None else AccessWriter()
        """This process's writer of the profile's access counts (``AgentMemory`` keeps it
        across reloads: :mod:`.access`)."""
        self._writers = writers if writers is not None else WriterPool()
        """The writers of the profile's record log: the process's pool for it
        (:func:`~langmem_edge.memory.index.log.writer_pool`), so a reload keeps them."""
        self._clear()
        self.last_prune = 0.0

    def _clear(self) -> None:
        self.generation: str | None = None
        self.synced_at: float | None = None
        """When this index last synced (this process's monotonic clock)."""
        self.values = RecordValues()
        self.tombstones: set[str] = set()
        self.applied: dict[str, int] = {}
        """The change protocol's number applied per writer."""
        self.unsettled: set[str] = set()
        """Writers whose markers the last sync read unsettled (for the index image)."""
        self.known_writers: tuple[str, ...] = ()
        """Writers whose markers a sync reads by key (``index/changes.py``)."""
        self.roster: str | None = None
        """The roster stamp read before the last search of the markers (None: search)."""
        self.image_pages = 0
        """Pages of the store's index image when this index last read it."""
        self.bm25 = BM25Index(k1=self.recall_config.bm25_k1, b=self.recall_config.bm25_b)
        self.by_key: dict[tuple[str, str], set[str]] = {}
        self._key_terms: dict[str, set[tuple[str, str]]] = {}
        self._key_lower: dict[str, set[tuple[str, str]]] = {}
        self.columns = Columns()
        self._sorted: list[str] | None = None

    # -- the change protocol's writers -------------------------------------------------------

    def take_writer(self) -> SyncWriter:
        """A writer for one commit: each commit in flight gets its own, so a writer's writes
        never overlap (its numbers and marker only move forward)."""
        return self._writers.take()

    def return_writer(self, writer: SyncWriter) -> None:
        """Give back a writer taken by :meth:`take_writer`."""
        self._writers.give_back(writer)

    def writer_ids(self) -> set[str]:
        """Ids of every writer of this index (their markers are never pruned by it)."""
        return self._writers.ids()

    # -- access bumps (written behind) -------------------------------------------------------

    def bump(self, ids: Iterable[str], now: float, stamp: str) -> None:
        """Count ``ids`` as accessed now; the store is updated by the next flush (the bumps
        wait in the process's :attr:`access_writer`, so a reload keeps them)."""
        ids = list(ids)
        with self.lock:
            c = self.columns
            for mid in ids:
                row = c.row_of.get(mid)
                if row is not None:
                    c.access[row] += 1.0
                    c.touched[row] = now
            self.access_writer.bump(ids, now, stamp)

    @property
    def pending_since(self) -> float | None:
        """When the oldest bump not written yet was counted (``None``: none pending)."""
        return self.access_writer.pending_since

    def access(self, mid: str) -> tuple[int, str | None]:
        """Accesses of ``mid`` beyond its record's own ``access_count``: the other processes'
        count items read from the store, this process's count (its item, or what it has
        written since, :meth:`AccessWriter.own`) and its pending bumps, and the last access
        (ISO)."""
        with self.lock:
            writer = self.access_writer
            found = [c for w, c in self.counts.get(mid, {}).items() if w != writer.writer_id]
            own = writer.own(mid, self.counts.get(mid, {}).get(writer.writer_id))
            if own is not None:
                found.append(own)
        if not found:
            return 0, None
        return sum(c for c, _ in found), max(last for _, last in found)

    @property
    def count_writer(self) -> str:
        """This process's writer id for the profile's access-count items."""
        return self.access_writer.writer_id

    def set_counts(self, mid: str, items: Iterable[Any]) -> None:
        """Take in the count items of ``mid`` read from the store (``Item``s of
        ``layout.access_of(mid)``), or ``(writer, count, last)`` written by this index."""
        with self.lock:
            counts = self.counts.setdefault(mid, {})
            for it in items:
                if isinstance(it, tuple):
                    writer, count, last = it
                else:
                    v = it.value
                    if v.get("profile") != self.profile or v.get("id") != mid:
                        continue
                    writer, count, last = it.key, int(v.get("count") or 0), str(v.get("last"))
                if count >= counts.get(writer, (0, ""))[0]:
                    counts[writer] = (count, last)
            value = self.values.get(mid)
            if value is not None:
                self._set_access(value, self.columns.row_of[mid])

    # -- reading -----------------------------------------------------------------------------

    def sorted_ids(self) -> list[str]:
        """Every record id, in creation order (ids are time-ordered)."""
        with self.lock:
            if self._sorted is None:
                self._sorted = sorted(self.values)
            return self._sorted

    def key_ids(self, key: str, scope: str | None = None) -> list[str]:
        """Ids of every record (any status) under ``key``; one scope, or all when ``None``."""
        with self.lock:
            if scope is not None:
                return sorted(self.by_key.get((scope, key), ()))
            return sorted(i for (_, k), ids in self.by_key.items() if k == key for i in ids)

    # -- applying ----------------------------------------------------------------------------

    def reset(self, generation: str | None, values: Iterable[dict[str, Any]],
              counts: Iterable[Any], synced_at: float) -> None:
        """Replace the whole index (a full load): records, and access-count items."""
        with self.lock:
            self._clear()
            self.generation = generation
            self.access_writer.bind(generation)
            for value in values:
                self._set(value)
            self._take_counts(counts)
            self.synced_at = synced_at

    def _take_counts(self, counts: Iterable[Any]) -> None:
        self.counts = {}
        by_memory: dict[str, list[Any]] = {}
        for item in counts:
            by_memory.setdefault(str(item.value.get("id")), []).append(item)
        rows = self.columns.row_of  # in row order: packed values decode chunk by chunk
        for mid in sorted(by_memory, key=lambda m: rows.get(m, -1)):
            self.counts[mid] = {}
            self.set_counts(mid, by_memory[mid])

    def snapshot(self) -> tuple[IndexSnapshot, list[dict[str, Any]]]:
        """The index as arrays for an index image, and its values in the same order (every
        value read, decoding those still packed). The access columns are the records' own
        (:func:`~.columns.own_access`): a process restoring the image reads the count items
        again."""
        with self.lock:
            values = list(self.values.values())
            ids = list(self.values)
            columns = self.columns.snapshot(ids)
            counted = set(self.counts) | self.access_writer.counted()
            if counted:
                for i, (mid, value) in enumerate(zip(ids, values, strict=True)):
                    if mid in counted:
                        columns["access"][i], columns["touched"][i] = own_access(value)
            keyed = [(i, v.get("scope") or "agent", v["key"]) for i, v in enumerate(values)
                     if v.get("key")]
            return IndexSnapshot(ids=ids, columns=columns, codes=list(self.columns.codes),
                                 keyed=keyed, bm25=self.bm25.snapshot()), values

    def restore(self, generation: str | None, snapshot: IndexSnapshot, values: RecordValues,
                counts: Iterable[Any], synced_at: float) -> None:
        """Replace the whole index by ``snapshot`` (an index image) with ``values`` (its
        records, in ``snapshot.ids`` order, packed until read) and the access-count items
        read now. Raises ``ValueError`` when the parts do not fit together (the index is
        then empty, as before a first load)."""
        with self.lock:
            self._clear()
            try:
                if len(values) != len(snapshot.ids) or values.packed != len(values):
                    raise ValueError("index image values do not fit its records")
                self.columns.restore(snapshot.ids, snapshot.columns, snapshot.codes)
                self.bm25.restore(snapshot.bm25)
                self.values = values
                by_key = self.by_key
                for row, scope, key in snapshot.keyed:
                    sk = (scope, key)
                    if sk not in by_key:
                        self._index_key(sk, add=True)
                        by_key[sk] = set()
                    by_key[sk].add(snapshot.ids[row])
            except (ValueError, IndexError, TypeError):
                self._clear()
                raise
            self.generation = generation
            self.access_writer.bind(generation)
            self._take_counts(counts)
            self.synced_at = synced_at

    def apply(self, value: dict[str, Any]) -> None:
        """Take in a copy of a record read from the store or just written (the store is the
        source of truth: no clock decides between versions)."""
        with self.lock:
            mid = value.get("id")
            if not isinstance(mid, str) or mid in self.tombstones:
                return
            if value.get("profile") != self.profile:
                logger.warning("ignored record %s of another profile in %r", mid, self.profile)
                return
            held = self.values.get(mid)
            if held is value or held == value:
                return  # the same version
            self._set(value)

    def remove(self, mid: str) -> None:
        """Forget a deleted record for good (ids are never reused)."""
        with self.lock:
            self.tombstones.add(mid)
            self.access_writer.forget(mid)
            value = self.values.pop(mid, None)
            if value is None:
                return
            self._sorted = None
            self._unkey(value)
            self.columns.drop(mid)
            self.bm25.remove(mid)
            self._maybe_compact()

    def _set(self, value: dict[str, Any], terms: list[str] | None = None) -> None:
        mid = value["id"]
        held = self.values.get(mid)
        text = _indexed_text(value)
        if held is None:
            self._sorted = None
        else:
            self._unkey(held)
        self.values[mid] = value
        if value.get("key"):
            sk = (value.get("scope") or "agent", value["key"])
            if sk not in self.by_key:
                self._index_key(sk, add=True)
            self.by_key.setdefault(sk, set()).add(mid)
        row = self.columns.set(value)
        if held is None or _indexed_text(held) != text or mid not in self.bm25:
            if text:
                self.bm25.upsert(mid, {"text": text_terms(text) if terms is None else terms})
            else:
                self.bm25.remove(mid)
        slot = self.bm25.slot(mid)
        self.columns.slot[row] = -1 if slot is None else slot
        # columns.set took the record's own count; add the count items and pending bumps
        if mid in self.counts or self.access_writer.own(mid, None) is not None:
            self._set_access(value, row)

    def _set_access(self, value: dict[str, Any], row: int) -> None:
        """The fill's access and recency columns: the record's own count plus
        :meth:`access`."""
        c = self.columns
        extra, last = self.access(value["id"])
        c.access[row] = float(value.get("access_count") or 0) + extra
        created = iso_to_epoch(value.get("created_at"), 0.0)
        c.touched[row] = max(iso_to_epoch(value.get("last_accessed_at"), created),
                             iso_to_epoch(last, created))

    def _maybe_compact(self) -> None:
        """Rebuild the rows when dead ones outnumber live ones (deletions leave holes)."""
        c = self.columns
        if c.dead > COMPACT_MIN_DEAD and c.dead > len(c.row_of):
            values, synced, gen = list(self.values.values()), self.synced_at, self.generation
            applied, tombstones = self.applied, self.tombstones
            self._clear()
            for value in values:
                self._set(value)
            self.generation, self.synced_at = gen, synced
            self.applied, self.tombstones = applied, tombstones

    def _unkey(self, value: dict[str, Any]) -> None:
        if value.get("key"):
            sk = (value.get("scope") or "agent", value["key"])
            ids = self.by_key.get(sk)
            if ids is not None:
                ids.discard(value["id"])
                if not ids:
                    del self.by_key[sk]
                    self._index_key(sk, add=False)

    def _index_key(self, sk: tuple[str, str], *, add: bool) -> None:
        """Add or drop a key in the key-channel maps (last-segment terms, lower-case key)."""
        key = sk[1]
        for term, table in [(t, self._key_terms) for t in key_terms(key, last=True)] + [
            (key.lower(), self._key_lower)
        ]:
            if add:
                table.setdefault(term, set()).add(sk)
            else:
                keys = table.get(term)
                if keys is not None:
                    keys.discard(sk)
                    if not keys:
                        del table[term]

    def match_keys(self, query: str) -> list[tuple[tuple[str, str], float]]:
        """Keys matching ``query``: 2.0 when the key is the query; else, when a word of the
        key's last segment (``theme`` of ``preference.ui_theme``) occurs in the query, the
        share of the key's words that do. The last segment names the topic; words of the
        leading segments alone (``preference``) match too much to count."""
        with self.lock:
            out = {sk: EXACT_KEY_SCORE for sk in self._key_lower.get(query.strip().lower(), ())}
            terms = set(default_analyzer().terms(query))
            candidates = set().union(*(self._key_terms.get(t, ()) for t in terms)) if terms else ()
            for sk in candidates:
                if sk in out or not key_terms(sk[1], last=True) & terms:
                    continue
                words = key_terms(sk[1], last=False)
                out[sk] = len(words & terms) / len(words)
            return list(out.items())

    def keyword(self, query: str, *, limit: int, admissible: Admissible
                ) -> list[tuple[str, float]]:
        """BM25 hits ``(id, score)`` of the admissible records for ``query``, best first
        (the keyword channel; :class:`~langmem_edge.retrieval.bm25.BM25Index`, admitted by
        the mask over its slots)."""
        with self.lock:
            c = self.columns
            n = min(len(c.ids), admissible.mask.size)
            slots = c.slot[:n][admissible.mask[:n] & (c.slot[:n] >= 0)]
            accept = np.zeros(self.bm25.slots, dtype=bool)
            accept[slots] = True
            hits = self.bm25.search(default_analyzer().query_terms(query), limit=limit,
                                    accept_mask=accept)
        return [(h.id, h.score) for h in hits]

    def valid_from_between(self, start: float, end: float) -> list[tuple[str, float]]:
        """``(id, valid_from)`` of present records with ``start <= valid_from < end``."""
        with self.lock:
            c = self.columns
            n = len(c.ids)
            rows = np.flatnonzero(c.present[:n] & (c.valid_from[:n] >= start)
                                  & (c.valid_from[:n] < end))
            return [(str(c.ids[r]), float(c.valid_from[r])) for r in rows]

    # -- fill ranking ------------------------------------------------------------------------

    def admissible(
        self,
        *,
        t: float,
        as_of: bool,
        scopes: Iterable[str],
        kinds: Iterable[str] | None,
        writer: str | None,
        min_confidence: float,
    ) -> Admissible:
        """Which records a recall may return, as a mask over the index rows.

        Current recalls (``as_of=False``) admit active, unexpired records; ``at(ts)`` views
        admit records valid at ``t`` (``valid_from <= t < valid_until``, not superseded or
        forgotten by then). Both need the scope, kinds, writer and confidence floor.
        """
        with self.lock:
            c = self.columns
            n = len(c.ids)
            mask = c.present[:n] & (c.confidence[:n] >= min_confidence)
            mask &= (c.superseded_at[:n] > t) & (c.forgotten_at[:n] > t) & (c.valid_until[:n] > t)
            if as_of:
                mask &= c.valid_from[:n] <= t
            mask &= _any_of(c.scope[:n], [c.codes[s] for s in scopes if s in c.codes])
            if kinds is not None:
                mask &= _any_of(c.kind[:n], [KINDS.index(k) for k in kinds])
            if writer is not None:
                mask &= c.writer[:n] == c.codes.get(writer, -2)
            return Admissible(mask, c.row_of)

    def rank_fill(self, admissible: Admissible, *, t: float, exclude: Iterable[str],
                  limit: int) -> list[tuple[str, float]]:
        """The ``limit`` best admissible records by ``0.7 * recency + 0.3 * log(access + 1)``
        (recency at ``t``), leaving out ``exclude``."""
        if limit <= 0:
            return []
        cfg = self.recall_config
        with self.lock:
            c = self.columns
            mask = admissible.mask.copy()
            for mid in exclude:
                row = c.row_of.get(mid)
                if row is not None and row < mask.size:
                    mask[row] = False
            rows = np.flatnonzero(mask)
            if rows.size == 0:
                return []
            age_days = np.maximum(t - c.touched[rows], 0.0) / 86400.0
            recency = np.power(0.5, age_days / cfg.recency_half_life_days)
            scores = (cfg.fill_recency_weight * recency
                      + cfg.fill_access_weight * np.log(c.access[rows] + 1.0))
            k = min(limit, rows.size)
            top = np.argpartition(-scores, k - 1)[:k]
            top = top[np.argsort(-scores[top], kind="stable")]
            return [(str(c.ids[rows[i]]), float(scores[i])) for i in top]


def _indexed_text(value: dict[str, Any]) -> str:
    """The text the keyword channel indexes: none for an encrypted record."""
    return "" if value.get("encrypted") else value.get("text") or ""


def _any_of(column: np.ndarray, codes: list[int]) -> np.ndarray:
    """``np.isin(column, codes)`` for a few codes: one comparison per code (isin sorts)."""
    out = np.zeros(column.shape, dtype=bool)
    for code in codes:
        out |= column == code
    return out


class Admissible:
    """A recall's admissibility mask over the index rows; call it with a memory id."""

    __slots__ = ("mask", "row_of")

    def __init__(self, mask: np.ndarray, row_of: dict[str, int]) -> None:
        self.mask = mask
        self.row_of = row_of

    def __call__(self, mid: str) -> bool:
        row = self.row_of.get(mid)
        return row is not None and row < self.mask.size and bool(self.mask[row])
