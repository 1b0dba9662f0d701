"""Memory extraction from conversations with a chat model, and the types it shares.

Two parts:

1. **Types** shared by the episodic tier: :class:`StoredMessage` (one raw message as stored),
   :class:`ExtractedMemory` (a checked candidate for the semantic tier to write) and
   :data:`FACT_TYPES` (each fact type's kind, as docs/architecture.md classifies them).
2. **Model extraction** (:func:`model_extraction_plan`, a plan of
   :mod:`langmem_edge.memory.core.plans`):

   - the messages are cut into chunks of about ``chunk_chars`` (10,000) characters, the next
     chunk repeating the last ``chunk_overlap_messages`` (2) messages of the previous one; a
     single longer message is a chunk of its own;
   - conversations of ``detail_min_messages`` (9) or more messages get a second, *detail* pass
     over overlapping windows of ``detail_window_messages`` (8) messages sharing
     ``detail_overlap_messages`` (2), asking only for concrete values: names, prices,
     versions, dates, quantities, identifiers;
   - each unit (chunk or window) is one structured-output call
     (:func:`~langmem_edge.memory.core.models.structured_runnable`: the model's native
     structured output, or for a model without it a JSON instruction and a parse); each
     candidate carries its ``fact_type`` and so its kind (fact, event, instruction, task);
   - each candidate must be grounded in its unit's messages
     (:func:`~.grounding.grounding_problem`, model-free: every name, number and quoted value
     it holds was said); one that is not is dropped;
   - each unit's remaining candidates are then checked against that unit's messages in one
     more structured call (``CandidateChecks``) on eight points: entity identity, object
     identity, location context, temporal accuracy, organisational context, completeness,
     relational context, and support in the messages. A candidate failing any point, or given
     no verdict, is dropped;
   - survivors over ``max_fact_chars`` (500) characters, or with a line of code, markup or
     log, are dropped (:func:`fact_shape_problem`): a fact is a sentence or two; code, logs
     and pastes stay messages;
   - survivors are de-duplicated by normalised text (their message ids merged).

   Every dropped candidate is logged with its reason (``INFO`` on this module's logger) and,
   given an :class:`ExtractionStats`, recorded there. Each call is retried on transient errors
   (an unparseable reply is one), up to ``max_attempts`` (3), by the plan driver
   (:mod:`langmem_edge.memory.core.plans`). Given a ``fallback`` (the tier passes the
   rule-based extractor), a unit whose extraction or check reply still cannot be parsed after
   the attempts is extracted by the fallback instead (logged once, counted in
   ``ExtractionStats.fallbacks``); any other failure raises
   :class:`~langmem_edge.errors.ExtractionError`.

The model-free path is :mod:`langmem_edge.memory.episodic.rules`.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, ConfigDict, Field, model_validator

from langmem_edge.errors import ExtractionError
from langmem_edge.memory.config import EpisodicConfig
from langmem_edge.memory.core.models import UNPARSED, ModelCall, structured_runnable
from langmem_edge.memory.core.plans import ModelStep, Plan
from langmem_edge.memory.episodic.grounding import grounding_problem
from langmem_edge.memory.records import KIND_OF_FACT_TYPE, FactType, Kind
from langmem_edge.retrieval.shape import is_code_line

__all__ = ["CHECK_POINTS", "FACT_TYPES", "CandidateCheck", "CandidateChecks",
           "ExtractedMemories", "ExtractedMemory", "ExtractionStats", "IngestOutcome",
           "MemoryCandidate",
           "StoredMessage",
           "chunk_messages", "dedupe_memories", "detail_windows", "fact_shape_problem",
           "failed_points", "kind_of",
           "model_extraction_plan", "page_of"]

logger = logging.getLogger(__name__)

# --------------------------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------------------------

Role = Literal["user", "assistant", "system", "tool"]
FACT_TYPES: dict[str, str] = KIND_OF_FACT_TYPE
"""Fact type -> kind, as docs/architecture.md's "kinds" row classifies them (from ``records``)."""


def kind_of(fact_type: str) -> str:
    """The kind (fact, event, instruction, task) of a fact type."""
    try:
        return FACT_TYPES[fact_type]
    except KeyError:
        allowed = ", ".join(FACT_TYPES)
        raise ExtractionError(f"unknown fact type {fact_type!r}; allowed: {allowed}") from None


class StoredMessage(BaseModel):
    """One raw conversation message as the episodic tier stores it (never rewritten).

    ``seq`` is the message's position in its session (0, 1, 2, ... in ingest order) and is what
    the tier orders by; ``ts`` is the message's own timestamp when the caller gave one, else the
    ingest time. ``score`` is set on results of ``recall_conversation`` only.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    session_id: str
    role: Role
    content: str
    seq: int
    ts: datetime
    contact: str | None = None
    name: str | None = None
    tool_call_id: str | None = None
    score: float | None = None

    def to_value(self, profile: str, page_size: int) -> dict[str, Any]:
        """The store value of this message (``text`` is the message as given; ``page`` is
        ``str(seq // page_size)``, the history page it is read with). The tier adds the
        embedded fields (:mod:`.embedded`)."""
        value: dict[str, Any] = {
            "kind": "message",
            "profile": profile,
            "session_id": self.session_id,
            "seq": self.seq,
            "page": page_of(self.seq, page_size),
            "role": self.role,
            "text": self.content,
            "ts": self.ts.isoformat(),
        }
        for field in ("contact", "name", "tool_call_id"):
            if getattr(self, field) is not None:
                value[field] = getattr(self, field)
        return value

    @classmethod
    def from_value(cls, key: str, value: dict[str, Any], *, score: float | None = None
                   ) -> StoredMessage:
        """Rebuild a message from its store key and value."""
        return cls(
            id=key,
            session_id=value["session_id"],
            role=value["role"],
            content=value["text"],
            seq=int(value["seq"]),
            ts=datetime.fromisoformat(value["ts"]),
            contact=value.get("contact"),
            name=value.get("name"),
            tool_call_id=value.get("tool_call_id"),
            score=score,
        )


def page_of(seq: int, page_size: int) -> str:
    """The history page of a message: ``str(seq // page_size)``.

    A string, so that reading a page is an equality filter, which every ``BaseStore`` can
    run natively (ChromaStore pushes string equality into Chroma; numeric ranges it filters in
    Python after reading the whole namespace).
    """
    return str(seq // page_size)


class ExtractedMemory(BaseModel):
    """A checked memory candidate; the Profile writes it through the semantic tier."""

    text: str
    kind: Kind
    fact_type: FactType
    key: str | None = None
    confidence: float
    source: str
    session_id: str | None = None
    source_message_ids: list[str] = Field(default_factory=list)
    valid_from: datetime | None = None
    tags: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _kind_matches(self) -> ExtractedMemory:
        if FACT_TYPES[self.fact_type] != self.kind:
            raise ValueError(
                f"fact type {self.fact_type!r} is of kind {FACT_TYPES[self.fact_type]!r}, "
                f"not {self.kind!r}"
            )
        return self


# --------------------------------------------------------------------------------------------
# Model extraction
# --------------------------------------------------------------------------------------------


class MemoryCandidate(BaseModel):
    """One memory the model proposes."""

    text: str = Field(description="One self-contained sentence, third person ('The user ...'), "
                      "names, numbers and dates resolved from the conversation.")
    fact_type: FactType = Field(description="What kind of memory this is.")
    key: str | None = Field(default=None, description="A dotted lowercase slot such as "
                            "'preference.ui_theme' or 'identity.name' when a later statement "
                            "could replace this memory; else null.")
    valid_from: str | None = Field(default=None, description="ISO 8601 date the fact starts "
                                   "to hold or the event happens, when the messages say.")
    tags: list[str] = Field(default_factory=list, description="A few lowercase topic tags.")
    message_numbers: list[int] = Field(default_factory=list,
                                       description="Numbers of the messages that state it.")


class ExtractedMemories(BaseModel):
    """The memories worth keeping from these messages (empty when there are none)."""

    memories: list[MemoryCandidate] = Field(default_factory=list)


CHECK_POINTS = (
    "entity_identity",
    "object_identity",
    "location_context",
    "temporal_accuracy",
    "organisational_context",
    "completeness",
    "relational_context",
    "supported",
)
"""The eight points a candidate must pass, in the order they are reported."""


class CandidateCheck(BaseModel):
    """The verdict on one candidate: each point true when right (or not applicable)."""

    number: int = Field(description="The candidate's number.")
    entity_identity: bool = Field(description="The subject is the right person or thing.")
    object_identity: bool = Field(description="The object, value or item is the right one.")
    location_context: bool = Field(description="Places are right and not mixed up.")
    temporal_accuracy: bool = Field(description="Dates, times and tense are right.")
    organisational_context: bool = Field(description="Companies, teams, projects are right.")
    completeness: bool = Field(description="No qualifier that changes the meaning is lost.")
    relational_context: bool = Field(description="Relations between entities are right.")
    supported: bool = Field(description="The messages actually state it.")
    reason: str = Field(default="", description="Why, for any point that is false.")


class CandidateChecks(BaseModel):
    """Verdicts on the numbered candidates, one per candidate."""

    checks: list[CandidateCheck] = Field(default_factory=list)


EXTRACT_PROMPT = """\
You extract durable memories from a conversation between a user and an assistant.
Write each memory as one self-contained sentence in the third person ("The user ..."), with
names, numbers and dates resolved from the conversation. Classify each with a fact_type:
preference, identity, relationship, decision, reflection (facts); event, workflow-outcome,
workflow-failure (events); instruction, skill (standing instructions to the assistant); task
(something to be done). Give a key (dotted, lowercase, e.g. preference.ui_theme, identity.name)
when the memory fills a slot a later statement could replace, else null. Cite the numbers of
the messages that state it. Set valid_from (ISO 8601 date) when the messages date it.
Extract only what the messages state: skip small talk, questions, hypotheticals and what the
assistant merely suggests. Messages marked (context) were processed before: use them to
understand the others, never as the only source. Return an empty list when nothing qualifies."""

DETAIL_PROMPT = EXTRACT_PROMPT + """
This is the detail pass: extract only concrete values — names of people, places, products and
organisations; prices and amounts; version numbers; dates and times; quantities and
identifiers — one memory per value, stated with what it belongs to."""

CHECK_PROMPT = """\
Check each numbered candidate memory against the source messages. For each, answer eight
points, each true when the candidate is right on it or it does not apply: entity_identity,
object_identity, location_context, temporal_accuracy, organisational_context, completeness,
relational_context, supported (the messages actually state it). Give a short reason for any
point that is false. Return one verdict per candidate number."""


@dataclass(frozen=True)
class Unit:
    """Messages handed to one extraction call: ``context`` first, then ``messages``."""

    messages: tuple[StoredMessage, ...]
    context: tuple[StoredMessage, ...] = ()
    detail: bool = False


def chunk_messages(
    messages: Sequence[StoredMessage], *, max_chars: int, overlap: int
) -> list[list[StoredMessage]]:
    """Cut messages into chunks of at most ``max_chars`` characters of content (a longer
    single message is a chunk of its own); each chunk after the first starts ``overlap``
    messages before the previous chunk's end."""
    chunks: list[list[StoredMessage]] = []
    start, n = 0, len(messages)
    while start < n:
        end, size = start, 0
        while end < n and (end == start or size + len(messages[end].content) <= max_chars):
            size += len(messages[end].content)
            end += 1
        chunks.append(list(messages[start:end]))
        if end >= n:
            break
        start = max(end - overlap, start + 1)
    return chunks


def detail_windows(
    messages: Sequence[StoredMessage], *, min_messages: int, size: int, overlap: int
) -> list[list[StoredMessage]]:
    """Overlapping windows for the detail pass; none below ``min_messages`` messages."""
    n = len(messages)
    if n < min_messages or size <= 0:
        return []
    step = max(1, size - overlap)
    windows: list[list[StoredMessage]] = []
    start = 0
    while True:
        windows.append(list(messages[start : start + size]))
        if start + size >= n:
            return windows
        start += step


def _render(unit: Unit) -> str:
    lines = []
    for i, msg in enumerate((*unit.context, *unit.messages), start=1):
        mark = " (context)" if i <= len(unit.context) else ""
        lines.append(f"[{i}]{mark} {msg.role} ({msg.ts.date().isoformat()}): {msg.content}")
    return "\n".join(lines)


def _extraction_input(unit: Unit) -> list[Any]:
    prompt = DETAIL_PROMPT if unit.detail else EXTRACT_PROMPT
    return [SystemMessage(content=prompt), HumanMessage(content="Messages:\n" + _render(unit))]


def _check_input(unit: Unit, candidates: Sequence[MemoryCandidate]) -> list[Any]:
    numbered = "\n".join(
        f"{i}. {json.dumps(c.text, ensure_ascii=False)} ({c.fact_type})"
        for i, c in enumerate(candidates, start=1)
    )
    body = f"Source messages:\n{_render(unit)}\n\nCandidates:\n{numbered}"
    return [SystemMessage(content=CHECK_PROMPT), HumanMessage(content=body)]


_KEY_JUNK = re.compile(r"[^a-z0-9_.]+")


def _normal_key(key: str | None) -> str | None:
    if not key:
        return None
    cleaned = _KEY_JUNK.sub("_", key.strip().lower()).strip("._")
    return cleaned or None


def _parse_date(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        logger.debug("ignoring unparseable valid_from %r", text)
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _cited_ids(unit: Unit, numbers: Sequence[int]) -> list[str] | None:
    """Message ids a candidate cites; None when it cites context messages only."""
    everything = (*unit.context, *unit.messages)
    cited = [everything[n - 1] for n in dict.fromkeys(numbers) if 1 <= n <= len(everything)]
    new = [m.id for m in cited if m in unit.messages]
    if cited and not new:
        return None
    return new or [m.id for m in unit.messages]


def failed_points(check: CandidateCheck) -> list[str]:
    """The names of the eight points a verdict fails."""
    return [point for point in CHECK_POINTS if not getattr(check, point)]


def _norm_text(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def fact_shape_problem(text: str, max_chars: int) -> str | None:
    """Why ``text`` cannot be a memory extraction writes, or ``None`` if it can: longer than
    ``max_chars`` (``EpisodicConfig.max_fact_chars``), or holding a line of code, markup or
    log (:func:`~langmem_edge.retrieval.shape.is_code_line`)."""
    if len(text) > max_chars:
        return f"{len(text):,} characters; a fact holds at most {max_chars:,}"
    if any(is_code_line(line) for line in text.splitlines()):
        return "a line of code, markup or log"
    return None


def dedupe_memories(memories: Sequence[ExtractedMemory]) -> list[ExtractedMemory]:
    """Drop repeats (same normalised text), merging their message ids and tags into the first."""
    kept: dict[str, ExtractedMemory] = {}
    for mem in memories:
        norm = _norm_text(mem.text)
        first = kept.get(norm)
        if first is None:
            kept[norm] = mem
            continue
        kept[norm] = first.model_copy(update={
            "source_message_ids": list(dict.fromkeys(
                [*first.source_message_ids, *mem.source_message_ids])),
            "tags": list(dict.fromkeys([*first.tags, *mem.tags])),
            "key": first.key or mem.key,
            "valid_from": first.valid_from or mem.valid_from,
        })
    return list(kept.values())


class ExtractionStats(BaseModel):
    """What model extraction set aside: filled in by :func:`model_extraction_plan`."""

    fallbacks: int = 0
    """Units (chunks or detail windows) whose reply could not be parsed after the attempts
    and were extracted by the fallback (the rules) instead."""
    dropped: dict[str, str] = Field(default_factory=dict)
    """Dropped candidates: text -> why (ungrounded, failed check, context only, shape)."""

    def drop(self, text: str, reason: str) -> None:
        """Log (``INFO``) and record a dropped candidate."""
        logger.info("dropped candidate %.120r: %s", text, reason)
        self.dropped[text] = reason


IMPERATIVE_FACT_TYPES = frozenset({"instruction", "skill", "task"})
"""Fact types often written as a command ("Always answer in German.", "Renew the passport."):
their first word is a verb, not a name, so the grounding check skips sentence starts."""


def _grounded(unit: Unit, cand: MemoryCandidate, stats: ExtractionStats) -> bool:
    sources = [f"{m.ts.date().isoformat()} {m.content}" for m in (*unit.context, *unit.messages)]
    problem = grounding_problem(
        cand.text, sources, sentence_starts=cand.fact_type not in IMPERATIVE_FACT_TYPES)
    if problem is not None:
        stats.drop(cand.text, f"not grounded: {problem}")
    return problem is None


def model_extraction_plan(
    messages: Sequence[StoredMessage],
    model: BaseChatModel,
    *,
    config: EpisodicConfig,
    source: str,
    confidence: float,
    session_id: str | None,
    context: Sequence[StoredMessage] = (),
    detail: bool = True,
    kinds: frozenset[str] | None = None,
    max_items: int | None = None,
    fallback: Callable[[Sequence[StoredMessage]], list[ExtractedMemory]] | None = None,
    stats: ExtractionStats | None = None,
) -> Plan[list[ExtractedMemory]]:
    """Plan: extract, ground, classify and check memories from ``messages`` with ``model``.

    ``context`` messages (earlier in the session, already processed) are shown with the first
    chunk but never the only source of a memory. ``kinds`` keeps only those kinds;
    ``max_items`` caps the result (in extraction order). ``fallback`` extracts the messages of
    a unit whose reply cannot be parsed (without it, such a unit raises
    :class:`~langmem_edge.errors.ExtractionError`); ``stats`` receives the drops and
    fallbacks.
    """
    stats = stats if stats is not None else ExtractionStats()
    if not messages:
        return []
    chunks = chunk_messages(messages, max_chars=config.chunk_chars,
                            overlap=config.chunk_overlap_messages)
    units = [Unit(tuple(c), tuple(context) if i == 0 else ()) for i, c in enumerate(chunks)]
    if detail:
        units += [Unit(tuple(w), detail=True) for w in detail_windows(
            messages, min_messages=config.detail_min_messages,
            size=config.detail_window_messages, overlap=config.detail_overlap_messages)]
    tolerant = fallback is not None
    extractor = structured_runnable(model, ExtractedMemories)
    outputs: list[Any] = yield ModelStep(tuple(
        ModelCall(extractor, _extraction_input(u), f"extract {'detail' if u.detail else 'chunk'}"
                  f" {i + 1}/{len(units)}", unparsed_ok=tolerant) for i, u in enumerate(units)))
    unparsed = [u for u, out in zip(units, outputs, strict=True) if out is UNPARSED]
    proposed = [(u, grounded) for u, out in zip(units, outputs, strict=True)
                if out is not UNPARSED
                and (grounded := [c for c in out.memories if _grounded(u, c, stats)])]
    checker = structured_runnable(model, CandidateChecks)
    verdicts: list[Any] = (yield ModelStep(tuple(
        ModelCall(checker, _check_input(u, cands), f"check unit {i + 1}/{len(proposed)}",
                  unparsed_ok=tolerant)
        for i, (u, cands) in enumerate(proposed)))) if proposed else []
    kept: list[ExtractedMemory] = []
    for (unit, cands), verdict in zip(proposed, verdicts, strict=True):
        if verdict is UNPARSED:
            unparsed.append(unit)
            continue
        by_number = {c.number: c for c in verdict.checks}
        for number, cand in enumerate(cands, start=1):
            check = by_number.get(number)
            if check is None:
                stats.drop(cand.text, "the check gave no verdict")
                continue
            failed = failed_points(check)
            if failed:
                stats.drop(cand.text, f"failed {', '.join(failed)} "
                           f"({check.reason or 'no reason given'})")
                continue
            ids = _cited_ids(unit, cand.message_numbers)
            if ids is None:
                stats.drop(cand.text, "cites context messages only")
                continue
            if kinds is not None and FACT_TYPES[cand.fact_type] not in kinds:
                continue
            problem = fact_shape_problem(cand.text.strip(), config.max_fact_chars)
            if problem is not None:
                stats.drop(cand.text, problem)
                continue
            tags = [t.strip().lower() for t in cand.tags if t.strip()]
            if unit.detail:
                tags.append("detail")
            kept.append(ExtractedMemory(
                text=cand.text.strip(), kind=kind_of(cand.fact_type),  # type: ignore[arg-type]
                fact_type=cand.fact_type, key=_normal_key(cand.key), confidence=confidence,
                source=source, session_id=session_id, source_message_ids=ids,
                valid_from=_parse_date(cand.valid_from), tags=list(dict.fromkeys(tags))))
    for unit in unparsed if fallback is not None else ():
        stats.fallbacks += 1
        logger.warning("the model's reply for %d message(s) (%s .. %s) could not be parsed "
                       "after its attempts: extracted by the rules instead", len(unit.messages),
                       unit.messages[0].id, unit.messages[-1].id)
        kept += [m for m in fallback(unit.messages) if kinds is None or m.kind in kinds]
    result = dedupe_memories(kept)
    return result[:max_items] if max_items is not None else result


class IngestOutcome(BaseModel):
    """What an ingest did: the messages it added and the memories extracted from them."""

    messages: list[StoredMessage] = Field(default_factory=list)
    memories: list[ExtractedMemory] = Field(default_factory=list)
    cut: list[str] = Field(default_factory=list)
    """Ids of the added messages that were over ``max_message_bytes`` and are stored cut to
    fit (marked ``" [...]"``)."""
    resumed: list[StoredMessage] = Field(default_factory=list)
    """Messages stored by an earlier ingest whose memories were never confirmed written,
    extracted again by this one."""
    fallbacks: int = 0
    """Extraction units whose model reply could not be parsed, extracted by the rules."""
    dropped: dict[str, str] = Field(default_factory=dict)
    """Model candidates dropped (not grounded in the messages, failed check, ...): text ->
    why."""
    extracted_to: int | None = None
    """With ``confirm_later``: the session's extraction mark to confirm
    (:meth:`EpisodicTier.confirm_extracted`) once the memories are written; ``None`` when
    there is nothing to confirm."""
