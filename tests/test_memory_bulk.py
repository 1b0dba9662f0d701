"""Bulk writes: ``Profile.remember_many`` / ``aremember_many`` (``semantic/bulk.py``)."""

# ruff: noqa: F811 - pytest fixtures imported from test_memory_support are redefined as parameters

from __future__ import annotations

from typing import Any

import pytest
from langgraph.store.base import BaseStore
from test_memory_support import (  # noqa: F401 - fixtures
    FlakyEmbeddings,
    embed,
    judge_model,
    make_store,
    memory,
    store,
    texts,
)

from langmem_edge.errors import InvalidInputError, LimitExceededError
from langmem_edge.memory import AgentMemory
from langmem_edge.testing import FakeEmbeddings

HOBBIES = ["Builds model railways", "Sails a wooden boat", "Keeps bees on the roof",
           "Plays the cello on Sundays", "Grows chillies on the balcony"]


class CountingStore(BaseStore):
    """Forwards to another store and counts its ``batch`` calls."""

    def __init__(self, inner: BaseStore) -> None:
        self.inner = inner
        self.index_config = getattr(inner, "index_config", None)
        self.batches = 0

    def batch(self, ops: Any) -> list[Any]:
        self.batches += 1
        return self.inner.batch(ops)

    async def abatch(self, ops: Any) -> list[Any]:
        self.batches += 1
        return await self.inner.abatch(ops)


def test_records_are_written_and_recalled(memory: AgentMemory) -> None:
    p = memory.profile("user:alice")
    got = p.remember_many([*HOBBIES[:3], {"text": HOBBIES[3], "kind": "event", "tags": ["music"]},
                           {"text": HOBBIES[4], "key": "hobby.garden", "writer": "import"}],
                          writer="backfill")
    assert [m.text for m in got] == HOBBIES
    assert [m.writer for m in got] == ["backfill"] * 4 + ["import"]
    assert got[3].kind == "event" and got[3].tags == ["music"]
    assert all(m.source == "explicit" and m.confidence == 0.9 for m in got)
    assert all(m.embedding_status == "complete" for m in got)
    assert len({m.id for m in got}) == 5 and [m.id for m in got] == sorted(m.id for m in got)
    assert [m.text for m in p.list().memories] == HOBBIES
    assert p.get(got[1].id).text == HOBBIES[1]
    assert HOBBIES[1] in texts(p.recall("wooden boat"))
    assert HOBBIES[4] in texts(p.recall("hobby garden"))


def test_keys_supersede_as_remember_would(make_store: Any) -> None:
    items = [{"text": "Lives in Paris", "key": "home.city"},
             {"text": "Likes tea", "key": "drink"},
             {"text": "Lives in Lyon", "key": "home.city"},
             {"text": "Went to Rome", "key": "home.city", "kind": "event"},  # events accumulate
             {"text": "Lives in Nice", "key": "home.city"}]
    memory = AgentMemory(make_store(), config={"limits": {"bulk_chunk": 2}})  # chunks cross
    one, bulk = memory.profile("one"), memory.profile("bulk")
    for p in (one, bulk):
        p.remember("Lives in Berlin", key="home.city")
    for item in items:
        one.remember(**item)
    bulk.remember_many(items)

    def shape(p: Any) -> list[tuple[str, str, str | None, list[str]]]:
        recs = p.list(status="all").memories
        text_of = {m.id: m.text for m in recs}
        return [(m.text, m.status, text_of.get(m.superseded_by),
                 [text_of[i] for i in m.supersedes]) for m in recs]

    assert shape(bulk) == shape(one)
    assert [m.text for m in bulk.history("home.city")] == [
        "Lives in Berlin", "Lives in Paris", "Lives in Lyon", "Went to Rome", "Lives in Nice"]
    assert [m.text for m in bulk.list().memories] == ["Likes tea", "Went to Rome",
                                                      "Lives in Nice"]


def test_contact_scoping(memory: AgentMemory) -> None:
    p = memory.profile("p")
    p.remember("Agent-wide: answers in English", key="reply.language")
    p.remember_many([{"text": "Bob wants French", "key": "reply.language"},
                     {"text": "Carol wants Dutch", "key": "reply.language", "contact": "carol"},
                     {"text": "Bob's dog is Rex", "contact": None}], contact="bob")
    active = {(m.contact, m.text) for m in p.list().memories}
    assert active == {(None, "Agent-wide: answers in English"), ("bob", "Bob wants French"),
                      ("carol", "Carol wants Dutch"), (None, "Bob's dog is Rex")}
    assert "Carol wants Dutch" not in texts(p.recall("reply language", contact="bob"))
    assert "Bob wants French" in texts(p.recall("reply language", contact="bob"))


@pytest.mark.parametrize(("bad", "message"), [
    ({"text": "ok", "kind": "opinion"}, "items[2]: unknown kind"),
    ({"text": "ok", "colour": "red"}, "items[2] has unknown fields ['colour']"),
    ({"key": "x"}, "items[2] has no 'text'"),
    (42, "items[2] must be a text or a dict, got int"),
    ("", "items[2]: text"),
    ({"text": "ok", "confidence": 2}, "items[2]: confidence"),
])
def test_a_bad_item_is_named_and_nothing_is_written(memory: AgentMemory, bad: Any,
                                                    message: str) -> None:
    p = memory.profile("p")
    with pytest.raises(InvalidInputError, match=message.replace("[", r"\[").replace("]", r"\]")
                       .replace("(", r"\(")):
        p.remember_many(["fine", "also fine", bad, "never reached"])
    assert p.list(status="all").memories == []
    assert AgentMemory(memory.store).profile("p").list(status="all").memories == []


def test_limits(memory: AgentMemory) -> None:
    p = AgentMemory(memory.store, config={"limits": {"max_bulk_items": 3}}).profile("p")
    with pytest.raises(LimitExceededError, match="at most 3"):
        p.remember_many(["a", "b", "c", "d"])
    with pytest.raises(InvalidInputError, match="list of texts or dicts"):
        p.remember_many("one text")  # type: ignore[arg-type]
    assert p.remember_many([]) == []


def test_store_batches_per_chunk_not_per_memory(make_store: Any) -> None:
    store = CountingStore(make_store())
    memory = AgentMemory(store, config={"limits": {"bulk_chunk": 4}})

    def cost(name: str, n: int, *, keyed: bool = False) -> int:
        p = memory.profile(name)
        p.remember("warm the index up")
        before = store.batches
        p.remember_many([{"text": f"Memory number {i} of {name}",
                          **({"key": f"fact.k{i}"} if keyed else {})} for i in range(n)])
        return store.batches - before

    one, two, four = cost("a", 4), cost("b", 8), cost("c", 16)
    assert four - two == 2 * (two - one)  # linear in chunks
    assert two - one <= 5  # sync probe + three protocol batches (+ a fresh read when needed)
    # keyed facts: their keys settled (racing writers) with one more sync probe a chunk
    assert cost("k", 8, keyed=True) - two == 2
    single = memory.profile("d")
    single.remember("warm")
    before = store.batches
    for i in range(4):
        single.remember(f"one at a time {i}")
    assert store.batches - before >= 3 * 4 > one


def test_a_fresh_process_and_a_running_reader_see_them(make_store: Any) -> None:
    a, b = AgentMemory(make_store(path="shared")), AgentMemory(make_store(path="shared"))
    pa, pb = a.profile("p"), b.profile("p")
    pa.remember("Prefers dark mode", key="ui.theme")
    assert [m.text for m in pb.list().memories] == ["Prefers dark mode"]  # b is running
    pa.remember_many([{"text": "Prefers light mode", "key": "ui.theme"}, *HOBBIES])
    assert [m.text for m in pb.list().memories] == ["Prefers light mode", *HOBBIES]
    fresh = AgentMemory(make_store(path="shared")).profile("p")
    assert [m.text for m in fresh.list().memories] == ["Prefers light mode", *HOBBIES]
    assert [m.text for m in fresh.history("ui.theme")] == ["Prefers dark mode",
                                                          "Prefers light mode"]
    assert HOBBIES[2] in texts(fresh.recall("bees on the roof"))


def test_a_failed_embedding_stores_the_chunk_pending(make_store: Any) -> None:
    flaky = FlakyEmbeddings()
    memory = AgentMemory(make_store(embed=flaky))
    p = memory.profile("p")
    flaky.failing = True
    got = p.remember_many(HOBBIES[:3])
    assert [m.embedding_status for m in got] == ["pending"] * 3
    assert HOBBIES[0] in texts(p.recall("model railways"))  # keyword channel
    flaky.failing = False
    assert memory.reembed() == 3
    assert {m.embedding_status for m in p.list().memories} == {"complete"}


def test_tasks_and_encrypted_items_are_not_embedded(make_store: Any) -> None:
    embed = FakeEmbeddings()
    memory = AgentMemory(make_store(embed=embed), encryption_key=b"k" * 32)
    got = memory.profile("p").remember_many([
        {"text": "Finish the report", "kind": "task", "session_id": "s1"},
        {"text": "PIN is 1234", "encrypted": True}, "Plain fact"])
    assert [m.embedding_status for m in got] == ["skipped", "skipped", "complete"]
    assert memory.profile("p").get(got[1].id).text == "PIN is 1234"


def test_verify_judges_against_stored_memories(store: BaseStore) -> None:
    def same_city(new: str, old: str) -> tuple[float, bool]:
        both = "singapore" in new.lower() and "singapore" in old.lower()
        return (0.95 if both else 0.0), False

    p = AgentMemory(store, model=judge_model(same_city)).profile("p")
    old = p.remember("The user lives in Singapore", verify=False)
    kept, new = p.remember_many(["The user has a cat", "The user now lives in Singapore"])
    assert p.get(old.id).status == "active"  # verification is off by default
    p.remember_many(["The user still lives in Singapore"], verify=True)
    assert p.get(old.id).status == "superseded" and p.get(new.id).status == "superseded"
    assert p.get(kept.id).status == "active"


async def test_async_twin(make_store: Any) -> None:
    memory = AgentMemory(make_store())
    p = memory.profile("p")
    got = await p.aremember_many(HOBBIES[:2], session_id="s9")
    assert [m.session_id for m in got] == ["s9", "s9"]
    assert [m.text for m in (await p.alist()).memories] == HOBBIES[:2]
