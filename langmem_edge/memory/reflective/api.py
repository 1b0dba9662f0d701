"""``profile.reflective``: the reflective tier (L4) of one profile: goals and reflections.

::

    r = memory.profile("user:alice").reflective
    goal = r.add_goal("ship the beta", steps=["write docs", "tag release"])
    r.update_goal(goal.id, steps_done=["write docs"])      # open -> progressed
    r.update_goal(goal.id, status="done", note="released")  # -> done
    r.goals(status="open")                                 # Goal records
    r.reflections()                                        # Reflection records, oldest first

Learnings are semantic memories (``profile.recall`` finds them); reflections are written by
``profile.reflect()`` (``memory/reflection.py``). Every method has an async twin; both run
one plan of :mod:`~langmem_edge.memory.reflective.tier`. The clock is injectable
(``with_clock``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from langgraph.store.base import BaseStore

from langmem_edge.memory.config import ReflectionConfig
from langmem_edge.memory.core.layout import ProfileLayout
from langmem_edge.memory.core.plans import Plan, planned
from langmem_edge.memory.reflective.records import Goal, GoalStatus, Reflection
from langmem_edge.memory.reflective.tier import (
    ReflectiveScope,
    plan_add_goal,
    plan_delete_goal,
    plan_export,
    plan_get_goal,
    plan_goals,
    plan_reflections,
    plan_update_goal,
)

__all__ = ["ProfileReflective"]


class ProfileReflective:
    """The reflective tier of one profile (get it with ``profile.reflective``)."""

    def __init__(self, store: BaseStore, layout: ProfileLayout, config: ReflectionConfig, *,
                 clock: Callable[[], float] = time.time) -> None:
        self.scope = ReflectiveScope(store=store, layout=layout, config=config, clock=clock)

    def __repr__(self) -> str:
        return f"ProfileReflective({self.scope.profile!r})"

    def with_clock(self, clock: Callable[[], float]) -> ProfileReflective:
        """The same tier read and written with ``clock`` (epoch seconds) as the time."""
        s = self.scope
        return ProfileReflective(s.store, s.layout, s.config, clock=clock)

    # -- goals -------------------------------------------------------------------------------

    @planned
    def add_goal(self, title: str, *, steps: Sequence[str] = ()) -> Plan[Goal]:
        """Set a new goal (status ``open``) with its steps; returns it."""
        return plan_add_goal(self.scope, title, steps)

    aadd_goal = add_goal.twin

    @planned
    def update_goal(self, goal_id: str, *, status: GoalStatus | None = None,
                    steps_done: Sequence[str] = (), note: str = "") -> Plan[Goal]:
        """Mark steps done, note progress or set the status; the change joins the goal's
        history. Without ``status`` an ``open`` goal that progresses becomes
        ``progressed``."""
        return plan_update_goal(self.scope, goal_id, status=status,
                                steps_done=steps_done, note=note)

    aupdate_goal = update_goal.twin

    @planned
    def get_goal(self, goal_id: str) -> Plan[Goal | None]:
        """One goal with its history, or ``None``."""
        return plan_get_goal(self.scope, goal_id)

    aget_goal = get_goal.twin

    @planned
    def goals(self, *, status: GoalStatus | Sequence[GoalStatus] | None = None) -> Plan[list[Goal]]:
        """The profile's goals, oldest first (only those of ``status`` when given)."""
        return plan_goals(self.scope, status)

    agoals = goals.twin

    @planned
    def delete_goal(self, goal_id: str) -> Plan[bool]:
        """Delete a goal and its history; ``False`` if there was none."""
        return plan_delete_goal(self.scope, goal_id)

    adelete_goal = delete_goal.twin

    # -- reflections -------------------------------------------------------------------------

    @planned
    def reflections(self) -> Plan[list[Reflection]]:
        """The profile's reflections, oldest window first."""
        return plan_reflections(self.scope)

    areflections = reflections.twin

    @planned
    def export(self) -> Plan[dict[str, list[dict[str, Any]]]]:
        """Everything the tier holds for the profile as JSON-friendly dicts:
        ``{"goals": [...], "reflections": [...]}`` (learnings are memories: export those
        with the semantic tier)."""
        return plan_export(self.scope)

    aexport = export.twin
