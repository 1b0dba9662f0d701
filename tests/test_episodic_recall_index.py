"""The per-process message index of hybrid recall (``memory/episodic/recall_index.py``): the
same ranking as scanning every message, exact after appends, deletions and other writers,
and reading only what changed."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pytest
from episodic_helpers import BACKENDS, DIMS, Plain, store_fixture
from langgraph.store.base import BaseStore, Op, Result, SearchOp
from langgraph.store.memory import InMemoryStore
from test_episodic_hybrid_recall import TALK  # the same conversation

from langmem_edge.memory.config import EpisodicConfig
from langmem_edge.memory.episodic import recall_index
from langmem_edge.memory.episodic.recall_index import MessageIndex, message_index_for
from langmem_edge.memory.episodic.tier import EpisodicTier
from langmem_edge.testing import FakeEmbeddings

ROOT = ("app", "profiles", "alice")

MORE = [
    {"role": "user", "content": "The lake was freezing but the camping was great",
     "timestamp": "2023-05-09T10:00:00"},
    {"role": "assistant", "content": "Next time bring the pottery to the mountains",
     "timestamp": "2023-05-09T10:01:00"},
]
"""Dated: a message's embedded text starts with its day, so the ranking of undated ones
changed with the day the tests ran (the fake embeddings hash the day's words too)."""
QUERIES = ["where did Mel go camping?", "pottery class", "lake mountains photo",
           "Caro May 2023", "freezing"]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[BaseStore]:
    yield from store_fixture(request, tmp_path)


def _tiers(store: BaseStore) -> tuple[EpisodicTier, EpisodicTier]:
    return (EpisodicTier(store, ROOT),
            EpisodicTier(Plain(store), ROOT, config=EpisodicConfig(recall_index=False)))


def _same(indexed: EpisodicTier, scanned: EpisodicTier, **kwargs: Any) -> None:
    for q in QUERIES:
        a = indexed.recall_conversation(q, limit=8, **kwargs)
        b = scanned.recall_conversation(q, limit=8, **kwargs)
        assert [(m.id, m.score) for m in a] == [(m.id, m.score) for m in b], q


def test_indexed_recall_equals_the_scan_through_appends_and_deletions(
        store: BaseStore) -> None:
    indexed, scanned = _tiers(store)
    indexed.add_messages(TALK, "s1")
    indexed.add_messages(TALK[:3], "s2")
    _same(indexed, scanned, scope="all")
    _same(indexed, scanned, scope="conversation", session_id="s1")
    # an append re-scores the neighbours of the new messages
    scanned.add_messages(MORE, "s1")
    _same(indexed, scanned, scope="all")
    assert "freezing" in indexed.recall_conversation("freezing", scope="all")[0].content
    # a deletion in the middle of a session changes its neighbours' context
    (gone,) = [m for m in indexed.list_messages("s1") if m.content.startswith("Up in")]
    scanned.delete_messages("s1", [gone.id])
    _same(indexed, scanned, scope="all")
    assert all(m.id != gone.id for q in QUERIES
               for m in indexed.recall_conversation(q, scope="all"))
    # a session deleted and created again
    scanned.delete_session("s2")
    _same(indexed, scanned, scope="all")
    scanned.add_messages(MORE, "s2")
    _same(indexed, scanned, scope="all")
    _same(indexed, scanned, scope="conversation", session_id="s2")


def test_filters_apply_to_the_indexed_ranking(store: BaseStore) -> None:
    indexed, _ = _tiers(store)
    indexed.add_messages(TALK, "s1")
    indexed.add_messages([{"role": "user", "content": "camping for work"}], "s9",
                         contact="bob@example.com")
    found = indexed.recall_conversation("camping", scope="all", role="assistant")
    assert found and all(m.role == "assistant" for m in found)
    found = indexed.recall_conversation("camping", scope="contact",
                                        contact="bob@example.com")
    assert [m.content for m in found] == ["camping for work"]
    other = EpisodicTier(store, ("app", "profiles", "bob"))
    assert other.recall_conversation("camping", scope="all") == []


class CountingStore(InMemoryStore):
    """An ``InMemoryStore`` that records the namespaces of the searches without a query."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.reads: list[tuple[str, ...]] = []

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        self.reads += [op.namespace_prefix for op in ops
                       if isinstance(op, SearchOp) and op.query is None]
        return super().batch(ops)


def _counting() -> CountingStore:
    return CountingStore(index={"dims": DIMS, "embed": FakeEmbeddings(DIMS),
                                "fields": ["text"]})


def test_a_steady_recall_reads_no_message_and_an_append_reads_only_its_page() -> None:
    store = _counting()
    tier = EpisodicTier(store, ROOT)
    tier.add_messages(TALK, "s1")
    tier.add_messages(TALK, "s2")
    tier.recall_conversation("camping", scope="all")
    store.reads.clear()
    tier.recall_conversation("pottery", scope="all")
    assert store.reads == [(*ROOT, "meta")]  # the generation and markers: none moved
    tier.add_messages(MORE, "s2")
    store.reads.clear()
    first = tier.recall_conversation("freezing lake", scope="all")
    # the markers, the entries of the writer whose marker moved; then the session record
    # it names and the appended messages, by key (the record lists their ids)
    assert store.reads[0] == (*ROOT, "meta")
    assert [r[:-1] for r in store.reads[1:]] == [(*ROOT, "message-changes")]
    # the appended messages are found: the two best (each the other's context)
    assert {m.content for m in first[:2]} == {m["content"] for m in MORE}
    store.reads.clear()
    tier.recall_conversation("freezing", scope="conversation", session_id="s1")
    assert store.reads == []  # its session record, read by key, has not moved


def test_on_chroma_a_steady_recall_ranks_by_keys_alone(tmp_path: Any) -> None:
    """On a ``NearestKeys`` store the vector side asks for keys and distances
    (``nearest_keys``) and takes the values from the message index: no vector search that
    reads rows, and the same ranking and scores as through the store's own search (the same
    store seen through a view without ``nearest_keys``)."""
    from langmem_edge.store import ChromaStore

    class SearchOnly(BaseStore):
        def __init__(self, inner: BaseStore) -> None:
            self.inner = inner

        def batch(self, ops: Iterable[Op]) -> list[Result]:
            return self.inner.batch(ops)

        async def abatch(self, ops: Iterable[Op]) -> list[Result]:
            return await self.inner.abatch(ops)

    index = {"dims": DIMS, "embed": FakeEmbeddings(DIMS), "fields": ["text"]}
    store = ChromaStore.from_path(str(tmp_path / "db"), index=index)
    searched: list[SearchOp] = []
    nearest: list[int] = []
    batch, keys = store.batch, store.nearest_keys

    def counting_batch(ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        searched.extend(op for op in ops if isinstance(op, SearchOp) and op.query)
        return batch(ops)

    def counting_keys(*args: Any, **kwargs: Any) -> Any:
        nearest.append(kwargs.get("limit", 10))
        return keys(*args, **kwargs)

    try:
        tier = EpisodicTier(store, ROOT)
        reference = EpisodicTier(SearchOnly(store), ROOT)
        tier.add_messages(TALK, "s1")
        tier.add_messages(TALK[:3], "s2", contact="bob@example.com")
        tier.recall_conversation("camping", scope="all")
        store.batch, store.nearest_keys = counting_batch, counting_keys  # type: ignore
        for kwargs in ({"scope": "all"}, {"scope": "all", "role": "assistant"},
                       {"scope": "contact", "contact": "bob@example.com"},
                       {"scope": "conversation", "session_id": "s2"}):
            searched.clear()
            nearest.clear()
            found = tier.recall_conversation("pottery camping", limit=8, **kwargs)
            assert searched == [] and len(nearest) >= 1, kwargs
            expected = reference.recall_conversation("pottery camping", limit=8, **kwargs)
            assert [(m.id, m.score) for m in found] == [(m.id, m.score) for m in expected]
            assert found, kwargs
    finally:
        store.close()


def test_every_message_write_is_a_settled_write_of_the_episodic_log() -> None:
    store = InMemoryStore()
    tier = EpisodicTier(store, ROOT)

    def log() -> tuple[list[tuple[int, bool]], list[list[str]]]:
        markers = store.search((*ROOT, "meta", "message-writers"), limit=100)
        entries = store.search((*ROOT, "message-changes"), limit=100)
        return ([(m.value["seq"], m.value["settled"]) for m in markers],
                sorted(e.value["ids"] for e in entries))

    tier.add_messages(TALK, "s1")
    assert log() == ([(1, True)], [["s1"]])
    tier.add_messages(TALK, "s1")  # nothing new: no entry, the marker settled
    assert log() == ([(2, True)], [["s1"]])
    tier.add_messages(MORE, "s2")
    tier.delete_messages("s1", [tier.list_messages("s1")[0].id])
    tier.delete_session("s2")
    assert log() == ([(5, True)], [["s1"], ["s1"], ["s2"], ["s2"]])
    assert store.search((*ROOT, "writers"), limit=10) == []  # not the semantic tier's log


def test_another_store_object_writing_the_same_chroma_is_seen(tmp_path: Any) -> None:
    from langmem_edge.store import ChromaStore

    index = {"dims": DIMS, "embed": FakeEmbeddings(DIMS), "fields": ["text"]}
    reader = ChromaStore.from_path(str(tmp_path / "db"), index=index)
    writer = ChromaStore.from_path(str(tmp_path / "db"), index=index)
    try:
        mine = EpisodicTier(reader, ROOT)
        theirs = EpisodicTier(writer, ROOT)
        theirs.add_messages(TALK, "s1")
        assert mine.recall_conversation("pottery", scope="all")
        theirs.add_messages(MORE, "s1")
        assert "freezing" in mine.recall_conversation("freezing", scope="all")[0].content
        theirs.delete_session("s1")
        assert mine.recall_conversation("pottery", scope="all") == []
    finally:
        reader.close()
        writer.close()


class ExpiringStore(InMemoryStore):
    """A store that says its items expire by default."""

    ttl_config = {"default_ttl": 5.0}  # type: ignore[assignment]


def test_no_index_for_stores_that_expire_items() -> None:
    store = ExpiringStore()
    made = message_index_for(store, ("k",), lambda: MessageIndex(
        analyzer=None, k1=1.2, b=0.75, field_weights={}, context_turns=2))  # type: ignore
    assert made is None
    tier = EpisodicTier(store, ROOT)
    tier.add_messages(TALK, "s1")
    assert tier.recall_conversation("pottery", scope="all")  # scanned instead


async def test_async_indexed_recall_matches_sync(store: BaseStore) -> None:
    indexed, _ = _tiers(store)
    await indexed.aadd_messages(TALK, "s1")
    first = await indexed.arecall_conversation("camping mountains", scope="all")
    assert [m.id for m in first] == [
        m.id for m in indexed.recall_conversation("camping mountains", scope="all")]


def test_imported_messages_are_seen_by_the_next_recall(tmp_path: Any) -> None:
    from langmem_edge import AgentMemory
    from langmem_edge.memory.transfer import export_jsonl, import_jsonl

    source = AgentMemory(InMemoryStore())
    source.profile("alice")._episodic().add_messages(MORE, "s7")
    export_jsonl(source, tmp_path / "alice.jsonl")
    memory = AgentMemory(InMemoryStore())
    alice = memory.profile("alice")
    alice._episodic().add_messages(TALK, "s1")
    assert alice.episodic.search("freezing", scope="all") == []  # index loaded
    import_jsonl(memory, tmp_path / "alice.jsonl")
    assert "freezing" in alice.episodic.search("freezing", scope="all")[0].content


def test_a_profile_above_the_index_limit_is_scanned(monkeypatch: pytest.MonkeyPatch) -> None:
    store = _counting()
    indexed, scanned = _tiers(store)
    indexed.add_messages(TALK, "s1")
    monkeypatch.setattr(recall_index, "MAX_INDEXED_MESSAGES", len(TALK) - 1)
    _same(indexed, scanned, scope="all")
    store.reads.clear()
    indexed.recall_conversation("pottery", scope="all")
    assert (*ROOT, "messages") in store.reads  # scanned, as without the index
    key = next(k for k in recall_index._STORES[store].indexes)
    assert len(recall_index._STORES[store].indexes[key]) == 0
