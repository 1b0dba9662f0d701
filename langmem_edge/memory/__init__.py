"""Agent memory over any langgraph ``BaseStore``: ``AgentMemory`` and its tiers.

``AgentMemory(store, model=None)`` gives profiles (``memory.profile("user:alice")``) with the
semantic tier (typed facts, verification, supersession chains, temporal recall, fused and
scoped recall, encryption at rest), the episodic tier (raw messages and compaction) and the
working tier (``profile.working``: notes, the ongoing task and turn records of each thread).
See ``docs/memory.md``, ``docs/episodic.md`` and ``docs/working.md``.

Everything a call hands back is importable from here: the records and results, the
configs (``MemoryConfig`` and its sections), the episodic tier's ``StoredMessage``,
``ContextWindow``, ``WindowMessage``, ``Overlay`` and ``ExtractedMemory``, and the working
tier's ``ProfileWorking``, ``TurnRecord``, ``TurnRow`` and ``OngoingTask``, the reflective
tier's ``ProfileReflective``, ``Goal``, ``Reflection`` and their parts, the reports of
``reflect`` and ``consolidate`` (``docs/reflective.md``), and the documents room's
``ProfileDocuments``, ``Document``, ``DocumentPassage`` and ``DocumentPage``
(``docs/documents.md``).
"""

from __future__ import annotations

from langmem_edge.memory.agent import AgentMemory
from langmem_edge.memory.config import (
    CompositeConfig,
    ConsolidationConfig,
    EpisodicConfig,
    IndexCacheConfig,
    LimitsConfig,
    MemoryConfig,
    RecallConfig,
    ReflectionConfig,
    VerificationConfig,
    WorkingConfig,
)
from langmem_edge.memory.consolidation import ConsolidationReport, Decay, Merge
from langmem_edge.memory.core.crypto import generate_encryption_key
from langmem_edge.memory.documents import (
    Document,
    DocumentPage,
    DocumentPassage,
    ProfileDocuments,
)
from langmem_edge.memory.episodic import (
    ContextWindow,
    ExtractedMemory,
    Overlay,
    ProfileEpisodic,
    StoredMessage,
)
from langmem_edge.memory.episodic.compaction import WindowMessage
from langmem_edge.memory.profile import Profile
from langmem_edge.memory.records import (
    NOT_PROVIDED,
    Candidate,
    ChannelScore,
    IngestResult,
    MemoryPage,
    MemoryRecord,
    MemoryStats,
    ProfileStats,
    RecallResult,
    ScoreBreakdown,
    SessionDeletion,
)
from langmem_edge.memory.reflection import ReflectionResult
from langmem_edge.memory.reflective import (
    Goal,
    GoalEvent,
    GoalStep,
    GoalUpdate,
    LearningRef,
    ProfileReflective,
    Reflection,
)
from langmem_edge.memory.view import ProfileView
from langmem_edge.memory.working import OngoingTask, ProfileWorking, TurnRecord, TurnRow

__all__ = [
    "NOT_PROVIDED",
    "AgentMemory",
    "Candidate",
    "ChannelScore",
    "CompositeConfig",
    "ConsolidationConfig",
    "ConsolidationReport",
    "ContextWindow",
    "Decay",
    "Document",
    "DocumentPage",
    "DocumentPassage",
    "EpisodicConfig",
    "ExtractedMemory",
    "generate_encryption_key",
    "Goal",
    "GoalEvent",
    "GoalStep",
    "GoalUpdate",
    "IndexCacheConfig",
    "IngestResult",
    "LearningRef",
    "LimitsConfig",
    "MemoryConfig",
    "MemoryPage",
    "MemoryRecord",
    "MemoryStats",
    "Merge",
    "OngoingTask",
    "Overlay",
    "Profile",
    "ProfileDocuments",
    "ProfileEpisodic",
    "ProfileReflective",
    "ProfileStats",
    "ProfileView",
    "ProfileWorking",
    "RecallConfig",
    "RecallResult",
    "Reflection",
    "ReflectionConfig",
    "ReflectionResult",
    "ScoreBreakdown",
    "SessionDeletion",
    "StoredMessage",
    "TurnRecord",
    "TurnRow",
    "VerificationConfig",
    "WindowMessage",
    "WorkingConfig",
]
