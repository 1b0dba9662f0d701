"""The memory tools through a real ToolNode and through create_agent with a scripted model,
on InMemoryStore + InMemorySaver and ChromaStore + ChromaSaver; effects read back through the
Profile API."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.store.memory import InMemoryStore

import langmem_edge.tools as memory_tools
from langmem_edge import AgentMemory, ChromaSaver, ChromaStore, ConfigurationError
from langmem_edge.testing import FakeEmbeddings, ScriptedChatModel
from langmem_edge.tools import TOOL_NAMES, MemoryContext, MemoryState, create_memory_tools


@pytest.fixture(params=["memory", "chroma", pytest.param("server", marks=pytest.mark.server)])
def backend(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[tuple[AgentMemory, Any]]:
    """(AgentMemory, checkpointer): InMemoryStore + InMemorySaver, or ChromaStore +
    ChromaSaver on folders or on the session's server."""
    index = {"dims": 64, "embed": FakeEmbeddings(64), "fields": ["text"]}
    if request.param == "memory":
        yield AgentMemory(InMemoryStore(index=index)), InMemorySaver()
        return
    if request.param == "chroma":
        store = ChromaStore.from_path(str(tmp_path / "store"), index=index)
        saver = ChromaSaver.from_path(str(tmp_path / "saver"))
    else:
        url = request.getfixturevalue("chroma_server_url")
        run = uuid.uuid4().hex[:10]
        store = ChromaStore.from_url(url, collection_prefix=f"s{run}", index=index)
        saver = ChromaSaver.from_url(url, collection_prefix=f"c{run}")
    yield AgentMemory(store), saver
    saver.close()
    store.close()


def call(name: str, args: dict[str, Any], i: int = 1) -> dict[str, Any]:
    return {"name": name, "args": args, "id": f"call_{name}_{i}"}


def calls(*tool_calls: dict[str, Any]) -> AIMessage:
    return AIMessage(content="", tool_calls=list(tool_calls))


def agent_run(memory: AgentMemory, saver: Any, script: list[Any], *, thread: str = "t1",
              context: dict[str, Any] | None = None) -> tuple[dict[str, Any], ScriptedChatModel]:
    model = ScriptedChatModel(responses=[*script, "done"])
    agent = create_agent(model, create_memory_tools(memory), state_schema=MemoryState,
                         context_schema=MemoryContext, checkpointer=saver)
    out = agent.invoke({"messages": [("user", "hi")]},
                       {"configurable": {"thread_id": thread}, "recursion_limit": 40},
                       context=context if context is not None else {"profile": "alice"})
    return out, model


def tool_messages(out: dict[str, Any]) -> dict[str, ToolMessage]:
    return {m.name: m for m in out["messages"] if isinstance(m, ToolMessage)}


def tool_graph(memory: AgentMemory, checkpointer: Any = None) -> Any:
    graph = StateGraph(MemoryState, context_schema=MemoryContext)
    graph.add_node("tools", ToolNode(create_memory_tools(memory)))
    graph.add_edge(START, "tools")
    return graph.compile(checkpointer=checkpointer)


def test_the_factory_gives_every_tool_with_a_description() -> None:
    tools = create_memory_tools(AgentMemory(InMemoryStore()))
    assert [t.name for t in tools] == list(TOOL_NAMES) == [
        "remember", "recall", "search_memory", "recall_conversation", "set_context",
        "set_ongoing_task", "get_ongoing_task", "clear_ongoing_task"]
    for t in tools:
        assert len(t.description) > 40 and "runtime" not in t.args  # injected, not asked
    assert tools[0].args["key"]["description"].startswith("Topic key")
    only = create_memory_tools(AgentMemory(InMemoryStore()), include=["recall"])
    assert [t.name for t in only] == ["recall"]
    with pytest.raises(ConfigurationError, match="forget"):
        create_memory_tools(AgentMemory(InMemoryStore()), include=["forget"])
    assert sorted(memory_tools.__all__) == sorted([
        "MemoryContext", "MemoryState", "TOOL_NAMES", "create_memory_tools",
        *(f"create_{n}_tool" for n in TOOL_NAMES)])


def test_each_tool_through_create_agent(backend: tuple[AgentMemory, Any]) -> None:
    memory, saver = backend
    alice = memory.profile("alice")
    alice.ingest([{"role": "user", "content": "My booking code is XK42."}], session_id="t1")
    script = [
        calls(call("remember", {"key": "preference.ui_theme", "value": "Likes dark mode",
                                "category": "preference"})),
        calls(call("recall", {"key": "preference.ui_theme"})),
        calls(call("search_memory", {"query": "dark mode", "limit": 5})),
        calls(call("recall_conversation", {"query": "XK42", "mode": "keyword",
                                           "scope": "conversation"})),
        calls(call("set_context", {"notes": "user is in a hurry"})),
        calls(call("set_context", {"notes": "answer briefly", "mode": "append"}, 2)),
        calls(call("set_ongoing_task", {"description": "book a table",
                                        "steps": ["find", "book"]})),
        calls(call("get_ongoing_task", {})),
    ]
    out, model = agent_run(memory, saver, script)
    assert len(model.calls) == len(script) + 1 and out["messages"][-1].content == "done"
    seen = tool_messages(out)
    assert all(m.status == "success" for m in seen.values()), seen
    [record] = alice.list()
    assert (record.key, record.text, record.confidence) == (
        "preference.ui_theme", "Likes dark mode", 0.9)
    assert record.contact is None and record.fact_type == "preference"
    assert "Likes dark mode" in seen["recall"].content
    assert "Likes dark mode" in seen["search_memory"].content
    assert "XK42" in seen["recall_conversation"].content
    assert alice.working.get_context("t1") == "user is in a hurry\nanswer briefly"
    assert out["working_notes"] == "user is in a hurry\nanswer briefly"
    task = alice.working.get_ongoing_task("t1")
    assert task is not None and task.steps == ("find", "book")
    assert out["ongoing_task"]["description"] == "book a table"
    assert "1. find" in seen["get_ongoing_task"].content

    out, _ = agent_run(memory, saver, [calls(call("clear_ongoing_task", {}))])
    assert alice.working.get_ongoing_task("t1") is None and out["ongoing_task"] is None
    assert not list(memory.profile("bob").list())


def test_tools_through_a_tool_node_in_one_parallel_round(
        backend: tuple[AgentMemory, Any]) -> None:
    memory, saver = backend
    graph = tool_graph(memory, saver)
    message = calls(
        call("remember", {"key": "identity.employer", "value": "Works at Acme"}),
        call("set_context", {"notes": "notes"}),
        call("set_ongoing_task", {"description": "migrate", "status": "blocked"}),
    )
    out = graph.invoke({"messages": [message]}, {"configurable": {"thread_id": "t9"}},
                       context={"profile": "alice", "contact": "bob"})
    assert {m.name for m in out["messages"] if isinstance(m, ToolMessage)} == {
        "remember", "set_context", "set_ongoing_task"}
    alice = memory.profile("alice")
    [record] = alice.list()
    assert record.contact == "bob" and record.session_id == "t9"
    assert alice.working.get_context("t9") == "notes"
    assert alice.working.get_ongoing_task("t9").status == "blocked"  # type: ignore[union-attr]


def test_a_contact_fact_is_found_from_another_thread_of_that_contact_only(
        backend: tuple[AgentMemory, Any]) -> None:
    memory, saver = backend
    fact = {"key": "preference.drink", "value": "Drinks green tea"}
    agent_run(memory, saver, [calls(call("remember", fact))], thread="t1",
              context={"profile": "alice", "contact": "bob"})
    lookups = [calls(call("recall", {"key": "preference.drink"}),
                     call("search_memory", {"query": "green tea"}))]
    out, _ = agent_run(memory, saver, lookups, thread="t2",
                       context={"profile": "alice", "contact": "bob"})
    assert all("Drinks green tea" in m.content for m in tool_messages(out).values())
    out, _ = agent_run(memory, saver, lookups, thread="t3",
                       context={"profile": "alice", "contact": "carol"})
    assert not any("Drinks green tea" in m.content for m in tool_messages(out).values())


async def test_the_tools_in_an_async_agent_run(backend: tuple[AgentMemory, Any]) -> None:
    memory, saver = backend
    model = ScriptedChatModel(responses=[
        calls(call("remember", {"key": "k", "value": "Async value"}),
              call("set_context", {"notes": "async notes"})), "done"])
    agent = create_agent(model, create_memory_tools(memory), state_schema=MemoryState,
                         context_schema=MemoryContext, checkpointer=saver)
    out = await agent.ainvoke({"messages": [("user", "hi")]},
                              {"configurable": {"thread_id": "ta"}}, context={"profile": "al"})
    assert out["working_notes"] == "async notes" and out["messages"][-1].content == "done"
    assert [r.text for r in await memory.profile("al").alist()] == ["Async value"]
    assert await memory.profile("al").working.aget_context("ta") == "async notes"


def test_a_run_without_a_profile_gets_a_tool_message_and_goes_on() -> None:
    memory = AgentMemory(InMemoryStore())
    out, model = agent_run(memory, InMemorySaver(),
                           [calls(call("remember", {"key": "k", "value": "v"}))], context={})
    [message] = tool_messages(out).values()
    assert message.status == "error" and "no memory profile" in message.content
    assert out["messages"][-1].content == "done" and memory.list_profiles() == []


def test_the_profile_may_come_from_configurable_and_the_context_wins() -> None:
    memory = AgentMemory(InMemoryStore())
    graph = tool_graph(memory)
    remember = calls(call("remember", {"key": "k", "value": "from configurable"}))
    graph.invoke({"messages": [remember]}, {"configurable": {"profile": "carol"}})
    assert [r.text for r in memory.profile("carol").list()] == ["from configurable"]
    graph.invoke({"messages": [calls(call("remember", {"key": "k2", "value": "ctx"}))]},
                 {"configurable": {"profile": "carol"}}, context={"profile": "dave"})
    assert [r.text for r in memory.profile("dave").list()] == ["ctx"]
    assert len(memory.profile("carol").list()) == 1


def test_bad_arguments_and_missing_threads_get_tool_messages_naming_them() -> None:
    memory = AgentMemory(InMemoryStore())
    graph = tool_graph(memory)
    message = calls(
        call("set_context", {"notes": "x" * 20_000}),
        call("remember", {"key": "k", "value": "v", "category": "gossip"}),
        call("set_ongoing_task", {"description": "d", "status": "someday"}),
    )
    out = graph.invoke({"messages": [message]}, {"configurable": {"thread_id": "t"}},
                       context={"profile": "alice"})
    seen = tool_messages(out)
    assert "notes" in seen["set_context"].content and "10,000" in seen["set_context"].content
    assert "gossip" in seen["remember"].content
    assert "status" in seen["set_ongoing_task"].content
    assert all(m.status == "error" for m in seen.values())
    out = graph.invoke({"messages": [calls(call("get_ongoing_task", {}))]},
                       context={"profile": "alice"})
    [no_thread] = tool_messages(out).values()
    assert no_thread.status == "error" and "thread_id" in no_thread.content
    out = graph.invoke({"messages": [calls(call("recall", {}))]},
                       context={"profile": "bad.name"})
    [bad] = tool_messages(out).values()
    assert bad.status == "error" and "profile name" in bad.content


HOSTILE = st.sampled_from(["victim", "bob", "t", "s", "victim\x1fmemories", "victim.x", "*",
                           "victim*", "", " ", "victim/", "Victim", "profiles", "..", "a\x00b",
                           "x" * 101])
NAMES = st.one_of(HOSTILE, st.text(max_size=8))
TOOL_CALLS = st.sampled_from([
    ("remember", {"key": "secret", "value": "attacker value"}),
    ("recall", {"key": "secret"}),
    ("recall", {}),
    ("search_memory", {"query": "victim secret"}),
    ("recall_conversation", {"query": "victim secret", "mode": "keyword", "scope": "all"}),
    ("set_context", {"notes": "attacker notes"}),
    ("set_context", {"notes": "", "mode": "clear"}),
    ("set_ongoing_task", {"description": "attacker task"}),
    ("get_ongoing_task", {}),
    ("clear_ongoing_task", {}),
])


def snapshot(store: InMemoryStore, prefix: tuple[str, ...]) -> list[tuple[Any, ...]]:
    return sorted((tuple(it.namespace), it.key, repr(it.value))
                  for it in store.search(prefix, limit=10_000))


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(profile=NAMES.filter(lambda n: n != "victim"), contact=st.one_of(st.none(), NAMES),
       thread=st.one_of(st.none(), NAMES), picks=st.lists(TOOL_CALLS, min_size=1, max_size=4))
def test_no_tool_reads_or_writes_another_profiles_data(
        profile: str, contact: str | None, thread: str | None,
        picks: list[tuple[str, dict[str, Any]]]) -> None:
    store = InMemoryStore()
    memory = AgentMemory(store)
    victim = memory.profile("victim")
    victim.remember("victim secret diamond", key="secret")
    victim.remember("victim secret diamond for bob", key="secret", contact="bob")
    victim.ingest([{"role": "user", "content": "victim secret diamond"}], session_id="s")
    for t in {"t", thread if isinstance(thread, str) else "t"}:
        try:
            victim.working.set_context(t, "victim secret diamond")
            victim.working.set_ongoing_task(t, "victim secret diamond")
            victim.working.record_tool_call(t, "c", "fetch", {}, "victim secret diamond")
        except ValueError:  # a thread id no namespace may have
            pass
    victim_root = ("langmem_edge", "profiles", "victim")
    before = snapshot(store, victim_root)
    context: dict[str, Any] = {"profile": profile, "contact": contact}
    if thread is not None:
        context["thread_id"] = thread
    message = calls(*(call(name, args, i) for i, (name, args) in enumerate(picks)))
    out = tool_graph(memory).invoke({"messages": [message]}, context=context)
    for m in out["messages"]:
        if isinstance(m, ToolMessage):
            assert "diamond" not in str(m.content)
    assert snapshot(store, victim_root) == before
    for item in store.search(("langmem_edge",), limit=10_000):
        ns = tuple(item.namespace)
        assert ns[:3] in {victim_root, ("langmem_edge", "profiles", profile)}, ns
