"""Per-process keyword index of a profile's messages, kept exact by the session records.

Hybrid recall (:mod:`.recall`) ranks every message in scope with BM25 over its text, its
neighbours' text, its speaker and its day. Reading and analysing every message of the profile
at every call (what ``keyword_scan_limit`` bounds, 5,000 rows) costs far more than the vector
search it is fused with, so each process keeps, per store (weakly) and per profile, a
:class:`MessageIndex`: the messages' items, their analysed terms and one
:class:`~langmem_edge.retrieval.bm25.BM25Index` whose documents are namespaced by session
(so a ``scope="conversation"`` search has that session's statistics, a profile-wide one the
profile's).

**Why it is exact** (the argument of :mod:`.pages`, applied to whole sessions). Messages are
never rewritten: an ingest appends messages with ``seq`` from the session record's
``next_seq`` on and moves ``next_seq`` and ``count`` by the same amount in the same batch; a
deletion removes messages and lowers ``count``; :meth:`~.tier.EpisodicTier.delete_session`
removes the record, and a session created again gets a new ``epoch``. Every indexed recall
reads the session records in scope (below: usually not at all) and, per session, compares
them with the record its messages were read under
(:func:`~.pages.appended_only`):

- the same record: nothing to read;
- grown by appends alone: read only the new ``seq`` range (one equality search per history
  page, as a window does) and re-score the last ``context_turns`` old messages, whose
  neighbours changed;
- anything else (a deletion, a new epoch, a record without an epoch, a session not indexed
  yet): read the whole session again;
- a record gone: drop the session.

In a session that never lost a message (``count == next_seq``) a read must return every
``seq`` it covers; a short read (a write not yet visible) is used for this call and the
session read again at the next.

**Which sessions to compare.** A ``scope="conversation"`` recall reads its one session
record by key. A profile-wide recall would have to list every session record (one
unfiltered search, the cost of the namespace) to find the ones that changed; it lists them
only at its first recall in a process (or of a store from before the change protocol) and
after ``reload_after_seconds`` (30 min) without a sync. Otherwise it asks the episodic change
log (:mod:`.writes`, every message write is a write of the writer id + sequence protocol):
it reads every episodic marker in the batch of its vector search; for each writer whose
marker confirms a number other than the one this index applied, or is unsettled, it reads
the writer's entries above the applied number and re-reads by key only the session records
they name (and those whose last read was short), then compares them as above and records
the confirmed numbers as applied. No marker moved and none unsettled: the index is used as
it is. Exact because a marker confirming a write is put after that write's rows and entry,
and the markers are read before the entries and the records (``docs/architecture.md``,
"The episodic message index"); a writer that died mid-write leaves its marker unsettled, so
its entries are re-read at every recall until a pruner settles it. The price of exactness is one
search of the markers per recall (the entries and the named records when something
changed), instead of every message.

Limits: profiles with more than :data:`MAX_INDEXED_MESSAGES` messages in scope, stores that
expire items by default, and ``EpisodicConfig(recall_index=False)`` are scanned as before.
Writes that bypass the tier (a raw ``put`` into a messages namespace without its session
record) are not seen until the session record moves, as with the page cache.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from langgraph.store.base import BaseStore, GetOp, Item, SearchOp

from langmem_edge.memory.config import EpisodicConfig
from langmem_edge.memory.core.layout import GENERATION_KEY, ProfileLayout
from langmem_edge.memory.core.plans import Call, Plan, StoreStep
from langmem_edge.memory.core.stores import NearestKeys
from langmem_edge.memory.episodic.compaction import history_ops
from langmem_edge.memory.episodic.pages import appended_only, store_cache
from langmem_edge.memory.episodic.recall import context_window, cut_off, message_day
from langmem_edge.memory.episodic.writes import LOG_CONFIG
from langmem_edge.memory.index.log import MAX_WRITERS, ChangeLog, pending
from langmem_edge.retrieval.bm25 import BM25Index
from langmem_edge.retrieval.text import Analyzer

__all__ = [
    "MAX_INDEXED_MESSAGES",
    "MAX_INDEXED_PROFILES",
    "MessageIndex",
    "SessionRead",
    "indexed_keyword_plan",
    "message_index_for",
    "nearest_messages_plan",
]

MAX_INDEXED_MESSAGES = 50_000
"""Messages in scope above which recall scans (``keyword_scan_limit``) instead of indexing:
bounds the memory one profile's index takes (about 1 KB a message)."""

MAX_INDEXED_PROFILES = 64
"""Profiles whose message index one store's cache keeps (least recently used dropped
first)."""

SessionRead = tuple[int, int] | None
"""What a session needs read before a search: the appended ``(lo, hi)`` seq range, or None
for the whole session."""

Fields = dict[str, list[str]]


class _Session:
    """One session's messages in ``(seq, key)`` order and the record they were read under
    (None: read it whole at the next search)."""

    def __init__(self) -> None:
        self.record: dict[str, Any] | None = None
        self.order: list[str] = []


def _matches(value: Mapping[str, Any], flt: Mapping[str, Any]) -> bool:
    """Whether a message's stored ``value`` has every ``field: value`` of ``flt``."""
    return all(value.get(k) == v for k, v in flt.items())


class MessageIndex:
    """BM25 over one profile's messages, each with its neighbours, speaker and day.

    Args:
        analyzer: The analyser of texts and queries.
        k1: BM25 term-frequency saturation.
        b: BM25 length normalisation.
        field_weights: BM25F weights of ``context``, ``name`` and ``date`` (``text`` weighs 1).
        context_turns: Neighbouring messages each side (same session) in ``context``.
    """

    def __init__(self, *, analyzer: Analyzer, k1: float, b: float,
                 field_weights: Mapping[str, float], context_turns: int) -> None:
        self.analyzer = analyzer
        self.context_turns = context_turns
        self._bm25 = BM25Index(k1=k1, b=b, field_weights=field_weights)
        self._sessions: dict[str, _Session] = {}
        self._items: dict[str, Item] = {}
        self._terms: dict[str, Fields] = {}
        self._contextless: set[str] = set()
        self._lock = threading.Lock()
        self._applied: dict[str, int] | None = None  # episodic log numbers applied
        self._synced_at = 0.0  # this process's monotonic clock, for the reload age only
        self._generation: dict[str, Any] | None = None  # the profile's, at the last sync

    def applied(self, now: float, generation: dict[str, Any] | None
                ) -> dict[str, int] | None:
        """The episodic change log's numbers this index applied per writer, or None when a
        profile-wide recall must list every session record: it never did (or that listing
        was too large to index), the profile's ``generation`` item is another than at the
        last sync (``delete_profile`` removes it first), or it has not synced for
        ``reload_after_seconds`` (entries older than the retention may be pruned; ``now`` is
        this process's monotonic clock)."""
        with self._lock:
            if self._applied is None or generation != self._generation or (
                    now - self._synced_at > LOG_CONFIG.reload_after_seconds):
                return None
            return dict(self._applied)

    def synced(self, confirmed: Mapping[str, int], now: float,
               generation: dict[str, Any] | None) -> None:
        """Record a profile-wide sync that applied every write the markers it read first
        confirm (``writer -> number``), at monotonic time ``now``, under the profile's
        ``generation`` item."""
        with self._lock:
            self._applied, self._synced_at = dict(confirmed), now
            self._generation = generation

    def unread(self) -> list[str]:
        """Sessions whose last read was short (a write not visible yet): read them again."""
        with self._lock:
            return [sid for sid, e in self._sessions.items() if e.record is None]

    def counted(self, records: Mapping[str, Mapping[str, Any]]) -> int:
        """Messages in the profile once the sessions of ``records`` have those records."""
        with self._lock:
            old = sum(int(e.record.get("count", e.record["next_seq"])) for sid, e in
                      self._sessions.items() if e.record is not None and sid not in records)
        return old + sum(int(r.get("count", r["next_seq"])) for r in records.values())

    def plan_reads(self, records: Mapping[str, Mapping[str, Any]]) -> dict[str, SessionRead]:
        """What to read for the sessions in scope (``session id -> record`` just read):
        ``{session id: (lo, hi) | None}``; sessions absent need nothing."""
        out: dict[str, SessionRead] = {}
        with self._lock:
            for sid, record in records.items():
                entry = self._sessions.get(sid)
                old = entry.record if entry is not None else None
                if old is None or not appended_only(old, record):
                    out[sid] = None
                elif int(record["next_seq"]) > int(old["next_seq"]):
                    out[sid] = (int(old["next_seq"]), int(record["next_seq"]))
        return out

    def forget_missing(self, sessions: Sequence[str], scope: Sequence[str] | None) -> None:
        """Drop the indexed sessions of ``scope`` (None: all) that are not in ``sessions``
        (their records are gone)."""
        keep = set(sessions)
        with self._lock:
            for sid in [s for s in self._sessions if (scope is None or s in scope)
                        and s not in keep]:
                self._drop(sid)

    def apply(self, sid: str, namespace: tuple[str, ...], record: Mapping[str, Any],
              read: SessionRead, items: Sequence[Item]) -> None:
        """Index what was read for session ``sid`` under ``record``: the whole session
        (``read`` None) or the appended range ``read``."""
        lo, hi = read if read is not None else (0, int(record["next_seq"]))
        items = [it for it in items if lo <= int(it.value.get("seq", -1)) < hi]
        whole = int(record.get("count", -1)) < int(record["next_seq"]) or len(
            {it.key for it in items}) == hi - lo
        with self._lock:
            if read is None:
                self._drop(sid)
            entry = self._sessions.setdefault(sid, _Session())
            fresh = [it for it in items if it.key not in self._items]
            for it in fresh:
                self._items[it.key] = it
                self._terms[it.key] = self._own_terms(it)
            if fresh:
                entry.order = sorted({*entry.order, *(it.key for it in fresh)},
                                     key=lambda k: (int(self._items[k].value["seq"]), k))
                new = {it.key for it in fresh}
                first = next(i for i, k in enumerate(entry.order) if k in new)
                self._rescore(entry, namespace, max(0, first - self.context_turns))
            entry.record = dict(record) if whole else None

    def search(self, query: str, *, namespace_prefix: tuple[str, ...], limit: int,
               accept: Callable[[Item], bool] | None = None) -> list[tuple[str, float]]:
        """BM25F ranking of the indexed messages under ``namespace_prefix`` for ``query``
        (statistics over that prefix), best first; ``accept`` keeps messages (role,
        contact) before ranks are counted."""
        keep = None if accept is None else (lambda key: accept(self._items[key]))
        with self._lock:
            hits = self._bm25.search(self.analyzer.query_terms(query),
                                     namespace_prefix=namespace_prefix, limit=limit,
                                     accept=keep)
        return [(h.id, h.score) for h in hits]

    def rank(self, query: str, *, namespace_prefix: tuple[str, ...], flt: Mapping[str, Any],
             limit: int) -> list[tuple[str, float]]:
        """:meth:`search` keeping the messages whose value matches every ``field: value`` of
        ``flt`` beyond ``profile`` (``role``, ``contact``)."""
        extra = {k: v for k, v in flt.items() if k != "profile"}
        accept = (lambda it: _matches(it.value, extra)) if extra else None
        return self.search(query, namespace_prefix=namespace_prefix, limit=limit,
                           accept=accept)

    def item(self, key: str) -> Item | None:
        """The indexed message item ``key``, if indexed."""
        return self._items.get(key)

    def admits(self, namespace: tuple[str, ...], key: str, flt: Mapping[str, Any]) -> bool:
        """Whether message ``key`` of ``namespace`` is indexed and its value matches every
        ``field: value`` of ``flt`` (``profile``, ``role``, ``contact``)."""
        item = self._items.get(key)
        return (item is not None and tuple(item.namespace) == tuple(namespace)
                and _matches(item.value, flt))

    def contextless(self, key: str) -> bool:
        """Whether indexed message ``key`` lost its keyword context to long messages
        (:func:`~.recall.cut_off`)."""
        return key in self._contextless

    def day(self, key: str) -> str:
        """The day of indexed message ``key`` (``"8 May 2023"``), empty when unknown."""
        item = self._items.get(key)
        return message_day(item.value.get("ts")) if item is not None else ""

    def __len__(self) -> int:
        return len(self._items)

    # internals (called under the lock) -------------------------------------------------------
    def _own_terms(self, item: Item) -> Fields:
        terms = self.analyzer.terms
        fields: Fields = {"text": terms(str(item.value.get("text", "")))}
        if item.value.get("name"):
            fields["name"] = terms(str(item.value["name"]))
        day = message_day(item.value.get("ts"))
        if day:
            fields["date"] = terms(day)
        return fields

    def _rescore(self, entry: _Session, namespace: tuple[str, ...], start: int) -> None:
        """(Re-)index the messages of ``entry`` from position ``start``: their context is
        the text terms of ``context_turns`` neighbours each side, as
        :func:`~.recall.message_fields` builds it (a message that stands alone has none and
        lends none)."""
        order, n = entry.order, self.context_turns
        lo = max(0, start - n)  # the texts a rescored message's window can reach
        texts = [str(self._items[k].value.get("text", "")) for k in order[lo:]]
        for i in range(start, len(order)):
            own = self._terms[order[i]]
            near = [t for j in context_window(texts, i - lo, n)
                    for t in self._terms[order[lo + j]]["text"]]
            fields = {**own, "context": near} if near else own
            if cut_off(texts, i - lo, n):
                self._contextless.add(order[i])
            else:
                self._contextless.discard(order[i])
            self._bm25.upsert(order[i], fields, namespace=namespace)

    def _drop(self, sid: str) -> None:
        entry = self._sessions.pop(sid, None)
        for key in entry.order if entry is not None else ():
            self._bm25.remove(key)
            self._items.pop(key, None)
            self._terms.pop(key, None)
            self._contextless.discard(key)


class _Indexes:
    """One store's message indexes, by profile and settings, least recently used dropped."""

    def __init__(self) -> None:
        self.indexes: OrderedDict[tuple[Any, ...], MessageIndex] = OrderedDict()
        self.lock = threading.Lock()


_STORES: weakref.WeakKeyDictionary[BaseStore, _Indexes] = weakref.WeakKeyDictionary()


def message_index_for(store: BaseStore, key: tuple[Any, ...],
                      make: Callable[[], MessageIndex]) -> MessageIndex | None:
    """The message index of ``store`` for ``key`` (the profile's messages namespace and the
    settings that shape the index) in this process, made on first use; None when messages
    may not be cached (:func:`~.pages.store_cache`)."""
    indexes = store_cache(store, _STORES, _Indexes)
    if indexes is None:
        return None
    with indexes.lock:
        found = indexes.indexes.get(key)
        if found is None:
            found = indexes.indexes[key] = make()
            while len(indexes.indexes) > MAX_INDEXED_PROFILES:
                indexes.indexes.popitem(last=False)
        indexes.indexes.move_to_end(key)
        return found


def indexed_keyword_plan(
    index: MessageIndex, query: str, *, search: SearchOp | None, prefix: tuple[str, ...],
    flt: Mapping[str, Any], depth: int, session_id: str | None, layout: ProfileLayout,
    config: EpisodicConfig,
) -> Plan[tuple[list[Item] | None, list[tuple[str, float]] | None]]:
    """Run ``search`` (the vector side, if given) with the read of the episodic markers
    (profile-wide) or of the session record (``session_id``), bring ``index`` up to date
    (the module docstring) and rank by it: ``(vector hits, keyword ranking)``, the hits None
    without ``search``; the ranking is None when the scope holds
    more than :data:`MAX_INDEXED_MESSAGES` messages (the caller scans instead). ``flt``
    beyond ``profile`` (role, contact) is applied to the ranking."""
    profile = layout.profile
    sessions, page = layout.sessions, config.scan_page_size
    log = ChangeLog.of_messages(layout)
    vector: tuple[SearchOp, ...] = () if search is None else (search,)
    if session_id is not None:
        *near_, meta = yield StoreStep((*vector, GetOp(sessions, session_id)))
        found = [meta] if meta is not None else []
        scope: list[str] | None = [session_id]
    else:
        # one search of meta: the generation and the episodic markers below it
        *near_, probe = yield StoreStep((*vector, SearchOp(layout.meta, limit=MAX_WRITERS)))
        markers, now = log.markers(probe), time.monotonic()
        generation = next((dict(it.value) for it in probe if it.key == GENERATION_KEY
                           and tuple(it.namespace) == layout.meta), None)
    near = near_[0] if near_ else None
    if session_id is None:
        applied = index.applied(now, generation)
        if applied is not None and not set(applied) <= set(markers):
            applied = None  # markers gone: pruned, or the profile deleted
        if applied is None:
            scope = None
            # unfiltered: a pushed-down filter costs ChromaStore a pass over the collection
            (found,) = yield StoreStep((SearchOp(sessions, limit=page),))
            while len(found) % page == 0 and 0 < len(found) < MAX_INDEXED_MESSAGES:
                (more,) = yield StoreStep((SearchOp(sessions, limit=page,
                                                    offset=len(found)),))
                found = [*found, *more]
                if not more:
                    break
        else:
            since = pending(markers, applied)
            entries = (yield from log.plan_entries(None, since, config.scan_page_size)
                       ) if since else []
            scope = sorted({*index.unread(), *(i for e in entries for i in e.value.get(
                "ids", ()) if isinstance(i, str))})
            if not scope:
                index.synced({w: m.confirmed for w, m in markers.items()}, now, generation)
                return near, index.rank(query, namespace_prefix=prefix, flt=flt, limit=depth)
            got = yield StoreStep(tuple(GetOp(sessions, sid) for sid in scope))
            found = [it for it in got if it is not None]
    records = {it.key: it.value for it in found
               if it.value.get("profile") == profile and "next_seq" in it.value}
    if (index.counted(records) if scope is not None and session_id is None else sum(
            int(r.get("count", r["next_seq"])) for r in records.values())) > (
            MAX_INDEXED_MESSAGES):
        return near, None
    index.forget_missing(list(records), scope)
    reads = index.plan_reads(records)
    ops: list[GetOp | SearchOp] = []
    spans: list[tuple[str, int]] = []
    for sid, read in reads.items():
        ns, rec = layout.session_messages(sid), records[sid]
        if read is None:
            step: tuple[GetOp | SearchOp, ...] = (SearchOp(ns, filter={"profile": profile},
                                                           limit=int(rec["next_seq"]) + page),)
        else:
            step = history_ops(ns, profile, *read, int(rec.get("page_size", config.page_size)),
                               rec)
        ops += step
        spans.append((sid, len(step)))
    results = (yield StoreStep(tuple(ops))) if ops else []
    pos = 0
    for sid, n in spans:
        items = [it for part in results[pos:pos + n]
                 for it in ((part,) if isinstance(part, Item) else part or ())
                 if it.value.get("profile") == profile]
        pos += n
        index.apply(sid, layout.session_messages(sid), records[sid], reads[sid], items)
    if session_id is None:
        index.synced({w: m.confirmed for w, m in markers.items()}, now, generation)
    return near, index.rank(query, namespace_prefix=prefix, flt=flt, limit=depth)


def nearest_messages_plan(
    store: BaseStore, index: MessageIndex, query: str, *, prefix: tuple[str, ...],
    flt: Mapping[str, Any], depth: int,
) -> Plan[list[tuple[str, float]]]:
    """The vector side by keys alone on a :class:`~langmem_edge.memory.core.stores.
    NearestKeys` store, the values from ``index`` (just brought up to date): the ``depth``
    nearest messages under ``prefix`` that the index holds and ``flt`` admits, ``(key,
    score)`` best first, scored as the store's ``search`` scores them.

    Asks for ``depth`` keys and a quarter more (plus 5), and four times more while too few
    are admissible and the store had more to give. A message the store returns that the
    index does not hold yet (a write that became visible between the two reads) is left
    out of this call; the next call's sync reads it."""
    ask = depth + depth // 4 + 5
    while True:
        found = yield Call(cast(NearestKeys, store).nearest_keys,
                           cast(NearestKeys, store).anearest_keys, (prefix, query),
                           {"limit": ask, "first_text_only": True})  # a message embeds one
        hits = [(h.key, float(h.score)) for h in found if index.admits(h.namespace, h.key, flt)]
        if len(hits) >= depth or len(found) < ask or ask >= len(index):
            return hits[:depth]
        ask *= 4
