"""The reflective tier (L4): goals and their states, reflection (rules and a scripted model),
idempotence, learnings in recall, the three-level delete, the graph inside a parent graph.

On ``InMemoryStore`` and ``ChromaStore`` (a folder, and the session's server).
"""

from __future__ import annotations

import operator
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.store.memory import InMemoryStore

from langmem_edge import AgentMemory, ChromaStore
from langmem_edge.errors import ConfigurationError, InvalidInputError, NotFoundError
from langmem_edge.graphs.reflection import create_consolidation_graph, create_reflection_graph
from langmem_edge.memory.config import ReflectionConfig
from langmem_edge.memory.records import utcnow
from langmem_edge.testing import FakeEmbeddings, ScriptedChatModel

DIMS = 64


@pytest.fixture(params=["memory", "chroma", pytest.param("server", marks=pytest.mark.server)])
def memory(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[AgentMemory]:
    index = {"dims": DIMS, "embed": FakeEmbeddings(DIMS), "fields": ["text"]}
    if request.param == "memory":
        yield AgentMemory(InMemoryStore(index=index))  # type: ignore[arg-type]
        return
    if request.param == "chroma":
        store = ChromaStore.from_path(str(tmp_path / "r"), index=index)
    else:
        url = request.getfixturevalue("chroma_server_url")
        store = ChromaStore.from_url(url, collection_prefix=f"r{uuid.uuid4().hex[:10]}",
                                     index=index)
    yield AgentMemory(store)
    store.close()


def fail(memory: AgentMemory, text: str, *, session: str | None = None,
         workflow: str = "deploy") -> Any:
    return memory.profile("alice").remember(text, fact_type="workflow-failure",
                                            metadata={"workflow": workflow},
                                            session_id=session, verify=False)


def learnings(memory: AgentMemory, status: str = "active") -> list[Any]:
    return [m for m in memory.profile("alice").list(status=status, limit=500)
            if m.source == "reflection"]


def test_config_defaults() -> None:
    cfg = ReflectionConfig()
    assert (cfg.repeated_failures, cfg.max_messages, cfg.max_events) == (2, 200, 200)


# -- goals ---------------------------------------------------------------------------------


def test_goals_move_through_their_states_with_history(memory: AgentMemory) -> None:
    r = memory.profile("alice").reflective
    goal = r.add_goal("ship the beta", steps=["write docs", "tag release"])
    assert goal.status == "open" and [s.done for s in goal.steps] == [False, False]

    goal = r.update_goal(goal.id, steps_done=["write docs"])
    assert goal.status == "progressed" and [s.done for s in goal.steps] == [True, False]
    assert r.update_goal(goal.id, steps_done=["write docs"]) == goal  # nothing new
    goal = r.update_goal(goal.id, status="done", note="released", steps_done=["tag release"])
    assert goal.status == "done" and goal.all_steps_done and not goal.is_open
    goal = r.update_goal(goal.id, status="open", note="a regression")
    assert goal.status == "open"
    goal = r.update_goal(goal.id, status="abandoned")

    fresh = memory.profile("alice").reflective.get_goal(goal.id)
    assert fresh is not None
    assert [(e.status, e.note, e.steps_done) for e in fresh.history] == [
        ("open", "created", []), ("progressed", "", ["write docs"]),
        ("done", "released", ["tag release"]), ("open", "a regression", []),
        ("abandoned", "", [])]
    assert [g.id for g in r.goals(status="abandoned")] == [goal.id]
    assert r.goals(status=["open", "progressed"]) == []
    assert memory.profile("bob").reflective.get_goal(goal.id) is None

    with pytest.raises(InvalidInputError, match="no step"):
        r.update_goal(goal.id, steps_done=["deploy"])
    with pytest.raises(InvalidInputError, match="unknown goal status"):
        r.update_goal(goal.id, status="finished")  # type: ignore[arg-type]
    with pytest.raises(NotFoundError):
        r.update_goal("nope", status="done")
    assert r.delete_goal(goal.id) and r.goals() == [] and not r.delete_goal(goal.id)


async def test_goal_async_twins(memory: AgentMemory) -> None:
    r = memory.profile("alice").reflective
    goal = await r.aadd_goal("learn Dutch", steps=["A1"])
    goal = await r.aupdate_goal(goal.id, steps_done=["A1"])
    assert goal.status == "progressed"
    assert [g.id for g in await r.agoals()] == [goal.id]
    assert (await r.aget_goal(goal.id)) == goal


# -- reflection without a model -------------------------------------------------------------


def test_rules_turn_a_repeated_failure_into_a_learning_and_close_finished_goals(
        memory: AgentMemory) -> None:
    alice = memory.profile("alice")
    first = fail(memory, "deploy failed: registry timeout", session="s1")
    alice.remember("backup finished", fact_type="workflow-outcome", session_id="s1",
                   verify=False)
    fail(memory, "export failed once", workflow="export", session="s1")
    r = alice.reflective
    done = r.add_goal("ship", steps=["build", "test"])
    r.update_goal(done.id, steps_done=["build", "test"])
    pending = r.add_goal("write the blog post", steps=["draft"])
    second = fail(memory, "deploy failed: registry timeout again", session="s2")

    result = alice.reflect()

    assert result.written and result.reflection is not None
    (learning,) = result.learnings
    today = result.reflection.until.date().isoformat()
    assert learning.key == f"reflection:{today}:deploy"
    assert (learning.confidence, learning.source, learning.fact_type) == (
        0.85, "reflection", "reflection")
    assert "deploy" in learning.text and "2 times" in learning.text
    assert learning.metadata["sessions"] == ["s1", "s2"]
    rec = result.reflection
    assert rec.by == "rules" and rec.since is None
    assert rec.failed == [first.text, "export failed once", second.text]
    assert rec.worked == ["backup finished"] and rec.sessions == ["s1", "s2"]
    assert [(u.goal_id, u.status) for u in rec.goal_updates] == [(done.id, "done")]
    assert [(ref.key, ref.memory_id) for ref in rec.learnings] == [(learning.key, learning.id)]
    assert r.get_goal(done.id).status == "done"  # type: ignore[union-attr]
    assert r.get_goal(done.id).history[-1].by == "reflection"  # type: ignore[union-attr]
    assert r.get_goal(pending.id).status == "open"  # type: ignore[union-attr]
    assert [x.id for x in r.reflections()] == [rec.id]

    # idempotent: the same window again, and a later window with nothing new, write nothing
    assert not alice.reflect(now=rec.until).written
    assert not alice.reflect().written
    assert [x.id for x in r.reflections()] == [rec.id] and len(learnings(memory)) == 1

    # a third failure later: a new learning of the topic supersedes the old one
    fail(memory, "deploy failed: disk full", session="s3")
    later = alice.reflect(now=utcnow() + timedelta(days=1))
    (newer,) = later.learnings
    assert "3 times" in newer.text and newer.key.endswith(":deploy") and newer.key != learning.key
    assert later.reflection is not None and later.reflection.since == rec.until
    assert [m.id for m in learnings(memory)] == [newer.id]
    assert alice.get(learning.id).superseded_by == newer.id  # type: ignore[union-attr]


def test_messages_of_the_window_are_reviewed(memory: AgentMemory) -> None:
    alice = memory.profile("alice")
    alice.ingest([{"role": "user", "content": "Can you deploy the site?"},
                  {"role": "assistant", "content": "The deploy failed twice."}],
                 session_id="conv-1")
    result = alice.reflect()
    assert result.reflection is not None
    assert result.reflection.messages_reviewed == 2 and result.reflection.sessions == ["conv-1"]
    alice.ingest([{"role": "user", "content": "Try again tomorrow."}], session_id="conv-1")
    again = alice.reflect()
    assert again.reflection is not None and again.reflection.messages_reviewed == 1


async def test_reflect_async_twin(memory: AgentMemory) -> None:
    fail(memory, "deploy failed")
    fail(memory, "deploy failed again")
    (result,) = await memory.areflect("alice")
    assert len(result.learnings) == 1
    assert not (await memory.profile("alice").areflect()).written


# -- reflection with a model ---------------------------------------------------------------


def draft(goal_id: str, **extra: Any) -> dict[str, Any]:
    return {"summary": "Deploys kept failing on the registry.", "worked": ["backups"],
            "failed": ["deploy"],
            "learnings": [{"topic": "Deploy registry",
                           "text": "Deploys fail when the registry is slow; retry later."}],
            "goal_updates": [{"goal_id": goal_id, "status": "progressed",
                              "steps_done": ["build"], "note": "built"},
                             {"goal_id": "unknown", "status": "done"}], **extra}


def test_a_scripted_model_writes_the_reflection(memory: AgentMemory) -> None:
    alice = memory.profile("alice")
    goal = alice.reflective.add_goal("ship", steps=["build", "test"])
    fail(memory, "deploy failed: registry timeout")
    model = ScriptedChatModel(responses=[draft(goal.id)])

    result = alice.reflect(model=model)

    assert result.reflection is not None and result.reflection.by == "model"
    assert result.reflection.summary == "Deploys kept failing on the registry."
    (learning,) = result.learnings
    assert learning.key.endswith(":deploy-registry") and learning.confidence == 0.85
    (changed,) = result.goals
    assert changed.status == "progressed" and changed.history[-1].by == "model"
    prompt = str(model.calls[0][-1].content)
    assert "deploy failed: registry timeout" in prompt and goal.id in prompt


def test_the_model_reviews_the_messages_of_the_window(memory: AgentMemory) -> None:
    """Regression: the prompt read a message's ``text`` (a StoredMessage has ``content``),
    so every window with messages fell back to the rules without the model."""
    alice = memory.profile("alice")
    goal = alice.reflective.add_goal("ship", steps=["build", "test"])
    alice.ingest([{"role": "user", "content": "Can you deploy the site?"},
                  {"role": "assistant", "content": "The deploy failed twice."}],
                 session_id="conv-1")
    model = ScriptedChatModel(responses=[draft(goal.id)])
    result = alice.reflect(model=model)
    assert result.reflection is not None and result.reflection.by == "model"
    prompt = str(model.calls[0][-1].content)
    assert "(conv-1) user: Can you deploy the site?" in prompt
    assert "assistant: The deploy failed twice." in prompt


def test_a_failing_model_falls_back_to_the_rules(memory: AgentMemory) -> None:
    fail(memory, "deploy failed")
    fail(memory, "deploy failed again")
    model = ScriptedChatModel(responses=[ValueError("bad request")])
    result = memory.profile("alice").reflect(model=model)
    assert result.reflection is not None and result.reflection.by == "rules"
    assert len(result.learnings) == 1


def test_a_learning_outranks_an_equally_similar_per_turn_fact(memory: AgentMemory) -> None:
    alice = memory.profile("alice")
    text = "Deploys fail when the registry is slow; retry later."
    fact = alice.remember(text, source="turn", verify=False)
    fail(memory, "deploy failed: registry timeout")
    (learning,) = alice.reflect(model=ScriptedChatModel(responses=[draft("x")])).learnings
    assert learning.text == fact.text and (fact.confidence, learning.confidence) == (0.5, 0.85)

    # a query that does not name the learning's key: only the confidence tells them apart
    hits = [c.id for c in alice.recall("should I retry later when it is slow?").candidates]
    assert hits.index(learning.id) < hits.index(fact.id)


def test_two_reflections_of_one_window_write_one_record(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The race a lease without compare-and-set lets through: both runs hold the lease and
    read "no reflection yet" before either writes. They write one record, not two."""
    import threading

    import langmem_edge.memory.reflection as reflection

    index = {"dims": DIMS, "embed": FakeEmbeddings(DIMS), "fields": ["text"]}
    store = ChromaStore.from_path(str(tmp_path / "race"), index=index)
    memory = AgentMemory(store)
    fail(memory, "deploy failed: registry timeout", session="s1")
    fail(memory, "deploy failed: registry timeout again", session="s2")
    both_read = threading.Barrier(2, timeout=60)
    read_past = reflection.plan_reflections

    def racing_read(scope: Any) -> Any:
        past = yield from read_past(scope)
        both_read.wait()  # neither has written: both see the same window start
        return past

    def always_granted(scope: Any, job: str, seconds: float) -> Any:
        return (yield from iter(())) or uuid.uuid4().hex

    monkeypatch.setattr(reflection, "plan_reflections", racing_read)
    monkeypatch.setattr(reflection, "plan_acquire", always_granted)
    now = utcnow()
    results: list[Any] = []
    runs = [threading.Thread(target=lambda t=t: results.append(
        memory.profile("alice").reflect(now=t))) for t in (now, now + timedelta(seconds=1))]
    for run in runs:
        run.start()
    for run in runs:
        run.join()
    monkeypatch.undo()
    assert [r.written for r in results] == [True, True]
    assert len({r.reflection.id for r in results}) == 1
    (kept,) = memory.profile("alice").reflective.reflections()
    assert kept.since is None
    assert len(learnings(memory)) == 1  # the same key: the racing writers settle to one
    store.close()


# -- the three-level delete ------------------------------------------------------------------


def test_deletes_cover_the_reflective_tier(memory: AgentMemory) -> None:
    alice = memory.profile("alice")
    fail(memory, "deploy failed", session="s1")
    fail(memory, "deploy failed again", session="s2")
    alice.reflective.add_goal("ship", steps=["build"])
    result = alice.reflect()
    (learning,) = result.learnings

    # deleting the learning deletes its text everywhere (the reflection keeps its id only)
    alice.delete(learning.id)
    (rec,) = alice.reflective.reflections()
    assert learning.text not in rec.model_dump_json()

    # deleting a session deletes the reflections citing it and the learnings drawn from it
    fail(memory, "deploy failed a third time", session="s3")
    (newer,) = alice.reflect(now=utcnow() + timedelta(days=1)).learnings
    alice.delete_session("s3")
    assert alice.get(newer.id) is None
    assert [r.id for r in alice.reflective.reflections()] == [rec.id]

    # deleting the profile deletes goals, reflections and leases
    memory.consolidate("alice")
    memory.delete_profile("alice")
    assert memory.profile("alice").reflective.goals() == []
    assert memory.profile("alice").reflective.reflections() == []
    assert memory.store.search(memory.profile("alice")._ctx.layout.reflective()) == []


# -- the graphs --------------------------------------------------------------------------------


class Parent(TypedDict, total=False):
    profile: str | None
    now: str | None
    reflections: list[dict[str, Any]]
    consolidation: dict[str, Any]
    log: Annotated[list[str], operator.add]


def parent_graph(memory: AgentMemory, model: Any = None) -> Any:
    def before(state: Parent) -> Parent:
        return {"log": ["before"]}

    def after(state: Parent) -> Parent:
        return {"log": [f"after: {len(state['reflections'])} profile(s)"]}

    builder = StateGraph(Parent)
    builder.add_node("before", before)
    builder.add_node("reflect", create_reflection_graph(memory, model=model))
    builder.add_node("consolidate", create_consolidation_graph(memory))
    builder.add_node("after", after)
    builder.add_edge(START, "before")
    builder.add_edge("before", "reflect")
    builder.add_edge("reflect", "consolidate")
    builder.add_edge("consolidate", "after")
    builder.add_edge("after", END)
    return builder.compile()


def test_the_reflection_graph_runs_as_a_node_without_a_model(memory: AgentMemory) -> None:
    fail(memory, "deploy failed")
    fail(memory, "deploy failed again")
    out = parent_graph(memory).invoke({"profile": "alice"})
    (res,) = out["reflections"]
    assert res["written"] and res["reflection"]["by"] == "rules"
    assert len(res["learnings"]) == 1 and out["log"] == ["before", "after: 1 profile(s)"]
    assert out["consolidation"]["profiles"][0]["profile"] == "alice"
    again = parent_graph(memory).invoke({"profile": "alice"})
    assert not again["reflections"][0]["written"]


async def test_the_reflection_graph_runs_as_a_node_with_a_scripted_model(
        memory: AgentMemory) -> None:
    goal = memory.profile("alice").reflective.add_goal("ship", steps=["build", "test"])
    fail(memory, "deploy failed: registry timeout")
    model = ScriptedChatModel(responses=[draft(goal.id)])
    out = await parent_graph(memory, model).ainvoke({"profile": "alice"})
    (res,) = out["reflections"]
    assert res["reflection"]["by"] == "model" and res["goals"][0]["status"] == "progressed"
    assert len(model.calls) == 1


def test_the_graphs_alone_and_their_checks(memory: AgentMemory) -> None:
    alice = memory.profile("alice")
    alice.remember("alice drinks green tea", verify=False)
    alice.remember("alice drinks green tea", verify=False)
    later = (datetime.now(UTC) + timedelta(days=31)).isoformat()
    out = create_consolidation_graph(memory).invoke({"now": later})
    assert out["consolidation"]["changed"] and len(out["consolidation"]["profiles"]) == 1
    assert create_reflection_graph(memory).invoke({})["reflections"][0]["profile"] == "alice"
    with pytest.raises(ConfigurationError, match="AgentMemory"):
        create_reflection_graph("memory")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="BaseChatModel"):
        create_consolidation_graph(memory, model="gpt")  # type: ignore[arg-type]


def test_a_reflection_started_while_one_runs_writes_nothing(memory: AgentMemory) -> None:
    fail(memory, "deploy failed")
    fail(memory, "deploy failed again")
    other = AgentMemory(memory.store)
    inner: list[Any] = []

    def overlapping(messages: Any) -> dict[str, Any]:
        if not inner:
            inner.append(other.profile("alice").reflect())
        return draft("x")

    result = memory.profile("alice").reflect(model=ScriptedChatModel(respond=overlapping))
    assert inner[0].busy and not inner[0].written
    assert result.written and len(memory.profile("alice").reflective.reflections()) == 1


def test_export_holds_goals_and_reflections(memory: AgentMemory) -> None:
    alice = memory.profile("alice")
    goal = alice.reflective.add_goal("ship", steps=["build"])
    alice.reflective.update_goal(goal.id, steps_done=["build"])
    rec = alice.reflect().reflection
    assert rec is not None
    out = alice.reflective.export()
    assert [g["id"] for g in out["goals"]] == [goal.id]
    assert out["goals"][0]["status"] == "done" and len(out["goals"][0]["history"]) == 3
    assert [r["id"] for r in out["reflections"]] == [rec.id]
    assert memory.profile("bob").reflective.export() == {"goals": [], "reflections": []}


def test_the_graph_takes_the_profile_from_the_config(memory: AgentMemory) -> None:
    fail(memory, "deploy failed")
    fail(memory, "deploy failed again")
    memory.profile("bob").remember("bob likes tea")
    out = create_reflection_graph(memory).invoke({}, {"configurable": {"profile": "alice"}})
    assert [r["profile"] for r in out["reflections"]] == ["alice"]


def test_a_repeated_failure_counts_even_when_verification_folded_it(memory: AgentMemory) -> None:
    alice = memory.profile("alice")
    first = alice.remember("nightly export failed", fact_type="workflow-failure")
    second = alice.remember("nightly export failed", fact_type="workflow-failure")
    assert alice.get(first.id).superseded_by == second.id  # type: ignore[union-attr]
    (learning,) = alice.reflect().learnings
    assert "2 times" in learning.text
