"""The memory tools through a real ToolNode and through create_agent with a scripted model,
on InMemoryStore + InMemorySaver and ChromaStore + ChromaSaver; effects read back through the
Profile API."""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import Iterator
from types import SimpleNamespace
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
from langmem_edge import (
    AgentMemory,
    ChromaSaver,
    ChromaStore,
    ConfigurationError,
    InvalidInputError,
)
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
        "MemoryContext", "MemoryState", "TOOL_NAMES", "create_memory_tools"])


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


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_appends_of_one_round_keep_every_line(backend: tuple[AgentMemory, Any],
                                              mode: str) -> None:
    memory, saver = backend
    graph = tool_graph(memory, saver)
    message = calls(*(call("set_context", {"notes": f"line {i}", "mode": "append"}, i)
                      for i in range(6)))
    run = {"configurable": {"thread_id": "t5"}}
    context = {"profile": "alice"}
    out = (graph.invoke({"messages": [message]}, run, context=context) if mode == "sync" else
           asyncio.run(graph.ainvoke({"messages": [message]}, run, context=context)))
    assert len([m for m in out["messages"] if isinstance(m, ToolMessage)]) == 6
    lines = memory.profile("alice").working.get_context("t5").split("\n")
    assert sorted(lines) == [f"line {i}" for i in range(6)]


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


def stored_record(store: Any, profile: str, memory_id: str) -> dict[str, Any]:
    [item] = [it for it in store.search(("langmem_edge", "profiles", profile), limit=10_000)
              if it.key == memory_id and it.namespace[-1] == "memories"]
    return item.value


@pytest.mark.parametrize("args", [{}, {"key": "preference.drink"}], ids=["all", "by-key"])
def test_recall_counts_accesses_in_their_own_rows(
        backend: tuple[AgentMemory, Any], args: dict[str, Any]) -> None:
    memory, saver = backend
    alice = memory.profile("alice")
    tea = alice.remember("Drinks green tea", key="preference.drink", contact="bob")
    theme = alice.remember("Likes dark mode", key="preference.ui_theme")
    agent_run(memory, saver, [calls(call("recall", args))],
              context={"profile": "alice", "contact": "bob"})
    counted = [tea, theme] if not args else [tea]
    for r in (tea, theme):
        assert alice.get(r.id).access_count == (r in counted)  # type: ignore[union-attr]
    memory.flush()  # the pending bumps, written to each memory's own count row
    elsewhere = AgentMemory(memory.store).profile("alice")  # another process's view
    for r in (tea, theme):
        assert elsewhere.get(r.id).access_count == (r in counted)  # type: ignore[union-attr]
        assert stored_record(memory.store, "alice", r.id).get("access_count", 0) == 0  # untouched


def test_recall_by_key_finds_the_key_among_hundreds_of_memories() -> None:
    # InMemoryStore only: the lookup is the profile index's, the same on every store, and
    # 222 writes on ChromaStore take minutes here (Chroma's upsert, ~90 ms each)
    index = {"dims": 64, "embed": FakeEmbeddings(64), "fields": ["text"]}
    memory, saver = AgentMemory(InMemoryStore(index=index)), InMemorySaver()
    alice = memory.profile("alice")
    # 220 memories of bob's that share every word of the key: a fused top-20 of bob's
    # memories first would never reach the agent-wide one under the key
    for i in range(220):
        alice.remember(f"preference drink note {i}", key=f"note.{i}", contact="bob",
                       verify=False)
    alice.remember("Drinks green tea", key="preference.drink", verify=False)
    alice.remember("Carol drinks coffee", key="preference.drink", contact="carol",
                   verify=False)
    for contact, expected in [("bob", "Drinks green tea"), (None, "Drinks green tea"),
                              ("carol", "Carol drinks coffee")]:
        out, _ = agent_run(memory, saver, [calls(call("recall", {"key": "preference.drink"}))],
                           thread=f"t-{contact}", context={"profile": "alice",
                                                            "contact": contact})
        assert tool_messages(out)["recall"].content == f"- preference.drink: {expected}" + (
            " (about carol)" if contact == "carol" else "")
    out, _ = agent_run(memory, saver, [calls(call("recall", {"key": "preference.none"}))],
                       context={"profile": "alice", "contact": "bob"})
    assert tool_messages(out)["recall"].content == "Nothing remembered under 'preference.none'."


def test_profile_lookup_by_key_and_everything() -> None:
    alice = AgentMemory(InMemoryStore()).profile("alice")
    assert alice.lookup("k") == [] and alice.lookup() == []
    old = alice.remember("Old value", key="k")
    new = alice.remember("New value", key="k")  # supersedes the old one
    bob = alice.remember("Bob's value", key="k", contact="bob")
    other = alice.remember("Another fact", key="other")
    gone = alice.remember("Forgotten", key="gone")
    alice.forget(gone.id)
    assert [r.id for r in alice.lookup("k")] == [new.id]
    assert [r.id for r in alice.lookup("k", contact="bob")] == [bob.id]
    assert [r.id for r in alice.lookup("k", contact="carol")] == [new.id]
    assert alice.lookup("gone") == [] and old.id not in {r.id for r in alice.lookup()}
    assert [r.id for r in alice.lookup(contact="bob")] == [bob.id, other.id, new.id]
    assert [r.id for r in alice.lookup(contact="bob", limit=2)] == [bob.id, other.id]
    assert [r.id for r in alice.lookup()] == [other.id, new.id]
    assert alice.get(new.id).access_count == 5  # type: ignore[union-attr]
    assert alice.lookup("k")[0].access_count == 6  # the returned copy counts its own access
    with pytest.raises(InvalidInputError, match="limit"):
        alice.lookup(limit=0)
    with pytest.raises(InvalidInputError, match="contact"):
        alice.lookup("k", contact="")


def forbid_sync_halves(tools: list[Any]) -> list[Any]:
    """The tools, their sync halves replaced by one that fails: a run that still works took
    the async halves only (no worker thread, the event loop never blocked by a tool)."""
    for t in tools:
        original = t.func

        @functools.wraps(original)
        def sync_half(*args: Any, _name: str = t.name, **kwargs: Any) -> Any:
            raise AssertionError(f"the sync half of {_name} ran in an async run")

        t.func = sync_half
    return tools


async def test_every_tool_runs_its_async_half_in_an_async_agent_run(
        backend: tuple[AgentMemory, Any]) -> None:
    memory, saver = backend
    alice = memory.profile("alice")
    await alice.aingest([{"role": "user", "content": "My booking code is XK42."}],
                        session_id="ta")
    model = ScriptedChatModel(responses=[
        calls(call("remember", {"key": "k", "value": "Async value"}),
              call("set_context", {"notes": "async notes"}),
              call("set_ongoing_task", {"description": "async task", "steps": ["a"]})),
        calls(call("recall", {"key": "k"}), call("recall", {}, 2),
              call("search_memory", {"query": "Async value"}),
              call("recall_conversation", {"query": "XK42", "mode": "keyword",
                                           "scope": "conversation"}),
              call("get_ongoing_task", {})),
        calls(call("clear_ongoing_task", {}), call("remember", {"key": "k", "value": "x"}, 2)),
        "done"])
    tools = forbid_sync_halves(create_memory_tools(memory))
    agent = create_agent(model, tools, state_schema=MemoryState, context_schema=MemoryContext,
                         checkpointer=saver)
    out = await agent.ainvoke({"messages": [("user", "hi")]},
                              {"configurable": {"thread_id": "ta"}},
                              context={"profile": "alice"})
    assert out["messages"][-1].content == "done"
    replies = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert len(replies) == 10 and all(m.status == "success" for m in replies), replies
    seen = {m.tool_call_id: m.content for m in replies}
    assert "Async value" in seen["call_recall_1"] and "Async value" in seen["call_recall_2"]
    assert "Async value" in seen["call_search_memory_1"]
    assert "XK42" in seen["call_recall_conversation_1"]
    assert "1. a" in seen["call_get_ongoing_task_1"]
    assert out["working_notes"] == "async notes" and out["ongoing_task"] is None
    assert [r.text for r in await alice.alist()] == ["x"]  # the second remember replaced it
    assert await alice.working.aget_context("ta") == "async notes"
    assert await alice.working.aget_ongoing_task("ta") is None


def test_the_same_plan_answers_sync_and_async_alike() -> None:
    memory = AgentMemory(InMemoryStore())
    memory.profile("alice").remember("Likes tea", key="preference.drink")
    [tool] = create_memory_tools(memory, include=["recall"])
    message = call("recall", {"key": "preference.drink"})
    runtime_config = {"configurable": {"profile": "alice"}}
    graph = tool_graph(memory)
    sync = graph.invoke({"messages": [calls(message)]}, runtime_config)
    asynced = asyncio.run(graph.ainvoke({"messages": [calls(message)]}, runtime_config))
    [a], [b] = tool_messages(sync).values(), tool_messages(asynced).values()
    assert a.content == b.content == "- preference.drink: Likes tea"
    bad = calls(call("remember", {"key": "k", "value": "v", "category": "gossip"}))
    errors = [tool_messages(graph.invoke({"messages": [bad]}, runtime_config))["remember"],
              tool_messages(asyncio.run(graph.ainvoke({"messages": [bad]}, runtime_config)))[
                  "remember"]]
    assert errors[0].content == errors[1].content and "gossip" in errors[0].content
    assert {m.status for m in errors} == {"error"}
    assert tool.coroutine is not None and tool.func is not None


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
       thread=st.one_of(st.none(), NAMES), picks=st.lists(TOOL_CALLS, min_size=1, max_size=4),
       asynchronous=st.booleans())
def test_no_tool_reads_or_writes_another_profiles_data(
        profile: str, contact: str | None, thread: str | None,
        picks: list[tuple[str, dict[str, Any]]], asynchronous: bool) -> None:
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
    graph = tool_graph(memory)
    out = (asyncio.run(graph.ainvoke({"messages": [message]}, context=context)) if asynchronous
           else graph.invoke({"messages": [message]}, context=context))
    for m in out["messages"]:
        if isinstance(m, ToolMessage):
            assert "diamond" not in str(m.content)
    assert snapshot(store, victim_root) == before
    for item in store.search(("langmem_edge",), limit=10_000):
        ns = tuple(item.namespace)
        assert ns[:3] in {victim_root, ("langmem_edge", "profiles", profile)}, ns


def test_run_value_reads_the_context_first_then_configurable() -> None:
    config = {"configurable": {"profile": "from-config", "thread_id": "t1"}}
    assert memory_tools.run_value({"profile": "from-context"}, config, "profile") == (
        "from-context")
    assert memory_tools.run_value(SimpleNamespace(profile=None), config, "profile") == (
        "from-config")
    assert memory_tools.run_value(None, config, "thread_id") == "t1"
    assert memory_tools.run_value({}, None, "contact") is None
