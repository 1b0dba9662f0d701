"""The semantic tier's data model: memory records, kinds, recall results.

Kinds and fact types (docs/architecture.md)::

    kind          fact types                                              embedded?
    fact          preference, identity, relationship, decision, reflection  yes
    event         event, workflow-outcome, workflow-failure                  yes
    instruction   instruction, skill                                         yes
    task          task                                                       never (keyword only)

A fact type determines its kind; ``fact_type`` is optional for facts (an unqualified fact) and
defaults to the kind's namesake for the other kinds.

A record's lifecycle ``status`` is ``active``, ``superseded`` (a newer record replaced it:
``superseded_by`` points forward, the old row is kept) or ``forgotten`` (``forget``; kept, never
recalled). ``delete`` removes the row. The stored value also carries ``live``: the profile while
the record is active, ``None`` once not (:func:`live_of`), so "this profile's active records"
is one equality a store indexes (``status == "active"`` is shared by every profile's active
records: Chroma reads all of them to evaluate it).

``embedding_status`` is ``complete``, ``pending`` (the embedding failed; keyword search still
finds it; ``AgentMemory.reembed`` retries), ``failed`` (retries gave up) or ``skipped`` (tasks,
encrypted memories, stores without a vector index: never embedded).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "FACT_TYPES_BY_KIND",
    "KIND_OF_FACT_TYPE",
    "LIVE",
    "NOT_PROVIDED",
    "Candidate",
    "ChannelScore",
    "EmbeddingStatus",
    "FactType",
    "IngestResult",
    "Kind",
    "MemoryPage",
    "MemoryRecord",
    "MemoryStats",
    "ProfileStats",
    "RecallResult",
    "ScoreBreakdown",
    "SessionDeletion",
    "Source",
    "Status",
    "live_of",
    "new_memory_id",
    "scope_filter",
    "with_live",
]

Kind = Literal["fact", "event", "instruction", "task"]
"""What a memory is; decides embedding, supersession and verification."""

FactType = Literal[
    "preference",
    "identity",
    "relationship",
    "decision",
    "reflection",
    "event",
    "workflow-outcome",
    "workflow-failure",
    "instruction",
    "skill",
    "task",
]
"""The finer type of a memory, folded into its kind."""

Source = Literal["explicit", "turn", "pre-compaction", "reflection", "consolidation"]
"""Who produced a memory: an explicit ``remember``, per-turn extraction, the pre-compaction
flush, self-review, or consolidation. Sets the default confidence."""

Status = Literal["active", "superseded", "forgotten"]
"""Lifecycle of a record."""

EmbeddingStatus = Literal["complete", "pending", "failed", "skipped"]
"""Whether the record's text has a vector in the store."""

FACT_TYPES_BY_KIND: dict[str, tuple[str, ...]] = {
    "fact": ("preference", "identity", "relationship", "decision", "reflection"),
    "event": ("event", "workflow-outcome", "workflow-failure"),
    "instruction": ("instruction", "skill"),
    "task": ("task",),
}
"""The fact types of each kind (docs/architecture.md)."""

KIND_OF_FACT_TYPE: dict[str, str] = {
    ft: kind for kind, types in FACT_TYPES_BY_KIND.items() for ft in types
}
"""The kind a fact type folds into."""

KINDS: tuple[str, ...] = get_args(Kind)
SOURCES: tuple[str, ...] = get_args(Source)

SUPERSEDABLE_KINDS = frozenset({"fact", "instruction"})
"""Kinds whose key is unique among active memories: a new one supersedes the old."""


class _NotProvided:
    """Sentinel type: the argument was not given (``None`` means something else)."""

    _instance: _NotProvided | None = None

    def __new__(cls) -> _NotProvided:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NOT_PROVIDED"

    def __bool__(self) -> bool:
        return False


NOT_PROVIDED: Any = _NotProvided()
"""Passed for "not given" where ``None`` has a meaning (``contact=None`` is agent-wide)."""


_id_lock = threading.Lock()
_last_id = [0, 0]  # last millisecond, sequence within it


def new_memory_id() -> str:
    """A new memory id: 32 hex chars, time-ordered: a 48-bit millisecond clock, a 16-bit
    sequence (ids made in one process are strictly increasing), 64 random bits.

    Sorting ids sorts by creation time, which gives ``list`` stable cursors.
    """
    with _id_lock:
        ms = time.time_ns() // 1_000_000
        last_ms, seq = _last_id
        if ms <= last_ms:
            ms, seq = last_ms, seq + 1
            if seq > 0xFFFF:
                ms, seq = ms + 1, 0
        else:
            seq = 0
        _last_id[:] = [ms, seq]
    return f"{ms:012x}{seq:04x}{os.urandom(8).hex()}"


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


class MemoryRecord(BaseModel):
    """One semantic memory, as stored (``value`` of a store item) and as returned.

    Timestamps are timezone-aware UTC. ``text`` of an encrypted memory is the plaintext when
    read through a memory opened with the key; in the store it is empty and the ciphertext is
    in ``ciphertext``.
    """

    model_config = ConfigDict(extra="ignore")

    id: str
    """Memory id (also the store key)."""
    profile: str
    """The profile it belongs to (checked on every read)."""
    text: str
    """What is remembered."""
    key: str | None = None
    """Topic key (``preference.ui_theme``): a new fact/instruction under an active key
    supersedes it."""
    kind: Kind = "fact"
    """fact, event, instruction or task."""
    fact_type: FactType | None = None
    """The finer type (must belong to ``kind``)."""
    confidence: float = Field(default=0.9, ge=0.0, le=1.0)
    """How sure we are, 0-1; default by source."""
    source: Source = "explicit"
    """explicit, turn, pre-compaction, reflection or consolidation."""
    writer: str | None = None
    """The agent, skill or persona that wrote it (filterable)."""
    contact: str | None = None
    """Contact scope; ``None``: agent-wide."""
    session_id: str | None = None
    """The conversation it came from (tasks belong to their session)."""
    source_message_ids: list[str] = Field(default_factory=list)
    """Episodic messages it was extracted from (deleting the memory deletes those no other
    memory cites)."""
    tags: list[str] = Field(default_factory=list)
    """Free labels (matched by the composite scorer)."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Anything JSON-serialisable."""
    created_at: datetime
    """When it was written."""
    updated_at: datetime
    """Last change of this row (status, access count ...)."""
    valid_from: datetime
    """When it became true / happened (default: ``created_at``)."""
    valid_until: datetime | None = None
    """When it stops being true; expired memories are not recalled."""
    status: Status = "active"
    """active, superseded or forgotten."""
    supersedes: list[str] = Field(default_factory=list)
    """Ids this record replaced (backward pointers)."""
    superseded_by: str | None = None
    """The record that replaced this one (forward pointer)."""
    superseded_at: datetime | None = None
    """When it was replaced."""
    forgotten_at: datetime | None = None
    """When ``forget`` was called."""
    forgotten_reason: str | None = None
    """The reason given to ``forget``."""
    contradicts: list[str] = Field(default_factory=list)
    """Active memories verification judged contradictory but not replaced (both kept)."""
    access_count: int = Field(default=0, ge=0)
    """Times returned by a recall as a match."""
    last_accessed_at: datetime | None = None
    """Last time returned by a recall as a match."""
    embedding_status: EmbeddingStatus = "complete"
    """complete, pending, failed or skipped."""
    embedding_attempts: int = 0
    """Failed embedding attempts (``reembed`` gives up after the configured number)."""
    session_ended_at: datetime | None = None
    """For tasks: when their session ended (they rank lower from then on)."""
    encrypted: bool = False
    """Stored encrypted (AES-256-GCM): never embedded nor keyword-indexed."""
    ciphertext: str | None = None
    """The sealed text of an encrypted memory (store form only)."""
    key_id: str | None = None
    """Fingerprint of the key that sealed it."""

    @property
    def scope(self) -> str:
        """``"agent"`` or ``"contact:<name>"``: the scope string stored for filtering."""
        return scope_of(self.contact)

    def is_active(self) -> bool:
        """Whether it is the current version (not superseded, not forgotten)."""
        return self.status == "active"

    def to_value(self) -> dict[str, Any]:
        """The store value: JSON-friendly, with ``scope`` and ``live`` for equality
        filters. The numeric fields no read filters on are left out at their defaults
        (:data:`UNSTORED_DEFAULTS`)."""
        value = self.model_dump(mode="json")
        for name, default in UNSTORED_DEFAULTS.items():
            if value.get(name) == default:
                del value[name]
        value["scope"] = self.scope
        value[LIVE] = live_of(self.profile, self.status)
        return value

    @classmethod
    def from_value(cls, value: dict[str, Any]) -> MemoryRecord:
        """A record from a store value."""
        return cls.model_validate(value)


UNSTORED_DEFAULTS: dict[str, Any] = {"access_count": 0, "embedding_attempts": 0,
                                     "encrypted": False}
"""Fields a stored record leaves out while they hold these defaults (``from_value`` gives
them back). ``ChromaStore`` mirrors every numeric or bool leaf of a value as a scalar
metadata field for filters, and Chroma reads every scalar field of each row whose document
it returns (a few microseconds a field and row, ``benchmarks/row_fields.py``): no read of
memory filters on these, so a record's row has 10 scalar fields instead of 13
(``docs/benchmarks.md``)."""


LIVE = "live"
"""The stored field that names the profile of an active record (``None`` otherwise)."""


def live_of(profile: str, status: str | None) -> str | None:
    """A stored record's ``live`` field: its profile while ``status`` is active."""
    return profile if status == "active" else None


def with_live(value: dict[str, Any]) -> dict[str, Any]:
    """A stored record's value with its ``live`` field set from its status (records written
    before the field, or imported from an export of them)."""
    return {**value, LIVE: live_of(str(value.get("profile")), value.get("status"))}


def scope_filter(scope: str) -> dict[str, str]:
    """The store filter on a stored ``scope``: none for the agent-wide one, which most records
    share. A store like Chroma evaluates each equality of a filter by the rows that hold it,
    so one every profile's records share (``scope == "agent"``, ``status == "active"``) costs
    a read of all of them (``benchmarks/filter_selectivity.py``); callers check the scope of
    what comes back."""
    return {} if scope == "agent" else {"scope": scope}


def scope_of(contact: str | None) -> str:
    """The stored scope string of a contact (``None``: agent-wide)."""
    return "agent" if contact is None else f"contact:{contact}"


class ChannelScore(BaseModel):
    """One channel's part in a candidate's fused score."""

    rank: int
    """1-based rank in the channel."""
    raw: float
    """The channel's own score (cosine, BM25, ...)."""
    contribution: float
    """What it added to the fused score (``weight / (k + rank)``)."""


class ScoreBreakdown(BaseModel):
    """How a candidate's score was made."""

    scorer: Literal["rrf", "composite", "fill"]
    """``rrf`` (fused channels), ``composite`` or ``fill`` (relevance fill)."""
    channels: dict[str, ChannelScore] = Field(default_factory=dict)
    """Per-channel detail (empty for fill candidates)."""
    fused: float = 0.0
    """Sum of channel contributions."""
    composite: dict[str, float] = Field(default_factory=dict)
    """Composite scorer: each component's weighted value (cosine, recency, ...)."""
    relevance: float | None = None
    """Relevance fill score ``0.7 * recency + 0.3 * log(access_count + 1)``."""
    factor: float = 1.0
    """Multiplier applied: confidence (``recall.confidence_weight``) and ended-session tasks
    (``recall.ended_task_factor``)."""
    scope: Literal["contact", "agent"] = "agent"
    """Contact-scoped candidates rank before agent-wide ones."""


class Candidate(BaseModel):
    """One recalled item: a memory, or a raw message from the episodic tier."""

    id: str
    """Memory id, or message key."""
    text: str
    """The text (decrypted for encrypted memories)."""
    source_type: Literal["memory", "message"] = "memory"
    """What it is."""
    memory: MemoryRecord | None = None
    """The memory record (``source_type == "memory"``)."""
    message: dict[str, Any] | None = None
    """The stored message value (``source_type == "message"``)."""
    score: float
    """Final score (higher is better) of a matched candidate; ``0.0`` for a fill candidate,
    which matched nothing (its recency-and-use score is ``breakdown.relevance``, on another
    scale: never compare the two)."""
    matched: bool = True
    """Found by a search channel (``False``: added by the relevance fill, not a match)."""
    breakdown: ScoreBreakdown
    """How ``score`` was made."""


class RecallResult(BaseModel):
    """What ``recall`` returns: ``answer`` is empty when nothing matched, never invented.

    ``candidates`` are the matched memories, best first, then (with the relevance fill on)
    other memories that matched nothing, added by recency and use up to the limit: those
    have ``matched=False`` and ``score=0.0`` (their fill score is ``breakdown.relevance``).
    ``answer`` is made from matched candidates only.
    """

    count: int
    """Number of candidates (fill candidates included)."""
    answer: str
    """The model's answer from the matched candidates alone, or the top matched texts without
    a model; empty when nothing matched."""
    candidates: list[Candidate] = Field(default_factory=list)
    """Matched, best first (contact-scoped before agent-wide), then fill candidates."""


class MemoryPage(BaseModel):
    """One page of ``list``."""

    memories: list[MemoryRecord]
    """The page, oldest first (or newest first when asked)."""
    next_cursor: str | None = None
    """Pass to the next call; ``None`` on the last page."""

    def __iter__(self) -> Iterator[MemoryRecord]:  # type: ignore[override]
        """The page's records (``for m in profile.list()``), not pydantic's field pairs."""
        return iter(self.memories)

    def __len__(self) -> int:
        return len(self.memories)

    def __getitem__(self, index: int) -> MemoryRecord:
        return self.memories[index]


class ProfileStats(BaseModel):
    """Counts for one profile."""

    total: int = 0
    by_kind: dict[str, int] = Field(default_factory=dict)
    by_status: dict[str, int] = Field(default_factory=dict)
    by_embedding_status: dict[str, int] = Field(default_factory=dict)


class MemoryStats(BaseModel):
    """``AgentMemory.stats()``: memory counts by kind, status and profile."""

    total: int = 0
    by_kind: dict[str, int] = Field(default_factory=dict)
    by_status: dict[str, int] = Field(default_factory=dict)
    by_embedding_status: dict[str, int] = Field(default_factory=dict)
    profiles: dict[str, ProfileStats] = Field(default_factory=dict)


class SessionDeletion(BaseModel):
    """``Profile.delete_session``: what was removed."""

    messages_deleted: int = 0
    """Raw messages of the session removed by the episodic tier."""
    memories_deleted: int = 0
    """Memories written in that session removed."""


class IngestResult(BaseModel):
    """``Profile.ingest``: what was added."""

    messages_added: int
    """New messages stored (re-ingested ones are not counted)."""
    messages_cut: list[str] = Field(default_factory=list)
    """Ids of the new messages that were over ``max_message_bytes`` (32 KB) and are stored
    cut to fit, ending with ``" [...]"`` (``ingest(strict=True)`` refuses them instead)."""
    memories_written: list[MemoryRecord] = Field(default_factory=list)
    """Memories extracted from the new messages and written."""
    extraction_fallbacks: int = 0
    """Extraction units (chunks of the conversation) whose model reply could not be parsed
    after the retries and were extracted by the model-free rules instead."""
    candidates_dropped: dict[str, str] = Field(default_factory=dict)
    """Candidates the model proposed that were not written: text -> why (for example
    ``"not grounded: number '25' is not in the messages"``, or a failed check)."""


class SessionInfo(BaseModel):
    """One episodic session of a profile (its session record)."""

    session_id: str
    """The session id."""
    messages: int = 0
    """Messages stored."""
    first_at: datetime | None = None
    """Timestamp of its first message."""
    last_at: datetime | None = None
    """Timestamp of its last message."""
    contact: str | None = None
    """The contact it was ingested for, if any."""
    pending: int = 0
    """Messages stored whose memories are not known to be written yet (from the session's
    extraction mark on): what the session still owes memory, after a job that stored the
    messages and then failed. The next ingest of the session (any process), or
    ``Profile.ingest([], session_id=...)`` (``langmem-edge flush``), writes them."""
