"""Consolidation: decay what is not used, fold near-duplicates into one canonical memory.

One pass over a profile (:func:`plan_consolidate`; ``AgentMemory.consolidate`` runs it on
one profile or all, ``langmem_edge.graphs.create_consolidation_graph`` as a graph), every
number a default of :class:`~langmem_edge.memory.config.ConsolidationConfig`:

1. **Decay.** An active memory not accessed for ``decay_after_days`` (30) days, counted from
   its last access, its creation or its last decay, whichever is latest: confidence x
   ``decay_factor`` (0.8), never below ``decay_floor`` (0.1). The decay is stamped
   (``decayed_at``) so the next one comes ``decay_after_days`` later: a second pass at once
   decays nothing.
2. **Sample** the ``sample_size`` (30) newest active facts and instructions (embedded, not
   encrypted). Events are occurrences and tasks belong to their session: never merged.
3. **Near-duplicates.** For each sampled memory not yet in a cluster, its neighbours at
   cosine >= ``cluster_cosine`` (0.85) of the same kind and scope, and theirs in turn (single
   link, at most ``max_cluster_size`` members), so one pass gathers a whole group of
   restatements, not only those close to the first one seen.
4. **Merge** each cluster of ``min_cluster_size`` (2) or more into one canonical statement:
   the model's (structured output through ``core/models.py``, retried), or without a model
   (or when it fails) the most complete member (most words, then most characters) and,
   among equals, the most recent. The new memory has source ``consolidation``, the highest
   confidence of its members, their key (the newest member's that has one), tags and
   cited messages, and the latest ``valid_until`` when every member has one.
5. **Supersede** the members by it (one write of the change protocol: the new record and
   the members, ``status="superseded"``, ``superseded_by`` = the new one); they stay in the
   store and in ``history``, and leave recall.
6. At most ``max_clusters`` (5) clusters a pass.

**Safe while the agent writes.** Every record changed is read fresh right before the write
that changes it (write rule 4), after any model call: a member deleted, forgotten,
superseded or changed since the pass looked at it skips its whole cluster for this pass
(reported in ``skipped``), so no member is lost (merged into a statement that does not cover
its new version) or resurrected (written back after a delete). A decay skips a memory that
is no longer active. A profile lease (``reflective`` tier, ``lease_seconds``) keeps a second
pass from starting while one runs; if two passes still overlap, each checks after its merge
for another active canonical memory superseding one of its members, and the one with the
larger id is superseded by the smaller: both passes apply the same rule, so one canonical
memory stays active (no double merge). For that a canonical memory names its whole cluster
in ``supersedes``, also members another pass's merge superseded between this pass's fresh
read and its write (else the later merge would name none and stay beside the other). The one
window no ``BaseStore`` lets us close is the round trip between a fresh read and the write
after it, as in every rewrite of the semantic tier; the model call comes before the fresh
read to keep it that short.

**Idempotent.** After a pass, a cluster's members are superseded and leave the sample; the
canonical memory has no active near-duplicate left; decay waits for its next period. So a
second pass changes nothing and its report says so (``changed`` is ``False``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.store.base import GetOp, SearchOp
from pydantic import BaseModel, Field

from langmem_edge.memory.core.dates import iso_to_epoch
from langmem_edge.memory.core.models import structured_runnable
from langmem_edge.memory.core.plans import Plan, batch, invoke
from langmem_edge.memory.index.store_io import plan_write_records
from langmem_edge.memory.records import LIVE, scope_filter, utcnow
from langmem_edge.memory.reflective.tier import ReflectiveScope, plan_acquire, plan_release
from langmem_edge.memory.semantic.context import ProfileContext, plan_read
from langmem_edge.memory.semantic.write import WriteSpec, plan_flush_access, plan_write

__all__ = [
    "CONSOLIDATION_JOB",
    "CanonicalStatement",
    "ConsolidationReport",
    "Decay",
    "Merge",
    "ProfileConsolidation",
    "plan_consolidate",
]

logger = logging.getLogger(__name__)

SECONDS_PER_DAY = 86_400.0

CONSOLIDATION_JOB = "consolidation"
"""The lease name a pass holds on its profile."""

MERGEABLE_KINDS = frozenset({"fact", "instruction"})
"""Kinds a pass merges: facts and instructions say what is true; events are occurrences
(two failures of a deploy are two events, which reflection counts) and tasks belong to their
session, so neither is ever folded."""

MAX_CANONICAL_TAGS = 32
"""Tags a canonical memory carries at most (the members' union, newest first)."""


class Decay(BaseModel):
    """One memory's confidence lowered by a pass."""

    memory_id: str
    before: float
    after: float


class Merge(BaseModel):
    """One cluster folded into a canonical memory."""

    memory_id: str
    """The canonical memory (active)."""
    text: str
    """Its statement."""
    members: list[str]
    """The memories it superseded."""
    by: str
    """``model`` or ``rules`` (the most complete, most recent member)."""


class ProfileConsolidation(BaseModel):
    """What one pass changed in one profile."""

    profile: str
    decayed: list[Decay] = Field(default_factory=list)
    merged: list[Merge] = Field(default_factory=list)
    skipped: list[list[str]] = Field(default_factory=list)
    """Clusters left for a later pass: a member changed while the pass ran."""
    retired: list[str] = Field(default_factory=list)
    """Canonical memories of an overlapping pass superseded by this one's (double merge
    undone)."""
    sampled: int = 0
    """Memories looked at for near-duplicates."""
    busy: bool = False
    """Another pass held the profile's lease: nothing was done."""
    clustering: bool = True
    """``False`` when the store has no vector index (decay only)."""

    @property
    def changed(self) -> bool:
        """Whether the pass changed anything."""
        return bool(self.decayed or self.merged or self.retired)


class ConsolidationReport(BaseModel):
    """``AgentMemory.consolidate``: what a pass changed, profile by profile."""

    profiles: list[ProfileConsolidation] = Field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Whether the pass changed anything in any profile."""
        return any(p.changed for p in self.profiles)

    @property
    def decayed(self) -> int:
        """Memories decayed, over every profile."""
        return sum(len(p.decayed) for p in self.profiles)

    @property
    def merged(self) -> int:
        """Clusters merged, over every profile."""
        return sum(len(p.merged) for p in self.profiles)


class CanonicalStatement(BaseModel):
    """What the model answers: one statement that says what every member says."""

    text: str = Field(description="One self-contained statement keeping every detail the "
                                  "statements agree on.")


def canonical_messages(texts: Sequence[str]) -> list[Any]:
    """The prompt asking the model for one canonical statement of near-duplicates."""
    listing = "\n".join(f"- {t}" for t in texts)
    return [
        SystemMessage(content="These memory notes say nearly the same thing. Write the one "
                              "statement that replaces them all: keep every detail they "
                              "share, prefer the most recent where they differ, add nothing."),
        HumanMessage(content=f"Notes (newest first):\n{listing}"),
    ]


def _touched(ctx: ProfileContext, v: dict[str, Any]) -> float:
    """Epoch seconds of the latest access, creation or decay of a stored value."""
    _, last = ctx.index.access(v["id"])
    return max(iso_to_epoch(v.get("created_at"), 0.0), iso_to_epoch(v.get("last_accessed_at"), 0.0),
               iso_to_epoch(last, 0.0), iso_to_epoch(v.get("decayed_at"), 0.0))


def _plan_decay(ctx: ProfileContext, now: datetime) -> Plan[list[Decay]]:
    cfg = ctx.config.consolidation
    t = now.timestamp()
    period = cfg.decay_after_days * SECONDS_PER_DAY

    def due(v: dict[str, Any]) -> bool:
        return (v.get("status") == "active" and float(v.get("confidence", 0.0)) > cfg.decay_floor
                and t - _touched(ctx, v) >= period)

    ids = [mid for mid, v in ctx.index.values.items() if due(v)]
    if not ids:
        return []
    got = yield batch(ctx.store, [GetOp(ctx.layout.memories, mid) for mid in ids])
    stamp = utcnow().isoformat()
    puts: list[tuple[dict[str, Any], Any]] = []
    changes = []
    for item in got:  # fresh: a memory deleted or superseded meanwhile is left alone
        if item is None or item.value.get("profile") != ctx.profile or not due(item.value):
            continue
        before = float(item.value.get("confidence", 0.0))
        after = max(cfg.decay_floor, before * cfg.decay_factor)
        value = {**item.value, "confidence": after, "decayed_at": now.isoformat(),
                 "updated_at": stamp}
        puts.append((value, False))  # the text is unchanged: its vectors stay
        changes.append(Decay(memory_id=item.key, before=before, after=after))
    if puts:
        gone = yield from plan_write_records(ctx.store, ctx.index, rewrites=puts)
        changes = [c for c in changes if c.memory_id not in gone]
    return changes


def _mergeable(ctx: ProfileContext, v: dict[str, Any] | None, t: float) -> bool:
    return (v is not None and v.get("status") == "active" and v.get("kind") in MERGEABLE_KINDS
            and not v.get("encrypted") and v.get("embedding_status") == "complete"
            and iso_to_epoch(v.get("valid_until")) > t
            and float(v.get("confidence", 0.0)) >= ctx.config.recall.min_confidence)


def _plan_clusters(ctx: ProfileContext, now: datetime) -> Plan[tuple[int, list[list[str]]]]:
    """The clusters to merge (newest seed first) and how many memories were sampled."""
    cfg = ctx.config.consolidation
    values = ctx.index.values
    t = now.timestamp()
    sample = [mid for mid in reversed(ctx.index.sorted_ids())
              if _mergeable(ctx, values.get(mid), t)][: cfg.sample_size]
    taken: set[str] = set()
    clusters: list[list[str]] = []
    for seed in sample:
        if len(clusters) >= cfg.max_clusters:
            break
        if seed in taken:
            continue
        kind, scope = values[seed].get("kind"), values[seed].get("scope")
        members, frontier = [seed], [seed]
        while frontier and len(members) < cfg.max_cluster_size:
            ops = [SearchOp(ctx.layout.memories, query=values[m].get("text", ""),
                            filter={LIVE: ctx.profile, **scope_filter(scope)},
                            limit=cfg.neighbours) for m in frontier]
            found = yield batch(ctx.store, ops)
            frontier = []
            for hits in found:
                for hit in hits:
                    v = values.get(hit.key)
                    if (hit.score is None or hit.score < cfg.cluster_cosine
                            or hit.key in taken or hit.key in members
                            or not _mergeable(ctx, v, t) or v is None
                            or v.get("kind") != kind or v.get("scope") != scope
                            or len(members) >= cfg.max_cluster_size):
                        continue
                    members.append(hit.key)
                    frontier.append(hit.key)
        if len(members) >= cfg.min_cluster_size:
            clusters.append(members)
            taken.update(members)
    return len(sample), clusters


def _completeness(v: dict[str, Any]) -> tuple[int, int, str]:
    text = str(v.get("text", ""))
    return len(text.split()), len(text), str(v["id"])


def _plan_statement(ctx: ProfileContext, model: BaseChatModel | None,
                    members: list[dict[str, Any]]) -> Plan[tuple[str, str]]:
    """The canonical statement and who made it (``model`` or ``rules``)."""
    newest = sorted(members, key=lambda v: str(v["id"]), reverse=True)
    if model is not None:
        runnable = structured_runnable(model, CanonicalStatement)
        try:
            (out,) = yield invoke(runnable, canonical_messages([v["text"] for v in newest]),
                                  "consolidation", structured=True)
            text = str(out.text).strip()
            if text:
                return text[: ctx.config.limits.max_text_chars], "model"
        except Exception as e:
            logger.warning("consolidation model call failed (%s); keeping the most complete "
                           "member", e)
    return str(max(members, key=_completeness)["text"]), "rules"


def _spec(members: list[dict[str, Any]], text: str) -> WriteSpec:
    newest = sorted(members, key=lambda v: str(v["id"]), reverse=True)
    best = max(members, key=_completeness)
    key = next((v["key"] for v in newest if v.get("key")), None)
    tags = list(dict.fromkeys(t for v in newest for t in v.get("tags") or ()))
    sessions = {v.get("session_id") for v in members}
    ends = [v.get("valid_until") for v in members]
    cited = list(dict.fromkeys(m for v in newest for m in v.get("source_message_ids") or ()))
    return WriteSpec(text=text, key=key, kind=best.get("kind"), fact_type=best.get("fact_type"),
                     confidence=max(float(v.get("confidence", 0.0)) for v in members),
                     source="consolidation", writer=best.get("writer"),
                     contact=best.get("contact"),
                     session_id=sessions.pop() if len(sessions) == 1 else None,
                     tags=tags[:MAX_CANONICAL_TAGS],
                     valid_until=max(ends, key=iso_to_epoch) if all(ends) else None,
                     extra={"source_message_ids": cited})


def _plan_merge(ctx: ProfileContext, model: BaseChatModel | None, cluster: list[str],
                now: datetime) -> Plan[Merge | None]:
    """Merge one cluster; ``None`` when a member changed since it was gathered."""
    planned = {mid: ctx.index.values.get(mid) for mid in cluster}
    members = [v for v in planned.values() if v is not None]
    text, by = yield from _plan_statement(ctx, model, members)
    # fresh, after the model call: any member changed meanwhile leaves the cluster for later
    got = yield batch(ctx.store, [GetOp(ctx.layout.memories, mid) for mid in cluster])
    t = now.timestamp()
    for mid, item in zip(cluster, got, strict=True):
        old = planned.get(mid)
        if (item is None or item.value.get("profile") != ctx.profile or old is None
                or not _mergeable(ctx, item.value, t)
                or item.value.get("updated_at") != old.get("updated_at")):
            return None
    fresh = [dict(it.value) for it in got if it is not None]
    record = yield from plan_write(ctx, _spec(fresh, text), verify=False, supersede=cluster,
                                   name_all=True)
    return Merge(memory_id=record.id, text=record.text, members=list(cluster), by=by)


def _plan_settle(ctx: ProfileContext, merges: list[Merge]) -> Plan[list[str]]:
    """Undo double merges: among active memories superseding one of the same members, the
    smallest id stays and the others are superseded by it (the same rule in every pass)."""
    if not merges:
        return []
    ctx = yield from plan_read(ctx, counts=False)
    values = ctx.index.values
    losers: dict[str, str] = {}
    for m in merges:
        rivals = {mid for mid, v in values.items()
                  if v.get("status") == "active" and v.get("source") == "consolidation"
                  and set(v.get("supersedes") or ()) & set(m.members)} | {m.memory_id}
        winner = min(rivals)
        losers.update({r: winner for r in rivals if r != winner})
    if not losers:
        return []
    got = yield batch(ctx.store, [GetOp(ctx.layout.memories, mid) for mid in losers])
    stamp = utcnow().isoformat()
    puts = []
    for item in got:
        if item is None or item.value.get("status") != "active":
            continue
        value = {**item.value, "status": "superseded", LIVE: None,
                 "superseded_by": losers[item.key], "superseded_at": stamp, "updated_at": stamp}
        puts.append((value, False))
    if puts:
        gone = yield from plan_write_records(ctx.store, ctx.index, rewrites=puts)
        return [v["id"] for v, _ in puts if v["id"] not in gone]
    return []


def plan_consolidate(ctx: ProfileContext, model: BaseChatModel | None, *,
                     now: datetime | None = None) -> Plan[ProfileConsolidation]:
    """One consolidation pass over a profile (see the module docstring); ``now`` is the
    clock the decay period is counted on (default: the current time)."""
    now = now or utcnow()
    report = ProfileConsolidation(profile=ctx.profile)
    leases = ReflectiveScope(store=ctx.store, layout=ctx.layout,
                             config=ctx.config.reflection, clock=time.time)
    token = yield from plan_acquire(leases, CONSOLIDATION_JOB,
                                    ctx.config.consolidation.lease_seconds)
    if token is None:
        report.busy = True
        return report
    try:
        ctx = yield from plan_read(ctx)
        yield from plan_flush_access(ctx)  # this process's accesses count before decay
        report.decayed = yield from _plan_decay(ctx, now)
        report.clustering = ctx.has_vectors
        if ctx.has_vectors:
            report.sampled, clusters = yield from _plan_clusters(ctx, now)
            for cluster in clusters:
                merged = yield from _plan_merge(ctx, model, cluster, now)
                if merged is None:
                    report.skipped.append(cluster)
                else:
                    report.merged.append(merged)
            report.retired = yield from _plan_settle(ctx, report.merged)
    finally:
        yield from plan_release(leases, CONSOLIDATION_JOB, token)
    return report
