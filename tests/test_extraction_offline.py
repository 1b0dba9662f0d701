"""Rule-based extraction, the offline check, extractive summaries and BM25."""

from __future__ import annotations

from datetime import UTC, datetime

from langmem_edge.memory.core.tokens import estimate_tokens
from langmem_edge.memory.episodic.extraction import StoredMessage
from langmem_edge.memory.episodic.rules import (
    analyze,
    extractive_summary,
    rule_based_memories,
    supported,
)

WHEN = datetime(2024, 6, 12, 15, 0, tzinfo=UTC)  # a Wednesday

CONVERSATION = [
    ("user", "Hi! My name is Priya and I live in Toronto."),
    ("assistant", "Nice to meet you, Priya! You must love the winters there."),
    ("user", "Ha, not really. I'm a vegetarian, and I love spicy Thai food."),
    ("user", "My husband is Arjun. He works at a bank."),
    ("user", "From now on, please reply in French."),
    ("assistant", "D'accord! Comment puis-je vous aider ?"),
    ("user", "I have a dentist appointment on June 20, 2024."),
    ("user", "I went hiking with my sister Meera yesterday."),
    ("user", "Remind me to book the flights to Lisbon by Friday."),
    ("user", "If I lived in Paris I would love croissants."),
    ("user", "Do I like jazz?"),
    ("user", "We decided to paint the kitchen blue."),
    ("user", "My favourite movie is Spirited Away."),
    ("user", "I can't stand loud music."),
]


def stored(conversation: list[tuple[str, str]]) -> list[StoredMessage]:
    return [
        StoredMessage(
            id=f"m{i}",
            session_id="s",
            role=role,
            content=content,  # type: ignore
            seq=i,
            ts=WHEN,
        )
        for i, (role, content) in enumerate(conversation)
    ]


def extracted() -> dict[str, object]:
    mems = rule_based_memories(stored(CONVERSATION), source="turn", confidence=0.5, session_id="s")
    return {m.text: m for m in mems}


def test_finds_what_a_person_would_name() -> None:
    found = extracted()
    expected = {
        "The user's name is Priya.": ("identity", "identity.name", ["m0"]),
        "The user lives in Toronto.": ("identity", "identity.location", ["m0"]),
        "The user is vegetarian.": ("preference", "preference.diet", ["m2"]),
        "The user loves spicy Thai food.": ("preference", None, ["m2"]),
        "The user's husband is Arjun.": ("relationship", "relationship.husband", ["m3"]),
        "The user has a dentist appointment on June 20, 2024.": ("event", None, ["m6"]),
        "The user went hiking with the user's sister Meera yesterday.": ("event", None, ["m7"]),
        "The user's sister is Meera.": ("relationship", None, ["m7"]),
        "The user needs to book the flights to Lisbon by Friday.": ("task", None, ["m8"]),
        "The user decided to paint the kitchen blue.": ("decision", None, ["m11"]),
        "The user's favourite movie is Spirited Away.": (
            "preference",
            "preference.favorite_movie",
            ["m12"],
        ),
        "The user dislikes loud music.": ("preference", None, ["m13"]),
    }
    instruction = [m for m in found.values() if m.fact_type == "instruction"]  # type: ignore
    assert len(instruction) == 1
    assert instruction[0].text == "From now on, reply in French."  # type: ignore[attr-defined]
    assert instruction[0].key == "instruction.language"  # type: ignore[attr-defined]
    for text, spec in expected.items():
        if spec is None:
            continue
        assert text in found, f"missing {text!r}; got {sorted(found)}"
        mem = found[text]
        assert (mem.fact_type, mem.key, mem.source_message_ids) == spec  # type: ignore
    assert found["The user has a dentist appointment on June 20, 2024."].valid_from == (  # type: ignore
        datetime(2024, 6, 20, tzinfo=UTC)
    )
    assert found["The user went hiking with the user's sister Meera yesterday."].valid_from == (  # type: ignore
        datetime(2024, 6, 11, tzinfo=UTC)
    )
    assert (
        "date:by friday"
        in found[  # weekday dates stay unresolved, kept as a tag
            "The user needs to book the flights to Lisbon by Friday."
        ].tags
    )  # type: ignore


def test_ignores_assistant_questions_and_hypotheticals() -> None:
    found = extracted()
    joined = " ".join(found)
    assert "winters" not in joined  # the assistant's guess
    assert "croissants" not in joined and "Paris" not in joined  # hypothetical
    assert "jazz" not in joined  # a question
    assert len(found) == 13


def test_kinds_and_cap() -> None:
    mems = rule_based_memories(
        stored(CONVERSATION),
        source="pre-compaction",
        confidence=0.6,
        session_id="s",
        kinds=frozenset({"fact"}),
        max_items=3,
    )
    assert len(mems) == 3 and {m.kind for m in mems} == {"fact"}
    assert {m.confidence for m in mems} == {0.6}


def test_more_patterns() -> None:
    convo = [
        ("user", "Call me Sam. I'm 34 years old and I work as a nurse."),
        ("user", "I moved to Berlin in 2021. Tom is my boss."),
        ("user", "Always use metric units. TODO: renew the car insurance."),
        ("user", "I'm allergic to peanuts. I'd rather take the train."),
        ("user", "Never mind."),
    ]
    found = {
        m.text: m
        for m in rule_based_memories(stored(convo), source="turn", confidence=0.5, session_id="s")
    }
    assert found["The user wants to be called Sam."].key == "identity.preferred_name"
    assert found["The user is 34 years old."].key == "identity.age"
    assert found["The user works as nurse."].key == "identity.occupation"
    assert found["The user moved to Berlin in 2021."].key == "identity.location"
    assert found["The user's boss is Tom."].key == "relationship.boss"
    assert found["Always use metric units."].fact_type == "instruction"
    assert found["The user needs to renew the car insurance."].kind == "task"
    assert found["The user is allergic to peanuts."].fact_type == "identity"
    assert found["The user would rather take the train."].fact_type == "preference"
    assert not any("mind" in t for t in found)


def test_offline_check_needs_the_words_in_the_source() -> None:
    assert supported("The user lives in Toronto.", ["I live in Toronto"])
    assert not supported("The user lives in Montreal.", ["I live in Toronto"])
    assert supported("The user's name is Priya.", ["my name is Priya"])


def test_extractive_summary_keeps_salient_sentences_within_budget() -> None:
    messages = stored(
        [
            ("user", "We need to migrate the billing service to Postgres 16 by March."),
            ("assistant", "Sure. The billing service migration needs a Postgres 16 cluster."),
            ("user", "ok"),
            ("assistant", "I will also check the Postgres 16 extensions the billing service uses."),
            ("user", "thanks, lol"),
        ]
    )
    summary = extractive_summary(messages, max_tokens=45)
    assert estimate_tokens(summary) <= 45
    assert "Postgres 16" in summary and "billing" in summary
    assert "lol" not in summary and "ok" not in summary.split()
    assert summary.startswith("user: We need to migrate")  # conversation order
    assert extractive_summary(messages, max_tokens=0) == ""


def test_analyze() -> None:
    assert analyze("The Runners were running quickly!") == ["runner", "run", "quick"]
    assert analyze("東京に行く") == ["東京", "京に", "に行", "行く"]  # CJK runs as bigrams
