"""Write-time verification: the decision model, the model-free rule, the switches."""

# ruff: noqa: F811 - pytest fixtures imported from test_memory_support are redefined as parameters

from __future__ import annotations

import logging

import pytest
from langgraph.store.base import BaseStore
from test_memory_support import (  # noqa: F401 - fixtures
    calls_of,
    embed,
    judge_model,
    make_store,
    memory,
    parse_verification,
    store,
)

from langmem_edge.memory import AgentMemory
from langmem_edge.testing import ScriptedChatModel

VERIFY = "long-term memory"

SINGAPORE = [
    "The user lives in Singapore",
    "User lives in Singapore now",
    "The user currently lives in Singapore",
    "The user lives in Singapore these days",
    "The user now lives in Singapore",
    "The user lives in sunny Singapore",
    "The user has lived in Singapore for years and lives there",
    "The user lives and works in Singapore",
    "The user still lives in Singapore",
    "Singapore is where the user lives",
]


def same_city(new: str, old: str) -> tuple[float, bool]:
    both = "singapore" in new.lower() and "singapore" in old.lower()
    return (0.95 if both else 0.0), False


def test_ten_reworded_statements_leave_one_active_memory_and_a_chain(store: BaseStore) -> None:
    model = judge_model(same_city)
    p = AgentMemory(store, model=model).profile("user:alice")
    p.remember("The user has a cat named Miso")  # unrelated: never judged as replaced
    written = [p.remember(text) for text in SINGAPORE]
    active = [m for m in p.list().memories if "Singapore" in m.text]
    assert [m.text for m in active] == [SINGAPORE[-1]]
    chain = p.history(written[-1].id)
    assert [m.text for m in chain] == SINGAPORE
    assert all(m.status == "superseded" for m in chain[:-1])
    assert all(chain[i].superseded_by == chain[i + 1].id for i in range(9))
    assert p.recall("where does the user live?").answer == "the answer"
    assert len(calls_of(model, VERIFY)) == 9  # the first statement had nothing to judge


@pytest.mark.parametrize(("p_replace", "superseded"), [(0.75, True), (0.74, False)])
def test_replace_threshold(store: BaseStore, p_replace: float, superseded: bool) -> None:
    model = judge_model(lambda new, old: (p_replace, False))
    p = AgentMemory(store, model=model).profile("p")
    old = p.remember("The user likes tea")
    new = p.remember("The user likes coffee")
    assert (p.get(old.id).status == "superseded") is superseded
    assert new.supersedes == ([old.id] if superseded else [])


def test_a_json_text_reply_is_parsed(store: BaseStore) -> None:
    model = judge_model(lambda new, old: (0.9, False), as_text=True)
    p = AgentMemory(store, model=model).profile("p")
    old = p.remember("The user likes tea")
    p.remember("The user likes coffee")
    assert p.get(old.id).status == "superseded"


def test_contradiction_is_logged_and_both_kept(
    store: BaseStore, caplog: pytest.LogCaptureFixture
) -> None:
    model = judge_model(lambda new, old: (0.2, True))
    p = AgentMemory(store, model=model).profile("p")
    old = p.remember("The user likes tea")
    with caplog.at_level(logging.INFO, logger="langmem_edge.memory.semantic.write"):
        new = p.remember("The user likes coffee")
    assert new.contradicts == [old.id]
    assert p.get(old.id).status == "active" and p.get(new.id).status == "active"
    assert any("contradicts" in r.getMessage() and old.id in r.getMessage() for r in caplog.records)


def test_at_most_three_similar_candidates_are_judged(store: BaseStore) -> None:
    model = judge_model()
    p = AgentMemory(store, model=model).profile("p")
    for colour in ["red", "blue", "green", "yellow", "purple"]:
        p.remember(f"The user likes the colour {colour}", verify=False)
    p.remember("Meeting notes about quarterly budgets", verify=False)
    p.remember("The user likes the colour orange")
    (call,) = calls_of(model, VERIFY)
    new, existing = parse_verification(call)
    assert new == "The user likes the colour orange"
    assert len(existing) == 3 and all("colour" in e for e in existing)


def test_dissimilar_memories_are_not_judged(store: BaseStore) -> None:
    model = judge_model(lambda new, old: (1.0, False))
    p = AgentMemory(store, model=model).profile("p")
    old = p.remember("The user owns a sailing boat")
    p.remember("Quarterly budget review is due")  # cosine < 0.6: no call at all
    assert calls_of(model, VERIFY) == []
    assert p.get(old.id).status == "active"


def test_tasks_skip_verification(store: BaseStore) -> None:
    model = judge_model(lambda new, old: (1.0, False))
    p = AgentMemory(store, model=model).profile("p")
    old = p.remember("Book the flight to Oslo", kind="task", session_id="s")
    p.remember("Book the flight to Oslo today", kind="task", session_id="s")
    p.remember("Book the flight to Oslo", key="note.k")
    assert len(calls_of(model, VERIFY)) == 0  # task candidates are not judged either
    assert p.get(old.id).status == "active"


def test_one_switch_disables_verification(make_store) -> None:
    model = judge_model(lambda new, old: (1.0, False))
    p = AgentMemory(make_store(), model=model, config={"verification": {"enabled": False}}).profile(
        "p"
    )
    old = p.remember("The user likes tea")
    p.remember("The user likes coffee")
    assert calls_of(model, VERIFY) == [] and p.get(old.id).status == "active"
    p.remember("The user likes green tea", verify=True)  # per-call override
    assert len(calls_of(model, VERIFY)) == 1


def test_failing_model_falls_back_to_the_rule(
    store: BaseStore, caplog: pytest.LogCaptureFixture
) -> None:
    model = ScriptedChatModel(responses=["this is not json"])
    p = AgentMemory(store, model=model).profile("p")
    old = p.remember("The user lives in Singapore")
    with caplog.at_level(logging.WARNING):
        p.remember("the user lives in Singapore.")  # a restatement: the rule replaces it
    assert p.get(old.id).status == "superseded"
    assert any("model-free rule" in r.getMessage() for r in caplog.records)


def test_model_free_rule_restatement_supersedes(memory: AgentMemory) -> None:
    p = memory.profile("p")
    old = p.remember("The user lives in Singapore")
    new = p.remember("the user lives in Singapore.")
    assert p.get(old.id).status == "superseded" and new.supersedes == [old.id]


def test_model_free_rule_keeps_different_facts(memory: AgentMemory) -> None:
    p = memory.profile("p")
    tea = p.remember("The user likes tea")
    coffee = p.remember("The user likes coffee")
    assert p.get(tea.id).status == "active" and coffee.supersedes == []
    assert coffee.contradicts == []


def test_model_free_rule_logs_negations(
    memory: AgentMemory, caplog: pytest.LogCaptureFixture
) -> None:
    p = memory.profile("p")
    old = p.remember("The user likes cats")
    with caplog.at_level(logging.INFO, logger="langmem_edge.memory.semantic.write"):
        new = p.remember("The user no longer likes cats")
    assert new.contradicts == [old.id] and p.get(old.id).status == "active"
    assert any("contradicts" in r.getMessage() for r in caplog.records)


def test_verification_only_judges_the_same_scope(store: BaseStore) -> None:
    model = judge_model(lambda new, old: (1.0, False))
    p = AgentMemory(store, model=model).profile("p")
    agent = p.remember("The user likes tea")
    p.remember("The user likes tea a lot", contact="bob")
    assert calls_of(model, VERIFY) == []
    assert p.get(agent.id).status == "active"


def test_encrypted_memories_skip_verification(make_store) -> None:
    from langmem_edge.memory import generate_encryption_key

    model = judge_model(lambda new, old: (1.0, False))
    p = AgentMemory(make_store(), model=model, encryption_key=generate_encryption_key()).profile(
        "p"
    )
    old = p.remember("The user likes tea")
    p.remember("The user likes tea", encrypted=True)
    assert calls_of(model, VERIFY) == [] and p.get(old.id).status == "active"


@pytest.mark.parametrize("new_key", ["theme.secondary", None])
def test_a_restatement_never_replaces_a_memory_held_under_another_key(
    memory: AgentMemory, new_key: str | None
) -> None:
    """Regression (found by the concurrency suite: "value p1t1i21 cedar" restated "value
    p0t0i17 cedar" at cosine 0.91 under fake embeddings, so a write under one key superseded
    the active memory of another, and that key was left with none)."""
    p = memory.profile("p")
    held = p.remember("The user likes the colour blue", key="theme.primary")
    new = p.remember("the user likes the colour blue.", key=new_key)
    assert p.get(held.id).status == "active" and new.supersedes == []
    assert [m.id for m in p.history("theme.primary")] == [held.id]


def test_a_model_verdict_never_replaces_a_memory_held_under_another_key(
    store: BaseStore,
) -> None:
    model = judge_model(lambda new, old: (1.0, False))
    p = AgentMemory(store, model=model).profile("p")
    keyed = p.remember("The user likes tea", key="drink")
    loose = p.remember("The user enjoys tea")
    new = p.remember("The user likes tea a lot", key="drink.evening")
    assert p.get(keyed.id).status == "active" and p.get(loose.id).status == "superseded"
    assert new.supersedes == [loose.id]
