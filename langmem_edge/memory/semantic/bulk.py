"""Bulk writes of the semantic tier (``Profile.remember_many``): imports and backfills.

``remember`` costs a read of the profile, a verification (when on) and a write per memory,
so the store's embedder sees one text at a time. A bulk write validates every item first (a
bad item raises, naming its position, before anything is written), then writes the memories
in chunks of ``limits.bulk_chunk`` (1,000), so the store embeds the chunk's texts in one batch
and the chunk costs a constant number of store batches, whatever its size:

1. one read of the profile before the first chunk (``context.py`` ``plan_read``); each chunk
   adds what it wrote to it, so an import reads the profile once, not once a chunk (another
   process's write under a key meanwhile is found by step 4);
2. the stored records the chunk supersedes, read fresh (only when there are any);
3. the write (``index/store_io.py``): the new records in one batch, the superseded ones
   rewritten where they still exist;
4. when the chunk holds keyed facts or instructions, settling its keys
   (``write.py`` ``plan_settle_keys``): one read of those keys, and only when another writer
   raced on some of them (both left theirs active), one write superseding every loser (the
   greatest id under a key stays active, as for ``remember``).

The write rules are those of ``remember`` (``write.py``): a fact or instruction under a key
supersedes the active ones of its scope, so of several items with one key and scope the last
is active and each earlier one is superseded by the next (as if they had been remembered one
at a time, in order). An item superseded by a later item of the same chunk is written
superseded in the same batch as its successor; one held by an earlier chunk is already
stored, so it is read fresh and rewritten like any stored record. A chunk whose embedding
fails is stored ``embedding_status="pending"`` (``AgentMemory.reembed()`` backfills).

Verification is off by default (imports are usually known to be new). With ``verify=True``
each item is judged against the memories stored before its chunk (not against the other
items of its chunk), one verification search and judgement per item.

A failure of the store mid-call leaves the chunks before the failing one written (each
chunk whole); the call raises, and the records it returns are only those of a call that
succeeded.

**Riding in an ingest's write** (:func:`plan_riding_puts`): the memories an ingest extracts
are new records too. On a store that applies a batch whole (``ChromaStore``), their rows go in
the batch that writes the messages and the session record, which moves the session's
extraction mark in the same write, with the profile's pending access counts: one read of the
profile, one verification search per memory, no write of their own and no confirmation write
after it (a 2-message ingest with one memory: 4 Chroma calls). A memory that supersedes a
stored one rides too; the store then marks the old one as ``remember`` does (one read and one
update, and the key's settling read). Where ``remember``'s path is needed (two memories under
one key or superseding one record, a supersession on a store that cannot rewrite only what
exists, a profile too large to read whole) they are written by it, after the messages.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from langgraph.store.base import PutOp

from langmem_edge.errors import InvalidInputError, LimitExceededError
from langmem_edge.memory.core.plans import Plan
from langmem_edge.memory.index.store_io import (
    WRITE_WHOLE_MAX,
    plan_write_records,
    rewrites_existing,
)
from langmem_edge.memory.records import SUPERSEDABLE_KINDS, MemoryRecord, utcnow
from langmem_edge.memory.semantic.access import (
    AccessFlush,
    access_failed,
    access_written,
    take_access,
)
from langmem_edge.memory.semantic.context import ProfileContext, plan_read
from langmem_edge.memory.semantic.write import (
    WriteSpec,
    key_superseded,
    left_to_settling,
    new_puts,
    plan_commit_new,
    plan_flush_access,
    plan_fresh_active,
    plan_settle_keys,
    plan_unname_missed,
    plan_verify,
    prepare,
    superseded_changes,
    superseded_value,
)

__all__ = ["ITEM_FIELDS", "BulkItem", "Riding", "bulk_specs", "plan_finish_riding",
           "plan_remember_many", "plan_riding_puts", "riding_failed", "written_texts"]

logger = logging.getLogger(__name__)

BulkItem = str | Mapping[str, Any]
"""One item of ``remember_many``: a text, or a dict of ``remember``'s fields."""

ITEM_FIELDS = frozenset({
    "text", "key", "kind", "fact_type", "confidence", "source", "writer", "contact",
    "session_id", "tags", "metadata", "valid_from", "valid_until", "encrypted",
})
"""The fields an item dict may hold (``remember``'s arguments, ``text`` required)."""


def bulk_specs(
    items: Iterable[BulkItem],
    *,
    source: str,
    writer: str | None,
    contact: str | None,
    session_id: str | None,
    max_items: int,
) -> list[WriteSpec]:
    """The write specs of ``items``; an item's own fields win over the call's defaults
    (``source``, ``writer``, ``contact``, ``session_id``). Raises ``InvalidInputError``
    naming the first bad item's position."""
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
        raise InvalidInputError(
            f"items must be a list of texts or dicts, got {type(items).__name__}"
        )
    items = list(items)
    if len(items) > max_items:
        raise LimitExceededError(f"{len(items)} items; remember_many accepts at most "
                                 f"{max_items} a call")
    defaults = {"source": source, "writer": writer, "contact": contact,
                "session_id": session_id}
    specs = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            fields: dict[str, Any] = {"text": item}
        elif isinstance(item, Mapping):
            fields = dict(item)
            unknown = set(fields) - ITEM_FIELDS
            if unknown:
                raise InvalidInputError(f"items[{i}] has unknown fields {sorted(unknown)}; "
                                        f"allowed: {sorted(ITEM_FIELDS)}")
            if "text" not in fields:
                raise InvalidInputError(f"items[{i}] has no 'text'")
        else:
            raise InvalidInputError(
                f"items[{i}] must be a text or a dict, got {type(item).__name__}"
            )
        specs.append(WriteSpec(**{**defaults, **fields}))
    return specs


def _prepared(ctx: ProfileContext, specs: Sequence[WriteSpec], now: datetime
              ) -> list[MemoryRecord]:
    records = []
    for i, spec in enumerate(specs):
        try:
            records.append(prepare(ctx, spec, now))
        except InvalidInputError as e:
            raise type(e)(f"items[{i}]: {e}") from e
    return records


def plan_remember_many(
    ctx: ProfileContext,
    items: Iterable[BulkItem],
    *,
    source: str,
    writer: str | None,
    contact: str | None,
    session_id: str | None,
    verify: bool,
) -> Plan[list[MemoryRecord]]:
    """Write many new memories (see the module docstring); returns them in order, as
    stored (plaintext)."""
    specs = bulk_specs(items, source=source, writer=writer, contact=contact,
                       session_id=session_id, max_items=ctx.config.limits.max_bulk_items)
    now = utcnow()
    records = _prepared(ctx, specs, now)  # every item checked before anything is written
    chunk = ctx.config.limits.bulk_chunk
    written: list[MemoryRecord] = []
    ctx = yield from plan_read(ctx, counts=False)  # once: each chunk adds what it wrote
    for start in range(0, len(records), chunk):
        written += yield from _plan_chunk(ctx, records[start:start + chunk], verify, now)
    if written:
        yield from plan_flush_access(ctx)
    return written


def _plan_chunk(ctx: ProfileContext, part: list[MemoryRecord], verify: bool, now: datetime
                ) -> Plan[list[MemoryRecord]]:
    """One chunk: supersession (in the chunk, and of stored records), verification, one
    write of the protocol, then its keys settled."""
    holder: dict[tuple[str, str], int] = {}
    """(scope, key) -> position of the chunk's record now holding it."""
    successor: dict[int, int] = {}
    """position superseded -> position of the record superseding it (in the chunk)."""
    stored: dict[str, int] = {}
    """stored id superseded -> position of the record superseding it (the first claim)."""
    contradicts: dict[int, list[str]] = {}
    for j, record in enumerate(part):
        if record.kind in SUPERSEDABLE_KINDS and record.key:
            sk = (record.scope, record.key)
            prev = holder.get(sk)
            if prev is None:
                for mid in key_superseded(ctx, record):
                    stored.setdefault(mid, j)
            else:
                successor[prev] = j
            holder[sk] = j
        if verify:
            replaces, contra = yield from plan_verify(ctx, record, list(stored))
            for mid in replaces:
                stored.setdefault(mid, j)
            contradicts[j] = contra
    olds = yield from plan_fresh_active(ctx, list(stored))
    supersedes: dict[int, list[str]] = {}
    rewritten = []
    for old in olds:
        j = stored[old["id"]]
        supersedes.setdefault(j, []).append(old["id"])
        rewritten.append(superseded_value(old, part[j].id, now))
    for prev, j in successor.items():
        supersedes.setdefault(j, []).append(part[prev].id)
    news = []
    for j, record in enumerate(part):
        update: dict[str, Any] = {"supersedes": supersedes.get(j, []),
                                  "contradicts": contradicts.get(j, [])}
        if j in successor:
            update.update(status="superseded", superseded_by=part[successor[j]].id,
                          superseded_at=now)
        news.append(record.model_copy(update=update))
    stored_news = yield from plan_commit_new(ctx, news, rewritten)
    return (yield from plan_settle_keys(ctx, stored_news, now))


@dataclass
class Riding:
    """New memories whose rows ride in another write (an ingest's: its messages and session
    record), as :func:`plan_riding_puts` left them for :func:`plan_finish_riding`."""

    ctx: ProfileContext | None = None
    records: list[MemoryRecord] | None = None
    """The records put (plaintext); None: nothing rode, the caller writes them itself."""
    now: datetime | None = None
    patches: dict[str, dict[str, Any]] | None = None
    """The stored records they supersede: ``{id: changes}``, applied after the write."""
    flush: AccessFlush | None = None
    """Access counts whose items rode too."""
    by_key: dict[str, set[str]] = field(default_factory=dict)
    """The stored records each new one supersedes under its key, left to the key's settling
    (a ``RewritesMatching`` store)."""


def plan_riding_puts(ctx: ProfileContext, specs: Sequence[WriteSpec], resumed: bool,
                     riding: Riding) -> Plan[list[PutOp] | None]:
    """The puts of new memories to write in another write's batch, or None (then nothing is
    decided: the caller writes them through ``remember``'s path) when that path is needed:
    two share a key and scope, two supersede one record, one supersedes a stored record (by
    key, or by verification) on a store that cannot rewrite only what exists, or the profile
    is too large to read whole. Reads the profile once (with ``resumed``, a memory whose
    session already holds one of the same text is left out) and verifies each memory against
    the stored ones, not against each other (as a bulk chunk does). An invalid memory is
    logged and left out. The profile's pending access counts ride too. After the write:
    :func:`plan_finish_riding` (it marks the superseded records)."""
    if ctx.hints is not None and ctx.hints.big(ctx.profile, WRITE_WHOLE_MAX):
        return None
    now = utcnow()
    records = []
    for spec in specs:
        try:
            records.append(prepare(ctx, spec, now))
        except InvalidInputError as e:  # checked before any write: nothing half-done
            logger.warning("extracted memory %.80r of profile %r left out: %s", spec.text,
                           ctx.profile, e)
    ctx = yield from plan_read(ctx, counts=False)
    if resumed:  # some may have been written before a failure
        have = written_texts(ctx)
        records = [r for r in records if (r.session_id, r.text) not in have]
    alike = {(r.scope, r.kind, r.text): r for r in reversed(records)}  # the first of each
    records = [r for r in records if alike[(r.scope, r.kind, r.text)] is r]
    keys = [(r.scope, r.key) for r in records if r.kind in SUPERSEDABLE_KINDS and r.key]
    guarded = rewrites_existing(ctx.store)
    if len(set(keys)) < len(keys) or (not guarded and any(key_superseded(ctx, r)
                                                          for r in records)):
        return None
    checked = []
    patches: dict[str, dict[str, Any]] = {}
    for record in records:
        olds = key_superseded(ctx, record)
        riding.by_key[record.id] = left_to_settling(ctx, olds)
        contradicts: list[str] = []
        if ctx.config.verification.enabled:
            replaces, contradicts = yield from plan_verify(ctx, record, olds)
            if replaces and not guarded:
                return None
            olds += replaces
        if patches.keys() & olds:
            return None
        patches.update((mid, superseded_changes(record.id, now)) for mid in olds
                       if mid not in riding.by_key[record.id])
        checked.append(record.model_copy(update={"contradicts": contradicts,
                                                 "supersedes": olds}))
    records, puts = new_puts(ctx, checked)
    flush = take_access(ctx.layout, ctx.index.access_writer, ctx.index)
    riding.ctx, riding.records, riding.now = ctx, records, now
    riding.patches, riding.flush = patches, flush
    return [PutOp(ctx.layout.memories, value["id"], value, index=ix) for value, ix in puts] + (
        flush.puts if flush is not None else [])


def written_texts(ctx: ProfileContext) -> set[tuple[str | None, str | None]]:
    """``(session_id, text)`` of the records in ``ctx``'s index (read whole): what an ingest
    that resumes a failed one must not write again."""
    return {(v.get("session_id"), v.get("text")) for v in ctx.index.values.values()}


def plan_finish_riding(riding: Riding) -> Plan[list[MemoryRecord]]:
    """After the write that carried :func:`plan_riding_puts`' rows: their keys settled (as
    ``remember`` settles one) and access counts flushed; returns the records as stored."""
    assert riding.ctx is not None and riding.records is not None and riding.now is not None
    ctx, records = riding.ctx, riding.records
    access_written(riding.flush)
    gone: list[str] = []
    if riding.patches:
        gone = yield from plan_write_records(ctx.store, ctx.index, patches=riding.patches)
    settled: dict[str, str] = {}
    records = yield from plan_settle_keys(ctx, records, riding.now, settled)
    missed = set(gone) | {mid for r in records for mid in riding.by_key.get(r.id, ())
                          if settled.get(mid) != r.id}
    return (yield from plan_unname_missed(ctx, records, missed))


def riding_failed(riding: Riding, error: Exception) -> None:
    """The write that carried :func:`plan_riding_puts`' rows failed: the access counts that
    rode are pending again."""
    access_failed(riding.flush, error)
    riding.flush = None
