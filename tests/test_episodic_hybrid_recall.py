"""Hybrid recall of raw messages, the default of ``recall_conversation`` (issue 18)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from episodic_helpers import BACKENDS, store_fixture
from langgraph.store.base import BaseStore, Item
from langgraph.store.memory import InMemoryStore

from langmem_edge import AgentMemory
from langmem_edge.memory.config import EpisodicConfig
from langmem_edge.memory.episodic.recall import (
    fuse_messages,
    hybrid_ranking,
    message_fields,
    message_keyword_ranking,
    temporal_ranking,
    time_words,
)
from langmem_edge.memory.episodic.tier import EpisodicTier
from langmem_edge.retrieval.text import default_analyzer

ROOT = ("app", "profiles", "alice")

TALK = [
    {"role": "user", "content": "We finally went camping last weekend", "name": "Mel",
     "timestamp": "2023-05-08T13:56:00"},
    {"role": "assistant", "content": "Lovely! Where did you go?", "name": "Caro",
     "timestamp": "2023-05-08T13:57:00"},
    {"role": "user", "content": "Up in the mountains near the lake", "name": "Mel",
     "timestamp": "2023-05-08T13:58:00"},
    {"role": "assistant", "content": "I started a pottery class", "name": "Caro",
     "timestamp": "2023-05-08T13:59:00"},
    {"role": "user", "content": "Sounds fun, send me a photo", "name": "Mel",
     "timestamp": "2023-05-08T14:00:00"},
    {"role": "assistant", "content": "Thanks, will do", "name": "Caro",
     "timestamp": "2023-05-08T14:01:00"},
]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[BaseStore]:
    yield from store_fixture(request, tmp_path)


def _item(key: str, seq: int, text: str, session: str = "s1", **extra: Any) -> Item:
    value = {"session_id": session, "seq": seq, "text": text, **extra}
    return Item(value=value, key=key, namespace=("m",), created_at="2024-01-01T00:00:00",
                updated_at="2024-01-01T00:00:00")


def test_message_fields_hold_neighbours_of_the_same_session_only() -> None:
    docs = [_item("c", 2, "third"), _item("a", 0, "first", name="Mel",
                                          ts="2023-05-08T13:56:00+00:00"),
            _item("b", 1, "second"), _item("x", 0, "other session", session="s2")]
    fields = message_fields(docs, context_turns=1)
    assert fields["a"] == {"text": "first", "context": "second", "name": "Mel",
                           "date": "8 May 2023"}
    assert fields["b"]["context"] == "first third"  # in seq order, not the scan's
    assert "context" not in fields["x"]
    assert "context" not in message_fields(docs, context_turns=0)["b"]


def test_keyword_ranking_finds_a_message_by_its_neighbours_words() -> None:
    docs = [_item("a", 0, "we went camping"), _item("b", 1, "where did you go?"),
            _item("c", 2, "lunch at noon"), _item("d", 3, "nothing here"),
            _item("e", 4, "still nothing"), _item("f", 5, "the end")]
    fields = message_fields(docs, context_turns=1)
    ranked = message_keyword_ranking("camping trip", fields, analyzer=default_analyzer(),
                                     field_weights={"context": 0.5}, k1=1.2, b=0.75)
    assert [k for k, _ in ranked] == ["a", "b"]  # the turn itself first, its neighbour next


def test_fusion_weighs_the_vector_list_and_survives_without_it() -> None:
    keyword = [("a", 3.0), ("b", 2.0)]
    vector = [("b", 0.9), ("c", 0.8)]
    both = fuse_messages(keyword, vector, vector_weight=1.0, rrf_k=10, limit=3)
    assert [k for k, _ in both] == ["b", "a", "c"]  # agreement wins
    alone = fuse_messages(keyword, [], vector_weight=0.5, rrf_k=10, limit=3)
    assert [k for k, _ in alone] == ["a", "b"]


def test_default_mode_is_hybrid() -> None:
    cfg = EpisodicConfig()
    assert cfg.recall_mode == "hybrid"
    assert (cfg.recall_rrf_k, cfg.recall_vector_weight, cfg.recall_context_weight) == (
        5.0, 0.5, 0.5)  # the cross-validated choice (docs/retrieval.md)
    assert cfg.recall_temporal_weight == 0.0
    memory = AgentMemory(InMemoryStore())
    assert memory.config.episodic.recall_mode == "hybrid"


def test_hybrid_recall_finds_the_turn_beside_the_words(store: BaseStore) -> None:
    tier = EpisodicTier(store, ROOT)
    tier.add_messages(TALK, "s1")
    found = tier.recall_conversation("where did Mel go camping?", scope="all", limit=3)
    texts = [m.content for m in found]
    # the turn that says "camping" and the one that says where (never saying "camping",
    # found by its neighbours' words) are the first two, in either order: the vector side
    # embeds each message with the turns before it
    assert set(texts[:2]) == {"We finally went camping last weekend",
                              "Up in the mountains near the lake"}
    assert all(m.score is not None for m in found)
    # the default is the hybrid mode, spelled out or not
    assert [m.id for m in tier.recall_conversation(
        "where did Mel go camping?", mode="hybrid", scope="all", limit=3)] == [
        m.id for m in found]


def test_hybrid_recall_by_speaker_and_day(store: BaseStore) -> None:
    tier = EpisodicTier(store, ROOT)
    tier.add_messages(TALK, "s1")
    tier.add_messages([{"role": "user", "content": "a pottery class again",
                        "timestamp": "2024-02-01T10:00:00"}], "s2")
    (first,) = tier.recall_conversation("pottery class May 2023", scope="all", limit=1)
    assert first.content == "I started a pottery class"


def test_hybrid_recall_respects_role_and_profile(store: BaseStore) -> None:
    tier = EpisodicTier(store, ROOT)
    bob = EpisodicTier(store, ("app", "profiles", "bob"))
    tier.add_messages(TALK, "s1")
    bob.add_messages([{"role": "user", "content": "camping with bob"}], "s1")
    found = tier.recall_conversation("camping", scope="all", role="assistant")
    assert found and all(m.role == "assistant" for m in found)
    assert [m.content for m in bob.recall_conversation("camping", scope="all")] == [
        "camping with bob"]


async def test_async_twin_matches(store: BaseStore) -> None:
    tier = EpisodicTier(store, ROOT)
    await tier.aadd_messages(TALK, "s1")
    sync = tier.recall_conversation("camping mountains", scope="all")
    assert [m.id for m in await tier.arecall_conversation("camping mountains", scope="all")] \
        == [m.id for m in sync]


def test_keyword_only_store_without_index_still_ranks() -> None:
    tier = EpisodicTier(InMemoryStore(), ROOT)
    tier.add_messages(TALK, "s1")
    found = tier.recall_conversation("pottery", scope="all")
    assert [m.content for m in found][0] == "I started a pottery class"


def test_time_words_and_temporal_channel() -> None:
    assert time_words("What did she do in May 2023?") == frozenset({"May", "2023"})
    assert time_words("What may she like?") == frozenset()  # the verb is not a month
    dates = {"a": "1:56 pm on 8 May, 2023", "b": "2:00 pm on 3 June, 2023"}
    ranked = [("b", 2.0), ("a", 1.0)]
    assert temporal_ranking("What happened in May?", dates, ranked) == [("a", 1.0)]
    assert temporal_ranking("What happened?", dates, ranked) == []


def test_temporal_channel_lifts_messages_of_the_named_month(store: BaseStore) -> None:
    tier = EpisodicTier(store, ROOT)
    tier.add_messages([{"role": "user", "content": "a pottery class",
                        "timestamp": "2024-02-01T10:00:00"}], "s2")
    tier.add_messages(TALK, "s1")
    on = EpisodicTier(store, ROOT, config=EpisodicConfig(recall_temporal_weight=1.0))
    found = on.recall_conversation("pottery in May", scope="all", limit=2)
    assert found[0].content == "I started a pottery class"  # 8 May 2023
    off = EpisodicTier(store, ROOT, config=EpisodicConfig(recall_temporal_weight=0.0,
                                                          recall_date_weight=0.0))
    assert off.recall_conversation("pottery in May", scope="all", limit=2)


def test_conversation_preset_is_the_cross_validated_choice() -> None:
    from langmem_edge.retrieval import CONVERSATION_HYBRID

    assert CONVERSATION_HYBRID["rrf_k"] == 5.0
    assert CONVERSATION_HYBRID["weights"]["vector"] == 0.5
    assert CONVERSATION_HYBRID["keyword"]["field_weights"] == {"context": 0.5}


def test_second_round_ranks_by_the_first_rounds_best_text() -> None:
    """Round two asks the keyword side for the query plus round one's best messages' text
    and fuses that in: a message matching only the first answer's words comes in; with the
    weight 0 the first round is the result and the keyword side is asked nothing more."""
    asked: list[str] = []

    def rank(text: str) -> list[tuple[str, float]]:
        asked.append(text)
        return [("a", 2.0), ("b", 1.0)] if "Paris" in text else [("a", 1.0)]

    def ranking(weight: float) -> list[str]:
        cfg = EpisodicConfig(recall_second_round_weight=weight, recall_second_round_seeds=1)
        fused = hybrid_ranking("who taught Melanie?", keyword=[("a", 3.0)],
                               vector=[("f1", 0.9), ("f2", 0.8), ("a", 0.7)], days={},
                               text={"a": "Melanie took a pottery class in Paris"}.__getitem__,
                               rank=rank, config=cfg, limit=3)
        return [key for key, _ in fused]

    assert ranking(0.0) == ["a", "f1", "f2"] and asked == []
    assert "b" in ranking(1.0)
    assert asked == ["who taught Melanie? Melanie took a pottery class in Paris"]


def test_second_round_finds_a_turn_through_the_first_answers_words(store: BaseStore) -> None:
    tier = EpisodicTier(store, ROOT)
    tier.add_messages([{"role": "user", "content": "Melanie signed up for a pottery class "
                        "in Montmartre"}], "s1")
    tier.add_messages([{"role": "assistant", "content": "The Montmartre pottery studio is "
                        "run by Jean"}], "s2")
    tier.add_messages([{"role": "user", "content": f"filler turn number {i} about weather"}
                       for i in range(12)], "s3")
    off = EpisodicTier(store, ROOT, config=EpisodicConfig(recall_second_round_weight=0.0))
    question = "what class did Melanie sign up for?"
    first = [m.content for m in off.recall_conversation(question, scope="all", limit=12)]
    found = [m.content for m in tier.recall_conversation(question, scope="all", limit=12)]
    studio = "The Montmartre pottery studio is run by Jean"
    assert found[0] == first[0] == "Melanie signed up for a pottery class in Montmartre"
    assert found.index(studio) < first.index(studio) if studio in first else studio in found
