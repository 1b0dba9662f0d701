"""Hybrid recall with the keyword side ranked by the store (on a ``KeywordSearch`` store:
``memory/episodic/search.py``): nothing kept between calls, every write seen at the next
recall, filters applied, no scan of the scope."""

from __future__ import annotations

import asyncio
from typing import Any

from langgraph.store.base import BaseStore, Op, Result, SearchOp
from test_episodic_hybrid_recall import TALK

from langmem_edge import ChromaStore
from langmem_edge.memory.config import EpisodicConfig
from langmem_edge.memory.core.stores import KeywordSearch
from langmem_edge.memory.episodic.tier import EpisodicTier
from langmem_edge.testing import FakeEmbeddings

ROOT = ("app", "profiles", "alice")
STORE_RANKS = EpisodicConfig()


class Listing(BaseStore):
    """A ChromaStore's capabilities, with its batches recorded."""

    def __init__(self, inner: ChromaStore) -> None:
        self.inner, self.ops = inner, []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def batch(self, ops: Any) -> list[Result]:
        ops = list(ops)
        self.ops += ops
        return self.inner.batch(ops)

    async def abatch(self, ops: Any) -> list[Result]:
        return self.batch(ops)


def _store(tmp_path: Any) -> ChromaStore:
    return ChromaStore.from_path(str(tmp_path / "db"), index={
        "dims": 32, "embed": FakeEmbeddings(32), "fields": ["text"]})


def test_the_store_ranks_and_nothing_is_scanned(tmp_path: Any) -> None:
    store = Listing(_store(tmp_path))
    assert isinstance(store, KeywordSearch)
    tier = EpisodicTier(store, ROOT, config=STORE_RANKS)
    tier.add_messages(TALK, "s1")
    store.ops.clear()
    found = tier.recall_conversation("where did Mel go camping?", scope="all", limit=3)
    texts = [m.content for m in found]
    assert "We finally went camping last weekend" in texts
    assert "Up in the mountains near the lake" in texts  # by the words of the turns before
    ops: list[Op] = store.ops
    assert not [op for op in ops if isinstance(op, SearchOp) and op.query is None]


def test_every_write_is_seen_at_the_next_recall(tmp_path: Any) -> None:
    inner = _store(tmp_path)
    reader = EpisodicTier(inner, ROOT, config=STORE_RANKS)
    writer = EpisodicTier(_store(tmp_path), ROOT)  # another store object, same database
    assert reader.recall_conversation("pottery", scope="all") == []
    stored = writer.add_messages(TALK, "s1")
    pottery = next(m for m in stored if "pottery" in m.content)
    assert reader.recall_conversation("pottery", scope="all")[0].id == pottery.id
    writer.delete_messages("s1", [pottery.id])
    assert pottery.id not in {m.id for m in reader.recall_conversation("pottery", scope="all")}
    writer.delete_session("s1")
    assert reader.recall_conversation("pottery camping lake", scope="all") == []


def test_filters_scope_and_async(tmp_path: Any) -> None:
    store = _store(tmp_path)
    tier = EpisodicTier(store, ROOT, config=STORE_RANKS)
    tier.add_messages(TALK, "s1")
    tier.add_messages([{"role": "user", "content": "the lake froze over"}], "s2")
    other = EpisodicTier(store, ("app", "profiles", "bob"), config=STORE_RANKS)
    other.add_messages([{"role": "user", "content": "lake lake lake"}], "s1")
    found = tier.recall_conversation("lake", scope="all", role="assistant")
    assert found and all(m.role == "assistant" for m in found)
    in_s2 = tier.recall_conversation("lake", scope="conversation", session_id="s2")
    assert [m.content for m in in_s2] == ["the lake froze over"]
    everything = tier.recall_conversation("lake", scope="all", limit=20)
    assert "lake lake lake" not in {m.content for m in everything}  # never another profile's
    again = asyncio.run(tier.arecall_conversation("lake", scope="all", limit=20))
    assert [(m.id, m.score) for m in again] == [(m.id, m.score) for m in everything]
