"""Conversation recall reads the store at every call and keeps nothing between calls
(``memory/episodic/search.py`` on ``ChromaStore``, the scan of the messages in scope on other
stores): another process's appends, deletions, imports and a deleted profile are in its
next recall, and on ``ChromaStore`` the store's keyword side scores each message with the
turns on both sides of it, as the scan does."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from chroma_calls import Calls
from episodic_helpers import BACKENDS, Plain, store_fixture
from langgraph.store.base import BaseStore
from test_episodic_hybrid_recall import TALK

from langmem_edge import ChromaStore
from langmem_edge.memory import AgentMemory
from langmem_edge.memory.core.stores import KeywordSearch
from langmem_edge.memory.episodic.recall import message_fields, message_keyword_ranking
from langmem_edge.memory.transfer import export_jsonl, import_jsonl
from langmem_edge.retrieval.text import default_analyzer
from langmem_edge.testing import FakeEmbeddings

MORE = [
    {"role": "user", "content": "The lake was freezing but the camping was great"},
    {"role": "assistant", "content": "Next time bring the pottery to the mountains"},
]
OTHER = [
    {"role": "user", "content": "My sister adopted a puppy called Biscuit"},
    {"role": "assistant", "content": "What breed is the puppy?"},
    {"role": "user", "content": "A beagle, she howls at the kettle"},
]
PREFIX = ("langmem_edge", "profiles", "alice", "messages")
SCAN_WEIGHTS = {"context": 0.5, "name": 1.0, "date": 1.0}
"""The scan's field weights (``EpisodicConfig``'s defaults; ``text`` weighs 1)."""
STORE_WEIGHTS = {"text": 1.0, "context": 0.5, "after": 0.5, "name": 1.0, "day": 1.0}
"""The same weights as the store route names its fields (``memory/episodic/search.py``)."""
QUERIES = ["where did Mel go camping?", "pottery class", "freezing lake", "Caro May 2023",
           "which breed howls at the kettle"]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[BaseStore]:
    yield from store_fixture(request, tmp_path)


def _same(store: BaseStore, reader: AgentMemory, reference: AgentMemory) -> None:
    """The reader's recall is the scan's (other stores: both scan); on ``ChromaStore`` the
    store's keyword side gives every message the score the scan's BM25F gives it over its
    text, the turns on both sides, its speaker and its day (ties may order apart: the
    store breaks them by row id), and the recall finds only stored messages."""
    stored = {m.key: m for m in store.search(PREFIX, limit=200)
              if m.value.get("profile") == "alice"}
    fields = message_fields(list(stored.values()), context_turns=2)
    for q in QUERIES:
        got = reader.profile("alice").episodic.search(q, limit=20, scope="all")
        assert {m.id for m in got} <= set(stored), q
        if not isinstance(store, KeywordSearch):
            want = reference.profile("alice").episodic.search(q, limit=20, scope="all")
            assert [(m.id, m.score) for m in got] == [(m.id, m.score) for m in want], q
            continue
        scan = message_keyword_ranking(q, fields, analyzer=default_analyzer(), k1=1.2,
                                       b=0.75, field_weights=SCAN_WEIGHTS)
        hits = store.keyword_search(PREFIX, q, limit=200, field_weights=STORE_WEIGHTS)
        assert {h.key: round(h.score, 9) for h in hits} == {
            k: round(s, 9) for k, s in scan}, q


def _views(store: BaseStore) -> tuple[AgentMemory, AgentMemory, AgentMemory]:
    """A writer, a reader (another process: its own objects) and a reference that scans
    every message at every call (no store capability)."""
    return AgentMemory(store), AgentMemory(store), AgentMemory(Plain(store))


def test_a_reader_sees_appends_deletions_and_imports_at_its_next_recall(
        store: BaseStore, tmp_path: Any) -> None:
    writer, reader, reference = _views(store)
    alice = writer.profile("alice")
    alice.ingest(TALK[:4], session_id="s1")
    _same(store, reader, reference)
    alice.ingest(TALK[4:], session_id="s1")  # the turns after s1's last two
    alice.ingest(OTHER, session_id="s2")
    _same(store, reader, reference)
    (gone,) = [m for m in alice.episodic.messages("s1") if m.content.startswith("Up in")]
    alice._episodic().delete_messages("s1", [gone.id])  # its neighbours' contexts change
    _same(store, reader, reference)
    alice.delete_session("s2")
    _same(store, reader, reference)
    assert not [m for q in QUERIES for m in reader.profile("alice").episodic.search(
        q, scope="all") if m.session_id == "s2" or m.id == gone.id]
    source = AgentMemory(store, namespace=("elsewhere",))
    source.profile("alice").ingest(MORE, session_id="s3")
    export_jsonl(source, tmp_path / "out.jsonl")
    import_jsonl(writer, tmp_path / "out.jsonl")
    _same(store, reader, reference)
    assert any(m.session_id == "s3" for m in reader.profile("alice").episodic.search(
        "freezing lake", scope="all"))


def test_a_deleted_profile_is_gone_from_a_readers_next_recall(store: BaseStore) -> None:
    writer, reader, reference = _views(store)
    writer.profile("alice").ingest(TALK, session_id="s1")
    _same(store, reader, reference)
    writer.delete_profile("alice")
    assert reader.profile("alice").episodic.search("pottery", scope="all") == []
    writer.profile("alice").ingest(MORE, session_id="s1")  # made again
    _same(store, reader, reference)


def test_an_ingest_writes_the_turns_after_into_the_two_messages_before(
        tmp_path: Any) -> None:
    """A follow-up 2-message ingest on ChromaStore: the session's read (with the messages'
    ids), the rows' write, then the turns after into the two messages before it (one read
    and one update); a first ingest has no messages before it."""
    store = ChromaStore.from_path(str(tmp_path / "db"), index={
        "dims": 16, "embed": FakeEmbeddings(16), "fields": ["text"]})
    tier = AgentMemory(store).profile("alice")._episodic()
    calls = Calls(store)
    tier.add_messages(TALK[:2], "s1")
    assert calls.names == ["get", "upsert"]
    calls.names.clear()
    tier.add_messages(TALK[2:4], "s1")
    assert calls.names == ["get", "upsert", "get", "update"]
    rows = {m.value["seq"]: m.value for m in store.search(tier.messages_namespace("s1"))}
    assert rows[0]["after"] == f"{TALK[1]['content']} {TALK[2]['content']}"
    assert rows[1]["after"] == f"{TALK[2]['content']} {TALK[3]['content']}"
    assert rows[2]["after"] == TALK[3]["content"] and "after" not in rows[3]
    assert rows[3]["context"] == f"{TALK[1]['content']} {TALK[2]['content']}"


def test_a_long_message_lends_no_turns_after_and_ends_them(tmp_path: Any) -> None:
    store = ChromaStore.from_path(str(tmp_path / "db"), index={
        "dims": 16, "embed": FakeEmbeddings(16), "fields": ["text"]})
    tier = AgentMemory(store).profile("alice")._episodic()
    paste = "log line " * 80  # stands alone (500 characters and more)
    tier.add_messages([{"role": "user", "content": "why does the build fail?"}], "s1")
    tier.add_messages([{"role": "user", "content": paste},
                       {"role": "assistant", "content": "the linker ran out of memory"}], "s1")
    rows = {m.value["seq"]: m.value for m in store.search(tier.messages_namespace("s1"))}
    assert "after" not in rows[0] and "after" not in rows[1]  # ended by it; none of its own
    assert "after" not in rows[2] and "context" not in rows[2]
