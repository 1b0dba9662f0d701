"""The reflective tier's records: reflections, goals with their history, learning references.

A **reflection** is what one self-review found over a window ``(since, until]`` of a
profile's activity: a summary of what happened, what worked, what failed, the sessions and
events it reviewed, the goal updates it made and the learnings it wrote. A learning itself is
a semantic memory (so recall finds it); the reflection keeps only its key and memory id, never
its text, so deleting the memory deletes the learning everywhere.

A **goal** has a title, steps (each done or not) and a status that moves through
``open -> progressed -> done`` (or ``abandoned``; ``open`` again reopens it); every change is
an entry of its ``history``, oldest first.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "GOAL_STATUSES",
    "Goal",
    "GoalEvent",
    "GoalStatus",
    "GoalStep",
    "GoalUpdate",
    "LearningRef",
    "Reflection",
]

GoalStatus = Literal["open", "progressed", "done", "abandoned"]
"""Where a goal stands: ``open`` (nothing done yet), ``progressed`` (some steps done or
progress noted), ``done`` (closed) or ``abandoned``."""

GOAL_STATUSES: tuple[str, ...] = get_args(GoalStatus)
"""Every goal status."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore")

    def to_value(self) -> dict[str, Any]:
        """The store value (JSON-friendly)."""
        return self.model_dump(mode="json")


class GoalStep(_Record):
    """One step of a goal."""

    text: str
    """What the step is."""
    done: bool = False
    """Whether it is done."""


class GoalEvent(_Record):
    """One entry of a goal's history."""

    at: datetime
    """When it happened (the tier's clock)."""
    status: GoalStatus
    """The goal's status after it."""
    note: str = ""
    """What happened ("created", "step done: pay", a reflection's note ...)."""
    steps_done: list[str] = Field(default_factory=list)
    """Steps marked done by this change."""
    by: str = "explicit"
    """Who made it: ``explicit`` (an API call), ``reflection`` (rules) or ``model``."""


class Goal(_Record):
    """A goal of a profile, with its history."""

    record: Literal["goal"] = "goal"
    id: str
    """Goal id (the store key)."""
    profile: str
    """The profile it belongs to (checked on every read)."""
    title: str
    """What the goal is."""
    steps: list[GoalStep] = Field(default_factory=list)
    """Its steps, in order."""
    status: GoalStatus = "open"
    """open, progressed, done or abandoned."""
    history: list[GoalEvent] = Field(default_factory=list)
    """Every change, oldest first (the newest ``max_goal_history`` are kept)."""
    created_at: datetime
    """When it was set."""
    updated_at: datetime
    """Its last change."""

    @property
    def is_open(self) -> bool:
        """Whether it is still pursued (``open`` or ``progressed``)."""
        return self.status in ("open", "progressed")

    @property
    def all_steps_done(self) -> bool:
        """Whether it has steps and every one is done."""
        return bool(self.steps) and all(s.done for s in self.steps)


class LearningRef(_Record):
    """A learning a reflection wrote: the semantic memory's key and id (not its text)."""

    key: str
    """``reflection:{date}:{topic}``."""
    memory_id: str
    """The memory holding it (gone once that memory is deleted)."""
    topic: str
    """The topic slug."""


class GoalUpdate(_Record):
    """A goal change a reflection made."""

    goal_id: str
    status: GoalStatus
    note: str = ""


class Reflection(_Record):
    """One self-review of a profile's activity over ``(since, until]``."""

    record: Literal["reflection"] = "reflection"
    id: str
    """Reflection id (the store key)."""
    profile: str
    """The profile it belongs to."""
    since: datetime | None = None
    """Start of the window (exclusive): the previous reflection's ``until``; ``None``: from
    the beginning."""
    until: datetime
    """End of the window (inclusive)."""
    summary: str = ""
    """What happened."""
    worked: list[str] = Field(default_factory=list)
    """What worked."""
    failed: list[str] = Field(default_factory=list)
    """What failed."""
    sessions: list[str] = Field(default_factory=list)
    """Sessions whose messages or events it reviewed (``delete_session`` removes the
    reflections that cite a session)."""
    events: list[str] = Field(default_factory=list)
    """Ids of the workflow events it reviewed."""
    messages_reviewed: int = 0
    """Episodic messages it reviewed."""
    learnings: list[LearningRef] = Field(default_factory=list)
    """The learnings it wrote."""
    goal_updates: list[GoalUpdate] = Field(default_factory=list)
    """The goal changes it made."""
    by: Literal["model", "rules"] = "rules"
    """Made by the model or by the model-free rules."""
    created_at: datetime
    """When it was written."""
