"""The change log that keeps every process's profile index exact, and its plans.

Each ``AgentMemory`` keeps a :class:`~langmem_edge.memory.index.profile_index.ProfileIndex`
per profile it touches. It is exact across processes without any side file: everything it
needs to know is in the store. Layout under the profile root
``R = (*namespace, "profiles", profile)``::

    (*R, "memories")             key = memory id          the records (source of truth)
    (*R, "meta")                 key = "generation"       a random id, created with the
                                                          profile, removed by delete_profile
    (*R, "meta")                 key = "head"             the newest change entry's key
    (*R, "changes", <bucket>)    key = time-ordered id    {"profile", "ts", "ids"}: one entry
                                                          per write, bucketed by minute

Every write (remember, update, forget, delete, reembed, access-count flush excepted) commits
its records, a change entry and the new head in one ``batch``. A sync (the start of every
read that uses the index) reads the generation and the head: two gets by key, which recall
batches with its vector search, so the common case adds no round trip. Unchanged: nothing to
do. A new head: read the buckets since the last sync minus a clock margin (5 s), re-read the
records named by entries not yet applied, apply them (newer ``updated_at`` wins; deleted ids
never come back). A different generation (the profile was deleted), or a last sync older
than the retention (1 h), reloads the whole profile. Buckets older than the retention are
pruned by writers, at most every 5 minutes.

Access-count bumps are not logged: they change no text or status, they are written behind
(``RecallConfig.access_flush_seconds``), and every write re-reads the record it changes.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from langgraph.store.base import BaseStore, GetOp, PutOp, SearchOp

from langmem_edge.memory.core.labels import plan_delete_prefix
from langmem_edge.memory.core.plans import Plan, batch
from langmem_edge.memory.index.profile_index import ProfileIndex

__all__ = [
    "GENERATION_KEY",
    "HEAD_KEY",
    "plan_commit",
    "plan_prune",
    "plan_reload",
    "plan_sync",
    "probe_ops",
]

logger = logging.getLogger(__name__)

GENERATION_KEY = "generation"
"""Key of the profile's generation item in ``(*R, "meta")``."""

HEAD_KEY = "head"
"""Key of the change-log head in ``(*R, "meta")``: the newest entry's key, rewritten by every
write, so a sync that finds it unchanged reads no bucket."""

RELOAD_LIMIT = 100_000_000
"""``limit`` of the single search that loads a whole profile."""


def _bucket_of(ts: float, width: float) -> int:
    return int(ts // width)


def _entry_key(now: float) -> str:
    return f"{int(now * 1e9):020d}-{os.urandom(4).hex()}"


def _generation_of(item: Any, profile: str) -> str | None:
    if item is None or item.value.get("profile") != profile:
        return None
    gen = item.value.get(GENERATION_KEY)
    return gen if isinstance(gen, str) else None


def probe_ops(index: ProfileIndex) -> list[Any]:
    """The reads a sync starts with (two gets by key): batch them with other reads."""
    return [GetOp(index.layout.meta, GENERATION_KEY), GetOp(index.layout.meta, HEAD_KEY)]


def _head_of(item: Any, profile: str) -> str | None:
    if item is None or item.value.get("profile") != profile:
        return None
    head = item.value.get("entry")
    return head if isinstance(head, str) else None


def plan_reload(store: BaseStore, index: ProfileIndex, now: float) -> Plan[None]:
    """Load the whole profile into ``index``."""
    layout = index.layout
    # One search for the whole profile: offset pages are not stable on stores that order
    # by update time while other processes write (the change log covers writes after now).
    gen_item, head_item, items = yield batch(
        store, [*probe_ops(index), SearchOp(layout.memories, limit=RELOAD_LIMIT)])
    values: list[dict[str, Any]] = []
    for item in items:
        if item.value.get("profile") == index.profile and item.value.get("id") == item.key:
            values.append(item.value)
        else:
            logger.warning("skipped foreign record %r in profile %r", item.key, index.profile)
    index.reset(_generation_of(gen_item, index.profile), values, synced_at=now)
    index.seen_head = _head_of(head_item, index.profile)


def plan_sync(
    store: BaseStore,
    index: ProfileIndex,
    now: float | None = None,
    *,
    probe: Sequence[Any] | None = None,
) -> Plan[None]:
    """Bring ``index`` up to date with the store.

    The common case costs two gets by key (``probe``, which a caller may have read in its
    own batch): the generation and the change-log head are what they were, so nothing
    changed. Otherwise the buckets since the last sync are read and applied.
    """
    now = time.time() if now is None else now
    cache = index.cache
    stale_after = cache.retention_seconds - cache.bucket_seconds - cache.clock_margin_seconds
    if index.synced_at is None or now - index.synced_at > stale_after:
        yield from plan_reload(store, index, now)
        return
    if probe is None:
        probe = yield batch(store, probe_ops(index))
    gen_item, head_item = probe
    if _generation_of(gen_item, index.profile) != index.generation:
        yield from plan_reload(store, index, now)
        return
    head = _head_of(head_item, index.profile)
    if head == index.seen_head:
        index.synced_at = now
        return
    layout, page = index.layout, cache.page_size
    since = index.synced_at - cache.clock_margin_seconds
    buckets = list(range(_bucket_of(since, cache.bucket_seconds),
                         _bucket_of(now, cache.bucket_seconds) + 1))
    results = yield batch(store, [SearchOp(layout.bucket(b), limit=page) for b in buckets])
    entries = []
    for b, items in zip(buckets, results, strict=True):
        offset = len(items)
        entries.extend(items)
        while len(items) == page:
            (items,) = yield batch(store, [SearchOp(layout.bucket(b), limit=page, offset=offset)])
            entries.extend(items)
            offset += len(items)
    fresh = [e for e in entries
             if e.key not in index.applied and e.value.get("profile") == index.profile]
    ids = sorted({i for e in fresh for i in e.value.get("ids", ()) if isinstance(i, str)})
    if ids:
        got = yield batch(store, [GetOp(layout.memories, i) for i in ids])
        with index.lock:
            for mid, item in zip(ids, got, strict=True):
                if item is None:
                    index.remove(mid)
                else:
                    index.apply(item.value)
    with index.lock:
        for e in fresh:
            index.applied[e.key] = float(e.value.get("ts", now))
        horizon = since - cache.clock_margin_seconds
        index.applied = {k: ts for k, ts in index.applied.items() if ts >= horizon}
        if head is None or any(e.key == head for e in entries):
            index.seen_head = head  # else the head's entry is not visible yet: look again
        index.synced_at = now


def plan_commit(
    store: BaseStore,
    index: ProfileIndex,
    puts: list[tuple[dict[str, Any], Any]],
    deletes: Iterable[str] = (),
    *,
    now: float | None = None,
) -> Plan[None]:
    """Write records (``(value, index_arg)`` pairs) and deletions with one change entry."""
    now = time.time() if now is None else now
    layout = index.layout
    deletes = list(deletes)
    ops: list[Any] = [PutOp(layout.memories, v["id"], v, index=ix) for v, ix in puts]
    ops += [PutOp(layout.memories, mid, None) for mid in deletes]
    new_generation = None
    if index.generation is None:
        new_generation = uuid.uuid4().hex
        ops.append(PutOp(layout.meta, GENERATION_KEY,
                         {"profile": index.profile, GENERATION_KEY: new_generation}, index=False))
    key = _entry_key(now)
    ids = [v["id"] for v, _ in puts] + deletes
    ops.append(PutOp(layout.bucket(_bucket_of(now, index.cache.bucket_seconds)), key,
                     {"profile": index.profile, "ts": now, "ids": ids}, index=False))
    # the head names the newest entry; the index's seen_head is left alone, so its next sync
    # reads the buckets once (another writer's entry may have landed since the last sync)
    ops.append(PutOp(layout.meta, HEAD_KEY, {"profile": index.profile, "entry": key, "ts": now},
                     index=False))
    yield batch(store, ops)
    with index.lock:
        if new_generation is not None:
            index.generation = new_generation
        for value, _ in puts:
            index.apply(value)
        for mid in deletes:
            index.remove(mid)
        index.applied[key] = now
    yield from plan_prune(store, index, now)


def plan_prune(store: BaseStore, index: ProfileIndex, now: float) -> Plan[None]:
    """Delete change-log buckets past the retention (at most once per prune interval)."""
    cache = index.cache
    if now - index.last_prune < cache.prune_interval_seconds:
        return
    index.last_prune = now
    changes = index.layout.changes
    oldest = _bucket_of(now - cache.retention_seconds, cache.bucket_seconds)

    def old_bucket(item: Any) -> bool:
        label = item.namespace[len(changes)] if len(item.namespace) == len(changes) + 1 else ""
        return label.isdigit() and int(label) < oldest

    try:
        # the entries under the exact prefix, never a list_namespaces match condition: the
        # profile's name is a label there, and a profile may be called "*"
        yield from plan_delete_prefix(
            store, changes, page=cache.page_size, doomed=old_bucket,
            filter={"ts": {"$lt": oldest * cache.bucket_seconds}})
    except Exception as e:  # pruning is housekeeping: never fail the write that triggered it
        logger.warning("pruning the change log of %r failed: %s", index.profile, e)
