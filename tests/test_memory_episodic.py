"""Episodic tier: idempotent ingest, limits, order, recall, deletion (every backend)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from episodic_helpers import BACKENDS, scripted, store_fixture
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.store.base import BaseStore

from langmem_edge.errors import (
    ConfigurationError,
    ExtractionError,
    InvalidInputError,
    LimitExceededError,
)
from langmem_edge.memory.episodic.tier import (
    EpisodicConfig,
    EpisodicTier,
    message_id,
    orphaned_messages,
)

ROOT = ("app", "profiles", "alice")


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[BaseStore]:
    yield from store_fixture(request, tmp_path)


@pytest.fixture
def tier(store: BaseStore) -> EpisodicTier:
    return EpisodicTier(store, ROOT)


def conversation(n: int, prefix: str = "msg") -> list[dict[str, str]]:
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"{prefix} {i} text"}
        for i in range(n)
    ]


def count_items(store: BaseStore, prefix: tuple[str, ...]) -> int:
    total, offset = 0, 0
    while True:
        page = store.search(prefix, limit=500, offset=offset)
        total += len(page)
        offset += len(page)
        if len(page) < 500:
            return total


def test_ingest_is_idempotent(tier: EpisodicTier, store: BaseStore) -> None:
    msgs = conversation(300)
    first = tier.add_messages(msgs, "s1")
    second = tier.add_messages(msgs, "s1")
    assert len(first) == 300
    assert second == []
    assert count_items(store, (*ROOT, "messages")) == 300
    assert len(tier.list_messages("s1", limit=1000)) == 300


def test_reingest_keeps_order_and_appends_new(tier: EpisodicTier) -> None:
    tier.add_messages(conversation(5), "s1")
    added = tier.add_messages([*conversation(5), {"role": "user", "content": "new one"}], "s1")
    assert [(m.seq, m.content) for m in added] == [(5, "new one")]
    listed = tier.list_messages("s1")
    assert [m.seq for m in listed] == list(range(6))
    assert [m.content for m in listed][:5] == [m["content"] for m in conversation(5)]


def test_message_id_is_sha256_of_session_role_content(tier: EpisodicTier) -> None:
    (msg,) = tier.add_messages([{"role": "user", "content": "hello"}], "s1")
    assert msg.id == message_id("s1", "user", "hello")
    assert len(msg.id) == 32 and int(msg.id, 16) >= 0
    (other,) = tier.add_messages([{"role": "user", "content": "hello"}], "s2")
    assert other.id != msg.id  # the session is part of the id


def test_too_many_messages_write_nothing(tier: EpisodicTier, store: BaseStore) -> None:
    with pytest.raises(LimitExceededError, match="501 messages"):
        tier.add_messages(conversation(501), "s1")
    assert count_items(store, ROOT) == 0
    assert len(tier.add_messages(conversation(500), "s1")) == 500


def test_strict_refuses_an_oversized_message_naming_it_and_writes_nothing(
    tier: EpisodicTier, store: BaseStore
) -> None:
    msgs = conversation(5)
    msgs[3] = {"role": "assistant", "content": "é" * (16 * 1024 + 1)}  # 32 KB + 2 bytes
    with pytest.raises(LimitExceededError, match="message 3") as info:
        tier.add_messages(msgs, "s1", strict=True)
    assert info.value.code == "limit_exceeded"
    assert count_items(store, ROOT) == 0
    msgs[3] = {"role": "assistant", "content": "x" * 32 * 1024}  # exactly the limit
    assert len(tier.add_messages(msgs, "s1", strict=True)) == 5


def test_an_oversized_message_is_cut_to_fit_and_marked_by_default(tier: EpisodicTier) -> None:
    msgs = conversation(5)
    msgs[3] = {"role": "assistant", "content": "é" * (16 * 1024 + 1)}  # 32 KB + 2 bytes
    out = tier.ingest(msgs, "s1")
    assert len(out.messages) == 5 and out.cut == [out.messages[3].id]
    text = out.messages[3].content
    assert text.endswith(" [...]") and len(text.encode()) <= 32 * 1024
    assert out.messages[3].id == message_id("s1", "assistant", text)
    assert tier.ingest(msgs, "s1").messages == []  # the same cut, the same id


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        ({"role": "robot", "content": "x"}, "role 'robot'"),
        ({"content": "x"}, "needs 'role' and 'content'"),
        ({"role": "user", "content": 42}, "content must be"),
        ("just a string", "expected a LangChain message"),
        ({"role": "user", "content": "x", "timestamp": "yesterday"}, "timestamp"),
    ],
)
def test_invalid_messages_are_rejected_clearly(
    tier: EpisodicTier, store: BaseStore, bad: Any, match: str
) -> None:
    with pytest.raises(InvalidInputError, match=match):
        tier.add_messages([{"role": "user", "content": "fine"}, bad], "s1")
    assert count_items(store, ROOT) == 0


@pytest.mark.parametrize("session", ["", "a.b", "x" * 201])
def test_invalid_session_ids_are_rejected(tier: EpisodicTier, session: str) -> None:
    with pytest.raises(InvalidInputError, match="session_id"):
        tier.add_messages(conversation(1), session)


def test_langchain_messages_are_accepted(tier: EpisodicTier) -> None:
    msgs = [
        SystemMessage(content="You are helpful."),
        HumanMessage(content="What's the weather?"),
        AIMessage(
            content="", tool_calls=[{"name": "weather", "args": {"city": "Lisbon"}, "id": "c1"}]
        ),
        ToolMessage(content="21C and sunny", tool_call_id="c1", name="weather"),
        AIMessage(content=[{"type": "text", "text": "It is 21C in Lisbon."}]),
    ]
    stored = tier.add_messages(msgs, "s1")
    assert [m.role for m in stored] == ["system", "user", "assistant", "tool", "assistant"]
    assert '[tool call] weather({"city": "Lisbon"})' in stored[2].content
    assert stored[3].tool_call_id == "c1" and stored[3].name == "weather"
    assert stored[4].content == "It is 21C in Lisbon."


def test_dict_timestamps_roles_and_empty_messages(tier: EpisodicTier) -> None:
    when = datetime(2024, 5, 1, 9, 30, tzinfo=UTC)
    stored = tier.add_messages(
        [
            {"role": "human", "content": "hi", "timestamp": "2024-05-01T09:30:00Z"},
            {"role": "ai", "content": "   "},  # empty: skipped
            {"role": "AI", "content": "hello", "timestamp": when.timestamp()},
        ],
        "s1",
    )
    assert [(m.role, m.seq, m.ts) for m in stored] == [("user", 0, when), ("assistant", 1, when)]


def test_duplicates_within_a_batch_are_stored_once(tier: EpisodicTier) -> None:
    stored = tier.add_messages([{"role": "user", "content": "ok"}] * 3, "s1")
    assert len(stored) == 1


def test_semantic_recall_finds_the_message(tier: EpisodicTier) -> None:
    tier.add_messages(
        [
            {"role": "user", "content": "My passport expires in March"},
            {"role": "assistant", "content": "Noted, the weather is fine"},
            {"role": "user", "content": "Let's talk about pizza toppings"},
        ],
        "s1",
    )
    hits = tier.recall_conversation("passport expires", limit=2)
    assert hits[0].content == "My passport expires in March"
    assert hits[0].score is not None
    users = tier.recall_conversation("weather", role="user", limit=5)
    assert {m.role for m in users} == {"user"}


def test_keyword_recall_ranks_by_bm25(tier: EpisodicTier) -> None:
    tier.add_messages(
        [
            {"role": "user", "content": "I bought a new bicycle yesterday"},
            {"role": "assistant", "content": "Bicycles are great; a bicycle helmet helps"},
            {"role": "user", "content": "Nothing to do with it"},
        ],
        "s1",
    )
    hits = tier.recall_conversation("bicycle helmet", mode="keyword")
    assert [h.content for h in hits] == [
        "Bicycles are great; a bicycle helmet helps",
        "I bought a new bicycle yesterday",
    ]
    assert hits[0].score > hits[1].score > 0


def test_recall_scopes(store: BaseStore) -> None:
    tier = EpisodicTier(store, ROOT)
    tier.add_messages([{"role": "user", "content": "Bob likes tennis"}], "bob-chat", contact="bob")
    tier.add_messages(
        [{"role": "user", "content": "Carol likes tennis"}], "carol-chat", contact="carol"
    )

    def found(**kw: Any) -> set[str]:
        return {m.content for m in tier.recall_conversation("tennis", mode="keyword", **kw)}

    assert found(scope="contact", contact="bob") == {"Bob likes tennis"}
    assert found(scope="conversation", session_id="carol-chat") == {"Carol likes tennis"}
    assert found(scope="all") == {"Bob likes tennis", "Carol likes tennis"}
    assert found(scope="contact") == {"Bob likes tennis", "Carol likes tennis"}
    with pytest.raises(InvalidInputError, match="needs session_id"):
        tier.recall_conversation("tennis", scope="conversation")
    with pytest.raises(InvalidInputError, match="scope"):
        tier.recall_conversation("tennis", scope="galaxy")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="mode"):
        tier.recall_conversation("tennis", mode="fuzzy")  # type: ignore[arg-type]


def test_profiles_are_isolated(store: BaseStore) -> None:
    alice = EpisodicTier(store, ROOT)
    bob = EpisodicTier(store, ("app", "profiles", "bob"))
    alice.add_messages([{"role": "user", "content": "alice secret about tennis"}], "s1")
    bob.add_messages([{"role": "user", "content": "bob thing about tennis"}], "s1")
    for mode in ("semantic", "keyword"):
        hits = bob.recall_conversation("secret tennis", mode=mode, scope="all")  # type: ignore
        assert [h.content for h in hits] == ["bob thing about tennis"]
    assert bob.delete_session("s1") == 1
    assert [m.content for m in alice.list_messages("s1")] == ["alice secret about tennis"]


def test_delete_session_removes_messages_overlays_and_record(
    tier: EpisodicTier, store: BaseStore
) -> None:
    tier.add_messages(conversation(40), "s1")
    tier.add_messages(conversation(3), "s2")
    tier.window("s1", 120)  # creates an overlay
    assert tier.overlays("s1")
    assert tier.delete_session("s1") == 40
    assert tier.list_messages("s1") == []
    assert tier.overlays("s1") == []
    assert store.get(tier.sessions_namespace, "s1") is None
    assert len(tier.list_messages("s2")) == 3
    assert tier.delete_session("s1") == 0  # nothing left: a no-op
    assert tier.delete_session("never-existed") == 0


def test_orphaned_messages_rule() -> None:
    assert orphaned_messages(["m1", "m2", "m3"], [["m2"], ["m4", "m3"]]) == ["m1"]
    assert orphaned_messages(["m1"], []) == ["m1"]
    assert orphaned_messages(["m1", "m1"], [["m9"]]) == ["m1"]


def test_delete_messages_also_drops_overlays_over_them(tier: EpisodicTier) -> None:
    stored = tier.add_messages(conversation(40), "s1")
    window = tier.window("s1", 120)
    assert window.new_overlay is not None
    inside = next(m for m in stored if m.seq == window.new_overlay.from_seq + 1)
    outside = stored[-1]
    assert tier.delete_messages("s1", [inside.id, outside.id, "no-such-id"]) == 2
    assert tier.overlays("s1") == []
    remaining = {m.id for m in tier.list_messages("s1")}
    assert inside.id not in remaining and outside.id not in remaining
    assert len(remaining) == 38
    assert tier.delete_messages("s1", ["no-such-id"]) == 0


def test_ingest_extracts_rule_based_without_a_model(tier: EpisodicTier) -> None:
    out = tier.ingest([{"role": "user", "content": "My name is Ana. I live in Lisbon."}], "s1")
    assert {m.key for m in out.memories} == {"identity.name", "identity.location"}
    assert all(m.source == "turn" and m.confidence == 0.5 for m in out.memories)
    assert all(m.source_message_ids == [out.messages[0].id] for m in out.memories)
    again = tier.ingest([{"role": "user", "content": "My name is Ana. I live in Lisbon."}], "s1")
    assert again.messages == [] and again.memories == []


def test_ingest_with_a_model_extracts_before_writing(store: BaseStore) -> None:
    def extract(messages: Any) -> list[dict[str, Any]]:
        return [
            {
                "text": "The user's cat is Miso.",
                "fact_type": "relationship",
                "key": "relationship.cat",
                "message_numbers": [1],
            }
        ]

    tier = EpisodicTier(store, ROOT, model=scripted(extract))
    out = tier.ingest([{"role": "user", "content": "My cat is Miso"}], "s1")
    assert [(m.text, m.kind, m.key) for m in out.memories] == [
        ("The user's cat is Miso.", "fact", "relationship.cat")
    ]
    assert out.memories[0].source_message_ids == [out.messages[0].id]

    def broken(messages: Any) -> Any:
        raise ValueError("the model is broken")

    failing = EpisodicTier(store, ROOT, model=scripted(broken))
    with pytest.raises(ExtractionError, match="broken"):
        failing.ingest([{"role": "user", "content": "Something new"}], "s1")
    assert len(tier.list_messages("s1")) == 1  # nothing written by the failed ingest


def test_ingest_shows_earlier_messages_as_context(store: BaseStore) -> None:
    seen: list[str] = []

    def extract(messages: Any) -> list[dict[str, Any]]:
        seen.append(str(messages[-1].content))
        return []

    tier = EpisodicTier(store, ROOT, model=scripted(extract))
    tier.ingest(conversation(4), "s1")
    tier.ingest([{"role": "user", "content": "and the fifth"}], "s1")
    assert "[1] (context) user" in seen[-1] and "msg 2 text" in seen[-1]
    assert "[2] (context) assistant" in seen[-1] and "msg 3 text" in seen[-1]
    assert "[3] user" in seen[-1] and "and the fifth" in seen[-1]
    assert "msg 1 text" not in seen[-1]


def test_config_validates_shares() -> None:
    with pytest.raises(ConfigurationError, match="must be 1.0"):
        EpisodicConfig(head_share=0.5)
    with pytest.raises(ConfigurationError):
        EpisodicConfig(max_messages_per_call=0)
    assert EpisodicConfig().max_message_bytes == 32 * 1024


async def test_async_twins_match_sync(store: BaseStore) -> None:
    tier = EpisodicTier(store, ROOT)
    msgs = conversation(30)
    added = await tier.aadd_messages(msgs, "s1")
    assert len(added) == 30
    assert await tier.aadd_messages(msgs, "s1") == []
    out = await tier.aingest([{"role": "user", "content": "I love green tea."}], "s1")
    assert [m.text for m in out.memories] == ["The user loves green tea."]
    assert [m.seq for m in await tier.alist_messages("s1", start=28)] == [28, 29, 30]
    hits = await tier.arecall_conversation("green tea", mode="keyword")
    assert hits[0].content == "I love green tea."
    window = await tier.awindow("s1", 200)
    assert window.tail[-1].content == "I love green tea."
    assert await tier.aoverlays("s1") == ([window.new_overlay] if window.new_overlay else [])
    assert await tier.adelete_messages("s1", [hits[0].id]) == 1
    assert await tier.adelete_session("s1") == 30
