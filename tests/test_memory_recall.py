"""Recall: fused channels, filters, relevance fill, composite scorer, dates, answers."""

# ruff: noqa: F811 - pytest fixtures imported from test_memory_support are redefined as parameters

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from langgraph.store.base import BaseStore
from test_memory_support import (  # noqa: F401 - fixtures
    calls_of,
    embed,
    judge_model,
    make_store,
    memory,
    store,
    texts,
)

from langmem_edge.errors import ConfigurationError, InvalidInputError, LimitExceededError
from langmem_edge.memory import AgentMemory
from langmem_edge.memory.core.dates import find_window
from langmem_edge.memory.semantic.scoring import recency, relevance

LOW = {"recall": {"thinking_level": "low"}}
"""A memory that recalls at the low thinking level (no model channel unless asked)."""


def test_fused_channels_and_score_breakdown(memory: AgentMemory) -> None:
    p = memory.profile("p")
    p.remember("Prefers dark mode in every editor", key="preference.ui_theme")
    p.remember("Owns a dark blue car")
    res = p.recall("dark mode ui theme", fill=False)
    top = res.candidates[0]
    assert top.text == "Prefers dark mode in every editor"
    detail = top.breakdown.channels
    assert set(detail) == {"vector", "keyword", "key"}
    assert detail["key"].rank == 1
    assert detail["key"].contribution == pytest.approx(1.5 / (60 + 1))
    assert detail["keyword"].contribution == pytest.approx(1.0 / (60 + detail["keyword"].rank))
    assert top.breakdown.fused == pytest.approx(sum(c.contribution for c in detail.values()))
    # an explicit memory (confidence 0.9): fused x (1 + 0.25 * (0.9 - 0.5))
    assert top.breakdown.factor == pytest.approx(1.1)
    assert top.score == pytest.approx(top.breakdown.fused * 1.1)
    assert res.candidates == sorted(res.candidates, key=lambda c: -c.score)


def test_exact_key_channel(memory: AgentMemory) -> None:
    p = memory.profile("p")
    p.remember("Dark", key="preference.ui_theme")
    res = p.recall("preference.ui_theme", fill=False)
    assert texts(res) == ["Dark"]
    assert res.candidates[0].breakdown.channels["key"].raw == 2.0


def test_inactive_memories_are_dropped_from_every_channel(memory: AgentMemory) -> None:
    p = memory.profile("p")
    old = p.remember("Lives in Oslo harbour", key="home.city")
    p.remember("Lives in Bergen", key="home.city")
    forgotten = p.remember("Lives in Oslo centre, forgotten")
    p.forget(forgotten.id)
    past = datetime.now(UTC) - timedelta(days=2)
    p.remember(
        "Lives in Oslo for a while, expired", valid_from=past - timedelta(days=1), valid_until=past
    )
    for query in ["Lives in Oslo harbour", "home.city", "Oslo", old.text]:
        got = texts(p.recall(query))
        assert old.text not in got and forgotten.text not in got
        assert not any("expired" in t for t in got)


def test_confidence_floor(memory: AgentMemory) -> None:
    p = memory.profile("p")
    p.remember("Maybe likes opera", confidence=0.05)
    p.remember("Perhaps likes ballet", confidence=0.1)
    assert texts(p.recall("likes opera ballet")) == ["Perhaps likes ballet"]


def test_relevance_fill_up_to_the_limit(memory: AgentMemory) -> None:
    p = memory.profile("p")
    match = p.remember("Drives a green tractor")
    others = [p.remember(f"Unrelated note number {i}") for i in range(5)]
    res = p.recall("green tractor", limit=4)
    assert res.count == 4 == len(res.candidates)
    assert res.candidates[0].id == match.id and res.candidates[0].matched
    fills = res.candidates[1:]
    assert all(not c.matched and c.breakdown.scorer == "fill" for c in fills)
    assert {c.id for c in fills} <= {o.id for o in others}
    for c in fills:  # 0.7 * recency + 0.3 * log(access + 1), fresh and never accessed
        assert c.breakdown.relevance == pytest.approx(0.7, abs=1e-3)
        assert c.score == 0.0  # matched nothing: no score on the matched scale
    assert res.candidates[0].score > 0.0
    assert res.answer == "Drives a green tractor"  # the answer uses matched memories only
    assert p.recall("green tractor", fill=False).count == 1


def test_fill_prefers_often_used_memories(memory: AgentMemory) -> None:
    p = memory.profile("p")
    p.remember("Alpha fact")
    used = p.remember("Beta fact about boats")
    p.remember("Gamma fact")
    for _ in range(3):
        p.recall("boats", fill=False)
    assert p.get(used.id).access_count == 3
    res = p.recall("Alpha", limit=3)
    assert [c.id for c in res.candidates][1] == used.id
    assert res.candidates[1].breakdown.relevance == pytest.approx(0.7 + 0.3 * math.log(4),
                                                                  abs=1e-3)


def test_nothing_matches_gives_an_empty_answer(store: BaseStore) -> None:
    model = judge_model()
    p = AgentMemory(store, model=model, config=LOW).profile("p")
    p.remember("Owns a red bicycle")
    res = p.recall("quantum chromodynamics lecture")
    assert (res.count, res.answer, res.candidates) == (0, "", [])
    assert calls_of(model, "using only the memories") == []
    empty = AgentMemory(store).profile("empty").recall("anything")
    assert (empty.count, empty.answer) == (0, "")


def test_the_model_answers_from_matched_memories_only(store: BaseStore) -> None:
    """The fill's memories matched nothing: a model given them joined an unrelated fact."""
    model = judge_model(answer="a green tractor")
    p = AgentMemory(store, model=model, config=LOW).profile("p")
    p.remember("Drives a green tractor")
    for i in range(3):
        p.remember(f"Unrelated note number {i}")
    res = p.recall("green tractor", limit=4)
    assert res.count == 4 and sum(c.matched for c in res.candidates) == 1
    (answer_call,) = calls_of(model, "using only the memories")
    shown = "\n".join(str(m.content) for m in answer_call)
    assert "Drives a green tractor" in shown and "Unrelated note" not in shown


def test_access_count_is_bumped_on_matches_only(memory: AgentMemory) -> None:
    p = memory.profile("p")
    hit = p.remember("Collects vintage stamps")
    other = p.remember("Unrelated memo")
    res = p.recall("vintage stamps")
    assert res.candidates[0].memory.access_count == 1
    assert p.get(hit.id).access_count == 1 and p.get(hit.id).last_accessed_at is not None
    assert p.get(other.id).access_count == 0  # filled, not matched
    p.recall("stamps")
    assert p.get(hit.id).access_count == 2


def test_composite_scorer(memory: AgentMemory) -> None:
    p = memory.profile("p")
    tagged = p.remember("Enjoys hiking in the alps", tags=["outdoor"], source="turn")
    p.remember("Enjoys hiking in the city parks")
    res = p.recall("enjoys hiking", scorer="composite", tags=["outdoor"], fill=False)
    top = res.candidates[0]
    assert top.id == tagged.id
    parts = top.breakdown.composite
    assert set(parts) == {"cosine", "recency", "confidence", "tags", "source"}
    assert parts["tags"] == pytest.approx(0.1)
    assert parts["confidence"] == pytest.approx(0.15 * 0.5)
    assert parts["source"] == pytest.approx(0.05 * 0.5)
    assert parts["recency"] == pytest.approx(0.2, abs=1e-3)
    assert top.score == pytest.approx(sum(parts.values()))
    assert top.breakdown.scorer == "composite"


def test_reference_date_anchors_relative_dates(memory: AgentMemory) -> None:
    p = memory.profile("p")
    ref = datetime(2024, 5, 15, 12, tzinfo=UTC)  # a Wednesday
    p.remember("Visited the dentist", kind="event", valid_from=datetime(2024, 5, 8, tzinfo=UTC))
    p.remember("Visited the museum", kind="event", valid_from=datetime(2024, 4, 2, tzinfo=UTC))
    res = p.recall("what happened last week?", reference_date=ref, fill=False)
    assert texts(res) == ["Visited the dentist"]
    assert "temporal" in res.candidates[0].breakdown.channels
    res = p.recall("what happened last month?", reference_date=ref, fill=False)
    assert texts(res) == ["Visited the museum"]


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("last week", "2024-05-06", "2024-05-13"),
        ("this week", "2024-05-13", "2024-05-20"),
        ("yesterday", "2024-05-14", "2024-05-15"),
        ("3 days ago", "2024-05-12", "2024-05-13"),
        ("last month", "2024-04-01", "2024-05-01"),
        ("last year", "2023-01-01", "2024-01-01"),
        ("last friday", "2024-05-10", "2024-05-11"),
        ("in the past 7 days", "2024-05-09", "2024-05-16"),
    ],
)
def test_relative_date_windows(query: str, start: str, end: str) -> None:
    w = find_window(query, datetime(2024, 5, 15, 12, tzinfo=UTC))
    assert w is not None
    assert (w.start.date().isoformat(), w.end.date().isoformat()) == (start, end)
    assert find_window("what is my name", datetime(2024, 5, 15, tzinfo=UTC)) is None


def test_thinking_levels_with_a_model(store: BaseStore) -> None:
    model = judge_model(hyde="The user adopted a dog called Rex", answer="Rex")
    p = AgentMemory(store, model=model).profile("p")
    p.remember("Adopted a dog called Rex last spring")
    low = AgentMemory(store, model=model, config=LOW).profile("p").recall(
        "what is the name of my pet?", fill=False)
    assert calls_of(model, "memory note") == []
    medium = p.recall("what is the name of my pet?", fill=False)  # medium: the default
    assert len(calls_of(model, "memory note")) == 1
    assert low.count == 0  # nothing shares words or meaning with the raw query
    assert medium.count == 1 and "hyde" in medium.candidates[0].breakdown.channels
    assert medium.answer == "Rex"
    (answer_call,) = calls_of(model, "using only the memories")
    assert "Adopted a dog called Rex last spring" in str(answer_call[-1].content)


def test_use_model_false_makes_no_model_call_and_true_adds_hyde_at_low(store: BaseStore) -> None:
    model = judge_model(hyde="The user adopted a dog called Rex", answer="Rex")
    p = AgentMemory(store, model=model).profile("p")
    p.remember("Adopted a dog called Rex last spring")
    p.remember("Rex the dog loves the beach")
    off = p.recall("dog Rex", use_model=False, fill=False)
    assert model.calls == []
    assert off.count == 2 and off.answer.splitlines() == texts(off)
    on = AgentMemory(store, model=model, config=LOW).profile("p").recall(
        "what is the name of my pet?", use_model=True, fill=False)
    assert len(calls_of(model, "memory note")) == 1  # HyDE at low, since asked
    assert on.answer == "Rex"
    with pytest.raises(InvalidInputError, match="use_model"):
        p.recall("dog", use_model="no")  # type: ignore[arg-type]


def test_model_free_answer_is_the_top_texts(memory: AgentMemory) -> None:
    p = memory.profile("p")
    for i in range(7):
        p.remember(f"Sailing trip number {i}")
    res = p.recall("sailing trip", fill=False)
    assert res.count == 7
    assert res.answer.splitlines() == texts(res)[:5]


def test_contact_scoping(memory: AgentMemory) -> None:
    p = memory.profile("agent:support")
    agent = p.remember("Refunds take five days")
    bob = p.remember("Bob asked about refunds for order 17", contact="bob")
    carol = p.remember("Carol asked about refunds for order 99", contact="carol")
    res = p.recall("refunds", contact="bob", fill=False)
    assert [c.id for c in res.candidates] == [bob.id, agent.id]
    assert [c.breakdown.scope for c in res.candidates] == ["contact", "agent"]
    assert carol.id not in {c.id for c in p.recall("Carol order 99", contact="bob").candidates}
    assert [c.id for c in p.recall("refunds").candidates] == [agent.id]


def test_writer_and_kind_filters(memory: AgentMemory) -> None:
    p = memory.profile("p")
    mine = p.remember("Travel skill note: prefers aisle seats", writer="skill:travel")
    p.remember("General note: prefers aisle seats")
    p.remember("Booked aisle seats", kind="event")
    res = p.recall("aisle seats", writer="skill:travel")
    assert [c.id for c in res.candidates] == [mine.id]
    assert texts(p.recall("aisle seats", kind="event")) == ["Booked aisle seats"]


def test_tasks_of_ended_sessions_rank_lower(memory: AgentMemory) -> None:
    p = memory.profile("p")
    old = p.remember("Compare laptop prices", kind="task", session_id="s1")
    new = p.remember("Compare laptop prices", kind="task", session_id="s2")
    res = p.recall("laptop prices", session_id="s2", fill=False)
    assert [c.id for c in res.candidates] == [new.id, old.id]
    assert res.candidates[1].breakdown.factor == pytest.approx(0.5 * 1.1)  # ended x explicit
    assert res.candidates[1].score == pytest.approx(res.candidates[0].score * 0.5, rel=0.1)
    p.end_session("s2")
    ended = p.recall("laptop prices", fill=False)  # s2 ended; s1 was never marked
    assert [(c.id, c.breakdown.factor) for c in ended.candidates] == [
        (old.id, pytest.approx(1.1)), (new.id, pytest.approx(0.55))]


def test_at_returns_what_was_valid_then(memory: AgentMemory) -> None:
    p = memory.profile("p")
    t0 = datetime.now(UTC)
    p.remember("Works at Acme", key="work.employer", valid_from=t0 - timedelta(days=100))
    before_change = datetime.now(UTC)
    p.remember("Works at Globex", key="work.employer")
    trip = p.remember(
        "On a trip to Peru",
        kind="event",
        valid_from=t0 - timedelta(days=50),
        valid_until=t0 - timedelta(days=40),
    )
    then = p.at(before_change)
    assert texts(then.recall("employer works at", fill=False)) == ["Works at Acme"]
    assert texts(p.recall("employer works at", fill=False)) == ["Works at Globex"]
    assert texts(p.at(t0 - timedelta(days=45)).recall("trip Peru", fill=False)) == [trip.text]
    assert p.recall("trip Peru", fill=False).count == 0  # expired now
    assert texts(p.at(t0 - timedelta(days=200)).recall("employer", fill=False)) == []
    listed = p.at(t0 - timedelta(days=45)).list()
    assert sorted(m.text for m in listed.memories) == ["On a trip to Peru", "Works at Acme"]
    acme = p.history("work.employer")[0]
    p.at(before_change).recall("Acme")
    assert p.get(acme.id).access_count == 0  # views do not count as accesses


def test_recall_validation(memory: AgentMemory) -> None:
    p = memory.profile("p")
    with pytest.raises(InvalidInputError):
        p.recall("")
    with pytest.raises(ConfigurationError, match="thinking_level"):
        AgentMemory(memory.store, config={"recall": {"thinking_level": "extreme"}})
    with pytest.raises(InvalidInputError):
        p.recall("x", scorer="magic")
    with pytest.raises(LimitExceededError):
        p.recall("x", limit=501)
    with pytest.raises(InvalidInputError):
        p.recall("x", kind="note")


def test_list_pages_and_cursor(memory: AgentMemory) -> None:
    p = memory.profile("p")
    written = [p.remember(f"Note {i}", kind="instruction" if i % 2 else "fact") for i in range(7)]
    page = p.list(limit=3)
    assert [m.id for m in page.memories] == [w.id for w in written[:3]]
    page2 = p.list(limit=3, cursor=page.next_cursor)
    page3 = p.list(limit=3, cursor=page2.next_cursor)
    assert [m.id for m in page2.memories + page3.memories] == [w.id for w in written[3:]]
    assert page3.next_cursor is None
    inst = p.list(kind="instruction", limit=50)
    assert [m.text for m in inst.memories] == ["Note 1", "Note 3", "Note 5"]
    assert p.list(newest_first=True, limit=1).memories[0].id == written[-1].id
    with pytest.raises(LimitExceededError):
        p.list(limit=501)
    assert len(p.list(limit=500).memories) == 7


def test_summary_is_markdown_of_active_memories(memory: AgentMemory) -> None:
    p = memory.profile("user:alice")
    p.remember("Prefers dark mode", key="preference.ui_theme")
    p.remember("Prefers light mode", key="preference.ui_theme")
    p.remember("Always answer briefly", kind="instruction")
    p.remember("Bob is her brother", contact="bob")
    text = p.summary()
    assert text.startswith("# Memory of user:alice")
    assert "## Facts" in text and "## Instructions" in text and "## Contact: bob" in text
    assert "- Prefers light mode (`preference.ui_theme`, confidence 0.90)" in text
    assert "dark mode" not in text
    assert "nothing remembered" in memory.profile("new").summary().lower()


def test_scoring_helpers() -> None:
    assert recency(0, 30) == 1.0
    assert recency(30 * 86400, 30) == pytest.approx(0.5)
    assert relevance(1.0, 0, 0.7, 0.3) == pytest.approx(0.7)
    assert relevance(0.5, 9, 0.7, 0.3) == pytest.approx(0.35 + 0.3 * math.log(10))


def test_composite_cosine_for_hits_without_a_vector(store: BaseStore) -> None:
    from langmem_edge.testing import FakeEmbeddings

    p = AgentMemory(store, embeddings=FakeEmbeddings()).profile("p")
    p.remember("Water the fern every Monday", kind="task", session_id="s")  # never embedded
    res = p.recall("water the fern", scorer="composite", fill=False)
    (top,) = res.candidates
    assert set(top.breakdown.channels) == {"keyword"}
    assert top.breakdown.composite["cosine"] > 0.25  # 0.5 * cosine computed on the side


async def test_async_memory_level_twins(memory: AgentMemory) -> None:
    p = memory.profile("p")
    await p.aremember("Keeps a sourdough starter")
    await p.arecall("sourdough")
    assert await memory.aflush() == 1
    assert await memory.alist_profiles() == ["p"]
    assert await memory.areembed() == 0
    assert "sourdough" in await p.asummary()
    view = p.at(datetime.now(UTC))
    assert (await view.arecall("sourdough", fill=False)).count == 1
    assert len((await view.alist()).memories) == 1
    assert await memory.adelete_profile("p") >= 1
    assert await memory.alist_profiles() == []


def test_nearest_keys_path_ranks_as_the_search_path(make_store) -> None:
    """On a store with ``nearest_keys`` (ChromaStore) the vector channel asks for keys only;
    forcing the generic ``store.search`` path must give the same candidates and scores."""
    store = make_store()
    fast = AgentMemory(store)
    if not fast.nearest:
        pytest.skip("the store has no nearest_keys")
    p = fast.profile("p")
    for text in ["Prefers dark mode", "Drinks oat milk coffee", "Climbs on weekends",
                 "Allergic to peanuts", "Works in Lisbon", "Plays the cello"]:
        p.remember(text)
    p.remember("Visits the dentist in May", contact="bob")
    slow = AgentMemory(store)
    slow.nearest = False
    for kw in [{}, {"contact": "bob"}, {"kind": "fact"}]:
        a = p.recall("what does the user drink", fill=False, **kw)
        b = slow.profile("p").recall("what does the user drink", fill=False, **kw)
        assert any(c.breakdown.channels.get("vector") for c in a.candidates)
        assert [c.id for c in a.candidates] == [c.id for c in b.candidates]
        assert [c.breakdown.channels.get("vector") for c in a.candidates] == [
            c.breakdown.channels.get("vector") for c in b.candidates]


def test_confidence_weights_the_fused_score(memory: AgentMemory) -> None:
    p = memory.profile("p")
    turn = p.remember("Deploys fail when the registry is slow", source="turn", verify=False)
    learning = p.remember("Retry deploys later when the registry is slow, they fail",
                          source="reflection", verify=False)
    res = p.recall("deploys fail when the registry is slow", fill=False)
    by_id = {c.id: c for c in res.candidates}
    fact, lesson = by_id[turn.id].breakdown, by_id[learning.id].breakdown
    assert (fact.factor, lesson.factor) == (pytest.approx(1.0), pytest.approx(1.0875))
    # the learning ranks lower on the channels, and still comes first
    assert lesson.fused < fact.fused < lesson.fused * lesson.factor
    assert [c.id for c in res.candidates][:2] == [learning.id, turn.id]


def test_confidence_weight_zero_leaves_confidence_to_break_ties(store: BaseStore) -> None:
    memory = AgentMemory(store, config={"recall": {"confidence_weight": 0}})
    p = memory.profile("p")
    turn = p.remember("Deploys fail when the registry is slow", source="turn", verify=False)
    learning = p.remember("Retry deploys later when the registry is slow, they fail",
                          source="reflection", verify=False)
    res = p.recall("deploys fail when the registry is slow", fill=False)
    assert [c.id for c in res.candidates][:2] == [turn.id, learning.id]
    assert {c.breakdown.factor for c in res.candidates} == {1.0}
