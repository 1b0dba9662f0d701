"""One profile as recall and the write path need it, built per operation from one read.

Recall needs more than ``store.search(query=...)`` offers on a generic ``BaseStore``: a keyword
channel (BM25 over the profile's texts), an exact key channel, and the relevance fill (every
active memory ranked by recency and use). Each operation reads the profile's records and
access-count items in one batch (:func:`~langmem_edge.memory.index.store_io.plan_load`) and
builds a :class:`ProfileIndex` from them: the records' values, a key map and the access
counts; admission (:func:`admits`) and the fill are computed from the values when asked. It
is dropped when the operation ends:
the store is the only copy that lasts, so another process's write is in the next read and
no process keeps anything exact (``docs/architecture.md``). Its cost grows with the
profile (measured in ``docs/benchmarks.md``, ``benchmarks/memory_scale.py``).

**Access counts** are not written into records (a read-modify-write of a record to bump a
counter could bring back a record another process deleted meanwhile). Each writer keeps one
row under ``(*R, "access", "by-writer")``, key = its writer id, value its own cumulative
count and last access of each memory it counted: written blind (no read), never touching a
record (:func:`count_entries` reads them). A memory's count is its record's
``access_count`` (carried over by ``update``) plus the writers' counts plus this process's
pending bumps.

The keyword channel is the package's one BM25 (:func:`langmem_edge.retrieval.bm25.rank_fields`)
over the records read, computed when the operation asks (a write never searches by keyword).
"""

from __future__ import annotations

import heapq
import logging
import math
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from langmem_edge.memory.config import RecallConfig
from langmem_edge.memory.core.dates import iso_to_epoch
from langmem_edge.memory.core.layout import ProfileLayout
from langmem_edge.memory.index.access import AccessWriter
from langmem_edge.retrieval.bm25 import rank_fields
from langmem_edge.retrieval.text import default_analyzer
from langmem_edge.retrieval.vectors import cosine_distances

__all__ = [
    "ProfileIndex",
    "admits",
    "count_entries",
    "ended_at",
    "key_terms",
    "text_terms",
    "valid_at",
    "valid_from",
]

logger = logging.getLogger(__name__)

EXACT_KEY_SCORE = 2.0
"""Raw key-channel score of a key equal to the query (word matches score at most 1)."""

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


class ProfileIndex:
    """Everything recall needs about one profile, built for one operation from one read of
    its records and access counts (:func:`~langmem_edge.memory.index.store_io.plan_load`)
    and dropped with it: nothing is kept between operations, so nothing needs keeping exact,
    and no two threads share one (each operation makes its own: ``ProfileContext.fresh``).
    """

    def __init__(self, layout: ProfileLayout, recall: RecallConfig,
                 access: AccessWriter | None = None) -> None:
        self.layout = layout
        self.profile = layout.profile
        self.recall_config = recall
        self.complete = False
        """Whether it holds the whole profile as read in this operation (else only some
        records: none, or a large profile's candidates)."""
        self.history = True
        """Whether a complete read took superseded and forgotten records too (else only the
        active ones: a record it lacks may still exist)."""
        self.read_at = time.monotonic()
        """When the read that fills it began, at the latest (made just before the read)."""
        self.counts: dict[str, dict[str, tuple[int, str]]] = {}
        """Access counts read from the store: ``{memory id: {writer: (count, last ISO)}}``."""
        self.access_writer = access if access is not None else AccessWriter()
        """This process's writer of the profile's access counts (``AgentMemory`` keeps one
        per profile: :mod:`.access`)."""
        self.values: dict[str, dict[str, Any]] = {}
        """The records read (and written in this operation), by id, in the order read."""
        self.vectors: dict[str, Sequence[float]] | None = None
        """Each record's vector, read with the records on a store that returns them
        (:class:`~langmem_edge.memory.core.stores.ListsVectors`); None when the read did not:
        rank by vector with the store then."""
        self.by_key: dict[tuple[str, str], set[str]] = {}

    # -- access counts -----------------------------------------------------------------------

    def access(self, mid: str) -> tuple[int, str | None]:
        """Accesses of ``mid`` beyond its record's own ``access_count``: the other processes'
        count items read from the store, this process's count (its item, or what it has
        written since, :meth:`AccessWriter.own`) and its pending bumps, and the last access
        (ISO)."""
        writer = self.access_writer
        counts = self.counts.get(mid)
        own = writer.own(mid, counts.get(writer.writer_id) if counts else None)
        if not counts:  # the common case: no other process counted it
            return (0, None) if own is None else own
        found = [c for w, c in counts.items() if w != writer.writer_id]
        if own is not None:
            found.append(own)
        if not found:
            return 0, None
        return sum(c for c, _ in found), max(last for _, last in found)

    def set_counts(self, mid: str, entries: Iterable[tuple[str, int, str]]) -> None:
        """Take in the access counts of ``mid``: ``(writer, count, last ISO)``, read from the
        store (:func:`count_entries`) or written by this index."""
        counts = self.counts.setdefault(mid, {})
        for writer, count, last in entries:
            if count >= counts.get(writer, (0, ""))[0]:
                counts[writer] = (count, last)

    # -- reading -----------------------------------------------------------------------------

    def sorted_ids(self) -> list[str]:
        """Every record id, in creation order (ids are time-ordered)."""
        return sorted(self.values)

    def key_ids(self, key: str, scope: str | None = None) -> list[str]:
        """Ids of every record (any status) under ``key``; one scope, or all when ``None``."""
        if scope is not None:
            return sorted(self.by_key.get((scope, key), ()))
        return sorted(i for (_, k), ids in self.by_key.items() if k == key for i in ids)

    def nearest(self, query: Sequence[float], admit: Callable[[str], bool]
                ) -> list[tuple[str, float]]:
        """The records ``admit`` accepts that have a vector, by cosine similarity to
        ``query`` (the store's score), best first, ties by id. Needs :attr:`vectors`."""
        assert self.vectors is not None
        ids = [mid for mid in self.vectors if admit(mid)]
        if not ids:
            return []
        distances = cosine_distances(np.stack([np.asarray(self.vectors[mid]) for mid in ids]),
                                     query)
        return sorted(((mid, 1.0 - float(d)) for mid, d in zip(ids, distances, strict=True)),
                      key=lambda h: (-h[1], h[0]))

    # -- applying ----------------------------------------------------------------------------

    def reset(self, values: Iterable[dict[str, Any]], counts: Iterable[Any], *,
              complete: bool = True, vectors: dict[str, Sequence[float]] | None = None) -> None:
        """Fill the index from one read: records (the whole profile when ``complete``),
        access-count items and (``vectors``, by memory id) the records' vectors."""
        self.vectors = vectors
        for value in values:
            self._set(value)
        for mid, entries in count_entries(counts, self.profile).items():
            self.set_counts(mid, entries)
        self.complete = complete

    def apply(self, value: dict[str, Any]) -> None:
        """Take in a copy of a record read from the store or just written (the store is the
        source of truth: no clock decides between versions)."""
        mid = value.get("id")
        if not isinstance(mid, str):
            return
        if value.get("profile") != self.profile:
            logger.warning("ignored record %s of another profile in %r", mid, self.profile)
            return
        held = self.values.get(mid)
        if held is value or held == value:
            return  # the same version
        if self.vectors is not None and (
                held is None or _indexed_text(held) != _indexed_text(value)):
            self.vectors = None  # a vector not read with the profile: ask the store
        self._set(value)

    def remove(self, mid: str) -> None:
        """Forget a deleted record for good (ids are never reused)."""
        self.access_writer.forget(mid)
        value = self.values.pop(mid, None)
        if value is None:
            return
        self._unkey(value)
        if self.vectors is not None:
            self.vectors.pop(mid, None)

    def _set(self, value: dict[str, Any]) -> None:
        mid = value["id"]
        held = self.values.get(mid)
        if held is not None:
            self._unkey(held)
        self.values[mid] = value
        if value.get("key"):
            self.by_key.setdefault((value.get("scope") or "agent", value["key"]), set()).add(mid)

    def _unkey(self, value: dict[str, Any]) -> None:
        if value.get("key"):
            sk = (value.get("scope") or "agent", value["key"])
            ids = self.by_key.get(sk)
            if ids is not None:
                ids.discard(value["id"])
                if not ids:
                    del self.by_key[sk]

    def match_keys(self, query: str) -> list[tuple[tuple[str, str], float]]:
        """Keys matching ``query``: 2.0 when the key is the query; else, when a word of the
        key's last segment (``theme`` of ``preference.ui_theme``) occurs in the query, the
        share of the key's words that do. The last segment names the topic; words of the
        leading segments alone (``preference``) match too much to count."""
        exact = query.strip().lower()
        terms = set(default_analyzer().terms(query))
        out: list[tuple[tuple[str, str], float]] = []
        for sk in self.by_key:
            if sk[1].lower() == exact:
                out.append((sk, EXACT_KEY_SCORE))
            elif terms and key_terms(sk[1], last=True) & terms:
                words = key_terms(sk[1], last=False)
                out.append((sk, len(words & terms) / len(words)))
        return out

    def keyword(self, query: str, *, limit: int, admissible: Callable[[str], bool]
                ) -> list[tuple[str, float]]:
        """BM25 hits ``(id, score)`` of the admissible records for ``query``, best first
        (the keyword channel: :func:`~langmem_edge.retrieval.bm25.rank_fields` over the
        records' texts, in the order they were read; the statistics are every text's, the
        ranking the admissible ones')."""
        cfg = self.recall_config
        docs = {mid: {"text": text_terms(text)} for mid, value in self.values.items()
                if (text := _indexed_text(value))}
        hits = rank_fields(docs, default_analyzer().query_terms(query), k1=cfg.bm25_k1,
                           b=cfg.bm25_b, limit=limit, accept=admissible)
        return [(h.id, h.score) for h in hits]

    def valid_from_between(self, start: float, end: float) -> list[tuple[str, float]]:
        """``(id, valid_from)`` of the records with ``start <= valid_from < end``."""
        return [(mid, vf) for mid, value in self.values.items()
                if start <= (vf := valid_from(value)) < end]

    # -- admission and fill ranking ----------------------------------------------------------

    def admissible(self, *, t: float, as_of: bool, scopes: Iterable[str],
                   kinds: Iterable[str] | None, writer: str | None, min_confidence: float
                   ) -> Callable[[str], bool]:
        """Which records a recall may return (:func:`admits`), as a test of a memory id."""
        scopes, kinds = frozenset(scopes), None if kinds is None else frozenset(kinds)
        return frozenset(
            mid for mid, value in self.values.items()
            if admits(value, t=t, as_of=as_of, scopes=scopes, kinds=kinds, writer=writer,
                      min_confidence=min_confidence)).__contains__

    def rank_fill(self, admissible: Callable[[str], bool], *, t: float,
                  exclude: Iterable[str], limit: int) -> list[tuple[str, float]]:
        """The ``limit`` best admissible records by ``0.7 * recency + 0.3 * log(access + 1)``
        (recency at ``t`` of the last access, else the creation; access: the record's count
        and :meth:`access`), leaving out ``exclude``; ties in the order read."""
        if limit <= 0:
            return []
        cfg = self.recall_config
        skip = set(exclude)
        scored = []
        for n, (mid, value) in enumerate(self.values.items()):
            if mid in skip or not admissible(mid):
                continue
            extra, last = self.access(mid)
            seen = value.get("last_accessed_at")
            touched = (iso_to_epoch(seen) if seen
                       else iso_to_epoch(value.get("created_at"), 0.0))
            if last:
                touched = max(touched, iso_to_epoch(last))
            recency = 0.5 ** (max(t - touched, 0.0) / 86400.0 / cfg.recency_half_life_days)
            access = float(value.get("access_count") or 0) + extra
            score = (cfg.fill_recency_weight * recency
                     + cfg.fill_access_weight * math.log(access + 1.0))
            scored.append((-score, n, mid))
        return [(mid, -neg) for neg, _, mid in heapq.nsmallest(limit, scored)]


def ended_at(value: dict[str, Any], status: str) -> float:
    """When a record stopped being current by ``status`` (``superseded`` / ``forgotten``):
    its ``<status>_at`` stamp, ``-inf`` when it has the status without a stamp, else ``inf``.
    """
    stamp = value.get(f"{status}_at")
    if stamp:
        return iso_to_epoch(stamp)
    return -math.inf if value.get("status") == status else math.inf


def valid_from(value: dict[str, Any]) -> float:
    """A record's ``valid_from`` (else its creation) as epoch seconds."""
    return iso_to_epoch(value.get("valid_from"), iso_to_epoch(value.get("created_at"), 0.0))


def valid_at(value: dict[str, Any], t: float, *, as_of: bool = True) -> bool:
    """Whether a record was current at epoch seconds ``t``: not superseded, forgotten or
    expired by then, and (``as_of``) valid from ``t`` or earlier."""
    return (min(ended_at(value, "superseded"), ended_at(value, "forgotten"),
                iso_to_epoch(value.get("valid_until"))) > t
            and (not as_of or valid_from(value) <= t))


def admits(value: dict[str, Any], *, t: float, as_of: bool, scopes: Collection[str],
           kinds: Collection[str] | None, writer: str | None, min_confidence: float) -> bool:
    """Whether a recall may return a record: in one of ``scopes``, of one of ``kinds`` (None:
    any), by ``writer`` (None: any), at least ``min_confidence`` confident, and current at
    ``t`` (:func:`valid_at`; a current recall, ``as_of=False``, does not ask since when)."""
    return (value.get("scope") in scopes
            and (kinds is None or value.get("kind") in kinds)
            and (writer is None or value.get("writer") == writer)
            and float(value.get("confidence", 0.0)) >= min_confidence
            and valid_at(value, t, as_of=as_of))


def _indexed_text(value: dict[str, Any]) -> str:
    """The text the keyword channel indexes: none for an encrypted record."""
    return "" if value.get("encrypted") else value.get("text") or ""


def count_entries(items: Iterable[Any], profile: str) -> dict[str, list[tuple[str, int, str]]]:
    """The access counts in the writers' rows read from the store (``{"counts": {id: [count,
    last]}}``, key = the writer), by memory id: ``(writer, count, last ISO)``. Rows of
    another profile are left out."""
    out: dict[str, list[tuple[str, int, str]]] = {}
    for it in items:
        v = it.value
        if isinstance(v, dict) and v.get("profile") == profile and isinstance(
                v.get("counts"), dict):
            for mid, entry in v["counts"].items():
                if isinstance(entry, list) and len(entry) == 2:
                    out.setdefault(str(mid), []).append(
                        (it.key, int(entry[0] or 0), str(entry[1])))
    return out
