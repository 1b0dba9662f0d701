"""The change protocol that keeps every process's profile index exact: writer id + sequence.

Each ``AgentMemory`` keeps a :class:`~langmem_edge.memory.index.profile_index.ProfileIndex`
per profile it touches. It is exact across processes without any side file, on any
``BaseStore`` (only ``batch``/``abatch`` with ``GetOp``/``PutOp``/``SearchOp``). Layout under
the profile root ``R = (*namespace, "profiles", profile)``::

    (*R, "memories")          key = memory id      the records (source of truth)
    (*R, "meta")              key = "generation"   a random id, made with the profile's first
                                                   write, removed by delete_profile
    (*R, "meta")              key = "roster"       a random stamp each new writer rewrites
    (*R, "writers")           key = writer id      the writer's marker {"seq", "settled", "at"}
    (*R, "changes", writer)   key = seq (12 digits) one entry per write {"seq", "ids", "at"}
    (*R, "deleted")           key = memory id      a deletion's tombstone {"id", "at"}

The markers, entries, the confirmed-number logic and pruning are :mod:`.log`'s, shared with
the episodic tier's log of message writes (``(*R, "meta", "message-writers")``).

**Writers.** A writer is a random id with a counter (:class:`~langmem_edge.retrieval.
chroma_sync.SyncWriter`, the store's keyword-index protocol uses the same one); an index
hands one writer to each commit in flight, so one writer's writes never overlap and its
numbers and marker only move forward. Write ``s`` of writer ``w`` (:func:`plan_commit`) is
three batches, in order:

1. the marker ``(w, s, settled=False)`` (and the generation, on the profile's first write);
2. the records (puts and deletes) and the entry ``(w, s, ids)``;
3. the marker ``(w, s, settled=True)``.

On a store that applies a batch of puts whole (:func:`~langmem_edge.memory.core.stores.
atomic_put_limit`, ``ChromaStore``), a write without deletes is one batch: 2 and 3 together
(and the generation), 1 not needed: no reader sees part of the batch, and a crash leaves all
or nothing (``docs/architecture.md``, "Stores that apply a batch whole").

**Readers.** A sync (:func:`plan_sync`, the start of every read that uses the index) reads
the generation and every marker. By key, in one read that recall batches with its vector
search: the generation, the roster stamp, and the markers of the writers this index knows.
Only when the stamp is not the one it saw at its last search of the markers does it search
them all again (a search costs in proportion to the whole store on ``ChromaStore``: Chroma
filters metadata by a scan, about 2 ms at 20,000 rows and 11 ms at 80,000, where a read by
key stays at 0.5 ms). A writer's first write rewrites the stamp after its marker (in the
same whole batch, or in the batch after the marker's), so a writer the reader does not know
changes the stamp after its marker exists: the reader that reads the old stamp and then
searches finds the marker or, at a later sync, a new stamp. A known writer's marker gone
(pruned) drops it.

A marker confirms every write of its writer up to ``s`` when settled, up to ``s - 1``
when not (write ``s`` may be half done). For each writer whose marker is unsettled or whose
confirmed number differs from the one this index applied, it reads the writer's entries with
``seq`` above the applied number, re-reads the records they name (a record gone is a delete;
deleted ids never come back), and then records the confirmed numbers as applied.

**Why this is exact.** A write counts as applied only once a marker confirming it has been
read, and a marker confirming write ``s`` (settled ``s``, or any marker of a later write) is
written after every row and the entry of ``s``; a sync reads markers before entries and
records, so everything of a confirmed write is visible to it. A write not yet confirmed keeps
its writer's marker unsettled (or unmoved), and its entries are read again at every sync
until it is. No clock orders anything: a slow commit or a writer whose clock is off by
minutes is applied at the first sync after its marker confirms it. A writer that dies
between batches 1 and 3 leaves its marker unsettled: readers keep reading its entries (one
small search per sync) until :func:`plan_prune` settles markers left unsettled for
``settle_after_seconds`` (10 min: nothing is lost, readers have fetched its rows at every
sync since).

**Full loads.** The first read of a profile in a process, a new generation (the profile was
deleted), or ``reload_after_seconds`` (30 min, this process's monotonic clock) without a
sync read the markers first, then every record, and take the markers' confirmed numbers as
applied. A large profile's full load reads instead, when it may, the image of an index that
another process keeps in the store (``index/image.py``: a few large items, then the writes
since, read as any sync reads them).

Wall clocks serve housekeeping only: entries and markers older than ``retention_seconds``
(1 h, by the pruner's clock against the writer's ``at``) are pruned,
which is safe while writers' clocks are within ``retention - reload_after`` (30 min) of each
other, since a reader that has not synced for that long reloads. Nothing younger than the
profile's index image by the retention is pruned, so a new process that loads an image of
any age finds every write since; a pruning process rewrites an image older than
``image_refresh_seconds`` (15 min) first, so the log pruning keeps stays about that short.

**Rewrites never bring back a deleted record.** ``forget``, ``end_session``, ``reembed`` and
supersession read a record fresh and write it back changed; another process may delete it
in between, and a ``BaseStore`` has no conditional put. So a write that deletes puts a
tombstone ``(*R, "deleted", id)`` in its batch 1, before batch 2 deletes the record; a write
that rewrites records this index holds (or held) reads their tombstones after its batch 2
(in batch 3, with the settled marker) and deletes again, as a write of its own, any it finds.
Why that suffices: if the rewriter finds no tombstone, the deleter's tombstone was put after
that read, so its deletion (later still) comes after the rewrite and removes it; if it finds
one, it deletes the record itself. Either way the record is gone once both are done (a
reader may see the rewritten copy in between). Tombstones are pruned with the change log
(after ``retention_seconds``), which bounds how long a rewrite may take between its read
and its write.

**A deleted profile stays deleted.** ``delete_profile`` removes the generation first, then
everything else. Batch 3 of every write also reads the generation; a write that finds none
removes what it put (records, entry, marker) and writes nothing back. By the argument above:
either the deletion's scan came after the write's records were put and removed them, or the
writer's read came after the generation was removed and it removed them itself. Not
covered: the profile made again (another process's first write, a new generation) between
the deletion's start and the write's read; a generation other than the writer's is no sign
of a deletion, since two first writes of a profile race to make one.

Access counts are not changes of a record: they live in their own items
(:mod:`langmem_edge.memory.index.profile_index`), so no write here ever rewrites a record to
count an access.
"""

from __future__ import annotations

import gc
import logging
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from langgraph.store.base import BaseStore, GetOp, PutOp, SearchOp

from langmem_edge.memory.core.labels import plan_delete_prefix
from langmem_edge.memory.core.plans import Plan, batch
from langmem_edge.memory.core.stores import atomic_put_limit
from langmem_edge.memory.index.image import (
    HEAD_KEY,
    image_head,
    image_head_op,
    image_read_op,
    plan_write_image,
    read_image,
)
from langmem_edge.memory.index.log import ChangeLog, Marker, pending
from langmem_edge.memory.index.profile_index import ProfileIndex

__all__ = [
    "DELETED",
    "GENERATION_KEY",
    "deleted_namespace",
    "gc_paused",
    "plan_commit",
    "plan_image",
    "plan_prune",
    "plan_reload",
    "plan_sync",
    "ROSTER_KEY",
    "probe_ops",
    "roster_op",
]

logger = logging.getLogger(__name__)

DELETED = "deleted"
"""Label of the tombstones' namespace under the profile root."""

GENERATION_KEY = "generation"
"""Key of the profile's generation item in ``(*R, "meta")``."""

RELOAD_LIMIT = 100_000_000
"""``limit`` of the single search that loads a whole profile."""


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a load makes its objects (a 100k-record
    profile: millions of dicts, lists and strings, none of them cyclic garbage), then
    restore it as it was. Each collection the allocations would trigger walks every object
    alive so far: with it running, decoding an image of 100k records took three times as
    long. Another thread's garbage waits at most the load's length."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _generation_of(item: Any, profile: str) -> str | None:
    if item is None or item.value.get("profile") != profile:
        return None
    gen = item.value.get(GENERATION_KEY)
    return gen if isinstance(gen, str) else None


ROSTER_KEY = "roster"
"""Key (in ``(*R, "meta")``) of the roster stamp, rewritten by each writer's first write."""


def _roster_of(item: Any, profile: str) -> str | None:
    if item is None or item.value.get("profile") != profile:
        return None
    stamp = item.value.get("stamp")
    return stamp if isinstance(stamp, str) else None


def roster_op(index: ProfileIndex) -> PutOp:
    """The put of a new roster stamp (a writer's first write, after its marker)."""
    return PutOp(index.layout.meta, ROSTER_KEY,
                 {"profile": index.profile, "stamp": uuid.uuid4().hex, "at": time.time()},
                 index=False)


def probe_ops(index: ProfileIndex) -> list[Any]:
    """The reads a sync starts with, all by key: the generation, the roster stamp and the
    markers of the writers this index knows. Batch them with other reads made before the
    sync and pass :func:`plan_sync` their results."""
    layout = index.layout
    with index.lock:
        known = index.known_writers
    return [GetOp(layout.meta, GENERATION_KEY), GetOp(layout.meta, ROSTER_KEY),
            *(GetOp(layout.writers, w) for w in known)]


def plan_reload(store: BaseStore, index: ProfileIndex, now: float) -> Plan[None]:
    """Load the whole profile into ``index``: from its image in the store when one may be
    used (``index/image.py``), then the writes since; else the markers first, then every
    record (and every access count), so every write the markers confirm is in what is
    loaded. A large profile loaded record by record gets a new image."""
    layout = index.layout
    log = ChangeLog.of_records(layout)
    gen_item, marker_items, image_items, counts = yield batch(store, [
        GetOp(layout.meta, GENERATION_KEY), log.probe_op(), image_read_op(index),
        SearchOp(layout.access, limit=RELOAD_LIMIT)])
    generation = _generation_of(gen_item, index.profile)
    markers = log.markers(marker_items)
    with gc_paused():
        image = read_image(index, image_items, generation=generation, writers=set(markers))
        if image is not None:
            try:
                if image.snapshot is None:  # another analyser: build from its values
                    index.reset(generation, image.values.values(), counts, synced_at=now)
                else:
                    index.restore(generation, image.snapshot, image.values, counts,
                                  synced_at=now)
            except ValueError as e:
                logger.warning("index image of %r not used: %s", index.profile, e)
                image = None
    old = next((it.value for it in image_items if it.key == HEAD_KEY), {})
    if image is not None:
        index.applied = image.applied
        index.image_pages = int(old.get("pages") or 0)
        yield from _plan_catch_up(store, index, markers)
        _know(index, None, markers)
        return
    # One search for the whole profile: offset pages are not stable on stores that order
    # by update time while other processes write (the protocol covers writes after the
    # markers were read).
    (items,) = yield batch(store, [SearchOp(layout.memories, limit=RELOAD_LIMIT)])
    values = []
    for item in items:
        if item.value.get("profile") == index.profile and item.value.get("id") == item.key:
            values.append(item.value)
        else:
            logger.warning("skipped foreign record %r in profile %r", item.key, index.profile)
    with gc_paused():
        index.reset(generation, values, counts, synced_at=now)
    index.applied = {w: m.confirmed for w, m in markers.items()}
    index.unsettled = {w for w, m in markers.items() if not m.settled}
    index.image_pages = int(old.get("pages") or 0)
    _know(index, None, markers)
    if len(values) >= index.cache.image_min_records:
        yield from plan_image(store, index)


def plan_image(store: BaseStore, index: ProfileIndex) -> Plan[bool]:
    """Write the image of ``index`` (``index/image.py``), just synced or written by this
    process; returns whether it was written. A failure is logged, never raised (the image
    only speeds up other processes' first reads)."""
    try:
        pages = yield from plan_write_image(store, index, set(index.unsettled),
                                            index.image_pages)
    except Exception as e:
        logger.warning("writing the index image of %r failed: %s", index.profile, e)
        return False
    if pages is None:
        return False
    index.image_pages = pages
    return True


def plan_sync(
    store: BaseStore,
    index: ProfileIndex,
    now: float | None = None,
    *,
    probe: list[Any] | None = None,
) -> Plan[None]:
    """Bring ``index`` up to date with the store (see the module docstring).

    The common case costs the probe (which a caller may have read in its own batch): the
    generation is the same and no marker moved, so nothing changed. ``now`` is this
    process's monotonic clock (for the reload age only).
    """
    now = time.monotonic() if now is None else now
    if index.synced_at is None or now - index.synced_at > index.cache.reload_after_seconds:
        yield from plan_reload(store, index, now)
        return
    if probe is None:
        probe = yield batch(store, probe_ops(index))
    gen_item, roster_item, *marker_items = probe
    generation = _generation_of(gen_item, index.profile)
    if generation != index.generation:
        yield from plan_reload(store, index, now)
        return
    log = ChangeLog.of_records(index.layout)
    roster = _roster_of(roster_item, index.profile)
    if generation is None:  # never written: no marker to find
        markers: dict[str, Marker] = {}
    elif roster is None or roster != index.roster:  # a writer it may not know: search
        (found,) = yield batch(store, [log.probe_op()])
        markers = log.markers(found)
    else:
        markers = log.markers(it for it in marker_items if it is not None)
    yield from _plan_catch_up(store, index, markers)
    _know(index, roster, markers)
    index.synced_at = now


def _know(index: ProfileIndex, roster: str | None, markers: dict[str, Marker]) -> None:
    """After a sync: the writers whose markers the next one reads by key, and the roster
    stamp read before the markers were (None: the next sync searches them)."""
    with index.lock:
        index.roster = roster
        index.known_writers = tuple(sorted(markers))


def _plan_catch_up(store: BaseStore, index: ProfileIndex, markers: dict[str, Marker]
                   ) -> Plan[None]:
    """Apply the writes ``markers`` (read before this) show this index has not applied."""
    since = pending(markers, index.applied)
    if not since:
        index.unsettled = set()
        return
    entries = yield from ChangeLog.of_records(index.layout).plan_entries(
        store, since, index.cache.page_size)
    ids = sorted({i for e in entries for i in e.value.get("ids", ()) if isinstance(i, str)})
    if ids:
        got = yield batch(store, [GetOp(index.layout.memories, i) for i in ids])
        with index.lock:
            for mid, item in zip(ids, got, strict=True):
                if item is None:
                    index.remove(mid)
                else:
                    index.apply(item.value)
    with index.lock:
        for w in since:
            index.applied[w] = markers[w].confirmed
        index.unsettled = {w for w, m in markers.items() if not m.settled}


def deleted_namespace(index: ProfileIndex) -> tuple[str, ...]:
    """``(*R, "deleted")``: the tombstones of deleted records, key = memory id."""
    return (*index.layout.root, DELETED)


def plan_commit(
    store: BaseStore,
    index: ProfileIndex,
    puts: list[tuple[dict[str, Any], Any]],
    deletes: Iterable[str] = (),
) -> Plan[None]:
    """Write records (``(value, index_arg)`` pairs) and deletions as one write of the
    protocol (three batches: marker and tombstones, records and entry, settled marker and
    the tombstone check of rewritten records; see the module docstring). On a store that
    applies a batch of puts whole (:func:`~langmem_edge.memory.core.stores.atomic_put_limit`)
    a write of puts alone is one batch, records, entry and settled marker together, and the
    checks a read after it."""
    layout = index.layout
    deletes = list(deletes)
    ids = [v["id"] for v, _ in puts] + deletes
    with index.lock:
        rewrites = [v["id"] for v, _ in puts
                    if v["id"] in index.values or v["id"] in index.tombstones]
    graves = deleted_namespace(index)
    log = ChangeLog.of_records(layout)
    # with the entry, the marker, the generation and the roster stamp
    whole = not deletes and len(puts) + 4 <= atomic_put_limit(store)
    back: list[str] = []
    writer = index.take_writer()
    try:
        new_writer = writer.seq == 0
        seq = writer.next_seq()
        first: list[Any] = [] if whole else [log.marker_op(writer.writer_id, seq,
                                                           settled=False)]
        first += [PutOp(graves, mid, {"profile": index.profile, "id": mid, "at": time.time()},
                        index=False) for mid in deletes]
        new_generation = None
        if index.generation is None:
            new_generation = uuid.uuid4().hex
            first.append(PutOp(layout.meta, GENERATION_KEY,
                               {"profile": index.profile, GENERATION_KEY: new_generation},
                               index=False))
        ops: list[Any] = [PutOp(layout.memories, v["id"], v, index=ix) for v, ix in puts]
        ops += [PutOp(layout.memories, mid, None) for mid in deletes]
        ops.append(log.entry_op(writer.writer_id, seq, ids))
        if whole:  # no reader sees part of it, a crash leaves all or nothing: settled at once
            ops.append(log.marker_op(writer.writer_id, seq, settled=True))
        if new_writer:  # after the marker (the batch before it, or this whole one)
            ops.append(roster_op(index))
        if whole:
            yield batch(store, [*first, *ops])
        else:
            yield batch(store, first)
            yield batch(store, ops)
        with index.lock:
            if new_generation is not None:
                index.generation = new_generation
                index.access_writer.bind(new_generation)
            for value, _ in puts:
                index.apply(value)
            for mid in deletes:
                index.remove(mid)
            if index.applied.get(writer.writer_id, 0) == seq - 1:
                index.applied[writer.writer_id] = seq  # this index applied it itself
        checks = [GetOp(layout.meta, GENERATION_KEY), *(GetOp(graves, m) for m in rewrites)]
        if whole:
            gen_item, *found = yield batch(store, checks)
        else:
            try:
                _, gen_item, *found = yield batch(store, [
                    log.marker_op(writer.writer_id, seq, settled=True), *checks])
            except Exception as e:  # the write is done; readers re-read it until it settles
                logger.warning("settling write %d of %r failed: %s", seq, index.profile, e)
                gen_item, *found = yield batch(store, checks)
        if _generation_of(gen_item, index.profile) is None:
            # delete_profile ran during this write (it removes the generation first). A
            # generation other than ours is no sign of it: two first writes race to make one
            yield from _plan_undo(store, index, writer.writer_id, seq,
                                  [v["id"] for v, _ in puts], deletes)
            return
        back = [mid for mid, it in zip(rewrites, found, strict=True)
                if it is not None and it.value.get("profile") == index.profile]
    finally:
        index.return_writer(writer)
    if back:  # deleted by another process between our read and our write: delete again
        logger.info("records %s of %r were deleted while being rewritten; deleted again",
                    back, index.profile)
        yield from plan_commit(store, index, [], back)
        return
    yield from plan_prune(store, index, time.time())


def _plan_undo(store: BaseStore, index: ProfileIndex, writer: str, seq: int,
               put_ids: list[str], deletes: list[str]) -> Plan[None]:
    """Remove everything write ``seq`` of ``writer`` put, because the profile was deleted
    while it ran: ``delete_profile`` removes the generation before anything else, so a write
    that finds no generation after its records were put may have put them after the
    deletion read past them (and a write that finds one was put before, so the deletion
    removes it). Nothing is written back: no marker, entry or generation, which would make
    the deleted profile exist again; the index starts over at its next read."""
    logger.warning("profile %r was deleted during write %d: its %d records removed again",
                   index.profile, seq, len(put_ids))
    layout = index.layout
    graves = deleted_namespace(index)
    ops: list[Any] = [PutOp(layout.memories, mid, None) for mid in put_ids]
    ops += [PutOp(graves, mid, None) for mid in deletes]
    ops += [PutOp(layout.entries(writer), f"{seq:012d}", None),
            PutOp(layout.writers, writer, None)]
    yield batch(store, ops)
    with index.lock:
        index.synced_at = None  # reload at the next read


def plan_prune(store: BaseStore, index: ProfileIndex, now: float) -> Plan[None]:
    """Housekeeping, at most once per ``prune_interval_seconds``: refresh the profile's index
    image when it is older than ``image_refresh_seconds`` (or missing from a profile that
    should have one), settle markers left unsettled for ``settle_after_seconds`` (their writer
    died mid-write), and delete entries, markers and tombstones older than the retention,
    and older than the current image by the retention too (``index/image.py``: an image of any
    age must find every entry written after it). ``now`` is the wall clock; it orders
    nothing."""
    cache = index.cache
    if now - index.last_prune < cache.prune_interval_seconds:
        return
    index.last_prune = now
    layout = index.layout
    mine = index.writer_ids()
    try:
        (head_item,) = yield batch(store, [image_head_op(index)])
        head = image_head(index, head_item)
        imaged_at = None if head is None else float(head.get("at", 0.0))
        if _image_due(index, imaged_at, now):
            index.image_pages = max(index.image_pages, int((head or {}).get("pages") or 0))
            if (yield from plan_image(store, index)):
                imaged_at = now
        cutoff = now - cache.retention_seconds
        if imaged_at is not None:
            cutoff = min(cutoff, imaged_at - cache.retention_seconds)
        log = ChangeLog.of_records(layout)
        yield from log.plan_settle(store, mine, now, cache.settle_after_seconds)
        yield from log.plan_drop(store, mine, cutoff, cache.page_size)
        yield from plan_delete_prefix(  # the tombstones, by exact prefix as the log
            store, deleted_namespace(index), page=cache.page_size,
            filter={"at": {"$lt": cutoff}},
            doomed=lambda it: float(it.value.get("at", now)) < cutoff)
    except Exception as e:  # pruning is housekeeping: never fail the write that triggered it
        logger.warning("pruning the change log of %r failed: %s", index.profile, e)


def _image_due(index: ProfileIndex, imaged_at: float | None, now: float) -> bool:
    """Whether a pruning process writes a new image: the profile has one older than the
    refresh age, or has none and is large enough for one. Only an index with a generation
    and a sync behind it can be imaged."""
    if index.generation is None or index.synced_at is None:
        return False
    if imaged_at is None:
        return len(index.values) >= index.cache.image_min_records
    return now - imaged_at >= index.cache.image_refresh_seconds
