"""A change log of the writer id + sequence protocol: markers, entries, pruning, writers.

The episodic tier's message writes (:mod:`langmem_edge.memory.episodic.writes`) are the one
log left (``docs/architecture.md``, "The episodic message index"): markers at ``(*R, "meta",
"message-writers")`` (under ``meta``, so one search of ``meta`` reads them and the profile's
generation), entries at ``(*R, "message-changes", writer)``, entries naming session ids. (The
semantic tier's log, at ``(*R, "writers")`` and ``(*R, "changes", writer)``, went when that
tier began reading the store per operation; ``delete_profile`` still removes what older
releases left there.)

A marker ``{"seq", "settled", "at"}`` confirms every write of its writer up to ``seq`` when
settled, up to ``seq - 1`` when not (:class:`Marker`); an
entry ``{"seq", "ids", "at"}`` names what write ``seq`` touched. A reader that applied
numbers ``applied`` reads the entries of the writers :func:`pending` returns. ``at`` (the
writer's wall clock) serves pruning only.
"""

from __future__ import annotations

import threading
import time
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, NamedTuple, TypeVar

from langgraph.store.base import BaseStore, Item, PutOp, SearchOp

from langmem_edge.memory.core.labels import plan_delete_prefix
from langmem_edge.memory.core.layout import ProfileLayout
from langmem_edge.memory.core.plans import Plan, StoreStep, batch

V = TypeVar("V")

__all__ = [
    "MAX_WRITERS",
    "WRITER_POOLS",
    "ChangeLog",
    "KeptByProcess",
    "Marker",
    "SyncWriter",
    "WriterPool",
    "WriterPools",
    "pending",
    "writer_pool",
]

MAX_WRITERS = 100_000
"""Markers one sync reads at most (writers seen within the retention)."""


class Marker(NamedTuple):
    """A writer's marker: its last write's number, and whether that write is complete."""

    seq: int
    settled: bool = True

    @property
    def confirmed(self) -> int:
        """The last write number known complete."""
        return self.seq if self.settled else self.seq - 1


_SYNC_VECTOR = [1.0]
"""Embedding of every row :meth:`SyncWriter.marker` and :meth:`SyncWriter.tombstones` build
(Chroma requires one)."""


class SyncWriter:
    """A writer's identity and counter; builds the stamps, tombstones and marker it writes.

    Args:
        writer_id: Defaults to a random 16-hex id (one per store object).
        clock: Wall clock for the ``at`` fields (purging only; never used for ordering).

    Call :meth:`next_seq` while holding the store's write lock, and write the marker after
    the rows of that write.
    """

    def __init__(
        self, writer_id: str | None = None, *, clock: Callable[[], float] = time.time
    ) -> None:
        self.writer_id = writer_id or uuid.uuid4().hex[:16]
        self._seq = 0
        self._clock = clock

    @property
    def seq(self) -> int:
        """The last number handed out (0 before the first write)."""
        return self._seq

    def next_seq(self) -> int:
        """The number of the next write."""
        self._seq += 1
        return self._seq

    def stamp(self, seq: int) -> dict[str, Any]:
        """Metadata fields to add to every item row written by write ``seq``."""
        return {"kw": self.writer_id, "ks": seq}

    def marker(self, seq: int, *, settled: bool = True) -> dict[str, Any]:
        """The marker row (``ids``, ``metadatas``, ``embeddings``) to upsert into sync:
        unsettled before write ``seq``'s rows, settled once the writer is idle after it."""
        meta = {"t": "m", "kw": self.writer_id, "ks": seq, "ok": settled, "at": self._clock()}
        return {"ids": [f"m:{self.writer_id}"], "metadatas": [meta], "embeddings": [_SYNC_VECTOR]}

    def tombstones(self, item_ids: Sequence[str], seq: int) -> dict[str, Any]:
        """Tombstone rows (``ids``, ``metadatas``, ``embeddings``) for deleted items."""
        now = self._clock()
        ids = list(dict.fromkeys(item_ids))
        return {
            "ids": [f"d:{i}" for i in ids],
            "metadatas": [
                {"t": "d", "kw": self.writer_id, "ks": seq, "i": i, "at": now} for i in ids
            ],
            "embeddings": [_SYNC_VECTOR for _ in ids],
        }


def pending(markers: Mapping[str, Marker], applied: Mapping[str, int]) -> dict[str, int]:
    """``{writer: number applied}`` of the writers whose entries a reader must read: their
    marker is unsettled, or confirms a number other than the one applied."""
    return {w: applied.get(w, 0) for w, m in markers.items()
            if not m.settled or m.confirmed != applied.get(w, 0)}


class ChangeLog:
    """The markers and entries of one change log of one profile (pure, but for the plans).

    Args:
        profile: The profile name written into every value (and checked on every read).
        writers: The namespace of the markers, key = writer id.
        changes: The prefix of the entries; one writer's are ``(*changes, writer)``.
    """

    def __init__(self, profile: str, writers: tuple[str, ...], changes: tuple[str, ...]
                 ) -> None:
        self.profile = profile
        self.writers = writers
        self.changes = changes

    @classmethod
    def of_records(cls, layout: ProfileLayout) -> ChangeLog:
        """The semantic tier's log of ``layout``'s profile."""
        return cls(layout.profile, layout.writers, layout.changes)

    @classmethod
    def of_messages(cls, layout: ProfileLayout) -> ChangeLog:
        """The episodic tier's log of ``layout``'s profile (its message writes)."""
        return cls(layout.profile, layout.message_writers, layout.message_changes)

    def entries(self, writer: str) -> tuple[str, ...]:
        """The namespace of ``writer``'s entries."""
        return (*self.changes, writer)

    def marker_op(self, writer: str, seq: int, *, settled: bool) -> PutOp:
        """The put of ``writer``'s marker at write ``seq``."""
        return PutOp(self.writers, writer,
                     {"profile": self.profile, "writer": writer, "seq": seq,
                      "settled": settled, "at": time.time()}, index=False)

    def entry_op(self, writer: str, seq: int, ids: Iterable[str]) -> PutOp:
        """The put of the entry of write ``seq`` of ``writer``, naming ``ids``."""
        return PutOp(self.entries(writer), f"{seq:012d}",
                     {"profile": self.profile, "writer": writer, "seq": seq,
                      "ids": list(ids), "at": time.time()}, index=False)

    def probe_op(self) -> SearchOp:
        """The read of every marker (batch it with the reads a sync starts with)."""
        return SearchOp(self.writers, limit=MAX_WRITERS)

    def markers(self, items: Iterable[Item]) -> dict[str, Marker]:
        """``writer id -> Marker`` of the marker items among ``items`` (a probe's result)."""
        out: dict[str, Marker] = {}
        for item in items:
            v = item.value
            if tuple(item.namespace) == self.writers and v.get("profile") == self.profile \
                    and isinstance(v.get("seq"), int):
                out[item.key] = Marker(int(v["seq"]), bool(v.get("settled", True)))
        return out

    def plan_entries(self, store: BaseStore | None, since: Mapping[str, int], page: int
                     ) -> Plan[list[Item]]:
        """The entries of each writer in ``since`` with ``seq`` above its number (paged);
        ``store`` None: the plan driver's."""
        writers = sorted(since)

        def op(w: str, offset: int) -> SearchOp:
            return SearchOp(self.entries(w), filter={"seq": {"$gt": since[w]}},
                            limit=page, offset=offset)

        results = yield StoreStep(tuple(op(w, 0) for w in writers), store)
        entries: list[Item] = []
        for w, items in zip(writers, results, strict=True):
            entries.extend(items)
            offset = len(items)
            while len(items) == page:
                (items,) = yield StoreStep((op(w, offset),), store)
                entries.extend(items)
                offset += len(items)
        return [e for e in entries if e.value.get("profile") == self.profile]

    def plan_settle(self, store: BaseStore, mine: set[str], now: float,
                    settle_after: float) -> Plan[None]:
        """Settle the markers of other writers left unsettled for ``settle_after`` seconds
        by their ``at`` (their writer died mid-write; readers have re-read its entries at
        every sync since, so nothing is lost)."""
        (stuck,) = yield batch(store, [SearchOp(self.writers, filter={"settled": False},
                                                limit=MAX_WRITERS)])
        settle = [it for it in stuck if it.key not in mine
                  and it.value.get("profile") == self.profile
                  and float(it.value.get("at", now)) < now - settle_after]
        if settle:
            yield batch(store, [PutOp(self.writers, it.key, {**it.value, "settled": True},
                                      index=False) for it in settle])

    def plan_drop(self, store: BaseStore, mine: set[str], cutoff: float, page: int
                  ) -> Plan[None]:
        """Delete the entries, and the markers of other writers, older than ``cutoff``."""
        # by exact prefix, never a list_namespaces match condition: the profile's name is a
        # label there, and a profile may be called "*"
        for prefix, keep in ((self.changes, set()), (self.writers, mine)):
            yield from plan_delete_prefix(
                store, prefix, page=page, filter={"at": {"$lt": cutoff}},
                doomed=lambda it, keep=keep: it.key not in keep
                and float(it.value.get("at", cutoff)) < cutoff)


class WriterPool:
    """The writers of one process for one change log: each write in flight takes its own,
    so one writer's writes never overlap and its numbers and marker only move forward."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._free: list[SyncWriter] = []
        self._ids: set[str] = set()
        self.last_prune = time.time()
        """When this process last pruned the log (wall clock; a new pool first prunes one
        interval after it was made, so a process's first writes cost no housekeeping)."""

    def take(self) -> SyncWriter:
        """A writer for one write; give it back with :meth:`give_back` once it settled."""
        with self._lock:
            if self._free:
                return self._free.pop()
            writer = SyncWriter()
            self._ids.add(writer.writer_id)
            return writer

    def give_back(self, writer: SyncWriter) -> None:
        """Return a writer taken by :meth:`take`."""
        with self._lock:
            self._free.append(writer)

    def ids(self) -> set[str]:
        """Ids of every writer of the pool (their markers are never pruned by it)."""
        with self._lock:
            return set(self._ids)

    def prune_due(self, now: float, interval: float) -> bool:
        """Whether this process prunes now (at most once per ``interval``); if so, the
        time is recorded."""
        with self._lock:
            if now - self.last_prune < interval:
                return False
            self.last_prune = now
            return True


WRITER_POOLS = 4_096
"""Change logs whose writer pools one registry keeps, the least recently used dropped first.
A pool is a few hundred bytes; a log whose pool was dropped gets new writers at its next
write (new markers, pruned after the retention like any other)."""


class KeptByProcess(Generic[V]):
    """What a process keeps per log or profile across index reloads (a log's writer pool,
    a profile's access-count writer), by key: bounded, the least recently used dropped
    first."""

    def __init__(self, make: Callable[[], V], capacity: int = WRITER_POOLS) -> None:
        self.capacity = capacity
        self._make = make
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple[str, ...], V] = OrderedDict()

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, key: tuple[str, ...]) -> V:
        """What is kept for ``key`` (made on first use)."""
        with self._lock:
            kept = self._kept.get(key)
            if kept is None:
                kept = self._kept[key] = self._make()
            self._kept.move_to_end(key)
            while len(self._kept) > self.capacity:
                self._kept.popitem(last=False)
            return kept

    def items(self) -> list[tuple[tuple[str, ...], V]]:
        """Everything kept, least recently used first."""
        with self._lock:
            return list(self._kept.items())

    def drop(self, key: tuple[str, ...]) -> None:
        """Forget what is kept for ``key`` (its data was deleted)."""
        with self._lock:
            self._kept.pop(key, None)


class WriterPools(KeptByProcess[WriterPool]):
    """This process's writer pools, by the log's marker namespace (bounded, LRU): the same
    pool for as long as the process writes the log, so a profile whose index was dropped from
    the cache and loaded again keeps its writers, and its log keeps one marker per writer of
    the process instead of one more per load. ``AgentMemory`` keeps one for its profiles'
    record logs; :func:`writer_pool` one per store for the message logs."""

    def __init__(self, capacity: int = WRITER_POOLS) -> None:
        super().__init__(WriterPool, capacity)

    def pool(self, log: ChangeLog) -> WriterPool:
        """The pool of ``log``'s writers (made on first use)."""
        return self.get(log.writers)


_BY_STORE: weakref.WeakKeyDictionary[BaseStore, WriterPools] = weakref.WeakKeyDictionary()
_BY_STORE_LOCK = threading.Lock()


def writer_pool(store: BaseStore, log: ChangeLog) -> WriterPool:
    """This process's writers of ``log`` on ``store`` (:class:`WriterPools` per store, by
    identity). A store that cannot be referenced weakly gets a new pool each call (each
    writer settled before it is dropped)."""
    with _BY_STORE_LOCK:
        try:
            pools = _BY_STORE.get(store)
            if pools is None:
                pools = _BY_STORE[store] = WriterPools()
        except TypeError:
            return WriterPool()
    return pools.pool(log)


def writer_pools_kept(store: BaseStore) -> int:
    """How many pools :func:`writer_pool` keeps for ``store`` (for tests and the soak)."""
    with _BY_STORE_LOCK:
        pools = _BY_STORE.get(store)
    return 0 if pools is None else len(pools)
