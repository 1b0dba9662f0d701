"""The semantic write path: records, kinds, supersession, editing, forgetting, embeddings."""

# ruff: noqa: F811 - pytest fixtures imported from test_memory_support are redefined as parameters

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langgraph.store.base import BaseStore
from test_memory_support import (  # noqa: F401 - fixtures
    DIMS,
    FlakyEmbeddings,
    embed,
    make_store,
    memory,
    store,
    texts,
)

from langmem_edge.errors import InvalidInputError, LimitExceededError, NotFoundError
from langmem_edge.memory import AgentMemory, MemoryRecord
from langmem_edge.memory.config import CONFIDENCE_BY_SOURCE
from langmem_edge.testing import FakeEmbeddings


def test_record_carries_every_field(memory: AgentMemory) -> None:
    alice = memory.profile("user:alice")
    until = datetime.now(UTC) + timedelta(days=3)
    rec = alice.remember(
        "Prefers dark mode",
        key="preference.ui_theme",
        fact_type="preference",
        writer="skill:settings",
        contact="bob",
        session_id="s1",
        tags=["ui"],
        metadata={"origin": "test"},
        valid_until=until,
    )
    for name in (
        "id",
        "key",
        "text",
        "kind",
        "fact_type",
        "confidence",
        "source",
        "writer",
        "profile",
        "contact",
        "session_id",
        "tags",
        "metadata",
        "created_at",
        "valid_from",
        "valid_until",
        "superseded_by",
        "forgotten_at",
        "forgotten_reason",
        "access_count",
        "last_accessed_at",
        "embedding_status",
    ):
        assert name in MemoryRecord.model_fields, name
    assert (rec.kind, rec.fact_type, rec.source, rec.confidence) == (
        "fact",
        "preference",
        "explicit",
        0.9,
    )
    assert (rec.profile, rec.contact, rec.writer, rec.session_id) == (
        "user:alice",
        "bob",
        "skill:settings",
        "s1",
    )
    assert rec.valid_from == rec.created_at and rec.valid_until == until
    assert rec.superseded_by is None and rec.forgotten_at is None and rec.access_count == 0
    assert rec.embedding_status == "complete"
    got = alice.get(rec.id)
    assert got is not None and got.model_dump() == rec.model_dump()


@pytest.mark.parametrize(
    ("fact_type", "kind"),
    [
        ("preference", "fact"),
        ("identity", "fact"),
        ("relationship", "fact"),
        ("decision", "fact"),
        ("reflection", "fact"),
        ("event", "event"),
        ("workflow-outcome", "event"),
        ("workflow-failure", "event"),
        ("instruction", "instruction"),
        ("skill", "instruction"),
        ("task", "task"),
    ],
)
def test_fact_types_fold_into_kinds(memory: AgentMemory, fact_type: str, kind: str) -> None:
    rec = memory.profile("p").remember(f"something {fact_type}", fact_type=fact_type)
    assert rec.kind == kind


def test_kind_and_fact_type_must_agree(memory: AgentMemory) -> None:
    p = memory.profile("p")
    with pytest.raises(InvalidInputError, match="belongs to kind 'event'"):
        p.remember("x", kind="fact", fact_type="event")
    with pytest.raises(InvalidInputError, match="unknown kind"):
        p.remember("x", kind="note")
    assert p.remember("x", kind="instruction").fact_type == "instruction"
    assert p.remember("y").kind == "fact"


@pytest.mark.parametrize("source", sorted(CONFIDENCE_BY_SOURCE))
def test_confidence_defaults_by_source(memory: AgentMemory, source: str) -> None:
    rec = memory.profile("p").remember(f"fact from {source}", source=source)
    assert rec.confidence == CONFIDENCE_BY_SOURCE[source]
    assert CONFIDENCE_BY_SOURCE["explicit"] == 0.9 and CONFIDENCE_BY_SOURCE["turn"] == 0.5


def test_invalid_inputs_write_nothing(memory: AgentMemory) -> None:
    p = memory.profile("p")
    for bad in [
        dict(text=""),
        dict(text="x" * 10_001),
        dict(text="x", confidence=1.5),
        dict(text="x", source="gossip"),
        dict(text="x", tags=[f"t{i}" for i in range(33)]),
        dict(text="x", metadata={"a": object()}),
        dict(text="x", valid_from="2024-01-02", valid_until="2024-01-01"),
    ]:
        text = bad.pop("text")
        with pytest.raises(InvalidInputError):
            p.remember(text, **bad)
    with pytest.raises(LimitExceededError):
        p.remember("x" * 10_001)
    assert p.list(status="all").memories == []


def test_key_supersedes_facts_and_instructions(memory: AgentMemory) -> None:
    p = memory.profile("p")
    first = p.remember("Prefers dark mode", key="preference.ui_theme")
    second = p.remember("Prefers light mode", key="preference.ui_theme")
    third = p.remember("Prefers solarized", key="preference.ui_theme")
    chain = p.history("preference.ui_theme")
    assert [r.id for r in chain] == [first.id, second.id, third.id]
    assert [r.status for r in chain] == ["superseded", "superseded", "active"]
    assert chain[0].superseded_by == second.id and chain[1].superseded_by == third.id
    assert third.supersedes == [second.id]
    assert chain[0].superseded_at is not None
    assert texts(p.recall("preference.ui_theme")) == ["Prefers solarized"]
    i1 = p.remember("Answer in French", key="style.language", kind="instruction")
    i2 = p.remember("Answer in English", key="style.language", kind="instruction")
    assert p.get(i1.id).status == "superseded" and p.get(i2.id).status == "active"


def test_key_supersession_is_per_contact_scope(memory: AgentMemory) -> None:
    p = memory.profile("p")
    agent = p.remember("Timezone is UTC", key="identity.tz")
    bob = p.remember("Bob's timezone is CET", key="identity.tz", contact="bob")
    assert p.get(agent.id).status == "active" and p.get(bob.id).status == "active"
    assert [r.id for r in p.history("identity.tz", contact="bob")] == [bob.id]
    assert len(p.history("identity.tz")) == 2


def test_events_and_tasks_accumulate(memory: AgentMemory) -> None:
    p = memory.profile("p")
    e1 = p.remember("Went hiking", key="activity.weekend", kind="event")
    e2 = p.remember("Went swimming", key="activity.weekend", kind="event")
    t1 = p.remember("Book the flight", key="todo.trip", kind="task", session_id="s1")
    t2 = p.remember("Book the hotel", key="todo.trip", kind="task", session_id="s1")
    assert all(p.get(r.id).status == "active" for r in (e1, e2, t1, t2))


def test_task_memories_are_never_embedded(store: BaseStore, embed: FakeEmbeddings) -> None:
    p = AgentMemory(store).profile("p")
    before = embed.texts_embedded
    task = p.remember("Renew the passport before March", kind="task", session_id="s1")
    assert embed.texts_embedded == before
    assert task.embedding_status == "skipped"
    hits = store.search(("langmem_edge", "profiles", "p", "memories"), query=task.text)
    assert all(h.score is None for h in hits)  # no vector
    res = p.recall("passport renew", fill=False)
    assert texts(res) == [task.text]
    assert set(res.candidates[0].breakdown.channels) == {"keyword"}


def test_update_writes_a_new_embedded_version(store: BaseStore, embed: FakeEmbeddings) -> None:
    p = AgentMemory(store).profile("p")
    old = p.remember("Lives in Paris", key="identity.city", tags=["home"])
    before = embed.texts_embedded
    new = p.update(old.id, text="Lives in Lyon")
    assert embed.texts_embedded > before  # the new text was embedded
    assert new.id != old.id and new.key == "identity.city" and new.tags == ["home"]
    assert new.supersedes == [old.id]
    assert [r.text for r in p.history("identity.city")] == ["Lives in Paris", "Lives in Lyon"]
    assert [r.text for r in p.history(old.id)] == ["Lives in Paris", "Lives in Lyon"]
    assert p.get(old.id).superseded_by == new.id
    assert texts(p.recall("where does the user live, Lyon or Paris?", fill=False)) == [
        "Lives in Lyon"
    ]
    with pytest.raises(InvalidInputError, match="superseded"):
        p.update(old.id, text="again")
    with pytest.raises(NotFoundError):
        p.update("0" * 32, text="nothing")
    with pytest.raises(TypeError, match="profile"):
        p.update(new.id, profile="other")  # type: ignore[call-arg]


def test_update_without_key_chains_by_pointer(memory: AgentMemory) -> None:
    p = memory.profile("p")
    a = p.remember("Favourite colour is blue")
    b = p.update(a.id, text="Favourite colour is green")
    c = p.update(b.id, confidence=0.7)
    assert [r.id for r in p.history(b.id)] == [a.id, b.id, c.id]
    assert c.confidence == 0.7 and c.text == "Favourite colour is green"


def test_forget_keeps_the_row_but_never_recalls_it(memory: AgentMemory) -> None:
    p = memory.profile("p")
    rec = p.remember("Allergic to peanuts", key="identity.allergy")
    gone = p.forget(rec.id, reason="user asked")
    assert gone.status == "forgotten" and gone.forgotten_reason == "user asked"
    assert gone.forgotten_at is not None
    assert p.recall("peanuts allergy").count == 0
    assert p.recall("identity.allergy").count == 0
    assert p.history("identity.allergy")[0].status == "forgotten"
    assert p.list().memories == [] and len(p.list(status="forgotten").memories) == 1
    assert p.forget(rec.id).forgotten_reason == "user asked"  # idempotent
    with pytest.raises(NotFoundError):
        p.forget("0" * 32)


def test_delete_removes_the_row(memory: AgentMemory) -> None:
    p = memory.profile("p")
    rec = p.remember("Owns a red bicycle")
    assert p.delete(rec.id) is True
    assert p.get(rec.id) is None and p.delete(rec.id) is False
    assert p.recall("red bicycle").count == 0
    assert p.list(status="all").memories == []


def test_failed_embedding_is_stored_pending_then_reembedded(make_store) -> None:
    flaky = FlakyEmbeddings(DIMS)
    store = make_store(embed=flaky)
    memory = AgentMemory(store)
    p = memory.profile("p")
    flaky.failing = True
    rec = p.remember("The wifi password is on the fridge", key="home.wifi")
    assert rec.embedding_status == "pending"
    assert p.get(rec.id).embedding_status == "pending"
    res = p.recall("wifi password")  # keyword channel; the vector channel fails quietly
    assert texts(res) == [rec.text]
    assert memory.stats().by_embedding_status == {"pending": 1}
    assert memory.reembed() == 0  # still failing: nothing embedded (attempt 2 of 3)
    flaky.failing = False
    assert memory.reembed() == 1
    assert p.get(rec.id).embedding_status == "complete"
    res = p.recall("wifi password")
    assert "vector" in res.candidates[0].breakdown.channels
    assert memory.reembed() == 0


def test_reembed_gives_up_after_max_attempts(make_store) -> None:
    flaky = FlakyEmbeddings(DIMS)
    memory = AgentMemory(make_store(embed=flaky))
    p = memory.profile("p")
    flaky.failing = True
    rec = p.remember("Plays the cello")
    assert memory.reembed() == 0  # attempt 2
    assert p.get(rec.id).embedding_status == "pending"
    assert memory.reembed() == 0  # attempt 3: gives up
    assert p.get(rec.id).embedding_status == "failed"
    assert p.recall("cello").count == 1
    assert p.forget(rec.id).status == "forgotten"  # a rewrite needs no vector while down
    assert p.get(rec.id).status == "forgotten"


def test_store_without_vector_index(make_store) -> None:
    memory = AgentMemory(make_store(index=False))
    p = memory.profile("p")
    rec = p.remember("Likes jazz", key="preference.music")
    assert rec.embedding_status == "skipped"
    assert texts(p.recall("jazz")) == ["Likes jazz"]
    assert texts(p.recall("music preference")) == ["Likes jazz"]


def test_stats_by_kind_status_and_profile(memory: AgentMemory) -> None:
    a, b = memory.profile("a"), memory.profile("b")
    a.remember("x1", key="k")
    a.remember("x2", key="k")
    a.remember("ev", kind="event")
    b.remember("task", kind="task")
    s = memory.stats()
    assert s.total == 4
    assert s.by_kind == {"fact": 2, "event": 1, "task": 1}
    assert s.by_status == {"active": 3, "superseded": 1}
    assert s.profiles["a"].by_status == {"active": 2, "superseded": 1}
    assert s.profiles["b"].by_embedding_status == {"skipped": 1}


def test_end_session_marks_tasks(memory: AgentMemory) -> None:
    p = memory.profile("p")
    t = p.remember("Call the plumber", kind="task", session_id="s1")
    assert p.end_session("s1") == 1 and p.end_session("s1") == 0
    assert p.get(t.id).session_ended_at is not None


async def test_async_twins(memory: AgentMemory) -> None:
    p = memory.profile("p")
    rec = await p.aremember("Drinks oat milk", key="preference.milk")
    new = await p.aupdate(rec.id, text="Drinks soy milk")
    assert [r.id for r in await p.ahistory("preference.milk")] == [rec.id, new.id]
    assert (await p.aget(new.id)).text == "Drinks soy milk"
    assert (await p.arecall("soy milk", fill=False)).count == 1
    assert len((await p.alist(status="all")).memories) == 2
    await p.aforget(new.id)
    assert (await p.arecall("soy milk")).count == 0
    assert await p.adelete(new.id) is True
    assert (await memory.astats()).total == 1
    with pytest.raises(TypeError, match="unexpected keyword"):
        await p.aremember("x", colour="red")  # type: ignore[call-arg]


# -- read-modify-write against a concurrent delete (issue 11, defect 1) -----------------------


def _delete_after_read(monkeypatch: pytest.MonkeyPatch, store: BaseStore, target: str,
                       delete: Any) -> list[bool]:
    """Patch ``store``'s class so that right after the first batch that reads ``target``
    (a ``GetOp`` of its id, or a search of the memories that returns it), ``delete()`` runs:
    another process deleting the memory between this process's read and its write. Returns
    ``[fired]``."""
    from langgraph.store.base import GetOp, SearchOp

    original = type(store).batch
    fired = [False]

    def reads(op: Any, result: Any) -> bool:
        if isinstance(op, GetOp):
            return op.key == target and op.namespace[-1] == "memories"
        return (isinstance(op, SearchOp) and op.namespace_prefix[-1:] == ("memories",)
                and any(it.key == target for it in result))

    def after(ops: list[Any], out: list[Any]) -> None:
        if not fired[0] and any(reads(op, r) for op, r in zip(ops, out, strict=True)):
            fired[0] = True
            delete()

    def batch(self: Any, ops: Any) -> Any:
        ops = list(ops)
        out = original(self, ops)
        after(ops, out)
        return out

    monkeypatch.setattr(type(store), "batch", batch)
    if hasattr(type(store), "batch_vectors"):  # a profile's read, vectors with its rows
        with_vectors = type(store).batch_vectors

        def batch_vectors(self: Any, ops: Any) -> Any:
            ops = list(ops)
            out, vectors = with_vectors(self, ops)
            after(ops, out)
            return out, vectors

        monkeypatch.setattr(type(store), "batch_vectors", batch_vectors)
    return fired


def _two(make_store: Any, **kw: Any) -> tuple[AgentMemory, AgentMemory, BaseStore]:
    store = make_store(path="shared", **kw)
    return AgentMemory(store), AgentMemory(make_store(path="shared", **kw)), store


def _gone_for_good(make_store: Any, memory_id: str, query: str, **kw: Any) -> None:
    fresh = AgentMemory(make_store(path="shared", **kw)).profile("p")  # a new process
    assert fresh.get(memory_id) is None
    assert all(m.id != memory_id for m in fresh.list(status="all").memories)
    assert fresh.recall(query).count == 0


def test_forget_never_brings_back_a_memory_deleted_meanwhile(
        make_store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, store = _two(make_store)
    rec = a.profile("p").remember("Builds model railways")
    b.profile("p").list()
    fired = _delete_after_read(monkeypatch, store, rec.id,
                               lambda: b.profile("p").delete(rec.id))
    a.profile("p").forget(rec.id, reason="outdated")
    assert fired[0]
    monkeypatch.undo()
    _gone_for_good(make_store, rec.id, "model railways")
    assert a.profile("p").get(rec.id) is None


def test_end_session_never_brings_back_a_task_deleted_meanwhile(
        make_store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, store = _two(make_store)
    rec = a.profile("p").remember("Book the model railway fair", kind="task", session_id="s1")
    b.profile("p").list()
    fired = _delete_after_read(monkeypatch, store, rec.id,
                               lambda: b.profile("p").delete(rec.id))
    a.profile("p").end_session("s1")
    assert fired[0]
    monkeypatch.undo()
    _gone_for_good(make_store, rec.id, "model railway fair")


def test_reembed_never_brings_back_a_memory_deleted_meanwhile(
        make_store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    flaky = FlakyEmbeddings()
    a, b, store = _two(make_store, embed=flaky)
    flaky.failing = True
    rec = a.profile("p").remember("Builds model railways")
    assert rec.embedding_status == "pending"
    flaky.failing = False
    a.profile("p").list()  # a's own index re-reads the failed first attempt once
    b.profile("p").list()
    fired = _delete_after_read(monkeypatch, store, rec.id,
                               lambda: b.profile("p").delete(rec.id))
    a.reembed(profile="p")
    assert fired[0]
    monkeypatch.undo()
    _gone_for_good(make_store, rec.id, "model railways", embed=flaky)


def test_supersession_never_brings_back_a_memory_deleted_meanwhile(
        make_store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, store = _two(make_store)
    old = a.profile("p").remember("Lives in Paris", key="home.city")
    b.profile("p").list()
    fired = _delete_after_read(monkeypatch, store, old.id,
                               lambda: b.profile("p").delete(old.id))
    new = a.profile("p").remember("Lives in Lyon", key="home.city")
    assert fired[0]
    monkeypatch.undo()
    fresh = AgentMemory(make_store(path="shared")).profile("p")
    assert fresh.get(old.id) is None
    assert [m.id for m in fresh.list(status="all").memories] == [new.id]
