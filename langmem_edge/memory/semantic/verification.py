"""Write-time verification: does a new memory replace, or contradict, similar active ones?

Before a fact, event or instruction is written (tasks and encrypted memories skip this), up to
``max_candidates`` (3) active memories of the same scope with cosine >= ``min_cosine`` (0.6)
to the new text are judged:

* **With a decision model** (any ``BaseChatModel``): one structured-output call returns, per
  candidate, the probability that the new memory replaces it and whether they contradict.
  ``replace_probability >= 0.75`` supersedes the candidate; a contradiction that is not a
  replacement is logged and both are kept (the new record lists it in ``contradicts``).
  Models without native structured output (``bind_tools``) are asked for JSON and parsed.
  The call goes through the package's one model-call helper
  (:mod:`langmem_edge.memory.core.models`): transient errors (a 429, a timeout, an
  unparseable reply) are retried with backoff; if it still fails, the model-free rule
  decides, and a warning is logged.
* **Without a model** (the documented model-free rule):

  1. *Restatement*: a candidate of the same kind with cosine >= ``offline_replace_cosine``
     (0.9) is replaced (probability = the cosine).
  2. *Negation*: otherwise, if exactly one of the two texts is negated ("not", "never",
     "n't", ...) and their content words overlap (Jaccard) >= ``offline_contradiction_overlap``
     (0.5), it is logged as a contradiction; both are kept.
  3. Anything else is left alone: without a model, a changed value under no shared key
     ("lives in Berlin" after "lives in Singapore") is not detected. Give such memories a
     ``key`` and supersession by key handles it.

Either way, a candidate held under a key other than the new memory's is never replaced (its
key owns the slot: only a write under that key, ``update`` or ``supersede`` ends it); it is
still judged for contradiction.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langgraph.store.base import SearchOp
from pydantic import BaseModel, Field

from langmem_edge.memory.config import VerificationConfig
from langmem_edge.memory.core.models import structured_runnable
from langmem_edge.memory.core.plans import Plan, batch, invoke
from langmem_edge.memory.index.store_io import plan_query_vector
from langmem_edge.memory.records import LIVE, MemoryRecord
from langmem_edge.memory.semantic.channels import plan_widening_nearest
from langmem_edge.memory.semantic.context import ProfileContext
from langmem_edge.retrieval.text import default_analyzer

__all__ = [
    "plan_candidates",
    "Judgement",
    "Verdict",
    "VerdictItem",
    "judge_messages",
    "offline_verdicts",
    "plan_judge",
]

logger = logging.getLogger(__name__)


class VerdictItem(BaseModel):
    """The model's judgement of one existing memory."""

    index: int = Field(description="Number of the existing memory (1-based).")
    replace_probability: float = Field(
        ge=0.0, le=1.0,
        description="Probability that the NEW memory replaces (updates, corrects or restates) "
                    "the existing one, so the existing one is no longer current.",
    )
    contradicts: bool = Field(
        description="True if both cannot be true at the same time.",
    )
    reason: str = Field("", description="One short sentence.")


class Judgement(BaseModel):
    """The structured output of a verification call."""

    verdicts: list[VerdictItem] = Field(
        default_factory=list, description="One verdict per existing memory."
    )


@dataclass(frozen=True)
class Verdict:
    """The decision about one candidate."""

    memory_id: str
    cosine: float
    replace_probability: float
    replaces: bool
    contradicts: bool
    reason: str
    by: str
    """``model`` or ``rule``."""


@dataclass(frozen=True)
class VerifyCandidate:
    """An active memory similar to the new one."""

    memory_id: str
    text: str
    kind: str
    cosine: float
    key: str | None = None
    """The candidate's key: one held under a key other than the new memory's is never
    replaced (its key owns the slot), only judged for contradiction."""


_SYSTEM = (
    "You maintain an assistant's long-term memory. A NEW memory is about to be stored. For "
    "each EXISTING memory decide: does the NEW one replace it (an update, correction or "
    "restatement of the same fact, so the existing one is no longer current), and do the two "
    "contradict each other (both cannot be true at once)? Memories about different things "
    "neither replace nor contradict. Reply with JSON only, in this shape: "
    '{"verdicts": [{"index": 1, "replace_probability": 0.0, "contradicts": false, '
    '"reason": "..."}]}'
)


def judge_messages(new_text: str, existing: Sequence[str]) -> list[BaseMessage]:
    """The prompt of a verification call."""
    listing = "\n".join(f"{i}. {text}" for i, text in enumerate(existing, start=1))
    return [
        SystemMessage(content=_SYSTEM),
        HumanMessage(content=f"NEW memory:\n{new_text}\n\nEXISTING memories:\n{listing}"),
    ]


def _decide(cfg: VerificationConfig, cand: VerifyCandidate, item: VerdictItem | None
            ) -> Verdict:
    p = item.replace_probability if item else 0.0
    replaces = p >= cfg.replace_threshold
    return Verdict(cand.memory_id, cand.cosine, p, replaces,
                   bool(item and item.contradicts and not replaces),
                   item.reason if item else "", "model")


def plan_judge(
    model: BaseChatModel,
    cfg: VerificationConfig,
    new_text: str,
    candidates: Sequence[VerifyCandidate],
) -> Plan[list[Verdict]]:
    """Ask the model about every candidate in one call."""
    runnable = structured_runnable(model, Judgement)
    (out,) = yield invoke(runnable, judge_messages(new_text, [c.text for c in candidates]),
                          "verify", structured=True)
    judgement = out if isinstance(out, Judgement) else Judgement.model_validate(out)
    by_index = {v.index: v for v in judgement.verdicts}
    return [_decide(cfg, c, by_index.get(i)) for i, c in enumerate(candidates, start=1)]


_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nobody|nothing|neither|nor|cannot|without)\b|n't\b|n’t\b",
    re.IGNORECASE,
)


def _negated(text: str) -> bool:
    return _NEGATION.search(text) is not None


def _content_words(text: str) -> set[str]:
    plain = _NEGATION.sub(" ", text.replace("n't", " ").replace("n’t", " "))
    return set(default_analyzer().terms(plain))


def offline_verdicts(
    cfg: VerificationConfig, new_text: str, new_kind: str, candidates: Sequence[VerifyCandidate]
) -> list[Verdict]:
    """The model-free rule (see the module docstring)."""
    verdicts = []
    new_words = _content_words(new_text)
    for c in candidates:
        if c.kind == new_kind and c.cosine >= cfg.offline_replace_cosine:
            verdicts.append(Verdict(c.memory_id, c.cosine, c.cosine, True, False,
                                    "restatement (cosine)", "rule"))
            continue
        words = _content_words(c.text)
        union = new_words | words
        overlap = len(new_words & words) / len(union) if union else 0.0
        flips = _negated(new_text) != _negated(c.text)
        contradicts = flips and overlap >= cfg.offline_contradiction_overlap
        verdicts.append(Verdict(c.memory_id, c.cosine, 0.0, False, contradicts,
                                "negation of a similar memory" if contradicts else "", "rule"))
    return verdicts


def plan_verdicts(
    model: BaseChatModel | None,
    cfg: VerificationConfig,
    new_text: str,
    new_kind: str,
    candidates: Sequence[VerifyCandidate],
) -> Plan[list[Verdict]]:
    """Verdicts by the model when there is one (falling back to the rule on failure)."""
    if not candidates:
        return []
    if model is not None:
        try:
            return (yield from plan_judge(model, cfg, new_text, candidates))
        except Exception as e:
            logger.warning("verification model failed (%s); using the model-free rule", e)
    return offline_verdicts(cfg, new_text, new_kind, candidates)


MAX_NEAREST_ASK = 1_000
"""Most nearest records verification asks the store for (widening x4 from
``search_limit * 4 + 5``) while the close ones it found are inactive."""


def plan_candidates(ctx: ProfileContext, record: MemoryRecord, exclude: Iterable[str]
                     ) -> Plan[list[VerifyCandidate]]:
    """The stored memories a new one is judged against: active, same scope, not a task or
    encrypted, cosine >= ``min_cosine``, best first. On a :class:`NearestKeys` store with the
    profile read (whole, or the candidates it finds, read now), one key-only vector query
    admitted by the values; otherwise a filtered ``store.search``."""
    cfg = ctx.config.verification
    skip = set(exclude)

    def admits(v: dict[str, Any] | None) -> bool:
        return (v is not None and v.get("profile") == ctx.profile
                and v.get("status") == "active" and v.get("kind") != "task"
                and not v.get("encrypted") and v.get("scope") == record.scope)

    found: list[tuple[str, float, dict[str, Any]]] = []
    try:
        if ctx.index.vectors is not None and ctx.index.complete:  # read with the profile
            query = yield from plan_query_vector(ctx.store, record.text)
            values = ctx.index.values
            found = [(mid, score, values[mid]) for mid, score in ctx.index.nearest(
                query, lambda mid: mid not in skip and admits(values.get(mid)))]
        elif ctx.nearest:
            # the store's nearest, superseded ones too: widened while every close one read
            # is inactive (a fact restated many times leaves its old versions nearest)
            values = ctx.index.values
            hits = yield from plan_widening_nearest(
                ctx, record.text, cfg.search_limit * 4 + 5, floor=cfg.min_cosine,
                keep=lambda mid: admits(values.get(mid)), enough=cfg.max_candidates,
                most=MAX_NEAREST_ASK, skip=skip, read_missing=True)
            found = [(mid, score, values[mid]) for mid, score in hits]
        else:
            flt = {LIVE: ctx.profile, "scope": record.scope}
            (items,) = yield batch(ctx.store, [SearchOp(
                ctx.layout.memories, filter=flt, limit=cfg.search_limit, query=record.text)])
            found = [(it.key, float(it.score), it.value) for it in items
                     if it.score is not None and admits(it.value)]
    except Exception as e:
        logger.warning("verification search failed (%s); writing without verification", e)
        return []
    out = [VerifyCandidate(key, v.get("text", ""), v.get("kind", "fact"), score,
                           v.get("key") or None)
           for key, score, v in found if score >= cfg.min_cosine and key not in skip]
    out.sort(key=lambda c: -c.cosine)
    return out[: cfg.max_candidates]
