"""What the episodic tier embeds for a message: day, speaker, text and the turns before it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pytest
from episodic_helpers import BACKENDS, DIMS, store_fixture
from langgraph.store.base import BaseStore, Op, PutOp, Result
from langgraph.store.memory import InMemoryStore

from langmem_edge.memory.episodic.embedded import (
    EMBED_CONTEXT_CHARS,
    EMBEDDED_FIELDS,
    MESSAGE_INDEX_FIELDS,
    after_patches,
    context_repairs,
    embedded_fields,
    session_tail,
)
from langmem_edge.memory.episodic.extraction import StoredMessage
from langmem_edge.memory.episodic.tier import EpisodicTier
from langmem_edge.testing import FakeEmbeddings

ROOT = ("app", "profiles", "alice")



def _turn(role: str, text: str, name: str | None, when: str) -> dict[str, Any]:
    turn = {"role": role, "content": text, "timestamp": f"2023-05-{when}:00"}
    return turn | ({"name": name} if name else {})


TALK = [_turn("user", "We finally went camping last weekend", "Mel", "08T13:56"),
        _turn("assistant", "Lovely! Where did you go?", None, "08T13:57"),
        _turn("user", "Up in the mountains near the lake", "Mel", "08T13:58")]
LATER = [_turn("assistant", "I started a pottery class", "Caro", "09T10:00"),
         _turn("user", "Sounds fun", "Mel", "09T10:01")]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[BaseStore]:
    yield from store_fixture(request, tmp_path)


def _values(store: BaseStore, session: str = "s1") -> list[dict[str, Any]]:
    items = store.search((*ROOT, "messages", session), limit=100)
    return sorted((it.value for it in items), key=lambda v: v["seq"])


def _message(seq: int, text: str, **extra: Any) -> StoredMessage:
    return StoredMessage(id=f"m{seq}", session_id="s", role="user", content=text, seq=seq,
                         ts="2023-05-08T13:56:00+00:00", **extra)


def test_embedded_fields_carry_day_speaker_and_the_turns_before() -> None:
    msgs = [_message(0, "a", name="Mel"), _message(1, "b"), _message(2, "c"), _message(3, "d")]
    fields = embedded_fields(msgs, [])
    # a session's first message: no context
    assert fields["m0"] == {"embed_text": "[8 May 2023] Mel: a", "day": "8 May 2023",
                            "after": "b c"}  # the keyword field of the turns after
    assert fields["m1"] == {"embed_text": "[8 May 2023] user: b a", "day": "8 May 2023",
                            "context": "a", "after": "c d"}  # and of the turns before
    assert "after" not in fields["m3"]  # none after it yet: the next ingest writes it
    assert fields["m3"]["context"] == "b c"
    assert fields["m3"]["embed_text"] == "[8 May 2023] user: d b c"  # two before, oldest first
    tail = session_tail([], msgs)
    assert [t["id"] for t in tail] == ["m2", "m3"]
    # the next ingest continues from the tail
    assert embedded_fields([_message(4, "e")], tail)["m4"]["embed_text"].endswith(" e c d")
    # ... and gives the messages before it the turns after them
    assert after_patches(tail, [_message(4, "e"), _message(5, "f")]) == {
        "m2": "d e", "m3": "e f"}
    assert after_patches(tail, []) == {} and after_patches([], [_message(4, "e")]) == {}
    long = session_tail([], [_message(9, "x" * (EMBED_CONTEXT_CHARS + 50))])
    assert len(long[0]["text"]) == EMBED_CONTEXT_CHARS


def test_context_repairs_drop_a_deleted_turn_from_the_contexts_after_it() -> None:
    msgs = [_message(i, t) for i, t in enumerate(["a", "secret", "c", "d", "e"])]
    fixed = context_repairs(msgs, {"m1"})
    assert set(fixed) == {"m0", "m2", "m3"}  # the messages whose context held "secret"
    assert fixed["m0"]["after"] == "c d" and "after" not in fixed["m2"]  # kept as stored
    assert fixed["m2"]["embed_text"].endswith(": c a")
    assert fixed["m3"]["embed_text"].endswith(": d a c")
    assert fixed["m3"]["context"] == "a c"
    assert context_repairs(msgs[:2], {"m0"})["m1"]["embed_text"].endswith(": secret")


def test_ingest_writes_the_fields_and_keeps_text_as_given(store: BaseStore) -> None:
    tier = EpisodicTier(store, ROOT)
    tier.add_messages(TALK, "s1")
    tier.add_messages(LATER, "s1")  # a second ingest: its context comes from the tail
    values = _values(store)
    assert [v["text"] for v in values] == [m["content"] for m in TALK + LATER]
    assert values[0]["embed_text"] == "[8 May 2023] Mel: We finally went camping last weekend"
    assert values[1]["embed_text"].endswith(" We finally went camping last weekend")
    assert values[1]["embed_text"].startswith("[8 May 2023] assistant: ")  # no name: role
    assert values[3]["embed_text"] == ("[9 May 2023] Caro: I started a pottery class "
                                       "Lovely! Where did you go? Up in the mountains near "
                                       "the lake")  # the tail of the first ingest
    listed = tier.list_messages("s1")
    assert [m.content for m in listed] == [m["content"] for m in TALK + LATER]


def test_semantic_recall_finds_a_turn_by_the_words_before_it(store: BaseStore) -> None:
    tier = EpisodicTier(store, ROOT)
    tier.add_messages(TALK, "s1")
    found = tier.recall_conversation("camping weekend", mode="semantic", scope="all", limit=3)
    # "Up in the mountains" never says camping: the store found it by its embedded context
    assert "Up in the mountains near the lake" in [m.content for m in found]
    assert all("embed_text" not in m.model_dump() for m in found)


def test_messages_from_before_the_change_are_still_found(store: BaseStore) -> None:
    tier = EpisodicTier(store, ROOT)
    tier.add_messages(TALK[:1], "s1")
    ns = (*ROOT, "messages", "s1")
    (old,) = store.search(ns)
    bare = {k: v for k, v in old.value.items() if k not in MESSAGE_INDEX_FIELDS}
    store.put(ns, old.key, bare)  # as written before: the store's fields (``text``) embedded
    sessions = (*ROOT, "sessions")
    record = store.get(sessions, "s1")
    assert record is not None
    store.put(sessions, "s1", {k: v for k, v in record.value.items() if k != "tail"},
              index=False)
    tier.add_messages(TALK[1:], "s1")
    values = _values(store)
    assert values[1]["embed_text"].endswith("go?")  # no tail in an old session's record
    assert values[2]["embed_text"].endswith(f"lake {TALK[1]['content']}")
    found = tier.recall_conversation("finally camping", mode="semantic", scope="all", limit=1)
    assert [m.content for m in found] == [TALK[0]["content"]]


def test_delete_takes_the_text_out_of_the_contexts_and_the_tail(store: BaseStore) -> None:
    tier = EpisodicTier(store, ROOT)
    tier.add_messages(TALK, "s1")
    secret = _values(store)[1]
    assert tier.delete_messages("s1", ["x", store.search((*ROOT, "messages", "s1"),
                                                         filter={"seq": 1})[0].key]) == 1
    values = _values(store)
    assert [v["text"] for v in values] == [TALK[0]["content"], TALK[2]["content"]]
    assert all(secret["text"] not in v["embed_text"] for v in values)
    assert values[1]["embed_text"].endswith(f"lake {TALK[0]['content']}")
    record = store.get((*ROOT, "sessions"), "s1")
    assert record is not None
    assert all(t["text"] != secret["text"] for t in record.value["tail"])
    tier.add_messages(LATER[:1], "s1")
    assert secret["text"] not in _values(store)[-1]["embed_text"]
    found = tier.recall_conversation("where did you go", mode="semantic", scope="all", limit=3)
    assert secret["text"] not in [m.content for m in found]


def test_a_store_without_an_index_embeds_nothing_and_recall_still_works() -> None:
    store = InMemoryStore()
    tier = EpisodicTier(store, ROOT)
    tier.add_messages(TALK, "s1")
    assert all(it.score is None for it in store.search((*ROOT, "messages"), query="camping"))
    found = tier.recall_conversation("camping", scope="all")
    assert found[0].content == TALK[0]["content"]


class BatchCounter(InMemoryStore):
    """An ``InMemoryStore`` counting ``batch`` calls and recording the puts' ``index``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.batches = 0
        self.indexes: list[Any] = []

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        self.batches += 1
        self.indexes += [op.index for op in ops if isinstance(op, PutOp)
                         and op.namespace[-2:-1] == ("messages",)]
        return super().batch(ops)


def test_ingest_keeps_its_batches_and_names_the_embedded_fields() -> None:
    store = BatchCounter(index={"dims": DIMS, "embed": FakeEmbeddings(DIMS),
                                "fields": ["text"]})
    tier = EpisodicTier(store, ROOT)
    tier.add_messages(TALK, "s1")
    first = store.batches
    tier.add_messages(LATER, "s1")
    # one read (session record + the new ids) and the write: the tail rides on the session
    # record, so the context costs no read (the turns after are written on stores with a
    # keyword channel only: tests/test_episodic_views.py)
    assert (first, store.batches - first) == (2, 2)
    assert store.indexes and all(ix == MESSAGE_INDEX_FIELDS for ix in store.indexes)


async def test_async_ingest_writes_the_same_fields() -> None:
    sync_store = InMemoryStore(index={"dims": DIMS, "embed": FakeEmbeddings(DIMS),
                                      "fields": ["text"]})
    async_store = InMemoryStore(index={"dims": DIMS, "embed": FakeEmbeddings(DIMS),
                                       "fields": ["text"]})
    EpisodicTier(sync_store, ROOT).add_messages(TALK, "s1")
    await EpisodicTier(async_store, ROOT).aadd_messages(TALK, "s1")
    fields = [{k: v.get(k) for k in EMBEDDED_FIELDS} for v in _values(sync_store)]
    assert fields == [{k: v.get(k) for k in EMBEDDED_FIELDS} for v in _values(async_store)]
    assert fields[2]["embed_text"].endswith(f"{TALK[0]['content']} {TALK[1]['content']}")
