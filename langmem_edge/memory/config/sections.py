"""The semantic tier's sections of ``MemoryConfig`` (verification, recall, composite score,
the profile index, limits) and the numbers they default to, each a named constant with its
docstring. Re-exported by :mod:`langmem_edge.memory.config`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from langmem_edge._options import check_keys

__all__ = [
    "VerificationConfig",
    "RecallConfig",
    "CompositeConfig",
    "IndexCacheConfig",
    "LimitsConfig",
]

# --- confidence -----------------------------------------------------------------------------

CONFIDENCE_BY_SOURCE: dict[str, float] = {
    "explicit": 0.9,
    "reflection": 0.85,
    "consolidation": 0.8,
    "pre-compaction": 0.6,
    "turn": 0.5,
}
"""Default confidence of a memory by its source (docs/architecture.md): merged memories
(``consolidation``) default to 0.8, between reflection and pre-compaction."""

MIN_CONFIDENCE = 0.1
"""Confidence floor: memories below it are never recalled (and decay stops there)."""

# --- verification ---------------------------------------------------------------------------

VERIFY_MAX_CANDIDATES = 3
"""At most this many existing memories are judged against a new one."""

VERIFY_MIN_COSINE = 0.6
"""Only existing memories at least this similar (cosine) to the new one are judged."""

VERIFY_REPLACE_THRESHOLD = 0.75
"""A judged "replaces?" probability at or above this supersedes the old memory."""

VERIFY_SEARCH_LIMIT = 10
"""Nearest neighbours fetched before the cosine and kind filters pick the candidates."""

OFFLINE_REPLACE_COSINE = 0.9
"""Model-free rule: a new memory this similar (cosine) to an active one of the same kind and
scope restates it, so it supersedes it."""

OFFLINE_CONTRADICTION_OVERLAP = 0.5
"""Model-free rule: two memories whose content words overlap at least this much (Jaccard) and
of which exactly one is negated are logged as a contradiction."""

# --- recall ---------------------------------------------------------------------------------

RECALL_LIMIT = 20
"""Memories a recall returns at most (the relevance fill fills up to this budget)."""

RRF_K = 60
"""Reciprocal rank fusion constant: a hit at rank r adds ``weight / (RRF_K + r)``."""

CHANNEL_WEIGHTS: dict[str, float] = {
    "vector": 1.0,
    "keyword": 1.0,
    "key": 1.5,
    "hyde": 1.0,
    "messages": 1.0,
    "temporal": 1.0,
}
"""Fusion weight of each recall channel (docs/architecture.md: vector 1, keyword 1, exact
key 1.5)."""

CHANNEL_DEPTH: dict[str, int] = {"low": 20, "medium": 50, "high": 150}
"""Hits each channel contributes to the fusion, by ``thinking_level``."""

VECTOR_MIN_SCORE = 0.2
"""Vector (and HyDE / message) hits below this cosine are not matches: a nearest neighbour
that is not similar at all must not count as "something matched"."""

RECENCY_HALF_LIFE_DAYS = 30.0
"""Recency decay: ``0.5 ** (age_days / 30)``, age since last access (or creation)."""

FILL_RECENCY_WEIGHT = 0.7
"""Relevance fill: weight of the recency decay."""

FILL_ACCESS_WEIGHT = 0.3
"""Relevance fill: weight of ``log(access_count + 1)``."""

ENDED_TASK_FACTOR = 0.5
"""Score multiplier of a task memory whose session has ended."""

CONFIDENCE_WEIGHT = 0.25
"""How much confidence moves a fused score: it is multiplied by
``1 + CONFIDENCE_WEIGHT * (confidence - CONFIDENCE_BY_SOURCE["turn"])``. A reflection's
learning (0.85) gets x1.09, an explicit memory (0.9) x1.1, a pre-compaction fact (0.6) x1.025,
a per-turn fact (0.5) x1: at ``RRF_K`` 60 a learning outranks a per-turn fact up to about five
channel ranks below it, and relevance still decides between memories further apart."""

ANSWER_MAX_CANDIDATES = 5
"""Model-free answer: the text of at most this many top matched candidates."""

BM25_K1 = 1.2
"""BM25 term-frequency saturation."""

BM25_B = 0.75
"""BM25 document-length normalisation."""

ACCESS_FLUSH_SECONDS = 30.0
"""Access-count bumps are written to the store at most this long after the recall that made
them (sooner with the next write of the profile, or ``AgentMemory.flush()``)."""

ACCESS_FLUSH_MAX = 1000
"""Pending access bumps of a profile that force a write at the next recall."""

AT_DEPTH_FACTOR = 3
"""``at(ts)`` recalls search this many times deeper (superseded rows compete for the slots)."""

# --- composite scorer -----------------------------------------------------------------------

COMPOSITE_WEIGHTS: dict[str, float] = {
    "cosine": 0.5,
    "recency": 0.2,
    "confidence": 0.15,
    "tags": 0.1,
    "source": 0.05,
}
"""Weights of the composite scorer (docs/architecture.md)."""

SOURCE_PRIORITY: dict[str, float] = {
    "explicit": 1.0,
    "reflection": 0.85,
    "consolidation": 0.8,
    "pre-compaction": 0.6,
    "turn": 0.5,
}
"""Composite scorer: priority of each source (raw messages count as ``turn``)."""

PAGE_SIZE = 1000
"""Items read per store call when loading a profile or scanning."""



# --- token estimate (episodic tier) --------------------------------------------------------

CJK_THRESHOLD = 0.30
"""Share of CJK characters above which a text counts as CJK."""

CJK_CHARS_PER_TOKEN = 1.5
"""Characters per token for CJK text."""

JSON_THRESHOLD = 0.08
"""Share of JSON punctuation (``{}[]:"``) above which a text counts as structured."""

JSON_CHARS_PER_TOKEN = 3.0
"""Characters per token for JSON-like text."""

DEFAULT_CHARS_PER_TOKEN = 3.5
"""Characters per token for everything else."""

# --- limits ---------------------------------------------------------------------------------

MAX_TEXT_CHARS = 10_000
"""Longest memory text accepted."""

MAX_KEY_CHARS = 200
"""Longest memory key accepted."""

MAX_TAGS = 32
"""Most tags on one memory."""

MAX_TAG_CHARS = 100
"""Longest tag."""

MAX_PROFILE_CHARS = 100
"""Longest profile name (docs/architecture.md)."""

MAX_LIST_PAGE = 500
"""Largest ``list`` page (docs/architecture.md)."""

DEFAULT_LIST_PAGE = 50
"""``list`` page size when none is given."""

MAX_METADATA_BYTES = 16_384
"""Largest ``metadata`` dict, as JSON."""

SUMMARY_MAX_PER_KIND = 50
"""``summary()`` lists at most this many memories per kind."""

REEMBED_MAX_ATTEMPTS = 3
"""``reembed`` marks a memory ``failed`` after this many unsuccessful attempts."""

BULK_CHUNK = 1000
"""Memories ``remember_many`` writes per write of the change protocol (one embedding batch
and a constant number of store batches each)."""

MAX_BULK_ITEMS = 1_000_000
"""Memories one ``remember_many`` call accepts at most."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            check_keys(cls.__name__, data, cls.model_fields)
        return data


def _merge(defaults: dict[str, Any], value: Any) -> Any:
    """A partial dict override keeps the defaults it does not mention."""
    if isinstance(value, dict):
        return {**defaults, **value}
    return value


class VerificationConfig(_Section):
    """Write-time verification (judging a new memory against similar active ones)."""

    enabled: bool = True
    """The one switch: ``False`` skips verification (key supersession still applies)."""
    max_candidates: int = Field(default=VERIFY_MAX_CANDIDATES, ge=0)
    """Existing memories judged at most (3)."""
    min_cosine: float = Field(default=VERIFY_MIN_COSINE, ge=-1.0, le=1.0)
    """Similarity needed to be judged (0.6)."""
    replace_threshold: float = Field(default=VERIFY_REPLACE_THRESHOLD, ge=0.0, le=1.0)
    """"Replaces?" probability that supersedes (0.75)."""
    search_limit: int = Field(default=VERIFY_SEARCH_LIMIT, ge=1)
    """Neighbours fetched before filtering (10)."""
    offline_replace_cosine: float = Field(default=OFFLINE_REPLACE_COSINE, ge=-1.0, le=1.0)
    """Model-free rule: similarity at which a new memory restates an old one (0.9)."""
    offline_contradiction_overlap: float = Field(
        default=OFFLINE_CONTRADICTION_OVERLAP, ge=0.0, le=1.0
    )
    """Model-free rule: content-word overlap of a negation contradiction (0.5)."""


class RecallConfig(_Section):
    """Recall: channels, fusion, relevance fill."""

    limit: int = Field(default=RECALL_LIMIT, ge=1, le=MAX_LIST_PAGE)
    """Default and fill budget (20)."""
    rrf_k: int = Field(default=RRF_K, ge=0)
    """RRF constant (60)."""
    weights: dict[str, float] = Field(default_factory=lambda: dict(CHANNEL_WEIGHTS))
    """Channel weights (vector 1, keyword 1, key 1.5, hyde 1, messages 1, temporal 1)."""
    depth: dict[str, int] = Field(default_factory=lambda: dict(CHANNEL_DEPTH))
    """Hits per channel by thinking level (low 20, medium 50, high 150)."""
    min_confidence: float = Field(default=MIN_CONFIDENCE, ge=0.0, le=1.0)
    """Confidence floor (0.1)."""
    vector_min_score: float = Field(default=VECTOR_MIN_SCORE, ge=-1.0, le=1.0)
    """Cosine below which a vector hit is not a match (0.2)."""
    relevance_fill: bool = True
    """Fill the budget with recent / often used memories when something matched."""
    recency_half_life_days: float = Field(default=RECENCY_HALF_LIFE_DAYS, gt=0)
    """Recency half-life in days (30)."""
    fill_recency_weight: float = FILL_RECENCY_WEIGHT
    """Fill weight of recency (0.7)."""
    fill_access_weight: float = FILL_ACCESS_WEIGHT
    """Fill weight of ``log(access_count + 1)`` (0.3)."""
    ended_task_factor: float = Field(default=ENDED_TASK_FACTOR, ge=0.0, le=1.0)
    """Score multiplier of tasks whose session ended (0.5)."""
    confidence_weight: float = Field(default=CONFIDENCE_WEIGHT, ge=0.0, le=2.0)
    """Fused scores x ``1 + confidence_weight * (confidence - 0.5)`` (0.25; 0 turns it off:
    then confidence only breaks ties). The ``rrf`` scorer only; ``composite`` has its own
    confidence weight."""
    answer_max_candidates: int = Field(default=ANSWER_MAX_CANDIDATES, ge=1)
    """Model-free answer length in memories (5)."""
    bump_access: bool = True
    """Count each returned matched memory as accessed."""
    access_flush_seconds: float = Field(default=ACCESS_FLUSH_SECONDS, ge=0)
    """Write pending access bumps when the oldest is this old (30 s; 0: every recall
    writes). A recall that does not flush never writes, so it costs reads only."""
    access_flush_max: int = Field(default=ACCESS_FLUSH_MAX, ge=1)
    """Pending bumps that force a flush (1,000)."""
    keyword_source: Literal["local", "off"] = "local"
    """Keyword channel: ``local`` BM25 over the per-process profile index, or ``off``. The
    vector channel needs cosine scores from ``store.search(query=...)`` (InMemoryStore's, and
    ChromaStore's default ``ranking="vector"``); a store whose plain ``search`` is hybrid
    returns fused scores instead, which the cosine floors here would misread."""
    bm25_k1: float = Field(default=BM25_K1, gt=0)
    """BM25 k1 (1.2)."""
    bm25_b: float = Field(default=BM25_B, ge=0.0, le=1.0)
    """BM25 b (0.75)."""
    at_depth_factor: int = Field(default=AT_DEPTH_FACTOR, ge=1)
    """Deeper search for ``at(ts)`` (3)."""
    thinking_level: Literal["low", "medium", "high"] = "medium"
    """How deep recall searches: each channel's depth (``depth``), and with a model, medium
    and high add the HyDE and raw-message channels (``recall(use_model=...)`` overrides
    that)."""

    @field_validator("weights", mode="before")
    @classmethod
    def _merge_weights(cls, v: Any) -> Any:
        return _merge(CHANNEL_WEIGHTS, v)

    @field_validator("depth", mode="before")
    @classmethod
    def _merge_depth(cls, v: Any) -> Any:
        return _merge(CHANNEL_DEPTH, v)

    @model_validator(mode="after")
    def _check(self) -> RecallConfig:
        unknown = set(self.weights) - set(CHANNEL_WEIGHTS)
        if unknown:
            raise ValueError(f"unknown channel(s) in weights: {sorted(unknown)}; "
                             f"known: {sorted(CHANNEL_WEIGHTS)}")
        missing = {"low", "medium", "high"} - set(self.depth)
        if missing:
            raise ValueError(f"depth needs low, medium and high; missing {sorted(missing)}")
        return self


class CompositeConfig(_Section):
    """The composite scorer (``recall(..., scorer="composite")``)."""

    weights: dict[str, float] = Field(default_factory=lambda: dict(COMPOSITE_WEIGHTS))
    """cosine 0.5, recency 0.2, confidence 0.15, tags 0.1, source 0.05."""
    source_priority: dict[str, float] = Field(default_factory=lambda: dict(SOURCE_PRIORITY))
    """Priority of each source (explicit 1.0 ... turn 0.5)."""

    @field_validator("weights", mode="before")
    @classmethod
    def _merge_weights(cls, v: Any) -> Any:
        return _merge(COMPOSITE_WEIGHTS, v)

    @field_validator("source_priority", mode="before")
    @classmethod
    def _merge_priority(cls, v: Any) -> Any:
        return _merge(SOURCE_PRIORITY, v)


class IndexCacheConfig(_Section):
    """The page size of paged reads (deleting a profile by prefix on a store without
    ``delete_prefix``, a document's chunks). Nothing is kept or cached between
    operations."""

    page_size: int = Field(default=PAGE_SIZE, ge=1)
    """Items per paged store read (1,000)."""


class LimitsConfig(_Section):
    """Input limits (a call over one is a ``LimitExceededError``; nothing is written)."""

    max_text_chars: int = Field(default=MAX_TEXT_CHARS, ge=1)
    """Longest memory text or query (10,000 characters)."""
    max_key_chars: int = Field(default=MAX_KEY_CHARS, ge=1)
    """Longest key (200)."""
    max_tags: int = Field(default=MAX_TAGS, ge=0)
    """Most tags on a memory (32)."""
    max_tag_chars: int = Field(default=MAX_TAG_CHARS, ge=1)
    """Longest tag (100)."""
    max_metadata_bytes: int = Field(default=MAX_METADATA_BYTES, ge=2)
    """Largest metadata as JSON (16 KB)."""
    max_profile_chars: int = Field(default=MAX_PROFILE_CHARS, ge=1)
    """Longest profile name (100)."""
    max_list_page: int = Field(default=MAX_LIST_PAGE, ge=1)
    """Largest list page and recall limit (500)."""
    default_list_page: int = Field(default=DEFAULT_LIST_PAGE, ge=1)
    """List page size when none is given (50)."""
    summary_max_per_kind: int = Field(default=SUMMARY_MAX_PER_KIND, ge=1)
    """Memories per kind in ``summary()`` (50)."""
    reembed_max_attempts: int = Field(default=REEMBED_MAX_ATTEMPTS, ge=1)
    """Failed embeddings before ``failed`` (3)."""
    bulk_chunk: int = Field(default=BULK_CHUNK, ge=1)
    """Memories per store write of ``remember_many`` (1,000)."""
    max_bulk_items: int = Field(default=MAX_BULK_ITEMS, ge=1)
    """Memories one ``remember_many`` call accepts (1,000,000)."""


