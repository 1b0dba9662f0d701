"""Agent memory over any langgraph ``BaseStore``: ``AgentMemory`` and its tiers.

``AgentMemory(store, model=None)`` gives profiles (``memory.profile("user:alice")``) with the
semantic tier (typed facts, verification, supersession chains, temporal recall, fused and
scoped recall, encryption at rest), the episodic tier (raw messages and compaction) and the
working tier (``profile.working``: notes, the ongoing task and turn records of each thread).
See ``docs/memory.md``, ``docs/episodic.md`` and ``docs/working.md``.

Everything a call hands back is importable from here: the records and results, the
configs (``MemoryConfig`` and its sections), the episodic tier's ``StoredMessage``,
``ContextWindow``, ``WindowMessage``, ``Overlay`` and ``ExtractedMemory``, and the working
tier's ``ProfileWorking``, ``TurnRecord``, ``TurnRow`` and ``OngoingTask``.
"""

from __future__ import annotations

from langmem_edge.memory.agent import AgentMemory
from langmem_edge.memory.config import (
    CompositeConfig,
    EpisodicConfig,
    IndexCacheConfig,
    LimitsConfig,
    MemoryConfig,
    RecallConfig,
    VerificationConfig,
    WorkingConfig,
)
from langmem_edge.memory.core.crypto import generate_encryption_key
from langmem_edge.memory.episodic import ContextWindow, ExtractedMemory, Overlay, StoredMessage
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
from langmem_edge.memory.view import ProfileView
from langmem_edge.memory.working import OngoingTask, ProfileWorking, TurnRecord, TurnRow

__all__ = [
    "NOT_PROVIDED",
    "AgentMemory",
    "Candidate",
    "ChannelScore",
    "CompositeConfig",
    "ContextWindow",
    "EpisodicConfig",
    "ExtractedMemory",
    "IndexCacheConfig",
    "IngestResult",
    "LimitsConfig",
    "MemoryConfig",
    "MemoryPage",
    "MemoryRecord",
    "MemoryStats",
    "OngoingTask",
    "Overlay",
    "Profile",
    "ProfileStats",
    "ProfileView",
    "ProfileWorking",
    "RecallConfig",
    "RecallResult",
    "ScoreBreakdown",
    "SessionDeletion",
    "StoredMessage",
    "TurnRecord",
    "TurnRow",
    "VerificationConfig",
    "WindowMessage",
    "WorkingConfig",
    "generate_encryption_key",
]
