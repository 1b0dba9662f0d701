"""Agent memory over any langgraph ``BaseStore``: ``AgentMemory`` and its tiers.

``AgentMemory(store, model=None)`` gives profiles (``memory.profile("user:alice")``) with the
semantic tier (typed facts, verification, supersession chains, temporal recall, fused and
scoped recall, encryption at rest) and delegates raw messages and compaction to the episodic
tier. See ``docs/memory.md``.
"""

from __future__ import annotations

from langmem_edge.memory.agent import AgentMemory
from langmem_edge.memory.config import MemoryConfig
from langmem_edge.memory.core.crypto import generate_encryption_key
from langmem_edge.memory.profile import Profile, ProfileView
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

__all__ = [
    "NOT_PROVIDED",
    "AgentMemory",
    "Candidate",
    "ChannelScore",
    "IngestResult",
    "MemoryConfig",
    "MemoryPage",
    "MemoryRecord",
    "MemoryStats",
    "Profile",
    "ProfileStats",
    "ProfileView",
    "RecallResult",
    "ScoreBreakdown",
    "SessionDeletion",
    "generate_encryption_key",
]
