"""Recall over long messages (issue 40): a message long enough to carry its own subject
stands alone: it is embedded as it is, lends no context to the turns around it and ends
theirs, its vector rank weighs twice its keyword rank, and it is no seed of the second
keyword round; a short message cut off by long ones weighs its vector rank the same."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from episodic_helpers import BACKENDS, store_fixture
from langgraph.store.base import BaseStore

from langmem_edge.memory.config import EpisodicConfig
from langmem_edge.memory.episodic.embedded import (
    embedded_fields,
)
from langmem_edge.memory.episodic.extraction import StoredMessage
from langmem_edge.memory.episodic.recall import (
    ALONE_CHARS,
    hybrid_ranking,
    hybrid_ranking_plan,
    message_fields,
    stands_alone,
)
from langmem_edge.memory.episodic.tier import EpisodicTier

ROOT = ("app", "profiles", "alice")
PASTE = ("Here is my server code, it drops sockets under load:\n```javascript\n"
         + "io.on('connection', (socket) => { socket.on('message', send); });\n" * 12
         + "```\nWhy does the reconnect loop never stop?")


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[BaseStore]:
    yield from store_fixture(request, tmp_path)


def _message(seq: int, text: str) -> StoredMessage:
    return StoredMessage(id=f"m{seq}", session_id="s", role="user", content=text, seq=seq,
                         ts="2023-05-08T13:56:00+00:00")


def test_a_long_message_is_embedded_as_it_is_a_short_one_with_its_context() -> None:
    assert ALONE_CHARS == 500 and len(PASTE) >= ALONE_CHARS
    msgs = [_message(0, "a question"), _message(1, PASTE), _message(2, "yes, that one")]
    fields = embedded_fields(msgs, [])
    # no day, no speaker, no turns before: the model's window holds the message's own words
    assert fields["m1"] == {"embed_text": PASTE, "day": "8 May 2023"}  # no context
    # a long turn lends the reply after it no context (it would fill the window with the
    # previous answer) and ends its context (the turns before it are another exchange): the
    # reply begins an exchange and is embedded as it is, as dense search would embed it
    assert fields["m2"] == {"embed_text": "yes, that one", "day": "8 May 2023"}
    assert embedded_fields([_message(3, "ok")], [{"text": "sure"}, {"text": PASTE[:1000]}]
                           )["m3"]["embed_text"] == "ok"
    # further on in the exchange, a short message carries its day, speaker and the turns
    # before it back to the long one
    assert embedded_fields([_message(3, "ok")], [{"text": PASTE[:1000]}, {"text": "sure"}]
                           )["m3"]["embed_text"] == "[8 May 2023] user: ok sure"
    below = "x" * (ALONE_CHARS - 1)
    assert embedded_fields([_message(0, below)], [])["m0"]["embed_text"].endswith(f": {below}")


def test_ingest_stores_a_long_message_embedded_alone(store: BaseStore) -> None:
    tier = EpisodicTier(store, ROOT)
    tier.add_messages([{"role": "user", "content": "hi"},
                       {"role": "user", "content": PASTE}], "s1")
    values = sorted((it.value for it in store.search((*ROOT, "messages", "s1"), limit=10)),
                    key=lambda v: v["seq"])
    assert values[1]["embed_text"] == values[1]["text"] == PASTE
    assert values[0]["embed_text"].endswith("user: hi")


def _ranking(texts: dict[str, str], config: EpisodicConfig) -> list[str]:
    fused = hybrid_ranking("why does the reconnect loop never stop?",
                           keyword=[("k1", 3.0), ("k2", 2.0)],
                           vector=[("v", 0.9), ("k1", 0.8)], days={}, text=texts.__getitem__,
                           rank=lambda q: [], config=config, limit=3,
                           alone=lambda key: stands_alone(texts[key]))
    return [key for key, _ in fused]


def test_the_vector_rank_of_a_long_message_weighs_twice_its_keyword_rank() -> None:
    cfg = EpisodicConfig(recall_second_round_weight=0.0)
    assert cfg.recall_alone_vector_weight == 2.0 and cfg.recall_vector_weight == 0.5
    off = EpisodicConfig(recall_second_round_weight=0.0, recall_alone_vector_weight=None)
    long = {"k1": "reconnect loop", "k2": "the loop", "v": PASTE}
    # the long message the vector side ranks first beats the keyword side's first
    # (2 / (5 + 1) against 1 / 6 + 0.5 / 7) ...
    assert _ranking(long, cfg) == ["v", "k1", "k2"]
    assert _ranking(long, off) == ["k1", "k2", "v"]  # ... which it did not before
    # short messages (every LoCoMo turn) fuse exactly as before
    short = long | {"v": "the socket server"}
    assert _ranking(short, cfg) == _ranking(short, off) == ["k1", "k2", "v"]


def _spy(monkeypatch: pytest.MonkeyPatch, look: Any) -> None:
    """Let ``look`` see the arguments of hybrid recall's fusion, on either keyword side: the
    scan's (``tier.hybrid_ranking``) and the store's (``search.hybrid_ranking_plan``)."""
    from langmem_edge.memory.episodic import search as search_module
    from langmem_edge.memory.episodic import tier as tier_module

    def ranking(query: str, **kwargs: Any) -> list[tuple[str, float]]:
        look(kwargs)
        return hybrid_ranking(query, **kwargs)

    def plan(query: str, **kwargs: Any) -> Any:
        look(kwargs)
        return (yield from hybrid_ranking_plan(query, **kwargs))

    monkeypatch.setattr(tier_module, "hybrid_ranking", ranking)
    monkeypatch.setattr(search_module, "hybrid_ranking_plan", plan)


def test_recall_weighs_the_stored_long_message_as_standing_alone(
        store: BaseStore, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, bool] = {}

    def look(kwargs: dict[str, Any]) -> None:
        seen.update({key: kwargs["alone"](key) for key, _ in kwargs["vector"]})

    _spy(monkeypatch, look)
    tier = EpisodicTier(store, ROOT)
    stored = tier.add_messages([{"role": "user", "content": "the reconnect loop again"},
                                {"role": "user", "content": "which loop?"},
                                {"role": "user", "content": PASTE}], "s1")
    found = tier.recall_conversation("why does the reconnect loop never stop?", scope="all")
    assert {m.content for m in found} >= {PASTE, "the reconnect loop again"}
    assert {k: v for k, v in seen.items() if k != stored[1].id} == {
        stored[0].id: False, stored[2].id: True}


def test_a_long_message_neither_has_nor_lends_keyword_context() -> None:
    from langgraph.store.base import Item

    def item(seq: int, text: str) -> Item:
        return Item(value={"text": text, "seq": seq, "session_id": "s"}, key=f"m{seq}",
                    namespace=("m",), created_at="2023-05-08T13:56:00+00:00",
                    updated_at="2023-05-08T13:56:00+00:00")

    fields = message_fields([item(0, "first"), item(1, "second"), item(2, PASTE),
                             item(3, "a reply"), item(4, PASTE), item(5, "thanks")],
                            context_turns=2)
    assert fields["m0"]["context"] == "second"  # the paste ends the window
    assert fields["m1"]["context"] == "first"
    assert "context" not in fields["m2"]  # stands alone
    assert "context" not in fields["m3"]  # a paste each side: the exchange is itself
    assert "context" not in fields["m5"]
    short = message_fields([item(0, "first"), item(1, "second")], context_turns=2)
    assert short["m0"]["context"] == "second" and short["m1"]["context"] == "first"


def test_a_short_message_between_long_ones_is_weighed_as_standing_alone(
        store: BaseStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its keyword side has no context (its neighbours stand alone), so BM25 sees it as
    bare as a long message, and its vector rank weighs as much (issue 40)."""
    seen: dict[str, bool] = {}

    def look(kwargs: dict[str, Any]) -> None:
        seen.update({key: kwargs["bare"](key) for key, _ in kwargs["vector"]})
        assert not any(kwargs["alone"](key) for key, _ in kwargs["vector"]
                       if len(kwargs["text"](key)) < ALONE_CHARS)  # still seeds

    _spy(monkeypatch, look)
    tier = EpisodicTier(store, ROOT)
    stored = tier.add_messages([{"role": "user", "content": PASTE},
                                {"role": "user", "content": "and the reconnect loop?"},
                                {"role": "assistant", "content": PASTE.replace("my", "your")},
                                {"role": "user", "content": PASTE.replace("my", "our")},
                                {"role": "user", "content": "thanks"},
                                {"role": "user", "content": "the loop is fixed"}], "s1")
    tier.recall_conversation("why does the reconnect loop never stop?", scope="all")
    assert seen[stored[1].id] is True  # two turns each side: three pastes
    assert seen.get(stored[5].id, False) is False  # "thanks" lends it a context


def test_a_long_message_is_no_seed_of_the_second_round() -> None:
    asked: list[str] = []

    def rank(query: str) -> list[tuple[str, float]]:
        asked.append(query)
        return []

    texts = {"k1": PASTE, "k2": "the loop", "v": "the socket server"}
    hybrid_ranking("why does the loop never stop?", keyword=[("k1", 3.0), ("k2", 2.0)],
                   vector=[("v", 0.9)], days={}, text=texts.__getitem__, rank=rank,
                   config=EpisodicConfig(), limit=3,
                   alone=lambda key: stands_alone(texts[key]))
    assert asked == ["why does the loop never stop? the loop"]  # k1's paste left out


def test_two_equal_messages_embedded_as_they_are_in_one_ingest(store: BaseStore) -> None:
    """A "thanks" from each side after long messages: both embed the same text, and
    langgraph's InMemoryStore fails on such a batch ("Number of embeddings ... does not
    match"), so the plan driver splits it (``core.stores.distinct_text_batches``); every
    message is stored and found."""
    tier = EpisodicTier(store, ROOT)
    stored = tier.add_messages([{"role": "user", "content": PASTE},
                                {"role": "assistant", "content": "thanks"},
                                {"role": "assistant", "content": PASTE.replace("my", "your")},
                                {"role": "user", "content": "thanks"}], "s1")
    assert len(stored) == 4
    values = [it.value for it in store.search((*ROOT, "messages", "s1"), limit=10)]
    assert sorted(v["embed_text"] for v in values if v["text"] == "thanks") == [
        "thanks", "thanks"]
    found = tier.recall_conversation("thanks", scope="all", limit=4)
    assert sum(m.content == "thanks" for m in found) == 2


def test_distinct_text_batches_keep_order_and_never_repeat_a_text() -> None:
    from langgraph.store.base import GetOp, PutOp
    from langgraph.store.memory import InMemoryStore

    from langmem_edge.memory.core.stores import distinct_text_batches
    from langmem_edge.testing import FakeEmbeddings

    store = InMemoryStore(index={"dims": 8, "embed": FakeEmbeddings(8), "fields": ["t"]})
    ops = [PutOp(("n",), "a", {"t": "x"}), PutOp(("n",), "b", {"t": "x"}),
           PutOp(("n",), "c", {"t": "y"}), PutOp(("n",), "a", {"t": "z"}),
           PutOp(("n",), "d", {"t": "x"}, index=False)]
    parts = distinct_text_batches(store, ops)
    # "b" embeds "x" as "a" does; the second put of "a" may join the first (the last put of
    # a key in a batch is the one applied)
    assert [[op.key for op in part] for part in parts] == [["a", "c", "a", "d"], ["b"]]
    for part in parts:
        store.batch(part)
    assert store.get(("n",), "a").value == {"t": "z"}  # the later put of "a" won
    assert distinct_text_batches(store, ops[:1] + [GetOp(("n",), "a")]) == [
        ops[:1] + [GetOp(("n",), "a")]]
    with pytest.raises(ValueError, match="Number of embeddings"):
        store.batch(ops[:2])  # what the split avoids
