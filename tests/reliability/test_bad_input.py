"""Bad input: hypothesis over the public API. Only documented errors, each with a message
that says what was wrong, and a rejected call leaves nothing behind.

Covered: store ``put`` / ``get`` / ``search`` / ``list_namespaces`` / ``delete``,
``remember``, ``recall``, ``ingest``, ``list`` cursors, the tools' arguments (through a
``ToolNode``) and the CLI's arguments (typer's ``CliRunner``). A documented error is a
``langmem_edge.errors.LangmemEdgeError`` (``InvalidInputError`` and
``InvalidNamespaceError`` are also ``ValueError``); its message must name the argument or
value it refused. "Nothing behind": after a rejected call the store holds exactly what it
held before (every namespace, every item).

Quick: :data:`QUICK_EXAMPLES` examples per entry point; long: :data:`LONG_EXAMPLES`.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.graph import START, StateGraph
from langgraph.prebuilt import ToolNode
from typer.testing import CliRunner

from langmem_edge.cli import app
from langmem_edge.cli.base import FAKE_EMBEDDINGS_ENV
from langmem_edge.errors import LangmemEdgeError
from langmem_edge.tools import TOOL_NAMES, MemoryContext, MemoryState, create_memory_tools

from .helpers import is_long, long_size, open_memory, open_store, remove_folder, scratch_folder

QUICK_EXAMPLES = 25
"""Hypothesis examples per entry point, quick variant."""

LONG_EXAMPLES = 1_000
"""Hypothesis examples per entry point, long variant."""

EXAMPLES = long_size(LONG_EXAMPLES) if is_long() else QUICK_EXAMPLES

pytestmark = pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")

SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
    st.text(max_size=30), st.sampled_from(["", " ", "a.b", "\x00", "\x1f", "$ne", "langgraph",
                                           "🙂", "x" * 10_001, "\u202e", "'\"", "*"]),
)
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=6)
NAMESPACES = st.one_of(st.tuples(), st.lists(SCALARS, min_size=1, max_size=3).map(tuple),
                       SCALARS)

FIGURES: dict[str, Counter[str]] = {}


class Rig:
    """One store and memory on a folder with a little data, and a snapshot of everything."""

    def __init__(self) -> None:
        self.folder = scratch_folder("rel-bad-")
        self.store = open_store(self.folder)
        self.memory = open_memory(self.store)
        self.profile = self.memory.profile("alice")
        self.profile.remember("Alice likes tea", key="preference.drink")
        self.profile.ingest([{"role": "user", "content": "hello there"}], session_id="s")
        self.store.put(("app", "docs"), "d1", {"text": "a document"})

    def snapshot(self) -> list[tuple[Any, ...]]:
        out = []
        for ns in self.store.list_namespaces(limit=1000):
            for item in self.store.search(ns, limit=10_000):
                if tuple(item.namespace) == tuple(ns):
                    out.append((tuple(ns), item.key, json.dumps(item.value, sort_keys=True,
                                                                default=str)))
        return sorted(out)


@pytest.fixture(scope="module")
def rig() -> Any:
    r = Rig()
    yield r
    r.store.close()
    remove_folder(r.folder)


def _words(args: dict[str, Any]) -> list[str]:
    """What a message may name to say what was wrong: an argument's name or value."""
    out = [k.strip("_").removesuffix("s") for k in args]  # "messages": "message 0: ..."
    if any("prefix" in k for k in args):
        out.append("namespace")
    for v in args.values():
        out.extend(str(x) for x in (v if isinstance(v, (tuple, list)) else [v])
                   if isinstance(x, (str, int, float)) and str(x).strip())
    return [w.lower()[:40] for w in out]


def attempt(rig: Rig, entry: str, fn: Callable[..., Any], args: dict[str, Any],
            *, writes: bool) -> None:
    """Call ``fn(**args)``; a refusal must be documented, named and leave nothing behind."""
    before = rig.snapshot() if writes else None
    figures = FIGURES.setdefault(entry, Counter())
    try:
        fn(**args)
        figures["accepted"] += 1
        return
    except LangmemEdgeError as e:
        figures[type(e).__name__] += 1
        message = str(e).lower()
        assert len(message) >= 10, f"{entry}: message too short: {message!r}"
        assert any(w in message for w in _words(args)) or "limit" in message, (
            f"{entry}({args!r}): {type(e).__name__} does not say what was wrong: {message!r}")
    if writes:
        assert rig.snapshot() == before, f"{entry}({args!r}) was refused but wrote"


SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))


@SETTINGS
@given(namespace=NAMESPACES, key=SCALARS, value=VALUES, index=st.sampled_from([None, False]))
def test_store_put(rig: Rig, namespace: Any, key: Any, value: Any, index: Any) -> None:
    args = {"namespace": namespace, "key": key, "value": value}
    if index is False:
        args["index"] = False
    attempt(rig, "store.put", rig.store.put, args, writes=True)


@SETTINGS
@given(prefix=NAMESPACES, query=SCALARS, filter=st.one_of(st.none(), VALUES),
       limit=st.integers(-5, 20_000), offset=st.integers(-5, 100))
def test_store_search(rig: Rig, prefix: Any, query: Any, filter: Any, limit: int,
                      offset: int) -> None:
    attempt(rig, "store.search", lambda **a: rig.store.search(a.pop("namespace_prefix"), **a),
            {"namespace_prefix": prefix, "query": query, "filter": filter, "limit": limit,
             "offset": offset}, writes=False)


@SETTINGS
@given(namespace=NAMESPACES, key=SCALARS, op=st.sampled_from(["get", "delete", "list"]),
       depth=st.one_of(st.none(), st.integers(-3, 5)), limit=st.integers(-5, 2000))
def test_store_get_delete_list(rig: Rig, namespace: Any, key: Any, op: str, depth: Any,
                               limit: int) -> None:
    if op == "get":
        attempt(rig, "store.get", rig.store.get, {"namespace": namespace, "key": key},
                writes=False)
    elif op == "delete":
        if isinstance(namespace, tuple) and namespace[:1] in (("rel",), ("app",)):
            return  # a valid delete of real data is not a rejection
        attempt(rig, "store.delete", rig.store.delete, {"namespace": namespace, "key": key},
                writes=True)
    else:
        attempt(rig, "store.list_namespaces", rig.store.list_namespaces,
                {"prefix": namespace, "max_depth": depth, "limit": limit}, writes=False)


@SETTINGS
@given(text=SCALARS, key=SCALARS, kind=SCALARS, confidence=st.one_of(
    st.none(), st.floats(allow_nan=True), st.integers(-3, 3)), tags=st.one_of(
    st.lists(SCALARS, max_size=3), SCALARS), metadata=st.one_of(st.none(), VALUES),
    contact=SCALARS, source=st.sampled_from(["explicit", "turn", "magic", ""]))
def test_remember(rig: Rig, text: Any, key: Any, kind: Any, confidence: Any, tags: Any,
                  metadata: Any, contact: Any, source: str) -> None:
    args = {"text": text, "key": key, "kind": kind, "confidence": confidence, "tags": tags,
            "metadata": metadata, "contact": contact, "source": source}
    attempt(rig, "remember", rig.profile.remember, args, writes=True)


@SETTINGS
@given(query=SCALARS, limit=st.one_of(st.none(), st.integers(-5, 1000)), kind=SCALARS,
       scorer=SCALARS, contact=SCALARS, use_model=SCALARS, cursor=SCALARS,
       list_limit=st.one_of(st.none(), st.integers(-5, 1000)))
def test_recall_and_list_cursors(rig: Rig, query: Any, limit: Any, kind: Any, scorer: Any,
                                 contact: Any, use_model: Any, cursor: Any,
                                 list_limit: Any) -> None:
    attempt(rig, "recall", rig.profile.recall,
            {"query": query, "limit": limit, "kind": kind, "scorer": scorer,
             "contact": contact, "use_model": use_model}, writes=False)
    attempt(rig, "list", rig.profile.list, {"cursor": cursor, "limit": list_limit},
            writes=False)


MESSAGES = st.one_of(SCALARS, st.lists(st.one_of(
    SCALARS, st.fixed_dictionaries({"role": SCALARS, "content": SCALARS}), VALUES), max_size=4))


@SETTINGS
@given(messages=MESSAGES, session_id=SCALARS, contact=SCALARS)
def test_ingest(rig: Rig, messages: Any, session_id: Any, contact: Any) -> None:
    args = {"messages": messages, "session_id": session_id, "contact": contact}
    attempt(rig, "ingest", rig.profile.ingest, args, writes=True)


@pytest.fixture(scope="module")
def tool_graph(rig: Rig) -> Any:
    graph = StateGraph(MemoryState, context_schema=MemoryContext)
    graph.add_node("tools", ToolNode(create_memory_tools(rig.memory)))
    graph.add_edge(START, "tools")
    return graph.compile()


@SETTINGS
@given(name=st.sampled_from(TOOL_NAMES), args=st.dictionaries(
    st.sampled_from(["key", "value", "query", "limit", "mode", "scope", "notes", "steps",
                     "description", "category", "role", "extra"]), VALUES, max_size=4),
       profile=SCALARS)
def test_tool_arguments(rig: Rig, tool_graph: Any, name: str, args: dict[str, Any],
                        profile: Any) -> None:
    """A tool given bad arguments answers the model with an error message (it never raises
    out of the graph); the profile in the context is checked like any other name."""
    call = {"name": name, "args": args, "id": "c1"}
    figures = FIGURES.setdefault("tools", Counter())
    try:
        out = tool_graph.invoke({"messages": [AIMessage(content="", tool_calls=[call])]},
                                context={"profile": profile, "thread_id": "t"})
    except LangmemEdgeError as e:
        figures[type(e).__name__] += 1
        assert "profile" in str(e).lower(), str(e)
        return
    (reply,) = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    figures["error reply" if reply.status == "error" else "accepted"] += 1
    assert reply.content


CLI_WORDS = st.sampled_from(["remember", "recall", "history", "list", "get", "forget",
                             "delete", "ingest", "export", "import", "profiles", "stats",
                             "-p", "--json", "--key", "--limit", "--kind", "--cursor", "-1",
                             "0", "99999999999", "", "a.b", "\x00", "*", "$ne", "--nope"])


@settings(max_examples=max(10, EXAMPLES // 4), deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(args=st.lists(st.one_of(CLI_WORDS, st.text(max_size=12)), max_size=6))
def test_cli_arguments(args: list[str]) -> None:
    """Any argument list ends in an exit code with a message, never a traceback."""
    folder = tempfile.mkdtemp(prefix="rel-cli-")
    try:
        result = CliRunner(env={FAKE_EMBEDDINGS_ENV: "1"}).invoke(
            app, ["--path", folder, *args], input="")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    figures = FIGURES.setdefault("cli", Counter())
    figures[f"exit {result.exit_code}"] += 1
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        args, repr(result.exception))


def test_figures() -> None:
    """Prints what the examples above met (run with ``-s``); always passes."""
    print("\nbad input: " + json.dumps({k: dict(v) for k, v in FIGURES.items()}))
    assert math.isfinite(EXAMPLES)


@pytest.mark.parametrize("namespace", [None, True, 3, "users"])
def test_a_namespace_that_is_no_tuple_is_a_namespace_error(rig: Rig, namespace: Any) -> None:
    """Regression: langgraph's label check iterated it and raised a bare ``TypeError``."""
    from langmem_edge.errors import InvalidNamespaceError

    calls = [lambda: rig.store.get(namespace, "k"), lambda: rig.store.put(namespace, "k", {}),
             lambda: rig.store.delete(namespace, "k"), lambda: rig.store.search(namespace),
             lambda: rig.store.list_namespaces(prefix=namespace)]
    for call in calls[:-1] if namespace is None else calls:  # no prefix: list everything
        with pytest.raises(InvalidNamespaceError, match="tuple of strings"):
            call()


@pytest.mark.parametrize("flt", [True, "owner", ["owner"], 3])
def test_a_filter_that_is_no_dict_is_an_input_error(rig: Rig, flt: Any) -> None:
    """Regression: ``search(..., filter=True)`` raised a bare ``AttributeError``."""
    from langmem_edge.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="filter"):
        rig.store.search(("app",), filter=flt)
