"""Compaction in an agent: a long thread's model input is head + overlays + tail within the
budget, AI/tool pairs are never split, the pre-compaction flush writes at most 10 facts a
range, and the checkpointed messages stay (or are trimmed, by option)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from langmem_edge import AgentMemory
from langmem_edge.graphs import MemoryMiddleware, MemoryOptions
from langmem_edge.graphs.compaction import spans
from langmem_edge.graphs.recall import BLOCK_OPEN
from langmem_edge.memory.config import EpisodicConfig
from langmem_edge.memory.episodic.compaction import message_tokens
from langmem_edge.memory.episodic.messages import normalize_messages
from langmem_edge.testing import FakeEmbeddings, ScriptedChatModel

INDEX = {"dims": 64, "embed": FakeEmbeddings(64), "fields": ["text"]}
BUDGET = 700
TURNS = 12
CTX = {"profile": "alice"}
CFG = {"configurable": {"thread_id": "long"}, "recursion_limit": 50}


@tool
def lookup(topic: str) -> str:
    """Look a topic up."""
    return f"{topic}: " + "a long result line with many words in it " * 6


def script(turns: int) -> list[Any]:
    out: list[Any] = []
    for i in range(turns):
        out.append(AIMessage(content="", tool_calls=[
            {"name": "lookup", "args": {"topic": f"fruit {i}"}, "id": f"c{i}a"},
            {"name": "lookup", "args": {"topic": f"tree {i}"}, "id": f"c{i}b"}]))
        out.append(f"Here is what I found about fruit {i}.")
    return out


def said(i: int) -> str:
    return (f"I love apples number {i}. I like pears number {i}. I enjoy plums number {i}. "
            f"My favourite tree {i} is the oak {i}. Tell me about fruit {i}.")


def input_tokens(call: list[BaseMessage], config: EpisodicConfig) -> int:
    """Estimated tokens of a model call's conversation (the memory block has its own
    budget), counted as the episodic tier counts a window."""
    shown = [m for m in call if not str(m.content).startswith(BLOCK_OPEN)]
    normal = normalize_messages(shown, config, now=datetime.now(UTC))
    return sum(message_tokens(n["content"], config) for n in normal)


def assert_pairs_whole(call: list[BaseMessage]) -> None:
    """Every tool message answers an AI message just before it, and every AI tool call of
    the call's history is answered."""
    for begin, end in spans(call):
        first = call[begin]
        if isinstance(first, ToolMessage):
            pytest.fail(f"tool message {first.tool_call_id} without its AI message")
        if isinstance(first, AIMessage) and first.tool_calls:
            answered = {m.tool_call_id for m in call[begin + 1:end]}
            assert answered == {c["id"] for c in first.tool_calls}


def run_turns(agent: Any, turns: int, mw: MemoryMiddleware) -> None:
    for i in range(turns):
        agent.invoke({"messages": [HumanMessage(said(i))]}, CFG, context=CTX)
        mw.flush()


async def arun_turns(agent: Any, turns: int, mw: MemoryMiddleware) -> None:
    for i in range(turns):
        await agent.ainvoke({"messages": [HumanMessage(said(i))]}, CFG, context=CTX)
        await mw.aflush()


def check(memory: AgentMemory, model: ScriptedChatModel, messages: list[BaseMessage]) -> None:
    config = memory.config.episodic
    late = model.calls[-6:]  # the thread is long past the budget by then
    for call in model.calls:
        assert input_tokens(call, config) <= BUDGET
        assert_pairs_whole(call)
    assert any("[Summary of messages" in str(m.content) for c in late for m in c)
    alice = memory.profile("alice")
    overlays = alice._episodic().overlays("long")  # every overlay, not those in view
    flushed = [m for m in alice.list(limit=500) if m.source == "pre-compaction"]
    assert overlays and 0 < len(flushed) <= 10 * len(overlays)
    assert all(m.confidence == pytest.approx(0.6) for m in flushed)
    # the model's last input ends with the newest turn, verbatim
    assert model.calls[-1][-4].content == said(TURNS - 1)
    assert len(messages) == 5 * TURNS  # user, AI with 2 calls, 2 results, answer


def test_a_long_thread_is_compacted_within_budget_keeping_tool_pairs() -> None:
    memory = AgentMemory(InMemoryStore(index=INDEX))
    model = ScriptedChatModel(responses=script(TURNS))
    mw = MemoryMiddleware(memory, MemoryOptions(compaction_budget_tokens=BUDGET))
    agent = create_agent(model, [lookup], middleware=[mw], checkpointer=InMemorySaver())
    run_turns(agent, TURNS, mw)
    state = agent.get_state(CFG).values["messages"]
    check(memory, model, state)  # non-destructive: every message is still in the state
    mw.close()


async def test_async_compaction_keeps_the_budget_too() -> None:
    memory = AgentMemory(InMemoryStore(index=INDEX))
    model = ScriptedChatModel(responses=script(TURNS))
    mw = MemoryMiddleware(memory, MemoryOptions(compaction_budget_tokens=BUDGET))
    agent = create_agent(model, [lookup], middleware=[mw], checkpointer=InMemorySaver())
    await arun_turns(agent, TURNS, mw)
    check(memory, model, (await agent.aget_state(CFG)).values["messages"])
    await mw.aclose()


def test_one_range_flushes_at_most_10_facts() -> None:
    memory = AgentMemory(InMemoryStore(index=INDEX))
    alice = memory.profile("alice")
    many = [{"role": "user", "content": " ".join(
        f"I love fruit{i}x{j}." for j in range(6))} for i in range(30)]
    alice.ingest(many, session_id="big")
    window = alice.episodic.window("big", 300, compact=True)
    assert window.new_overlay is not None and len(window.flushed) <= 10
    assert len(window.flushed) == 10


def test_trim_state_cuts_the_checkpointed_messages_and_keeps_them_in_memory() -> None:
    memory = AgentMemory(InMemoryStore(index=INDEX))
    model = ScriptedChatModel(responses=script(TURNS))
    mw = MemoryMiddleware(memory, MemoryOptions(compaction_budget_tokens=BUDGET, trim_state=True))
    agent = create_agent(model, [lookup], middleware=[mw], checkpointer=InMemorySaver())
    run_turns(agent, TURNS, mw)
    mw.close()
    state = agent.get_state(CFG).values["messages"]
    assert len(state) < 5 * TURNS
    assert_pairs_whole(state)
    for call in model.calls:
        assert_pairs_whole(call)
    # every user message, trimmed or not, is in the episodic tier
    alice = memory.profile("alice")
    for i in range(TURNS):
        found = alice.episodic.search(f"apples number {i}", mode="keyword", limit=50)
        assert said(i) in [m.content for m in found]


def test_the_entry_cache_gives_what_the_conversion_gives() -> None:
    from langmem_edge.graphs.history import EntryCache, entries, may_exceed

    config = EpisodicConfig()
    msgs: list[BaseMessage] = [HumanMessage(said(i), id=f"h{i}") for i in range(5)]
    msgs.insert(2, AIMessage(content="", id="empty"))  # no entry, as the tier skips it
    cache = EntryCache(size=3)
    first = cache.entries(msgs, "t", config)
    assert first == cache.entries(msgs, "t", config) == entries(msgs, "t", config)
    assert [e.index for e in first] == [0, 1, 3, 4, 5]
    edited = [*msgs[:-1], HumanMessage("changed", id="h4")]  # same id, new content
    assert cache.entries(edited, "t", config)[-1].stored["content"] == "changed"
    assert not may_exceed(msgs, 10_000, config) and may_exceed(msgs, 50, config)


@pytest.mark.parametrize("trim", [False, True])
async def test_the_model_node_compacts_and_trims_by_option(trim: bool) -> None:
    from langgraph.graph import START, MessagesState, StateGraph

    from langmem_edge.graphs import MemoryExtractionNode, MemoryHooks, MemoryModelNode

    memory = AgentMemory(InMemoryStore(index=INDEX))
    model = ScriptedChatModel(responses=["A reply that says a few words about it."])
    hooks = MemoryHooks(memory, MemoryOptions(compaction_budget_tokens=BUDGET, trim_state=trim))
    graph = StateGraph(MessagesState)
    graph.add_node("model", MemoryModelNode(model, hooks=hooks))
    graph.add_node("extract", MemoryExtractionNode(hooks=hooks))
    graph.add_edge(START, "model")
    graph.add_edge("model", "extract")
    app = graph.compile(checkpointer=InMemorySaver())
    for i in range(TURNS):
        await app.ainvoke({"messages": [HumanMessage(said(i) * 2)]}, CFG, context=CTX)
        await hooks.aflush()
    await hooks.aclose()
    state = (await app.aget_state(CFG)).values["messages"]
    assert (len(state) < 2 * TURNS) if trim else (len(state) == 2 * TURNS)
    for call in model.calls:
        assert input_tokens(call, memory.config.episodic) <= BUDGET
    assert model.calls[-1][-1].content == said(TURNS - 1) * 2
