"""Profile's delegation to the episodic tier: ingest, conversation recall, deletion."""

# ruff: noqa: F811 - pytest fixtures imported from test_memory_support are redefined as parameters

from __future__ import annotations

from langgraph.store.base import BaseStore
from test_memory_support import (  # noqa: F401 - fixtures
    calls_of,
    embed,
    judge_model,
    make_store,
    memory,
    store,
)

from langmem_edge.memory import AgentMemory

CONVERSATION = [
    {"role": "user", "content": "Hi, I live in Singapore and I prefer dark mode."},
    {"role": "assistant", "content": "Noted!"},
    {"role": "user", "content": "My sister is called Mia. Please always answer in French."},
]


def test_ingest_stores_messages_and_writes_extracted_memories(memory: AgentMemory) -> None:
    p = memory.profile("user:alice")
    result = p.ingest(CONVERSATION, session_id="conv-1", contact="bob", writer="ingest")
    assert result.messages_added == 3
    written = result.memories_written
    assert written and all(m.source == "turn" and m.confidence == 0.5 for m in written)
    assert all(m.session_id == "conv-1" and m.contact == "bob" for m in written)
    assert all(m.source_message_ids and m.writer == "ingest" for m in written)
    assert {m.id for m in p.list(contact="bob").memories} == {m.id for m in written}
    again = p.ingest(CONVERSATION, session_id="conv-1", contact="bob")
    assert (again.messages_added, again.memories_written) == (0, [])
    found = p.episodic.search("dark mode")
    assert found and "dark mode" in found[0].content


async def test_aingest(memory: AgentMemory) -> None:
    p = memory.profile("p")
    result = await p.aingest(CONVERSATION, session_id="s")
    assert result.messages_added == 3 and result.memories_written
    assert await p.episodic.asearch("Mia")


def test_delete_removes_messages_no_other_memory_cites(memory: AgentMemory) -> None:
    p = memory.profile("p")
    written = p.ingest(CONVERSATION, session_id="s").memories_written
    by_message: dict[str, list[str]] = {}
    for m in written:
        for mid in m.source_message_ids:
            by_message.setdefault(mid, []).append(m.id)
    shared = next(mid for mid, ids in by_message.items() if len(ids) > 1)
    first = by_message[shared][0]
    p.delete(first)
    assert shared in {m.id for m in p.episodic.search("Singapore dark mode", limit=10)}
    for other in by_message[shared][1:]:
        p.delete(other)
    assert shared not in {m.id for m in p.episodic.search("Singapore dark mode", limit=10)}


def test_delete_session_removes_messages_and_its_memories(memory: AgentMemory) -> None:
    p = memory.profile("p")
    p.ingest(CONVERSATION, session_id="s1")
    keep = p.remember("Written elsewhere", session_id="s2")
    gone = p.delete_session("s1")
    assert gone.messages_deleted == 3 and gone.memories_deleted >= 1
    assert [m.id for m in p.list(status="all").memories] == [keep.id]
    assert p.episodic.search("Singapore") == []


def test_messages_channel_with_a_model(store: BaseStore) -> None:
    AgentMemory(store).profile("p").ingest(CONVERSATION, session_id="s1")  # rule extraction
    model = judge_model(answer="Singapore")
    p = AgentMemory(store, model=model).profile("p")
    res = p.recall("I live in Singapore")  # the default thinking level, medium
    kinds = {c.source_type for c in res.candidates}
    assert kinds == {"memory", "message"}
    msg = next(c for c in res.candidates if c.source_type == "message")
    assert "messages" in msg.breakdown.channels and msg.message is not None
    assert res.answer == "Singapore"
    low = AgentMemory(store, model=model, config={"recall": {"thinking_level": "low"}}
                      ).profile("p").recall("I live in Singapore")
    assert {c.source_type for c in low.candidates} == {"memory"}


def test_window_delegates_to_the_episodic_tier(memory: AgentMemory) -> None:
    p = memory.profile("p")
    p.ingest(CONVERSATION, session_id="s1")
    window = p.episodic.window("s1", 2000)
    assert window.session_id == "s1" and window.tokens <= 2000
