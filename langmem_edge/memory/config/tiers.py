"""The episodic (L2), working (L1) and reflective (L4) tiers' configs, and the reflection
and consolidation jobs'. Re-exported by :mod:`langmem_edge.memory.config`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError, model_validator

from langmem_edge.errors import ConfigurationError
from langmem_edge.memory.config.sections import (
    CJK_CHARS_PER_TOKEN,
    CJK_THRESHOLD,
    DEFAULT_CHARS_PER_TOKEN,
    JSON_CHARS_PER_TOKEN,
    JSON_THRESHOLD,
    MIN_CONFIDENCE,
    _Section,
)

__all__ = [
    "DEFAULT_MAX_FACT_CHARS",
    "EpisodicConfig",
    "WorkingConfig",
    "ReflectionConfig",
    "ConsolidationConfig",
]

DEFAULT_MAX_FACT_CHARS = 500
"""Longest memory extraction writes, in characters (:attr:`EpisodicConfig.max_fact_chars`)."""


class EpisodicConfig(_Section):
    """Every number of the episodic tier, with its default (docs/architecture.md's where it
    has one)."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    # ingest
    max_messages_per_call: int = Field(500, ge=1)
    """Messages accepted by one ingest call."""
    max_message_bytes: int = Field(32 * 1024, ge=1)
    """Largest message content, in UTF-8 bytes (32 KB)."""
    extraction_context_messages: int = Field(2, ge=0)
    """Earlier messages of the session shown to extraction as context."""
    # extraction
    chunk_chars: int = Field(10_000, ge=1)
    """Characters of message content per extraction chunk."""
    chunk_overlap_messages: int = Field(2, ge=0)
    """Messages a chunk repeats from the previous one."""
    max_concurrency: int = Field(4, ge=1)
    """Model calls (chunks, windows, checks) run at once."""
    detail_min_messages: int = Field(9, ge=1)
    """Conversations with at least this many messages get the detail pass."""
    detail_window_messages: int = Field(8, ge=1)
    """Messages per detail-pass window."""
    detail_overlap_messages: int = Field(2, ge=0)
    """Messages consecutive detail windows share."""
    extraction_source: str = "turn"
    """Source of memories extracted on ingest."""
    extraction_confidence: float = Field(0.5, ge=0.0, le=1.0)
    """Confidence of memories extracted on ingest (docs/architecture.md: per-turn 0.5)."""
    max_fact_chars: int = Field(DEFAULT_MAX_FACT_CHARS, ge=1)
    """Longest memory extraction writes (500 characters: a fact is a sentence or two).
    Rule-based, model and pre-compaction extraction drop a longer candidate, and one with a
    line of code, markup or log (:func:`~langmem_edge.retrieval.shape.is_code_line`): code,
    logs and pastes stay messages."""
    max_attempts: int = Field(3, ge=1)
    """Attempts per model call on transient errors (tenacity)."""
    retry_wait_initial: float = Field(0.5, ge=0.0)
    """Backoff multiplier in seconds (exponential: 0.5, 1, 2, ...)."""
    retry_wait_max: float = Field(8.0, ge=0.0)
    """Longest wait between attempts, in seconds."""
    # token estimate
    cjk_threshold: float = Field(CJK_THRESHOLD, ge=0.0, le=1.0)
    """Share of CJK characters above which text counts as CJK."""
    cjk_chars_per_token: float = Field(CJK_CHARS_PER_TOKEN, gt=0.0)
    """Characters per token of CJK text."""
    json_threshold: float = Field(JSON_THRESHOLD, ge=0.0, le=1.0)
    """Share of ``{}[]:"`` above which text counts as JSON-like."""
    json_chars_per_token: float = Field(JSON_CHARS_PER_TOKEN, gt=0.0)
    """Characters per token of JSON-like text."""
    default_chars_per_token: float = Field(DEFAULT_CHARS_PER_TOKEN, gt=0.0)
    """Characters per token of other text."""
    message_overhead_tokens: int = Field(4, ge=0)
    """Tokens counted per message in a window on top of its text (role, separators)."""
    # compaction
    head_messages: int = Field(2, ge=0)
    """First messages of a session kept as the window's head."""
    head_share: float = Field(0.10, ge=0.0, le=1.0)
    """Share of the window budget for the head."""
    overlay_share: float = Field(0.20, ge=0.0, le=1.0)
    """Share of the window budget for overlays."""
    tail_share: float = Field(0.70, ge=0.0, le=1.0)
    """Share of the window budget for the tail (it also gets the rounding remainder)."""
    min_range_messages: int = Field(3, ge=1)
    """Smallest uncovered range summarised into an overlay."""
    max_range_messages: int = Field(60, ge=1)
    """Largest range one overlay summarises."""
    page_size: int = Field(10, ge=1)
    """History rows per page, read newest first. Each message stores its page number, so a
    session keeps the page size it started with (it is in the session record)."""
    max_rows_scanned: int = Field(200, ge=1)
    """History rows a window reads at most."""
    overlay_page_size: int = Field(100, ge=1)
    """Overlays read per page."""
    max_overlays: int = Field(1000, ge=1)
    """Overlays of a session a window reads at most."""
    overlay_summary_max_tokens: int = Field(200, ge=1)
    """Longest overlay summary (also capped by the overlay budget of the window making it)."""
    flush_max_facts: int = Field(10, ge=0)
    """Memories the pre-compaction flush lifts from a range at most."""
    flush_confidence: float = Field(0.6, ge=0.0, le=1.0)
    """Confidence of pre-compaction memories."""
    flush_source: str = "pre-compaction"
    """Source of pre-compaction memories."""
    # recall
    recall_limit: int = Field(10, ge=1)
    """Messages ``recall_conversation`` returns by default."""
    keyword_scan_limit: int = Field(5000, ge=1)
    """Messages keyword recall scores at most."""
    scan_page_size: int = Field(500, ge=1)
    """Rows per page when scanning a namespace (keyword recall, deletion)."""
    bm25_k1: float = Field(1.2, ge=0.0)
    """BM25 term-frequency saturation."""
    bm25_b: float = Field(0.75, ge=0.0, le=1.0)
    """BM25 length normalisation."""
    recall_mode: Literal["hybrid", "semantic", "keyword"] = "hybrid"
    """``recall_conversation``'s default mode: ``"hybrid"`` fuses the store's vector ranking
    with BM25 over each message and its neighbours (``memory/episodic/recall.py``)."""
    recall_context_turns: int = Field(2, ge=0)
    """Hybrid recall on a store without a keyword channel (the messages in scope ranked in
    process): neighbouring messages each side (same session) scored with a message. On
    ``ChromaStore`` a message's row carries two each side (``memory/episodic/embedded.py``)."""
    recall_context_weight: float = Field(0.5, ge=0.0)
    """Hybrid recall: BM25F weight of the neighbours' words (a message's own words weigh 1)."""
    recall_name_weight: float = Field(1.0, ge=0.0)
    """Hybrid recall: BM25F weight of the speaker's ``name``."""
    recall_date_weight: float = Field(1.0, ge=0.0)
    """Hybrid recall: BM25F weight of the message's day (``"8 May 2023"``)."""
    recall_vector_weight: float = Field(0.5, ge=0.0)
    """Hybrid recall: RRF weight of the vector ranking (the keyword ranking weighs 1)."""
    recall_alone_vector_weight: float | None = Field(2.0, ge=0.0)
    """Hybrid recall: RRF weight of the vector rank of a message that stands alone (at least
    500 characters, :data:`~langmem_edge.memory.episodic.recall.ALONE_CHARS`) or is cut off
    from its neighbours by long ones (:func:`~langmem_edge.memory.episodic.recall.cut_off`).
    Such a message is embedded as it is and ranked by BM25 over its own words only, so its
    vector rank weighs twice its keyword rank, as a turn with its context weighs its keyword
    rank twice its vector rank; None weighs it ``recall_vector_weight`` like the others. No
    LoCoMo turn is such a message, so the cross-validated weights are untouched there.
    Chosen on BEAM's 500K tier (35 chats; 1.0, 1.5, 2.0 and 3.0 gave 0.369 / 0.485,
    0.393 / 0.494, 0.400 / 0.502 and 0.397 / 0.504 recall@5 / @10 against plain dense search's
    0.391 / 0.479) and checked on the 9 chats of its 1M tier at hand (0.263 / 0.369 against
    0.244 / 0.363); ``docs/retrieval.md``, issue 40."""
    recall_rrf_k: float = Field(5.0, ge=0.0)
    """Hybrid recall: RRF constant (small: each channel's first ranks dominate)."""
    recall_temporal_weight: float = Field(0.0, ge=0.0)
    """Hybrid recall: RRF weight of the temporal channel (messages on a day whose month and
    year the query names); 0 (the default: it gained nothing cross-validated) turns it off."""
    recall_second_round_weight: float = Field(0.25, ge=0.0)
    """Hybrid recall: RRF weight of the second keyword round (the query plus the text of the
    first round's best ``recall_second_round_seeds`` messages, fused in with the first
    round's channels); 0 turns it off. 0.25 was every fold's choice cross-validated on
    LoCoMo (+0.009 recall@5 and @10, ``docs/retrieval.md``)."""
    recall_second_round_seeds: int = Field(2, ge=1)
    """Hybrid recall: first-round messages whose text the second round's query appends."""
    recall_depth: int = Field(50, ge=1)
    """Hybrid recall: results each channel hands to fusion."""

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as e:
            raise ConfigurationError(f"invalid EpisodicConfig: {e}") from e

    @model_validator(mode="after")
    def _shares(self) -> EpisodicConfig:
        total = self.head_share + self.overlay_share + self.tail_share
        if abs(total - 1.0) > 1e-6:
            raise ValueError(
                f"head_share + overlay_share + tail_share must be 1.0, got {total:.3f}")
        if self.min_range_messages > self.max_range_messages:
            raise ValueError("min_range_messages must be <= max_range_messages")
        return self


class WorkingConfig(_Section):
    """Every number of the working tier (L1), with its default (DESIGN.md: turn
    checkpoints)."""

    preview_chars: int = Field(default=3_000, ge=1)
    """Longest result preview kept per tool call in a turn record (3,000 characters)."""
    max_turn_rows: int = Field(default=40, ge=1)
    """Tool calls a turn record keeps at most, the newest (40)."""
    resume_after_seconds: float = Field(default=45.0, gt=0.0)
    """A turn untouched this long is stale: resume it from its results (45 s)."""
    expire_after_seconds: float = Field(default=24 * 3600.0, gt=0.0)
    """Turn records expire this long after they were written (24 h)."""
    max_notes_chars: int = Field(default=10_000, ge=1)
    """Longest working notes of a thread (10,000 characters)."""
    max_task_steps: int = Field(default=50, ge=0)
    """Steps an ongoing task holds at most (50)."""
    max_args_bytes: int = Field(default=16_384, ge=2)
    """Largest arguments of a recorded tool call, as JSON (16 KB)."""
    max_name_chars: int = Field(default=200, ge=1)
    """Longest thread id, call id, tool name or resource id (200)."""


class ReflectionConfig(_Section):
    """Every number of the reflection job (L4 self-review), with its default."""

    max_messages: int = Field(default=200, ge=0)
    """Episodic messages of the window a reflection reviews at most, the newest (200)."""
    max_events: int = Field(default=200, ge=0)
    """Workflow-outcome and workflow-failure events of the window reviewed at most (200)."""
    repeated_failures: int = Field(default=2, ge=1)
    """Model-free rule: a workflow failing this many times becomes a learning (2)."""
    max_learnings: int = Field(default=10, ge=0)
    """Learnings one reflection writes at most (10)."""
    max_topic_chars: int = Field(default=60, ge=1)
    """Longest topic slug in a learning's key ``reflection:{date}:{topic}`` (60)."""
    max_goals: int = Field(default=500, ge=1)
    """Goals a profile keeps at most (500)."""
    max_goal_steps: int = Field(default=50, ge=0)
    """Steps a goal holds at most (50)."""
    max_goal_history: int = Field(default=200, ge=1)
    """History entries a goal keeps, the newest (200)."""
    lease_seconds: float = Field(default=600.0, gt=0.0)
    """A reflection holds the profile's reflection lease this long (10 min): one started
    meanwhile writes nothing."""


class ConsolidationConfig(_Section):
    """Every number of the consolidation pass (DESIGN.md: consolidation), with its default."""

    decay_after_days: float = Field(default=30.0, gt=0.0)
    """Memories not accessed for this long decay (30 days); again after as long again."""
    decay_factor: float = Field(default=0.8, gt=0.0, le=1.0)
    """Confidence multiplier of a decay (x0.8)."""
    decay_floor: float = Field(default=MIN_CONFIDENCE, ge=0.0, le=1.0)
    """Decay never takes confidence below this (0.1)."""
    sample_size: int = Field(default=30, ge=0)
    """Newest active memories a pass looks for near-duplicates of (30)."""
    cluster_cosine: float = Field(default=0.85, ge=-1.0, le=1.0)
    """Cosine at or above which two memories are near-duplicates (0.85)."""
    min_cluster_size: int = Field(default=2, ge=2)
    """Members a cluster needs to be merged (2)."""
    max_clusters: int = Field(default=5, ge=0)
    """Clusters merged in one pass at most (5)."""
    max_cluster_size: int = Field(default=50, ge=2)
    """Members one cluster gathers at most (50)."""
    neighbours: int = Field(default=20, ge=1)
    """Nearest neighbours fetched per member when gathering a cluster (20)."""
    lease_seconds: float = Field(default=600.0, gt=0.0)
    """A pass holds the profile's consolidation lease this long (10 min): a second pass
    started meanwhile merges nothing."""
