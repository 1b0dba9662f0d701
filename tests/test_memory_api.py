"""DESIGN.md's public API example, end to end, on InMemoryStore and ChromaStore."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from langmem_edge import AgentMemory, ChromaStore
from langmem_edge.testing import FakeEmbeddings


@pytest.fixture(params=["memory", "chroma"])
def memory(request: pytest.FixtureRequest, tmp_path: Any) -> AgentMemory:
    index = {"dims": 64, "embed": FakeEmbeddings(64), "fields": ["text"]}
    if request.param == "memory":
        return AgentMemory(InMemoryStore(index=index), model=None)
    return AgentMemory(ChromaStore.from_path(str(tmp_path), index=index), model=None)


def test_design_example(memory: AgentMemory) -> None:
    alice = memory.profile("user:alice")
    alice.remember("Prefers dark mode", key="preference.ui_theme")
    res = alice.recall("what theme does alice like?")  # only the key says "theme"
    assert res.count >= 1 and res.answer.startswith("Prefers dark mode")

    alice.remember("Prefers light mode now", key="preference.ui_theme")
    chain = alice.history("preference.ui_theme")
    assert [m.text for m in chain] == ["Prefers dark mode", "Prefers light mode now"]
    assert chain[0].superseded_by == chain[1].id

    messages = [
        {"role": "user", "content": "I live in Singapore and I work at Acme."},
        {"role": "assistant", "content": "Noted!"},
    ]
    first = alice.ingest(messages, session_id="conv-8891")
    again = alice.ingest(messages, session_id="conv-8891")
    assert first.messages_added == 2 and again.messages_added == 0
    assert "Singapore" in alice.summary()

    bob = memory.profile("user:bob")
    assert bob.recall("what theme does alice like?").count == 0
    assert bob.recall("Singapore").answer == ""

    alice.delete_session("conv-8891")
    memory.delete_profile("user:alice")
    assert memory.profile("user:alice").recall("theme").count == 0


def test_a_page_iterates_over_its_records_and_results_are_typed(memory: AgentMemory) -> None:
    from langmem_edge.memory.episodic import ContextWindow, StoredMessage

    p = memory.profile("user:carol")
    first, second = p.remember("Likes tea"), p.remember("Plays the cello")
    page = p.list()
    assert [m.id for m in page] == [first.id, second.id]  # records, not field pairs
    assert len(page) == 2 and page[1].text == "Plays the cello"
    p.ingest([{"role": "user", "content": "I play the cello on Sundays."}], session_id="s")
    window = p.episodic.window("s", 1000)
    assert isinstance(window, ContextWindow) and window.head  # one message: the head
    found = p.episodic.search("cello", mode="keyword", scope="all")
    assert found and all(isinstance(m, StoredMessage) for m in found)
    with pytest.raises(TypeError):
        p.episodic.search("cello", colour="red")  # type: ignore[call-arg]
