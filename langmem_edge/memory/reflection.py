"""Reflection: self-review of a profile's activity into a reflection, goal updates, learnings.

:func:`plan_reflect` (``Profile.reflect``, ``AgentMemory.reflect``, and the graph
``langmem_edge.graphs.create_reflection_graph``) reviews the window ``(since, until]``:
``since`` is the ``until`` of the profile's last reflection (the beginning when there is
none), ``until`` is now (an injectable clock). In the window it reads

- the workflow events (semantic memories of fact type ``workflow-outcome`` and
  ``workflow-failure``) written in it, the newest ``max_events`` (200);
- the episodic messages stamped in it, the newest ``max_messages`` (200), session by session;
- the open and progressed goals (the reflective tier).

With a model it asks for a :class:`ReflectionDraft` (structured output through
``core/models.py``, retried; if the call still fails, the rules below run instead). Without
one, the **rules**:

- a workflow that has failed ``repeated_failures`` (2) times or more, one of them in the
  window, becomes a learning (every failure event counts, superseded ones too: the
  model-free verification folds a repeated "deploy failed" into its newest copy, and each
  is still an occurrence) ("the workflow X has failed N times; last: ..."); a workflow is
  named by its event's ``metadata["workflow"]``, else its key (less a ``workflow.``
  prefix), else its text;
- a goal whose steps are all done is closed (``done``);
- what worked / failed are the texts of the window's outcome / failure events.

It then writes, in this order (so a run that fails midway is repaired by the next one):
the **learnings** as semantic memories (fact type ``reflection``, source ``reflection``,
confidence 0.85 by default) under keys ``reflection:{date}:{topic}``, each superseding the
older active learnings of its topic, and skipped when an active learning of the topic already
says the same; the **goal updates** (in each goal's history, by ``reflection`` or
``model``); and last the **reflection record**, whose ``until`` moves the window.

**Idempotent over the same window**: a second run at the same moment has an empty window,
and a run over a window with no events, no messages and no goal to close writes nothing. A
profile lease (``lease_seconds``, 10 min) keeps two reflections of one profile from running
at once (the second returns ``busy`` and writes nothing).
"""

from __future__ import annotations

import logging
import re
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from langmem_edge.errors import InvalidInputError, NotFoundError
from langmem_edge.memory.config import EpisodicConfig
from langmem_edge.memory.core.dates import iso_to_epoch
from langmem_edge.memory.core.labels import plan_scan
from langmem_edge.memory.core.models import structured_runnable
from langmem_edge.memory.core.plans import Call, Plan, invoke
from langmem_edge.memory.episodic.tier import EpisodicTier, StoredMessage
from langmem_edge.memory.records import MemoryRecord, utcnow
from langmem_edge.memory.reflective.records import (
    Goal,
    GoalStatus,
    GoalUpdate,
    LearningRef,
    Reflection,
)
from langmem_edge.memory.reflective.tier import (
    ReflectiveScope,
    plan_acquire,
    plan_delete_session,
    plan_goals,
    plan_put_reflection,
    plan_reflections,
    plan_release,
    plan_update_goal,
    window_reflection_id,
)
from langmem_edge.memory.semantic.context import ProfileContext, plan_read
from langmem_edge.memory.semantic.edits import plan_delete
from langmem_edge.memory.semantic.write import WriteSpec, plan_write

__all__ = [
    "LEARNING_KEY_PREFIX",
    "ReflectionDraft",
    "ReflectionResult",
    "learning_key",
    "plan_forget_session",
    "plan_reflect",
    "topic_slug",
]

logger = logging.getLogger(__name__)

REFLECTION_JOB = "reflection"
"""The lease name a reflection holds on its profile."""

LEARNING_KEY_PREFIX = "reflection:"
"""Keys of learnings: ``reflection:{date}:{topic}``."""

WORKFLOW_TYPES = ("workflow-outcome", "workflow-failure")
"""Fact types of the events a reflection reviews."""

WORKFLOW_KEY_PREFIXES = ("workflow.", "workflow:")
"""Prefixes a workflow event's key may carry before the workflow's name
(``workflow.deploy`` names ``deploy``)."""

MAX_PROMPT_ITEM_CHARS = 500
"""Characters of one event or message shown to the model at most."""

SESSION_PAGE = 500
"""Session records read per page."""

MAX_SESSIONS = 10_000
"""Session records of a profile read at most."""


class LearningDraft(BaseModel):
    """One lesson."""

    topic: str = Field(description="A few words naming what the lesson is about.")
    text: str = Field(description="The lesson, as one self-contained statement.")


class GoalDraft(BaseModel):
    """One change to a listed goal."""

    goal_id: str = Field(description="The id of a goal listed in the prompt.")
    status: GoalStatus | None = Field(default=None, description="Its new status, if it "
                                      "changed: open, progressed, done or abandoned.")
    steps_done: list[str] = Field(default_factory=list,
                                  description="Steps (their exact text) now done.")
    note: str = Field(default="", description="What moved it.")


class ReflectionDraft(BaseModel):
    """What the model answers: the review of a window."""

    summary: str = Field(description="What happened, in two or three sentences.")
    worked: list[str] = Field(default_factory=list, description="What worked.")
    failed: list[str] = Field(default_factory=list, description="What failed.")
    learnings: list[LearningDraft] = Field(
        default_factory=list, description="Durable lessons for next time (only real ones).")
    goal_updates: list[GoalDraft] = Field(default_factory=list,
                                          description="Changes to the listed goals.")


class ReflectionResult(BaseModel):
    """What one reflection wrote (``reflection`` is ``None`` when the window held nothing
    new: then nothing was written)."""

    profile: str
    reflection: Reflection | None = None
    learnings: list[MemoryRecord] = Field(default_factory=list)
    """The learning memories written."""
    goals: list[Goal] = Field(default_factory=list)
    """The goals changed, as they are now."""
    busy: bool = False
    """Another reflection of the profile was running: nothing was done."""

    @property
    def written(self) -> bool:
        """Whether anything was written."""
        return self.reflection is not None


@dataclass
class _Activity:
    since: datetime | None
    until: datetime
    events: list[dict[str, Any]]
    messages: list[StoredMessage]
    goals: list[Goal]
    failures: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Every failure event up to ``until``, by workflow name."""

    @property
    def sessions(self) -> list[str]:
        sids = [v.get("session_id") for v in self.events] + [m.session_id for m in self.messages]
        return sorted({s for s in sids if s})


def topic_slug(topic: str, max_chars: int) -> str:
    """A topic as a key segment: lower case, runs of other characters as ``-``."""
    slug = re.sub(r"[^\w]+", "-", topic.lower()).strip("-")[:max_chars].strip("-")
    return slug or "general"


def learning_key(until: datetime, slug: str) -> str:
    """``reflection:{date}:{topic}``."""
    return f"{LEARNING_KEY_PREFIX}{until.date().isoformat()}:{slug}"


def workflow_name(value: dict[str, Any]) -> str:
    """What names an event's workflow: ``metadata["workflow"]``, else its key, else its
    text."""
    meta = value.get("metadata") or {}
    if meta.get("workflow"):
        return str(meta["workflow"]).strip()
    key = str(value.get("key") or "")
    for prefix in WORKFLOW_KEY_PREFIXES:
        key = key.removeprefix(prefix)
    return (key or str(value.get("text", ""))).strip()


def _in_window(t: float, since: datetime | None, until: datetime) -> bool:
    return (since is None or t > since.timestamp()) and t <= until.timestamp()


def _plan_messages(tier: EpisodicTier, since: datetime | None, until: datetime, cap: int
                   ) -> Plan[list[StoredMessage]]:
    if cap <= 0:
        return []
    found = yield from plan_scan(tier.store, tier.sessions_namespace, page=SESSION_PAGE,
                                 cap=MAX_SESSIONS, filter={"profile": tier.profile})
    sessions = [it.value for it in found]
    out: list[StoredMessage] = []
    for s in sessions:  # a session last written before the window has nothing in it
        if s.get("profile") != tier.profile or (
                since is not None and iso_to_epoch(s.get("last_ts"), 0.0) <= since.timestamp()):
            continue
        start = max(0, int(s.get("next_seq", 0)) - cap)
        found = yield Call(tier.list_messages, tier.alist_messages, (s["session_id"],),
                           {"start": start, "limit": cap})
        out += [m for m in found if _in_window(m.ts.timestamp(), since, until)]
    out.sort(key=lambda m: (m.ts, m.session_id, m.seq))
    return out[-cap:]


def _plan_activity(ctx: ProfileContext, tier: EpisodicTier, scope: ReflectiveScope,
                   since: datetime | None, until: datetime) -> Plan[_Activity]:
    cfg = ctx.config.reflection
    ctx = yield from plan_read(ctx)
    events: list[dict[str, Any]] = []
    failures: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for mid in ctx.index.sorted_ids():
        v = ctx.index.values[mid]
        if v.get("fact_type") not in WORKFLOW_TYPES or v.get("status") == "forgotten":
            continue
        t = iso_to_epoch(v.get("created_at"), 0.0)
        if t > until.timestamp():
            continue
        if v.get("fact_type") == "workflow-failure":
            failures[workflow_name(v)].append(v)
        if _in_window(t, since, until):
            events.append(v)
    events = events[-cfg.max_events:] if cfg.max_events else []
    messages = yield from _plan_messages(tier, since, until, cfg.max_messages)
    goals = yield from plan_goals(scope, ("open", "progressed"))
    return _Activity(since, until, events, messages, goals, dict(failures))


def _rules(activity: _Activity, cfg: Any) -> tuple[ReflectionDraft, dict[str, list[str]]]:
    """The model-free reflection, and the sessions each learning's topic comes from."""
    window_ids = {v["id"] for v in activity.events}
    learnings: list[LearningDraft] = []
    sessions: dict[str, list[str]] = {}
    for name, fails in sorted(activity.failures.items()):
        if (not name or len(fails) < cfg.repeated_failures
                or not window_ids & {v["id"] for v in fails}):
            continue
        last = str(fails[-1].get("text", ""))
        text = (f"The workflow '{name}' has failed {len(fails)} times"
                + (f"; most recently: {last}" if last and last != name else "") + ".")
        learnings.append(LearningDraft(topic=name, text=text))
        sessions[topic_slug(name, cfg.max_topic_chars)] = sorted(
            {v["session_id"] for v in fails if v.get("session_id")})
    closes = [GoalDraft(goal_id=g.id, status="done", note="all steps done")
              for g in activity.goals if g.all_steps_done]
    worked = [str(v.get("text", "")) for v in activity.events
              if v.get("fact_type") == "workflow-outcome"]
    failed = [str(v.get("text", "")) for v in activity.events
              if v.get("fact_type") == "workflow-failure"]
    summary = (f"Reviewed {len(activity.messages)} messages in {len(activity.sessions)} "
               f"session(s), {len(worked)} workflow outcome(s) and {len(failed)} failure(s); "
               f"{len(learnings)} learning(s), {len(closes)} goal(s) closed.")
    return ReflectionDraft(summary=summary, worked=worked, failed=failed, learnings=learnings,
                           goal_updates=closes), sessions


def reflection_messages(activity: _Activity) -> list[Any]:
    """The prompt asking the model to review a window."""
    def cut(text: str) -> str:
        return text[:MAX_PROMPT_ITEM_CHARS]

    events = "\n".join(f"- [{v.get('fact_type')}] {cut(str(v.get('text', '')))}"
                       for v in activity.events) or "(none)"
    messages = "\n".join(f"- ({m.session_id}) {m.role}: {cut(m.content)}"
                         for m in activity.messages) or "(none)"
    goals = "\n".join(
        f"- id={g.id} status={g.status}: {g.title}; steps: "
        + (", ".join(f"{s.text} [{'done' if s.done else 'todo'}]" for s in g.steps) or "none")
        for g in activity.goals) or "(none)"
    return [
        SystemMessage(content="You review an assistant's recent work with a user. From the "
                              "events, messages and goals below, say what happened, what "
                              "worked and what failed, the durable lessons worth remembering "
                              "(only real ones), and how each listed goal moved (by its id)."),
        HumanMessage(content=f"Workflow events:\n{events}\n\nMessages:\n{messages}\n\n"
                             f"Goals:\n{goals}"),
    ]


def _plan_draft(ctx: ProfileContext, model: BaseChatModel | None, activity: _Activity
                ) -> Plan[tuple[ReflectionDraft, dict[str, list[str]], str]]:
    if model is not None:
        runnable = structured_runnable(model, ReflectionDraft)
        try:
            (draft,) = yield invoke(runnable, reflection_messages(activity), "reflection",
                                    structured=True)
            return draft, {}, "model"
        except Exception as e:
            logger.warning("reflection model call failed (%s); using the rules", e)
    draft, sessions = _rules(activity, ctx.config.reflection)
    return draft, sessions, "rules"


def _plan_learnings(ctx: ProfileContext, draft: ReflectionDraft, sessions: dict[str, list[str]],
                    activity: _Activity, rid: str
                    ) -> Plan[tuple[list[MemoryRecord], list[LearningRef]]]:
    ctx = yield from plan_read(ctx, counts=False)
    cfg = ctx.config.reflection
    written: list[MemoryRecord] = []
    refs: list[LearningRef] = []
    for learning in draft.learnings[: cfg.max_learnings]:
        text = learning.text.strip()
        if not text:
            continue
        slug = topic_slug(learning.topic, cfg.max_topic_chars)
        key = learning_key(activity.until, slug)
        same_topic = [v for v in ctx.index.values.values()
                      if v.get("status") == "active" and v.get("source") == "reflection"
                      and (v.get("metadata") or {}).get("topic") == slug]
        if any(v.get("text") == text for v in same_topic):
            continue  # already learnt (a run that failed before its reflection record)
        meta = {"topic": slug, "reflection": rid,
                "sessions": sessions.get(slug, activity.sessions)}
        record = yield from plan_write(ctx, WriteSpec(
            text=text, key=key, kind="fact", fact_type="reflection", source="reflection",
            tags=("reflection",), metadata=meta), verify=False,
            supersede=[v["id"] for v in same_topic])
        written.append(record)
        refs.append(LearningRef(key=key, memory_id=record.id, topic=slug))
    return written, refs


def _plan_goal_updates(scope: ReflectiveScope, draft: ReflectionDraft, activity: _Activity,
                       by: str) -> Plan[tuple[list[Goal], list[GoalUpdate]]]:
    known = {g.id: g for g in activity.goals}
    changed: list[Goal] = []
    updates: list[GoalUpdate] = []
    for up in draft.goal_updates:
        if up.goal_id not in known:
            logger.info("reflection named an unknown goal %r; ignored", up.goal_id)
            continue
        try:
            goal = yield from plan_update_goal(scope, up.goal_id, status=up.status,
                                               steps_done=up.steps_done, note=up.note,
                                               by="model" if by == "model" else "reflection")
        except (InvalidInputError, NotFoundError) as e:
            logger.info("reflection's update of goal %s ignored: %s", up.goal_id, e)
            continue
        if goal.updated_at != known[up.goal_id].updated_at:
            changed.append(goal)
            updates.append(GoalUpdate(goal_id=goal.id, status=goal.status, note=up.note))
    return changed, updates


def plan_reflect(ctx: ProfileContext, episodic: EpisodicConfig, model: BaseChatModel | None,
                 *, now: datetime | None = None) -> Plan[ReflectionResult]:
    """Reflect on one profile since its last reflection (see the module docstring)."""
    until = now or utcnow()
    scope = ReflectiveScope(store=ctx.store, layout=ctx.layout, config=ctx.config.reflection,
                            clock=until.timestamp)
    tier = EpisodicTier(ctx.store, ctx.layout.root, config=episodic, model=None,
                        profile=ctx.profile)
    result = ReflectionResult(profile=ctx.profile)
    leases = ReflectiveScope(store=ctx.store, layout=ctx.layout, config=ctx.config.reflection,
                             clock=time.time)
    token = yield from plan_acquire(leases, REFLECTION_JOB, ctx.config.reflection.lease_seconds)
    if token is None:
        result.busy = True
        return result
    try:
        yield from _plan_window(ctx, tier, scope, model, until, result)
    finally:
        yield from plan_release(leases, REFLECTION_JOB, token)
    return result


def _plan_window(ctx: ProfileContext, tier: EpisodicTier, scope: ReflectiveScope,
                 model: BaseChatModel | None, until: datetime, result: ReflectionResult
                 ) -> Plan[None]:
    past = yield from plan_reflections(scope)
    since = past[-1].until if past else None
    if since is not None and since >= until:
        return  # this window is reflected already
    activity = yield from _plan_activity(ctx, tier, scope, since, until)
    closable = any(g.all_steps_done for g in activity.goals)
    if not activity.events and not activity.messages and not closable:
        return
    draft, sessions, by = yield from _plan_draft(ctx, model, activity)
    rid = window_reflection_id(ctx.profile, since)
    result.learnings, refs = yield from _plan_learnings(ctx, draft, sessions, activity, rid)
    result.goals, updates = yield from _plan_goal_updates(scope, draft, activity, by)
    reflection = Reflection(
        id=rid, profile=ctx.profile, since=since, until=until, summary=draft.summary,
        worked=draft.worked, failed=draft.failed, sessions=activity.sessions,
        events=[v["id"] for v in activity.events], messages_reviewed=len(activity.messages),
        learnings=refs, goal_updates=updates, by="model" if by == "model" else "rules",
        created_at=utcnow())
    result.reflection = yield from plan_put_reflection(scope, reflection)


def plan_forget_session(ctx: ProfileContext, session_id: str) -> Plan[int]:
    """Delete what reflection derived from a session: the reflections citing it and the
    learnings whose ``metadata["sessions"]`` name it; returns how many items."""
    scope = ReflectiveScope(store=ctx.store, layout=ctx.layout, config=ctx.config.reflection,
                            clock=lambda: utcnow().timestamp())
    gone = yield from plan_delete_session(scope, session_id)
    ctx = yield from plan_read(ctx)
    learnt = [mid for mid, v in ctx.index.values.items() if v.get("source") == "reflection"
              and session_id in ((v.get("metadata") or {}).get("sessions") or ())]
    deleted = (yield from plan_delete(ctx, learnt)) if learnt else []
    return len(gone) + len(deleted)
