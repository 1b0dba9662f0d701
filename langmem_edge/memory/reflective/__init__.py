"""The reflective tier (L4): reflections, goals with their history, and job leases.

Records (:mod:`.records`), plans (:mod:`.tier`) and the ``profile.reflective`` accessor
(:mod:`.api`), over the ``BaseStore`` API like the other tiers, with its config
(:class:`~langmem_edge.memory.config.ReflectionConfig`) in ``memory/config/tiers.py``. Learnings
are semantic memories at confidence 0.85; the reflection job that reads the episodic and
semantic tiers and writes this one lives where tiers are composed
(``memory/reflection.py``), since a tier never imports another (an import-linter contract
in ``pyproject.toml`` checks it). See ``docs/reflective.md``.
"""

from __future__ import annotations

from langmem_edge.memory.reflective.api import ProfileReflective
from langmem_edge.memory.reflective.records import (
    GOAL_STATUSES,
    Goal,
    GoalEvent,
    GoalStatus,
    GoalStep,
    GoalUpdate,
    LearningRef,
    Reflection,
)

__all__ = [
    "GOAL_STATUSES",
    "Goal",
    "GoalEvent",
    "GoalStatus",
    "GoalStep",
    "GoalUpdate",
    "LearningRef",
    "ProfileReflective",
    "Reflection",
]
