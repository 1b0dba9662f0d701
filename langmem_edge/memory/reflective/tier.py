"""The reflective tier's plans: reflections, goals, and the leases of the jobs that write them.

Layout (:meth:`~langmem_edge.memory.core.layout.ProfileLayout.reflective`), under a
profile's root ``R``::

    (*R, "reflective", "reflections")   key = reflection id   Reflection.to_value()
    (*R, "reflective", "goals")         key = goal id         Goal.to_value()
    (*R, "reflective", "jobs")          key = job name        {"owner", "until"}: a lease

Every value carries ``profile`` and every read skips values that are not this profile's.
Nothing here is embedded (``index=False``): recall finds learnings, which are semantic
memories, not these records.

A goal is one item holding its history; :func:`plan_update_goal` reads it fresh and writes
it back in one plan. Two processes changing the same goal at the same moment: the later
write wins (the store has no compare-and-set); goals change rarely (a call, a daily
reflection), so this is documented rather than engineered away.

A **lease** (:func:`plan_acquire`) keeps a second consolidation pass of a profile from
starting while one runs: it is written, then read back, and held only when the read shows
this owner. Two passes starting within one store round trip of each other can both read
themselves back on a store without read-your-writes ordering; the consolidation pass is safe
even then (see ``memory/consolidation.py``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import BaseStore, GetOp, Item, PutOp

from langmem_edge.errors import InvalidInputError, LimitExceededError, NotFoundError
from langmem_edge.memory.config import ReflectionConfig
from langmem_edge.memory.core.labels import plan_scan
from langmem_edge.memory.core.layout import ProfileLayout
from langmem_edge.memory.core.plans import Plan, batch
from langmem_edge.memory.core.validate import check_text
from langmem_edge.memory.records import new_memory_id
from langmem_edge.memory.reflective.records import (
    GOAL_STATUSES,
    Goal,
    GoalEvent,
    GoalStep,
    Reflection,
)

__all__ = [
    "ReflectiveScope",
    "plan_acquire",
    "plan_add_goal",
    "plan_delete_goal",
    "plan_delete_session",
    "plan_export",
    "plan_get_goal",
    "plan_goals",
    "plan_put_reflection",
    "plan_reflections",
    "plan_release",
    "window_reflection_id",
    "plan_update_goal",
]

SCAN_PAGE = 500
"""Items read per page when listing reflections or goals."""

MAX_TITLE_CHARS = 1_000
"""Longest goal title or step."""

MAX_NOTE_CHARS = 2_000
"""Longest note of a goal change."""


@dataclass(frozen=True)
class ReflectiveScope:
    """What every reflective-tier plan needs: the store, the profile's layout, the config
    and the clock (epoch seconds; inject one in tests)."""

    store: BaseStore
    layout: ProfileLayout
    config: ReflectionConfig
    clock: Callable[[], float]

    @property
    def profile(self) -> str:
        """The profile name."""
        return self.layout.profile

    def now(self) -> datetime:
        """The clock's time, timezone-aware UTC."""
        return datetime.fromtimestamp(float(self.clock()), UTC)

    def mine(self, item: Item | None, record: str) -> bool:
        """Whether ``item`` is a ``record`` of this profile."""
        return (item is not None and item.value.get("profile") == self.profile
                and item.value.get("record") == record)


def _plan_scan(scope: ReflectiveScope, part: str, record: str, cap: int) -> Plan[list[Item]]:
    ns = scope.layout.reflective(part)
    items = yield from plan_scan(scope.store, ns, page=SCAN_PAGE, cap=cap,
                                 filter={"profile": scope.profile, "record": record})
    return [it for it in items if tuple(it.namespace) == ns and scope.mine(it, record)]


# -- reflections -------------------------------------------------------------------------------

MAX_REFLECTIONS = 100_000
"""Reflections of a profile read at most (one a day is ~270 years)."""


def plan_reflections(scope: ReflectiveScope) -> Plan[list[Reflection]]:
    """Plan: the profile's reflections, oldest window first."""
    items = yield from _plan_scan(scope, "reflections", "reflection", MAX_REFLECTIONS)
    found = [Reflection.model_validate(it.value) for it in items]
    return sorted(found, key=lambda r: (r.until, r.id))


def plan_put_reflection(scope: ReflectiveScope, reflection: Reflection) -> Plan[Reflection]:
    """Plan: store a reflection (its id is its key)."""
    if reflection.profile != scope.profile:
        raise InvalidInputError(f"reflection {reflection.id} is not in profile "
                                f"{scope.profile!r}")
    yield batch(scope.store, [PutOp(scope.layout.reflective("reflections"), reflection.id,
                                    reflection.to_value(), index=False)])
    return reflection


def plan_delete_session(scope: ReflectiveScope, session_id: str) -> Plan[list[Reflection]]:
    """Plan: delete the reflections that cite ``session_id`` (their summaries come from its
    messages); returns them."""
    found = yield from plan_reflections(scope)
    doomed = [r for r in found if session_id in r.sessions]
    if doomed:
        ns = scope.layout.reflective("reflections")
        yield batch(scope.store, [PutOp(ns, r.id, None) for r in doomed])
    return doomed


# -- goals -------------------------------------------------------------------------------------


def _check_steps(scope: ReflectiveScope, steps: Sequence[str]) -> list[GoalStep]:
    if isinstance(steps, str) or not isinstance(steps, Sequence):
        raise InvalidInputError(f"steps must be a list of strings, got {type(steps).__name__}")
    if len(steps) > scope.config.max_goal_steps:
        raise LimitExceededError(f"{len(steps)} steps; a goal holds at most "
                                 f"{scope.config.max_goal_steps}")
    texts = [check_text(s, "step", MAX_TITLE_CHARS).strip() for s in steps]
    if len(set(texts)) != len(texts):
        raise InvalidInputError(f"steps must be distinct, got {texts!r}")
    return [GoalStep(text=t) for t in texts]


def plan_goals(scope: ReflectiveScope, status: str | Sequence[str] | None = None
               ) -> Plan[list[Goal]]:
    """Plan: the profile's goals (oldest first), only those of ``status`` when given (a
    status or several)."""
    wanted = (status,) if isinstance(status, str) else tuple(status or ())
    bad = [s for s in wanted if s not in GOAL_STATUSES]
    if bad:
        raise InvalidInputError(f"unknown goal status(es) {bad}; allowed: {list(GOAL_STATUSES)}")
    items = yield from _plan_scan(scope, "goals", "goal", scope.config.max_goals)
    goals = sorted((Goal.model_validate(it.value) for it in items), key=lambda g: g.id)
    return [g for g in goals if not wanted or g.status in wanted]


def plan_get_goal(scope: ReflectiveScope, goal_id: str) -> Plan[Goal | None]:
    """Plan: one goal by id (read fresh), or ``None``."""
    check_text(goal_id, "goal_id", MAX_TITLE_CHARS)
    (item,) = yield batch(scope.store, [GetOp(scope.layout.reflective("goals"), goal_id)])
    return Goal.model_validate(item.value) if scope.mine(item, "goal") else None


def plan_add_goal(scope: ReflectiveScope, title: str, steps: Sequence[str]) -> Plan[Goal]:
    """Plan: set a new goal (status ``open``); returns it."""
    title = check_text(title, "title", MAX_TITLE_CHARS).strip()
    checked = _check_steps(scope, steps)
    existing = yield from _plan_scan(scope, "goals", "goal", scope.config.max_goals)
    if len(existing) >= scope.config.max_goals:
        raise LimitExceededError(f"profile {scope.profile!r} has {len(existing)} goals; at "
                                 f"most {scope.config.max_goals} (delete some first)")
    now = scope.now()
    goal = Goal(id=new_memory_id(), profile=scope.profile, title=title, steps=checked,
                history=[GoalEvent(at=now, status="open", note="created")],
                created_at=now, updated_at=now)
    yield batch(scope.store, [PutOp(scope.layout.reflective("goals"), goal.id,
                                    goal.to_value(), index=False)])
    return goal


def plan_update_goal(scope: ReflectiveScope, goal_id: str, *, status: str | None = None,
                     steps_done: Sequence[str] = (), note: str = "", by: str = "explicit"
                     ) -> Plan[Goal]:
    """Plan: change a goal and add the change to its history; returns the goal now.

    ``steps_done`` marks steps done (by their text). Without ``status``, an ``open`` goal
    with a step newly done or a note becomes ``progressed``; with one, the goal takes it
    (``open`` reopens a closed goal). A change that changes nothing writes nothing.
    """
    if status is not None and status not in GOAL_STATUSES:
        raise InvalidInputError(f"unknown goal status {status!r}; allowed: "
                                f"{list(GOAL_STATUSES)}")
    if isinstance(steps_done, str):
        steps_done = (steps_done,)
    note = check_text(note, "note", MAX_NOTE_CHARS, allow_empty=True) if note else ""
    goal = yield from plan_get_goal(scope, goal_id)
    if goal is None:
        raise NotFoundError(f"no goal {goal_id!r} in profile {scope.profile!r}")
    names = [s.text for s in goal.steps]
    unknown = [s for s in steps_done if s not in names]
    if unknown:
        raise InvalidInputError(f"goal {goal_id} has no step(s) {unknown}; its steps: {names}")
    newly = [s.text for s in goal.steps if s.text in steps_done and not s.done]
    target = status
    if target is None:
        target = "progressed" if goal.status == "open" and (newly or note) else goal.status
    if not newly and not note and target == goal.status:
        return goal
    now = scope.now()
    steps = [s.model_copy(update={"done": s.done or s.text in newly}) for s in goal.steps]
    event = GoalEvent.model_validate({"at": now, "status": target, "note": note,
                                      "steps_done": newly, "by": by})
    history = [*goal.history, event][-scope.config.max_goal_history:]
    goal = goal.model_copy(update={"steps": steps, "status": event.status,
                                   "history": history, "updated_at": now})
    yield batch(scope.store, [PutOp(scope.layout.reflective("goals"), goal.id,
                                    goal.to_value(), index=False)])
    return goal


def plan_delete_goal(scope: ReflectiveScope, goal_id: str) -> Plan[bool]:
    """Plan: delete a goal and its history; ``False`` if there was none."""
    goal = yield from plan_get_goal(scope, goal_id)
    if goal is not None:
        yield batch(scope.store, [PutOp(scope.layout.reflective("goals"), goal_id, None)])
    return goal is not None


# -- leases ------------------------------------------------------------------------------------


def plan_acquire(scope: ReflectiveScope, job: str, seconds: float) -> Plan[str | None]:
    """Plan: take the profile's lease on ``job`` for ``seconds``; returns the owner token,
    or ``None`` when another owner holds an unexpired lease."""
    ns = scope.layout.reflective("jobs")
    (held,) = yield batch(scope.store, [GetOp(ns, job)])
    now = float(scope.clock())
    if held is not None and scope.mine(held, "lease") and float(
            held.value.get("until", 0.0)) > now:
        return None
    token = uuid.uuid4().hex
    value: dict[str, Any] = {"record": "lease", "profile": scope.profile, "owner": token,
                             "until": now + seconds}
    yield batch(scope.store, [PutOp(ns, job, value, index=False)])
    (back,) = yield batch(scope.store, [GetOp(ns, job)])
    return token if back is not None and back.value.get("owner") == token else None


def plan_release(scope: ReflectiveScope, job: str, token: str) -> Plan[None]:
    """Plan: give the lease back if ``token`` still holds it."""
    ns = scope.layout.reflective("jobs")
    (held,) = yield batch(scope.store, [GetOp(ns, job)])
    if held is not None and held.value.get("owner") == token:
        yield batch(scope.store, [PutOp(ns, job, None)])


def plan_export(scope: ReflectiveScope) -> Plan[dict[str, list[dict[str, Any]]]]:
    """Plan: everything the tier holds for the profile, JSON-friendly: ``{"goals": [...],
    "reflections": [...]}`` (leases are transient and left out)."""
    goals = yield from plan_goals(scope)
    reflections = yield from plan_reflections(scope)
    return {"goals": [g.to_value() for g in goals],
            "reflections": [r.to_value() for r in reflections]}


def window_reflection_id(profile: str, since: datetime | None) -> str:
    """The id of the reflection whose window starts at ``since`` (``None``: the beginning):
    32 hex chars of a hash of the profile and ``since``. Two reflections of one window that
    run at once (the lease cannot stop two that start within one store round trip) write one
    record, the later one, instead of two; the next reflection starts where it ends."""
    start = "start" if since is None else since.astimezone(UTC).isoformat()
    return uuid.uuid5(uuid.NAMESPACE_URL, f"langmem-edge:reflection:{profile}:{start}").hex
