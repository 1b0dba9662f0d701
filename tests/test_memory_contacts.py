"""Channel links: two gateway ids of one person resolve to one contact, on InMemoryStore and
ChromaStore, sync and async; links stay inside their profile and go with it."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from langmem_edge import AgentMemory, ChromaStore
from langmem_edge.errors import InvalidInputError
from langmem_edge.memory.core.contacts import MAX_CHANNEL_ID_CHARS
from langmem_edge.testing import FakeEmbeddings


@pytest.fixture(params=["memory", "chroma"])
def memory(request: pytest.FixtureRequest, tmp_path: Any) -> AgentMemory:
    index = {"dims": 64, "embed": FakeEmbeddings(64), "fields": ["text"]}
    if request.param == "memory":
        return AgentMemory(InMemoryStore(index=index))
    return AgentMemory(ChromaStore.from_path(str(tmp_path), index=index))


def test_linked_ids_resolve_to_one_contact(memory: AgentMemory) -> None:
    agent = memory.profile("agent:concierge")
    assert agent.contact_for("telegram:123") == "telegram:123"  # unlinked: itself
    agent.link_contact("telegram:123", "ana")
    agent.link_contact("email:ana@example.com", "ana")
    assert agent.contact_for("telegram:123") == agent.contact_for("email:ana@example.com") \
        == "ana"
    agent.link_contact("telegram:123", "ana-maria")  # linking again moves it
    assert agent.contact_for("telegram:123") == "ana-maria"
    other = memory.profile("agent:other")
    assert other.contact_for("email:ana@example.com") == "email:ana@example.com"
    memory.delete_profile("agent:concierge")
    assert memory.profile("agent:concierge").contact_for("telegram:123") == "telegram:123"


async def test_async_twins(memory: AgentMemory) -> None:
    agent = memory.profile("agent:concierge")
    await agent.alink_contact("sms:+351900000000", "ana")
    assert await agent.acontact_for("sms:+351900000000") == "ana"
    assert agent.contact_for("sms:+351900000000") == "ana"


@pytest.mark.parametrize(("channel", "contact", "message"), [
    ("", "ana", "channel_id must be a non-empty string"),
    ("telegram:1", "  ", "contact must be a non-empty string"),
    ("x" * (MAX_CHANNEL_ID_CHARS + 1), "ana", f"at most {MAX_CHANNEL_ID_CHARS}"),
])
def test_bad_links_are_refused(memory: AgentMemory, channel: str, contact: str,
                               message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        memory.profile("agent:concierge").link_contact(channel, contact)


def test_links_go_through_export_and_import(memory: AgentMemory, tmp_path: Any) -> None:
    from langmem_edge.memory.transfer import export_jsonl, import_jsonl

    agent = memory.profile("agent:concierge")
    agent.link_contact("telegram:123", "ana")
    agent.link_contact("email:ana@example.com", "ana")
    dump = tmp_path / "links.jsonl"
    assert export_jsonl(memory, dump).counts["contact_link"] == 2
    target = AgentMemory(InMemoryStore(index={"dims": 64, "embed": FakeEmbeddings(64),
                                              "fields": ["text"]}))
    assert import_jsonl(target, dump).written["contact_link"] == 2
    moved = target.profile("agent:concierge")
    assert moved.contact_for("telegram:123") == moved.contact_for("email:ana@example.com") \
        == "ana"
    assert import_jsonl(target, dump).written.get("contact_link", 0) == 0  # idempotent
