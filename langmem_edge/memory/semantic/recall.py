"""Recall: fused channels over one profile, relevance fill, an answer from the candidates.

Channels (each yields up to ``depth[thinking_level]`` hits; 20 / 50 / 150; built in
:mod:`.channels`):

* ``vector``: the profile's vectors read with it, ranked in process (a store that returns
  them: ChromaStore), else the store's key ranking or ``store.search(query=...)`` filtered on
  profile, status and scope; hits under ``vector_min_score`` are not matches.
* ``keyword``: BM25 over the profile index (``retrieval.bm25``).
* ``key``: memories whose key is the query, or whose key words all occur in the query.
* ``temporal``: when the query holds a relative date ("last week", anchored on
  ``reference_date``), memories whose ``valid_from`` falls in that window, newest first.
* ``hyde`` and ``messages`` (with a model, at thinking level medium and high, or at any
  level with ``use_model=True``): a hypothetical answer written by the model,
  vector-searched; and the episodic tier's raw messages of this profile, vector-searched.

With a model the answer is written by it (else it is the top memories, joined).
``use_model=False`` makes no model call at all (neither channel, the joined answer): what
recall on a reply's path wants, where each model call is a round trip before the reply.

Every channel drops superseded, forgotten and expired memories (or, in an ``at(ts)`` view,
memories not valid at ``ts``), memories under the confidence floor (0.1), and memories out
of scope: with a ``contact``, that contact's and agent-wide memories; without, agent-wide
ones only. Hits are fused by weighted RRF (vector 1, keyword 1, key 1.5, others 1), or scored
by the composite scorer; tasks whose session has ended are multiplied by 0.5. Contact-scoped
candidates come first, then agent-wide ones. If anything matched and fewer than ``limit``
(20) did, the relevance fill adds the best other admissible memories by
``0.7 * recency + 0.3 * log(access_count + 1)``. If nothing matched, the result is empty and
the answer is ``""``: never invented.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from langgraph.store.base import SearchOp

from langmem_edge.errors import InvalidInputError, LimitExceededError
from langmem_edge.memory.config import MemoryConfig
from langmem_edge.memory.core.dates import find_window, iso_to_epoch
from langmem_edge.memory.core.models import message_text
from langmem_edge.memory.core.plans import Call, Plan, batch, invoke
from langmem_edge.memory.core.validate import check_optional_name, check_text
from langmem_edge.memory.index.store_io import (
    LOAD_LIMIT,
    WHOLE_READ_MAX,
    load_ops,
    plan_load,
    plan_read_batch,
)
from langmem_edge.memory.index.store_io import fill as fill_index
from langmem_edge.memory.records import (
    KINDS,
    Candidate,
    ChannelScore,
    MemoryRecord,
    RecallResult,
    ScoreBreakdown,
    scope_of,
    utcnow,
)
from langmem_edge.memory.semantic.channels import (
    Scope,
    confidence,
    key_channel,
    keyword_channel,
    plan_nearest,
    plan_store_candidates,
    temporal_channel,
    vector_hits,
    vector_ops,
)
from langmem_edge.memory.semantic.context import ProfileContext, plan_read
from langmem_edge.memory.semantic.prompts import answer_messages, hyde_messages
from langmem_edge.memory.semantic.scoring import composite, recency, tag_overlap
from langmem_edge.memory.semantic.write import MAX_NAME_CHARS, plan_flush_access
from langmem_edge.retrieval.fusion import rrf_fuse
from langmem_edge.retrieval.vectors import cosine_distances

__all__ = ["RecallRequest", "plan_count_access", "plan_lookup", "plan_recall"]

logger = logging.getLogger(__name__)

SCORERS = ("rrf", "composite")


@dataclass(frozen=True)
class RecallRequest:
    """The arguments of one recall (validated by :func:`_check`)."""

    query: str
    limit: int | None = None
    contact: str | None = None
    kind: str | Sequence[str] | None = None
    writer: str | None = None
    tags: Sequence[str] = ()
    scorer: str = "rrf"
    reference_date: datetime | None = None
    thinking_level: str | None = None
    session_id: str | None = None
    as_of: datetime | None = None
    fill: bool | None = None
    use_model: bool | None = None


def _check_limit(limit: int | None, default: int, most: int) -> int:
    limit = default if limit is None else limit
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidInputError(f"limit must be a positive integer, got {limit!r}")
    if limit > most:
        raise LimitExceededError(f"limit is {limit}; at most {most}")
    return limit


def _check(ctx: ProfileContext, req: RecallRequest) -> RecallRequest:
    cfg = ctx.config
    check_text(req.query, "query", cfg.limits.max_text_chars)
    limit = _check_limit(req.limit, cfg.recall.limit, cfg.limits.max_list_page)
    level = req.thinking_level or cfg.recall.thinking_level
    if req.scorer not in SCORERS:
        raise InvalidInputError(f"scorer must be one of {SCORERS}, got {req.scorer!r}")
    kinds = req.kind
    if isinstance(kinds, str):
        kinds = (kinds,)
    if kinds is not None:
        kinds = tuple(kinds)
        bad = [k for k in kinds if k not in KINDS]
        if bad or not kinds:
            raise InvalidInputError(f"unknown kind(s) {bad}; allowed: {list(KINDS)}")
    check_optional_name(req.contact, "contact", MAX_NAME_CHARS)
    check_optional_name(req.writer, "writer", MAX_NAME_CHARS)
    if req.use_model is not None and not isinstance(req.use_model, bool):
        raise InvalidInputError(f"use_model must be True, False or None, got {req.use_model!r}")
    return replace(req, limit=limit, kind=kinds, tags=tuple(req.tags or ()),
                   thinking_level=level)


def plan_recall(ctx: ProfileContext, request: RecallRequest) -> Plan[RecallResult]:
    """Recall memories for ``request.query`` (see the module docstring)."""
    req = _check(ctx, request)
    cfg = ctx.config.recall
    now_dt = utcnow()
    now = now_dt.timestamp()
    as_of = req.as_of.timestamp() if req.as_of is not None else None
    t = now if as_of is None else as_of
    reference = req.reference_date or req.as_of or now_dt
    scopes = (scope_of(req.contact), "agent") if req.contact is not None else ("agent",)
    scope = Scope(ctx.profile, scopes, req.kind, req.writer,  # type: ignore[arg-type]
                   cfg.min_confidence, t, as_of is not None)
    assert req.limit is not None and req.thinking_level is not None
    depth = cfg.depth[req.thinking_level] * (cfg.at_depth_factor if as_of is not None else 1)
    use_model = ctx.model is not None and (
        req.thinking_level in ("medium", "high") if req.use_model is None else req.use_model)
    channels: dict[str, list[tuple[str, float]]] = {}

    hyde_text = None
    if use_model and ctx.has_vectors:
        try:
            (reply,) = yield invoke(ctx.model, hyde_messages(req.query, reference), "hyde")
            hyde_text = message_text(reply)
        except Exception as e:
            logger.warning("HyDE generation failed (%s); channel skipped", e)
    ops: list[SearchOp] = []
    labels: list[str] = []
    vector_texts = [(label, text) for label, text in (("vector", req.query), ("hyde", hyde_text))
                    if text and ctx.has_vectors]
    if not ctx.nearest:
        for label, text in vector_texts:
            new = vector_ops(ctx, scope, text, depth)
            ops += new
            labels += [label] * len(new)
    if ctx.has_vectors and use_model:
        ops.append(SearchOp(ctx.layout.messages, filter={"profile": ctx.profile},
                            limit=depth, query=req.query))
        labels.append("messages")
    # one store round trip on the common path: the profile's read and every search
    ctx = ctx.fresh()
    hints = ctx.hints if ctx.nearest and ctx.keywords else None
    big = hints is not None and hints.big(ctx.profile, WHOLE_READ_MAX) is True
    # an at(ts) view needs the records superseded since ts; a recall now, the active ones
    load = [] if big else load_ops(ctx.index, limit=LOAD_LIMIT if hints is None
                                   else WHOLE_READ_MAX + 1, active=as_of is None)
    results: list[Any] = []
    try:
        got, vectors = ((yield from plan_read_batch(ctx.store, [*load, *ops])) if load
                        else ((yield batch(ctx.store, ops)), None))
        results = got[len(load):]
        if load:
            records = got[0]
            if hints is not None:
                big = len(records) > WHOLE_READ_MAX
                hints.saw(ctx.profile, len(records))
            if not big:
                fill_index(ctx.index, *got[: len(load)], vectors=vectors, active=as_of is None)
    except Exception as e:
        if not ops:
            raise
        logger.warning("vector search failed (%s); keyword and key channels only", e)
        if not big:
            yield from plan_load(ctx.store, ctx.index, active=as_of is None)
    hits: dict[str, list[tuple[str, float]]] = {}
    if big:  # a large profile: the store ranks, its candidates are read
        hits = yield from plan_store_candidates(ctx, req.query, req.limit, vector_texts,
                                                depth)
    # one admissibility mask serves every local channel
    accept = ctx.index.admissible(t=t, as_of=as_of is not None, scopes=scopes,
                                  kinds=scope.kinds, writer=req.writer,
                                  min_confidence=cfg.min_confidence)
    for label, found in hits.items():
        channels[label] = [(k, sc) for k, sc in found if accept(k)][:depth]
    messages: dict[str, tuple[float, dict[str, Any]]] = {}
    for label, text in vector_texts:
        if big:
            pass  # ranked by the store above
        elif ctx.nearest:
            try:
                channels[label] = yield from plan_nearest(ctx, text, depth, accept)
            except Exception as e:
                logger.warning("vector search failed (%s); channel %s skipped", e, label)
        else:
            found = [r for r, lab in zip(results, labels, strict=False) if lab == label]
            if found:
                channels[label] = vector_hits(ctx, found, scope, depth)
    for r, lab in zip(results, labels, strict=False):
        if lab == "messages":
            for item in r:
                if (item.score is not None and item.score >= cfg.vector_min_score
                        and item.value.get("profile") == ctx.profile):
                    messages["msg:" + "/".join(item.namespace[len(ctx.layout.messages):])
                             + "/" + item.key] = (float(item.score), item.value)
            channels["messages"] = [(mid, s) for mid, (s, _) in messages.items()]

    if cfg.keyword_source == "local" and not big:
        channels["keyword"] = keyword_channel(ctx.index, req.query, depth, accept)
    channels["key"] = key_channel(ctx.index, req.query, depth, accept)
    window = find_window(req.query, reference)
    if window is not None:
        channels["temporal"] = temporal_channel(ctx.index, window, depth, accept)

    fused = _fuse(channels, cfg.weights, cfg.rrf_k)
    if not fused:
        return RecallResult(count=0, answer="", candidates=[])
    if req.scorer == "composite":
        cosines = yield from _plan_cosines(ctx, req.query, fused)
    else:
        cosines = {}
    scored = sorted((_score(ctx, req, doc_id, fused_score, messages, cosines, t)
                     for doc_id, (fused_score, _) in fused.items()),
                    key=lambda x: (not x.in_contact, -x.score,
                                   -confidence(ctx.index, x.doc_id), x.doc_id))[: req.limit]
    matched = [_candidate(ctx, req, x, fused[x.doc_id][1], messages) for x in scored]
    fill = cfg.relevance_fill if req.fill is None else req.fill
    filled: list[Candidate] = []
    if fill and len(matched) < req.limit:
        ranked = ctx.index.rank_fill(accept, t=t, exclude=[c.id for c in matched],
                                     limit=req.limit - len(matched))
        filled = [_fill_candidate(ctx, mid, rel) for mid, rel in ranked]
        filled.sort(key=lambda c: (c.breakdown.scope != "contact",
                                   -(c.breakdown.relevance or 0.0), c.id))
    candidates = matched + filled
    answer = yield from _plan_answer(ctx, req, candidates, reference)
    if as_of is None and cfg.bump_access:
        bumped = [(c, c.memory) for c in matched
                  if c.memory is not None and c.source_type == "memory"]
        counted = yield from plan_count_access(ctx, [m for _, m in bumped], now_dt)
        for (c, _), record in zip(bumped, counted, strict=True):
            c.memory = record
    return RecallResult(count=len(candidates), answer=answer, candidates=candidates)


def _fuse(channels: dict[str, list[tuple[str, float]]], weights: dict[str, float], rrf_k: int
          ) -> dict[str, tuple[float, dict[str, ChannelScore]]]:
    """Weighted RRF of the channels (:func:`langmem_edge.retrieval.fusion.rrf_fuse`, the
    store's fusion too): ``{id: (fused score, detail of the channels that ranked it)}``."""
    hits = rrf_fuse({k: v for k, v in channels.items() if v}, weights=weights, rrf_k=rrf_k)
    return {h.id: (h.score, {name: ChannelScore(rank=c.rank, raw=float(c.score),
                                                contribution=c.contribution)
                             for name, c in h.channels.items()
                             if c.rank is not None and c.score is not None})
            for h in hits}


def _plan_cosines(ctx: ProfileContext, query: str, fused: dict[str, Any]
                  ) -> Plan[dict[str, float]]:
    """Cosines for the composite scorer: the vector channel's, else computed with
    ``AgentMemory(embeddings=...)`` when given, else 0."""
    out = {d: detail["vector"].raw for d, (_, detail) in fused.items() if "vector" in detail}
    missing = [d for d in fused if d not in out and not d.startswith("msg:")
               and not ctx.index.values.get(d, {}).get("encrypted")]
    if missing and ctx.embeddings is not None:
        texts = [query] + [ctx.index.values[d].get("text", "") for d in missing]
        try:
            vectors = yield Call(ctx.embeddings.embed_documents, ctx.embeddings.aembed_documents,
                                 (texts,))
        except Exception as e:
            logger.warning("embedding for the composite scorer failed (%s)", e)
            return out
        distances = cosine_distances(vectors[1:], vectors[0])
        out.update({d: 1.0 - dist for d, dist in zip(missing, distances, strict=True)})
    return out


@dataclass(frozen=True)
class _Scored:
    doc_id: str
    score: float
    fused: float
    factor: float
    parts: dict[str, float]
    in_contact: bool


def _score(ctx: ProfileContext, req: RecallRequest, doc_id: str, fused: float,
           messages: dict[str, tuple[float, dict[str, Any]]], cosines: dict[str, float],
           t: float) -> _Scored:
    """A fused hit's final score, from the stored value (no record is built here)."""
    cfg = ctx.config
    composite_scorer = req.scorer == "composite"
    parts: dict[str, float] = {}
    if doc_id.startswith("msg:"):
        value = messages[doc_id][1]
        if composite_scorer:
            parts = {"cosine": messages[doc_id][0], "recency": 0.0,
                     "confidence": cfg.confidence_by_source["turn"], "tags": 0.0,
                     "source": cfg.composite.source_priority.get("turn", 0.0)}
        factor = 1.0
        in_contact = req.contact is not None and value.get("contact") == req.contact
    else:
        v = ctx.index.values[doc_id]
        if composite_scorer:
            touched = iso_to_epoch(v.get("last_accessed_at"),
                                   iso_to_epoch(v.get("created_at"), t))
            parts = {"cosine": cosines.get(doc_id, 0.0),
                     "recency": recency(t - touched, cfg.recall.recency_half_life_days),
                     "confidence": float(v.get("confidence", 0.0)),
                     "tags": tag_overlap(v.get("tags") or (), req.tags),
                     "source": cfg.composite.source_priority.get(v.get("source", ""), 0.0)}
        ended = v.get("kind") == "task" and (
            bool(v.get("session_ended_at"))
            or (req.session_id is not None and v.get("session_id") != req.session_id))
        factor = cfg.recall.ended_task_factor if ended else 1.0
        if not composite_scorer:
            factor *= _confidence_factor(cfg, float(v.get("confidence", 0.0)))
        in_contact = v.get("contact") is not None
    if composite_scorer:
        base, weighted = composite(parts, cfg.composite.weights)
    else:
        base, weighted = fused, {}
    return _Scored(doc_id, base * factor, fused, factor, weighted, in_contact)


def _confidence_factor(cfg: MemoryConfig, confidence: float) -> float:
    """``1 + confidence_weight * (confidence - turn confidence)``: a learning (0.85) outranks
    a per-turn fact (0.5) a few ranks above it (``RecallConfig.confidence_weight``)."""
    return 1.0 + cfg.recall.confidence_weight * (confidence - cfg.confidence_by_source["turn"])


def _candidate(ctx: ProfileContext, req: RecallRequest, x: _Scored, detail: dict[str, Any],
               messages: dict[str, tuple[float, dict[str, Any]]]) -> Candidate:
    breakdown = ScoreBreakdown(scorer=req.scorer, channels=detail,  # type: ignore[arg-type]
                               fused=x.fused, composite=x.parts, factor=x.factor,
                               scope="contact" if x.in_contact else "agent")
    if x.doc_id.startswith("msg:"):
        value = messages[x.doc_id][1]
        return Candidate(id=x.doc_id.removeprefix("msg:"),
                         text=str(value.get("content") or value.get("text") or ""),
                         source_type="message", message=value, score=x.score,
                         breakdown=breakdown)
    record = ctx.record(ctx.index.values[x.doc_id])
    return Candidate(id=x.doc_id, text=record.text, memory=record, score=x.score,
                     breakdown=breakdown)


def _fill_candidate(ctx: ProfileContext, mid: str, score: float) -> Candidate:
    record = ctx.record(ctx.index.values[mid])
    breakdown = ScoreBreakdown(scorer="fill", relevance=score,
                               scope="contact" if record.contact is not None else "agent")
    # score 0: a fill candidate matched nothing, so it has no place on the matched scale
    return Candidate(id=mid, text=record.text, memory=record, score=0.0, matched=False,
                     breakdown=breakdown)


def _plan_answer(ctx: ProfileContext, req: RecallRequest, candidates: list[Candidate],
                 reference: datetime) -> Plan[str]:
    matched = [c.text for c in candidates if c.matched]
    if not matched:
        return ""
    if ctx.model is not None and req.use_model is not False:
        try:  # from matched candidates only: the fill's are there because nothing else was
            (reply,) = yield invoke(ctx.model, answer_messages(
                req.query, matched, reference), "answer")
            return message_text(reply).strip()
        except Exception as e:
            logger.warning("answer generation failed (%s); using the top memories", e)
    return "\n".join(matched[: ctx.config.recall.answer_max_candidates])


def plan_count_access(ctx: ProfileContext, records: Sequence[MemoryRecord], now: datetime
                      ) -> Plan[list[MemoryRecord]]:
    """Count ``records`` as accessed at ``now``; returns them with the access counted.

    The bumps wait in the profile's access writer and are written to its count row
    (:func:`~langmem_edge.memory.semantic.write.plan_flush_access`) once the oldest is
    ``access_flush_seconds`` old or ``access_flush_max`` are pending: no record is read or
    written to count."""
    cfg = ctx.config.recall
    at = now.timestamp()
    writer = ctx.index.access_writer
    writer.bump([r.id for r in records], at, now.isoformat())
    if writer.pending_since is not None and (
        at - writer.pending_since >= cfg.access_flush_seconds
        or writer.pending_count() >= cfg.access_flush_max
    ):
        yield from plan_flush_access(ctx)
    return [r.model_copy(update={"access_count": r.access_count + 1, "last_accessed_at": now})
            for r in records]


def plan_lookup(ctx: ProfileContext, key: str | None, contact: str | None, limit: int | None
                ) -> Plan[list[MemoryRecord]]:
    """Memories found without ranking (``Profile.lookup``), each counted as an access.

    Admits what a recall would (active, unexpired, at or above the confidence floor, in
    ``contact``'s scope or agent-wide), looked up in the profile as read now. With
    ``key``: the memory under exactly that key, the contact's if there is one, else the
    agent-wide one (at most one: the newest). Without: every admissible memory, the
    contact's first, then agent-wide ones, newest first, at most ``limit`` (default
    ``limits.default_list_page``, at most ``limits.max_list_page``).
    """
    cfg = ctx.config
    if key is not None:
        check_text(key, "key", cfg.limits.max_key_chars)
    check_optional_name(contact, "contact", MAX_NAME_CHARS)
    most = 1 if key is not None else _check_limit(limit, cfg.limits.default_list_page,
                                                  cfg.limits.max_list_page)
    ctx = yield from plan_read(ctx)
    now = utcnow()
    index = ctx.index
    found: list[str] = []
    for scope in ((scope_of(contact), "agent") if contact is not None else ("agent",)):
        accept = index.admissible(t=now.timestamp(), as_of=False, scopes=(scope,), kinds=None,
                                  writer=None, min_confidence=cfg.recall.min_confidence)
        ids = index.key_ids(key, scope) if key is not None else index.sorted_ids()
        found += [mid for mid in reversed(ids) if accept(mid)][: most - len(found)]
        if len(found) >= most:
            break
    values = [index.values.get(mid) for mid in found]
    records = [ctx.record(v) for v in values if v is not None]
    if records and cfg.recall.bump_access:
        records = yield from plan_count_access(ctx, records, now)
    return records
