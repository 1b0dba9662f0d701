"""The semantic tier's write path and record reads, as plans (see ``core/plans.py``).

Writing a memory (``plan_write``):

1. Read the profile's records (``semantic/context.py``, ``plan_read``: one search).
2. Supersession by key: a fact or instruction whose ``key`` is held by active facts or
   instructions of the same scope (contact, or agent-wide) supersedes them. Events and tasks
   accumulate.
3. Verification (``verification.py``) of facts, events and instructions, unless disabled.
4. The write (``index/store_io.py``): the new record (embedded from ``text`` unless it is a
   task, encrypted, or the store has no vector index) in one batch, with the profile's
   pending access counts (``access.py``), then the superseded records marked
   (``status="superseded"``, ``superseded_by``, ``superseded_at``; rows kept). On a store
   that rewrites only what exists (``ChromaStore.put_existing``) the marks are changes the
   store applies to each record as stored, if it is still active, on its own read (one read
   and one update for all of them; a record another writer forgot, superseded or deleted
   meanwhile is left as it is, and the new record is rewritten without naming it); on
   other stores the records are read fresh and put. If the batch fails while embedding, it
   is made again without the embedding: the memory is stored with
   ``embedding_status="pending"`` (the keyword and key channels still find it) and
   ``AgentMemory.reembed()`` backfills it.
5. Settling the key (``plan_settle_keys``): writers that raced under one key and scope both
   left their record active; after its write each reads the key again (one filtered search)
   and keeps the greatest id.

Bulk writes (``Profile.remember_many``) follow the same rules in chunks, and an ingest's
extracted memories ride in the messages' write where they can: ``bulk.py``.

Every rewrite of a stored record (supersession, ``forget``, ``end_session``) is applied only
where the record still exists, on a store that can (``index/store_io.py``), so none brings
back a record that another process deleted between its read and its write.

``update`` writes a new version that supersedes the old one, so edits show in ``history``.
``forget`` marks a record forgotten (kept, never recalled); ``delete`` removes it.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from langgraph.store.base import GetOp, SearchOp

from langmem_edge.errors import (
    BackendError,
    InvalidInputError,
)
from langmem_edge.memory.core.plans import Call, Plan, batch
from langmem_edge.memory.core.stores import RewritesMatching
from langmem_edge.memory.core.validate import (
    check_metadata,
    check_optional_name,
    check_tags,
    check_text,
    to_utc,
)
from langmem_edge.memory.index.store_io import LOAD_LIMIT, plan_write_records, rewrites_existing
from langmem_edge.memory.records import (
    FACT_TYPES_BY_KIND,
    KIND_OF_FACT_TYPE,
    KINDS,
    LIVE,
    SOURCES,
    SUPERSEDABLE_KINDS,
    MemoryRecord,
    new_memory_id,
    utcnow,
)
from langmem_edge.memory.semantic.access import (
    AccessFlush,
    access_failed,
    access_written,
    plan_flush_access,
    take_access,
)
from langmem_edge.memory.semantic.context import ProfileContext, aad, plan_read_keyed
from langmem_edge.memory.semantic.verification import plan_candidates, plan_verdicts

__all__ = ["WriteSpec", "plan_flush_access", "plan_write"]

logger = logging.getLogger(__name__)

MAX_NAME_CHARS = 200
"""Longest contact, writer or session id."""

SETTLE_SEARCHES_MAX = 20
"""Keys a settling reads by one filtered search each; more (a bulk chunk) read the profile
once instead."""


@dataclass(frozen=True)
class WriteSpec:
    """Everything a new memory is made from (validated by :func:`prepare`)."""

    text: str
    key: str | None = None
    kind: str | None = None
    fact_type: str | None = None
    confidence: float | None = None
    source: str = "explicit"
    writer: str | None = None
    contact: str | None = None
    session_id: str | None = None
    tags: Sequence[str] = ()
    metadata: dict[str, Any] | None = None
    valid_from: datetime | str | float | None = None
    valid_until: datetime | str | float | None = None
    encrypted: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    """Record fields carried over by ``update`` (``created_at`` is never carried)."""


def _kind_and_type(kind: str | None, fact_type: str | None) -> tuple[str, str | None]:
    if fact_type is not None and fact_type not in KIND_OF_FACT_TYPE:
        raise InvalidInputError(
            f"unknown fact_type {fact_type!r}; allowed: {sorted(KIND_OF_FACT_TYPE)}"
        )
    if kind is not None and kind not in KINDS:
        raise InvalidInputError(f"unknown kind {kind!r}; allowed: {list(KINDS)}")
    if fact_type is not None:
        folded = KIND_OF_FACT_TYPE[fact_type]
        if kind is not None and kind != folded:
            raise InvalidInputError(
                f"fact_type {fact_type!r} belongs to kind {folded!r}, not {kind!r}; "
                f"{kind!r} allows {list(FACT_TYPES_BY_KIND[kind])}"
            )
        return folded, fact_type
    kind = kind or "fact"
    return kind, (None if kind == "fact" else FACT_TYPES_BY_KIND[kind][0])


def prepare(ctx: ProfileContext, spec: WriteSpec, now: datetime) -> MemoryRecord:
    """Validate ``spec`` and build the record (plaintext). Raises before anything is written."""
    limits = ctx.config.limits
    text = check_text(spec.text, "text", limits.max_text_chars)
    key = spec.key
    if key is not None:
        check_text(key, "key", limits.max_key_chars)
        if any(ord(ch) < 32 for ch in key):
            raise InvalidInputError(f"key must not contain control characters: {key!r}")
        key = key.strip()
    kind, fact_type = _kind_and_type(spec.kind, spec.fact_type)
    if spec.source not in SOURCES:
        raise InvalidInputError(f"unknown source {spec.source!r}; allowed: {list(SOURCES)}")
    confidence = spec.confidence
    if confidence is None:
        confidence = ctx.config.confidence_by_source[spec.source]
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not (
        0.0 <= confidence <= 1.0
    ):
        raise InvalidInputError(f"confidence must be a number in [0, 1], got {confidence!r}")
    valid_from = to_utc(spec.valid_from, "valid_from") or now
    valid_until = to_utc(spec.valid_until, "valid_until")
    if valid_until is not None and valid_until <= valid_from:
        raise InvalidInputError("valid_until must be after valid_from")
    if spec.encrypted and ctx.cipher is None:
        raise InvalidInputError(
            "encrypted=True needs an AgentMemory opened with encryption_key=..."
        )
    fields: dict[str, Any] = dict(spec.extra)
    fields.update(
        id=new_memory_id(),
        profile=ctx.profile,
        text=text,
        key=key,
        kind=kind,
        fact_type=fact_type,
        confidence=float(confidence),
        source=spec.source,
        writer=check_optional_name(spec.writer, "writer", MAX_NAME_CHARS),
        contact=check_optional_name(spec.contact, "contact", MAX_NAME_CHARS),
        session_id=check_optional_name(spec.session_id, "session_id", MAX_NAME_CHARS),
        tags=check_tags(spec.tags, limits.max_tags, limits.max_tag_chars),
        metadata=check_metadata(spec.metadata, limits.max_metadata_bytes),
        created_at=now,
        updated_at=now,
        valid_from=valid_from,
        valid_until=valid_until,
        encrypted=bool(spec.encrypted),
    )
    return MemoryRecord(**fields)


def store_value(ctx: ProfileContext, record: MemoryRecord) -> dict[str, Any]:
    """The stored form of a record: encrypted text sealed, plaintext removed."""
    if record.encrypted:
        assert ctx.cipher is not None
        record = record.model_copy(update={
            "ciphertext": ctx.cipher.seal(record.text, associated=aad(record)),
            "key_id": ctx.cipher.key_id,
            "text": "",
        })
    return record.to_value()


def new_puts(ctx: ProfileContext, records: Sequence[MemoryRecord]
             ) -> tuple[list[MemoryRecord], list[tuple[dict[str, Any], Any]]]:
    """New records with their ``embedding_status``, and their ``(stored value, index)``."""
    embed = [ctx.has_vectors and r.kind != "task" and not r.encrypted for r in records]
    records = [r.model_copy(update={"embedding_status": "complete" if e else "skipped"})
               for r, e in zip(records, embed, strict=True)]
    return records, [(store_value(ctx, r), ["text"] if e else False)
                     for r, e in zip(records, embed, strict=True)]


def key_superseded(ctx: ProfileContext, record: MemoryRecord) -> list[str]:
    """Ids of the active facts and instructions of ``record``'s scope under its key (what
    it supersedes by key); none for events, tasks and keyless records."""
    if record.kind not in SUPERSEDABLE_KINDS or not record.key:
        return []
    values = ctx.index.values
    return [
        mid for mid in ctx.index.key_ids(record.key, record.scope)
        if values[mid].get("status") == "active" and values[mid].get("kind") in SUPERSEDABLE_KINDS
    ]


def left_to_settling(ctx: ProfileContext, under_key: Sequence[str]) -> set[str]:
    """Of the records a new one supersedes under its key (``under_key``), those the key's
    settling supersedes in the store (a ``RewritesMatching`` store: all of them, with any
    racer's), so the write itself does not rewrite them first."""
    return set(under_key) if isinstance(ctx.store, RewritesMatching) else set()


def superseded_changes(new_id: str, now: datetime) -> dict[str, Any]:
    """The fields that mark a stored value superseded by ``new_id`` at ``now``."""
    stamp = now.isoformat()
    return {"status": "superseded", LIVE: None, "superseded_by": new_id,
            "superseded_at": stamp, "updated_at": stamp}


def superseded_value(old: dict[str, Any], new_id: str, now: datetime) -> dict[str, Any]:
    """``old`` (a stored value) marked superseded by ``new_id`` at ``now``."""
    return {**old, **superseded_changes(new_id, now)}


def plan_verify(ctx: ProfileContext, record: MemoryRecord, exclude: Sequence[str]
                ) -> Plan[tuple[list[str], list[str]]]:
    """Verification of a new record against the stored ones (skipped for tasks, encrypted
    records and stores without vectors): ``(ids it replaces, ids it contradicts)``."""
    if record.kind == "task" or record.encrypted or not ctx.has_vectors:
        return [], []
    cfg = ctx.config.verification
    candidates = yield from plan_candidates(ctx, record, exclude)
    verdicts = yield from plan_verdicts(ctx.model, cfg, record.text, record.kind, candidates)
    other_key = {c.memory_id for c in candidates if c.key is not None and c.key != record.key}
    replaces: list[str] = []
    contradicts: list[str] = []
    for v in verdicts:
        if v.replaces and v.memory_id in other_key:
            logger.info("memory %s would replace %s in profile %r (%s, by %s), but that one "
                        "is held under another key; both kept", record.id, v.memory_id,
                        ctx.profile, v.reason, v.by)
        elif v.replaces:
            replaces.append(v.memory_id)
        elif v.contradicts:
            contradicts.append(v.memory_id)
            logger.info("memory %s contradicts %s in profile %r (%s, by %s); both kept",
                        record.id, v.memory_id, ctx.profile, v.reason, v.by)
    return replaces, contradicts


def plan_fresh_active(ctx: ProfileContext, ids: Sequence[str]) -> Plan[list[dict[str, Any]]]:
    """The stored values of the active records among ``ids``, read fresh (never the copies
    read at the operation's start: a record another process deleted or changed since is not
    brought back or undone)."""
    ids = [mid for mid in dict.fromkeys(ids) if isinstance(mid, str) and mid]
    if not ids:
        return []
    fresh = yield batch(ctx.store, [GetOp(ctx.layout.memories, mid) for mid in ids])
    return [dict(item.value) for item in fresh
            if item is not None and item.value.get("profile") == ctx.profile
            and item.value.get("status") == "active"]


def plan_commit_new(
    ctx: ProfileContext,
    records: Sequence[MemoryRecord],
    others: Sequence[dict[str, Any]] = (),
    *,
    patches: dict[str, dict[str, Any]] | None = None,
    flush: AccessFlush | None = None,
    named: Collection[str] = (),
) -> Plan[list[MemoryRecord]]:
    """Write new records (embedded as :func:`new_puts` says) and rewritten ``others``
    (``index/store_io.py``: a rewrite of a record deleted meanwhile is not written). If the
    write fails while embedding, it is made again without embedding: the new records are
    stored ``embedding_status="pending"`` (keyword and key channels find them; ``reembed()``
    backfills). Their ids are random (:func:`~langmem_edge.memory.records.new_memory_id`):
    they are written as new (``fresh``). Returns the records as stored (plaintext).

    ``patches`` (a ``PutExisting`` store only): ``{id: changes}`` applied by the store to
    the records still active (:func:`~..index.store_io.plan_write_records`); a new record
    whose ``supersedes`` names one that was not is rewritten without it, unless ``named``
    holds its id. ``flush``: access counts written in the new records' call."""
    records, puts = new_puts(ctx, records)
    embed = [ix is not False for _, ix in puts]
    rest: list[tuple[dict[str, Any], Any]] = [(o, False) for o in others]
    blind = flush.puts if flush is not None else []
    try:
        try:
            gone = yield from plan_write_records(ctx.store, ctx.index, puts, rest, fresh=True,
                                                 patches=patches, blind=blind)
        except Exception as e:
            if not any(embed) or isinstance(e, (BackendError, InvalidInputError)):
                raise
            records = [r.model_copy(update={"embedding_status": "pending",
                                            "embedding_attempts": 1})
                       if e_ else r for r, e_ in zip(records, embed, strict=True)]
            gone = yield from plan_write_records(
                ctx.store, ctx.index, [(store_value(ctx, r), False) for r in records], rest,
                fresh=True, patches=patches, blind=blind)
            logger.warning("embedding %d memories of %r failed (%s); stored as pending",
                           sum(embed), ctx.profile, e)
    except Exception as e:
        access_failed(flush, e)
        raise
    access_written(flush)
    missed = set(gone).intersection(patches or ()).difference(named)
    return (yield from plan_unname_missed(ctx, records, missed))


def plan_unname_missed(ctx: ProfileContext, records: Sequence[MemoryRecord],
                       missed: set[str]) -> Plan[list[MemoryRecord]]:
    """``records`` (written) without the ids in ``missed`` in their ``supersedes``: records
    their patches found no longer active (another writer superseded or deleted them first:
    not ours to name). Those that named one get that one field changed in the store, merged
    into the value as stored. The store reads and writes that value without a
    compare-and-set, so a racer's supersession landing in between is undone (the record
    active again beside the racer's): the keys of the records changed are settled once more
    after the write, which reads the key after it and keeps one active
    (``tests/reliability/test_concurrency.py`` caught the race)."""
    fixed = {r.id: r.model_copy(update={"supersedes": [m for m in r.supersedes
                                                         if m not in missed]})
             for r in records if missed.intersection(r.supersedes)}
    if not fixed:
        return list(records)
    yield from plan_write_records(
        ctx.store, ctx.index, patches={mid: {"supersedes": r.supersedes}
                                       for mid, r in fixed.items()},
        patch_when={"profile": ctx.profile})
    settled = yield from plan_settle_keys(ctx, list(fixed.values()), utcnow())
    fixed = {r.id: r for r in settled}
    return [fixed.get(r.id, r) for r in records]


def plan_write(
    ctx: ProfileContext,
    spec: WriteSpec,
    *,
    verify: bool | None = None,
    supersede: Sequence[str] = (),
    name_all: bool = False,
) -> Plan[MemoryRecord]:
    """Write a new memory (see the module docstring); returns it (plaintext).

    ``name_all``: the record names every id of ``supersede`` in its ``supersedes``, also
    those another writer superseded, forgot or deleted first (consolidation finds a rival
    merge of the same cluster by the members both name)."""
    now = utcnow()
    record = prepare(ctx, spec, now)
    ctx = yield from plan_read_keyed(ctx, record)
    under_key = key_superseded(ctx, record)
    superseded = list(dict.fromkeys([*supersede, *under_key]))
    contradicts: list[str] = []
    if ctx.config.verification.enabled if verify is None else verify:
        replaces, contradicts = yield from plan_verify(ctx, record, superseded)
        superseded += replaces
    if rewrites_existing(ctx.store):  # the store judges which are still active: no read
        olds = [mid for mid in dict.fromkeys(superseded) if isinstance(mid, str) and mid]
        record = record.model_copy(update={"supersedes": olds, "contradicts": contradicts})
        by_key = left_to_settling(ctx, under_key)
        flush = take_access(ctx.layout, ctx.index.access_writer, ctx.index)
        (record,) = yield from plan_commit_new(
            ctx, [record], patches={mid: superseded_changes(record.id, now) for mid in olds
                                    if mid not in by_key}, flush=flush,
            named=supersede if name_all else ())
        settled: dict[str, str] = {}
        (record,) = yield from plan_settle_keys(ctx, [record], now, settled)
        missed = {mid for mid in by_key if settled.get(mid) != record.id}
        (record,) = yield from plan_unname_missed(ctx, [record], missed)
        return record
    values = [superseded_value(o, record.id, now)
              for o in (yield from plan_fresh_active(ctx, superseded))]
    named = [o["id"] for o in values] + (list(supersede) if name_all else [])
    record = record.model_copy(update={"supersedes": list(dict.fromkeys(named)),
                                       "contradicts": contradicts})
    (record,) = yield from plan_commit_new(ctx, [record], values)
    (record,) = yield from plan_settle_keys(ctx, [record], now)
    yield from plan_flush_access(ctx)
    return record


def plan_settle_keys(ctx: ProfileContext, records: Sequence[MemoryRecord], now: datetime,
                     settled: dict[str, str] | None = None) -> Plan[list[MemoryRecord]]:
    """After writes by key, keep one active record under each key and scope of ``records``
    (one read of those keys, and one write only when some raced): writers that raced (each
    read before the other wrote) both left theirs active. The later to write sees the other
    in this read; every writer keeps the greatest id and supersedes the rest, so two that
    see each other agree. On a :class:`~..core.stores.RewritesMatching` store the read and
    the write are one call a key (the store reads the key's active records, this decides,
    the store rewrites them as read). Returns ``records``, those that lost superseded;
    ``settled`` gets ``{superseded id: winner}``."""
    keyed = [r for r in records
             if r.kind in SUPERSEDABLE_KINDS and r.key and r.status == "active"]
    if not keyed:
        return list(records)
    pairs = sorted({(r.scope, r.key) for r in keyed})
    if isinstance(ctx.store, RewritesMatching) and len(pairs) <= SETTLE_SEARCHES_MAX:
        winner_of = yield from _plan_settle_in_store(ctx, keyed, pairs, now)
    else:
        winner_of = yield from _plan_settle_read_then_write(ctx, keyed, pairs, now)
    if settled is not None:
        settled.update(winner_of)
    return [r.model_copy(update={"status": "superseded", "superseded_by": winner_of[r.id],
                                 "superseded_at": now}) if r.id in winner_of else r
            for r in records]


def _active_under(ctx: ProfileContext, key_id: str, v: dict[str, Any], key: str, scope: str
                  ) -> bool:
    """Whether stored value ``v`` (its item's key ``key_id``) is an active fact or
    instruction of this profile under ``key`` and ``scope``."""
    return (v.get("profile") == ctx.profile and v.get("id") == key_id and v.get("key") == key
            and (v.get("scope") or "agent") == scope and v.get("status") == "active"
            and v.get("kind") in SUPERSEDABLE_KINDS)


def _plan_settle_in_store(ctx: ProfileContext, keyed: Sequence[MemoryRecord],
                          pairs: Sequence[tuple[str, str]], now: datetime
                          ) -> Plan[dict[str, str]]:
    """:func:`plan_settle_keys` by ``rewrite_matching``: one call (a read, and an update
    when some lost) a key; returns ``{loser: winner}``."""
    store = cast(RewritesMatching, ctx.store)
    winner_of: dict[str, str] = {}
    for scope, key in pairs:
        mine = {r.id for r in keyed if (r.scope, r.key) == (scope, key)}

        def decide(items: list[Any], mine: set[str] = mine, scope: str = scope,
                   key: str = key) -> dict[str, dict[str, Any]]:
            found = {it.key for it in items if _active_under(ctx, it.key, it.value, key, scope)}
            winner = max(found | mine)
            winner_of.update((mid, winner) for mid in (found | mine) - {winner})
            return {mid: superseded_changes(winner, now) for mid in found - {winner}}

        written = yield Call(store.rewrite_matching, store.arewrite_matching,
                             (ctx.layout.memories,
                              {"key": key, LIVE: ctx.profile}, decide))  # decide checks the scope
        for value in written.values():
            ctx.index.apply(value)
    return winner_of


def _plan_settle_read_then_write(ctx: ProfileContext, keyed: Sequence[MemoryRecord],
                                 pairs: Sequence[tuple[str, str]], now: datetime
                                 ) -> Plan[dict[str, str]]:
    """:func:`plan_settle_keys` on other stores: one read of the keys (of the profile, for
    more than :data:`SETTLE_SEARCHES_MAX`), then the losers' rewrite; returns ``{loser:
    winner}``."""
    if len(pairs) > SETTLE_SEARCHES_MAX:  # a bulk chunk: one read of the profile
        (items,) = yield batch(ctx.store, [SearchOp(ctx.layout.memories, limit=LOAD_LIMIT)])
        by_pair: dict[tuple[str, str], list[Any]] = {p: [] for p in pairs}
        for it in items:
            pair = (it.value.get("scope") or "agent", it.value.get("key"))
            if pair in by_pair:
                by_pair[pair].append(it)
        found = [by_pair[p] for p in pairs]
    else:
        found = yield batch(ctx.store, [
            SearchOp(ctx.layout.memories,
                     filter={"key": key, LIVE: ctx.profile}, limit=LOAD_LIMIT)
            for scope, key in pairs])
    actives: dict[tuple[str, str], set[str]] = {}
    held: dict[str, dict[str, Any]] = {}
    for (scope, key), items in zip(pairs, found, strict=True):
        ids = actives[(scope, key)] = set()
        for it in items:
            if _active_under(ctx, it.key, it.value, key, scope):
                ids.add(it.key)
                held[it.key] = dict(it.value)
    winner_of: dict[str, str] = {}
    for record in keyed:
        ids = actives[(record.scope, record.key)] | {record.id}
        winner = max(ids)
        winner_of.update((mid, winner) for mid in ids - {winner})
    losers = [held[mid] for mid in sorted(winner_of) if mid in held]
    if losers and rewrites_existing(ctx.store):  # applied to the records as stored
        yield from plan_commit_new(ctx, [], patches={
            o["id"]: superseded_changes(winner_of[o["id"]], now) for o in losers})
    elif losers:
        yield from plan_commit_new(ctx, [], [superseded_value(o, winner_of[o["id"]], now)
                                             for o in losers])
    return winner_of
