"""Isolation: a stateful property test over profiles, contacts, namespaces, keys, queries and
filters, through the store, AgentMemory, the tools and the nodes. No result ever comes from
another profile, contact scope or namespace.

Every text written carries a marker ``zq<n>`` the machine remembers with its owner (the
profile and contact, or the store namespace), so whatever any read path returns, a recall
candidate, a search hit, a tool's reply or a node's memory block, is traced back to who
wrote it. Hostile parts: control characters, quotes, ``$`` operators in values and filters,
unicode, names that are prefixes of one another, wildcards, 10,000-character strings.
Rejected inputs must raise a documented error (``langmem_edge.errors``).

Quick: :data:`QUICK_EXAMPLES` x :data:`QUICK_STEPS` operations; long: :data:`LONG_EXAMPLES` x
:data:`LONG_STEPS` (10,000).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import START, StateGraph
from langgraph.prebuilt import ToolNode
from typing_extensions import TypedDict

from langmem_edge.errors import LangmemEdgeError
from langmem_edge.graphs import MemoryRecallNode
from langmem_edge.tools import MemoryContext, MemoryState, create_memory_tools

from .helpers import long_size, open_memory, open_store, remove_folder, scratch_folder

QUICK_EXAMPLES, QUICK_STEPS = 5, 40
"""Quick variant: examples x steps (200 operations)."""

LONG_EXAMPLES, LONG_STEPS = 200, 50
"""Long variant: examples x steps (10,000 operations)."""

WORLD_EXAMPLES = int(os.environ.get("LANGMEM_EDGE_ISOLATION_WORLD_EXAMPLES", "20"))
"""Examples that share one world before a fresh one (1,000 operations of the long run, all
of the quick one; ``LANGMEM_EDGE_ISOLATION_WORLD_EXAMPLES=200``: one world for the whole
long run). One world for all 10,000 operations made each operation ~4x slower by the 4,000th
(0.14 s -> 0.53 s: every read went through more data, in the per-process indexes of the
release before the memory layer read the store per operation), too slow for the run to end
on this machine then; each world still checks every read against all it holds."""

PROGRESS_EVERY = 500
"""Operations between two progress lines on stderr (operations so far, elapsed seconds)."""

pytestmark = pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")

MARK = re.compile(r"zq(\d+)q")
RAW = "raw"

PROFILES = st.sampled_from(["alice", "alice2", "alic", "Alice", "*", "a*", "ü名", "bob",
                            "b'\"q", "$ne", "x" * 100])
CONTACTS = st.sampled_from([None, "carol", "carol2", "Carol", "*", "$or", "ü", None])
HOSTILE = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", " ", "'", '"', "\\", "$ne", "$or", "{\"$gt\": 0}", "%", "*", "?",
                     "\x00", "\x1f", "\x7f", "\u202e", "名前", "🙂", "a.b", "\n\t"]),
    st.just("w" * 10_000),
)
KEYS = st.one_of(st.none(), st.sampled_from(["k", "preference.theme", "$key", "a/b"]),
                 st.text(max_size=12))
LABELS = st.sampled_from(["ns", "ns2", "n", "NS", "*", "$in", "ü", "x" * 60])
FILTERS = st.one_of(
    st.none(),
    st.fixed_dictionaries({"tag": HOSTILE}),
    st.fixed_dictionaries({"tag": st.fixed_dictionaries({"$eq": HOSTILE})}),
    st.fixed_dictionaries({"tag": st.fixed_dictionaries({"$ne": HOSTILE})}),
    st.fixed_dictionaries({"owner": st.fixed_dictionaries({"$ne": LABELS})}),
    st.dictionaries(st.sampled_from(["$or", "$and", "$where", "owner", "tag"]),
                    st.one_of(HOSTILE, st.lists(st.just({"owner": "ns"}), max_size=2)),
                    max_size=2),
)


class _Node(TypedDict):
    messages: list[Any]
    memory_context: str


class World:
    """What the examples share: one store and memory, the graphs over them, and who wrote
    each marker (kept across examples, so isolation is checked against everything written
    in the world). :meth:`renew` starts a fresh world (the figures carry on)."""

    def __init__(self) -> None:
        self.ops: Counter[str] = Counter()
        self.rejected: Counter[str] = Counter()
        self.seconds: Counter[str] = Counter()
        self.began = time.monotonic()
        self.examples = self.worlds = self.written = 0
        self._open()

    def _open(self) -> None:
        self.folder = scratch_folder("rel-isolation-")
        self.store = open_store(self.folder)
        self.memory = open_memory(self.store)
        self.owner: dict[int, tuple[str, ...]] = {}
        self.worlds += 1
        tools = StateGraph(MemoryState, context_schema=MemoryContext)
        tools.add_node("tools", ToolNode(create_memory_tools(self.memory)))
        tools.add_edge(START, "tools")
        self.tools = tools.compile()
        node = StateGraph(_Node, context_schema=MemoryContext)
        node.add_node("recall", MemoryRecallNode(self.memory))
        node.add_edge(START, "recall")
        self.node = node.compile()

    def close(self) -> None:
        """Close the store and remove its folder."""
        self.store.close()
        remove_folder(self.folder)

    def renew(self) -> None:
        """A fresh store, memory, graphs and marker map; the counts carry on."""
        self.close()
        self._open()

    def start_example(self) -> None:
        """Count an example; every :data:`WORLD_EXAMPLES` examples, a fresh world."""
        if self.examples and self.examples % WORLD_EXAMPLES == 0:
            self.renew()
        self.examples += 1

    def marker(self, owner: tuple[str, ...]) -> str:
        n = self.written
        self.written += 1
        self.owner[n] = owner
        return f"zq{n}q"

    def owners(self, text: str) -> set[tuple[str, ...]]:
        return {self.owner[int(m)] for m in MARK.findall(text) if int(m) in self.owner}


def _allowed(owner: tuple[str, ...], profile: str, contact: str | None) -> bool:
    return owner[0] == "memory" and owner[1] == profile and owner[2] in (contact, None)


def machine(world: World) -> type[RuleBasedStateMachine]:
    class Isolation(RuleBasedStateMachine):
        """Random writes and reads; every read is traced back to its writers."""

        def __init__(self) -> None:
            super().__init__()
            world.start_example()

        def attempt(self, op: str, fn: Any) -> Any:
            world.ops[op] += 1
            done = sum(world.ops.values())
            if done % PROGRESS_EVERY == 0:
                print(f"isolation: {done} operations, {time.monotonic() - world.began:.0f} s",
                      file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            try:
                return fn()
            except LangmemEdgeError as e:
                assert str(e), f"{op}: {type(e).__name__} without a message"
                world.rejected[type(e).__name__] += 1
                return None
            finally:
                world.seconds[op] += time.perf_counter() - t0

        @rule(profile=PROFILES, contact=CONTACTS, key=KEYS, text=HOSTILE)
        def remember(self, profile: str, contact: str | None, key: str | None, text: str) -> None:
            mark = world.marker(("memory", profile, contact))
            self.attempt("remember", lambda: world.memory.profile(profile).remember(
                f"{text} {mark}", key=key or None, contact=contact))

        @rule(profile=PROFILES, contact=CONTACTS, text=HOSTILE)
        def ingest(self, profile: str, contact: str | None, text: str) -> None:
            mark = world.marker(("memory", profile, contact))
            self.attempt("ingest", lambda: world.memory.profile(profile).ingest(
                [{"role": "user", "content": f"My code is {text} {mark}"}],
                session_id="s1", contact=contact))

        @rule(profile=PROFILES, contact=CONTACTS, query=HOSTILE)
        def recall(self, profile: str, contact: str | None, query: str) -> None:
            found = self.attempt("recall", lambda: world.memory.profile(profile).recall(
                f"{query} zq", contact=contact, limit=50))
            for c in found.candidates if found else []:
                for owner in world.owners(c.text):
                    assert _allowed(owner, profile, contact), (profile, contact, owner, c.text)

        @rule(profile=PROFILES, contact=CONTACTS, query=HOSTILE)
        def recall_conversation(self, profile: str, contact: str | None, query: str) -> None:
            found = self.attempt("recall_conversation", lambda: world.memory.profile(
                profile).episodic.search(f"{query} code", mode="keyword", scope="all"))
            for m in found or []:
                for owner in world.owners(m.content):
                    assert owner[0] == "memory" and owner[1] == profile, (profile, owner)

        @rule(label=LABELS, key=HOSTILE, text=HOSTILE, tag=HOSTILE)
        def put(self, label: str, key: str, text: str, tag: str) -> None:
            mark = world.marker((RAW, label))
            self.attempt("put", lambda: world.store.put(
                ("rel-raw", label), key or "k", {"text": f"{text} {mark}", "owner": label,
                                                 "tag": tag}))

        @rule(label=LABELS, query=st.one_of(st.none(), HOSTILE), flt=FILTERS)
        def search(self, label: str, query: str | None, flt: dict[str, Any] | None) -> None:
            hits = self.attempt("search", lambda: world.store.search(
                ("rel-raw", label), query=query, filter=flt, limit=50))
            for h in hits or []:
                assert tuple(h.namespace) == ("rel-raw", label), (label, h.namespace)
                assert world.owners(h.value["text"]) <= {(RAW, label)}

        @rule(profile=PROFILES, contact=CONTACTS, query=HOSTILE, key=KEYS)
        def tools(self, profile: str, contact: str | None, query: str, key: str | None) -> None:
            calls = [{"name": "search_memory", "args": {"query": f"{query} zq"}, "id": "c1"},
                     {"name": "recall", "args": {"key": key} if key else {}, "id": "c2"}]
            out = self.attempt("tools", lambda: world.tools.invoke(
                {"messages": [AIMessage(content="", tool_calls=calls)]},
                context={"profile": profile, "contact": contact, "thread_id": "t"}))
            for m in (out or {}).get("messages", []):
                if isinstance(m, ToolMessage):
                    for owner in world.owners(str(m.content)):
                        assert _allowed(owner, profile, contact), (profile, owner, m.content)

        @rule(profile=PROFILES, contact=CONTACTS, query=HOSTILE)
        def node(self, profile: str, contact: str | None, query: str) -> None:
            out = self.attempt("node", lambda: world.node.invoke(
                {"messages": [HumanMessage(content=f"{query} zq")], "memory_context": ""},
                context={"profile": profile, "contact": contact, "thread_id": "t"}))
            for owner in world.owners((out or {}).get("memory_context", "")):
                assert _allowed(owner, profile, contact), (profile, owner)

        @invariant()
        def profiles_listed_are_written(self) -> None:
            names = set(world.memory.list_profiles())
            written = {o[1] for o in world.owner.values() if o[0] == "memory"}
            assert names <= written

    return Isolation


def test_no_read_returns_another_profile_or_namespace(long_run: bool) -> None:
    examples, steps = QUICK_EXAMPLES, QUICK_STEPS
    if long_run:
        examples, steps = long_size(LONG_EXAMPLES), LONG_STEPS
    world = World()
    try:
        run_state_machine_as_test(machine(world), settings=settings(
            max_examples=examples, stateful_step_count=steps, deadline=None, derandomize=True,
            suppress_health_check=list(HealthCheck), database=None))
    finally:
        world.close()
    figures = {"operations": sum(world.ops.values()), "by_op": dict(world.ops),
               "rejected_by_type": dict(world.rejected), "markers_written": world.written,
               "worlds": world.worlds,
               "leaks_found": 0,
               "seconds_by_op": {k: round(v, 1) for k, v in world.seconds.items()}}
    print("\nisolation: " + json.dumps(figures))


@pytest.mark.parametrize("profile", ["alice", "*"])
def test_the_world_sees_its_own_writes(profile: str) -> None:
    world = World()
    try:
        mark = world.marker(("memory", profile, None))
        world.memory.profile(profile).remember(f"likes tea {mark}")
        found = world.memory.profile(profile).recall("tea zq", limit=5)
        assert world.owners(" ".join(c.text for c in found.candidates)) == {
            ("memory", profile, None)}
    finally:
        world.close()
