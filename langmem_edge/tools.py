"""LangChain tools through which a model reads and writes its memory.

::

    from langchain.agents import create_agent
    from langmem_edge.tools import MemoryContext, MemoryState, create_memory_tools

    agent = create_agent(model, create_memory_tools(memory), state_schema=MemoryState,
                         context_schema=MemoryContext, checkpointer=saver)
    agent.invoke({"messages": [...]}, {"configurable": {"thread_id": "t1"}},
                 context={"profile": "user:alice", "contact": "bob"})

**Whose memory.** The profile, the contact and the thread come from the run, never from the
model's arguments: each tool reads ``ToolRuntime.context`` first (a :class:`MemoryContext`
mapping, or any object with those attributes), then ``config["configurable"]`` (the thread
also from ``configurable["thread_id"]``, where langgraph puts it). A run with no profile
gets a ToolMessage that says so; bad arguments get a ToolMessage naming what was wrong
(``status="error"``); neither ends the run.

**What the agent sees next.** ``set_context``, ``set_ongoing_task`` and
``clear_ongoing_task`` return a ``Command`` that updates the state (``working_notes``,
``ongoing_task``: declare them with ``state_schema=MemoryState``; without it langgraph drops
the keys) and adds the ToolMessage, as langchain's ``TodoListMiddleware`` does.

Pick some with ``create_memory_tools(memory, include=["recall", ...])``. Every tool has a
sync and an async half (``tool.func`` / ``tool.coroutine``), both driving one plan of the
tool (``memory/core/plans.py``) over the ``Profile`` / ``ProfileWorking`` methods and their
``a*`` twins: in ``agent.ainvoke`` no tool blocks the event loop or takes a worker thread.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from langchain.agents import AgentState
from langchain.tools import ToolRuntime
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langgraph.types import Command

from langmem_edge.errors import ConfigurationError, LangmemEdgeError
from langmem_edge.memory import AgentMemory, Profile
from langmem_edge.memory.core.plans import Call, Plan, run_async, run_sync

__all__ = ["MemoryContext", "MemoryState", "TOOL_NAMES", "create_memory_tools"]

REMEMBER_CONFIDENCE = 0.9
"""Confidence of what the model asks to remember (an explicit statement)."""
SEARCH_LIMIT = 10
"""Memories ``search_memory`` returns by default."""
CONVERSATION_LIMIT = 10
"""Messages ``recall_conversation`` returns by default."""
RECALL_ALL_LIMIT = 100
"""Memories ``recall()`` without a key lists at most (the contact's first, then agent-wide
ones, newest first)."""


class MemoryContext(TypedDict, total=False):
    """The run context the memory tools read (``create_agent(..., context_schema=
    MemoryContext)``, then ``agent.invoke(..., context={...})``).

    Every field may instead be given in ``config["configurable"]``; the context wins.
    """

    profile: str
    """Whose memory: the profile name (required)."""
    contact: str | None
    """Who the agent is talking to: facts are remembered and recalled for this contact
    first. ``None``: agent-wide."""
    thread_id: str
    """The conversation (default ``configurable["thread_id"]``): the thread of the working
    notes and the ongoing task, the session of ``recall_conversation(scope="conversation")``."""


def _latest(old: Any, new: Any) -> Any:
    """Reducer: several tool calls of one round may set the same key; the last one wins
    (each tool reports what the store holds after its write)."""
    return new


class MemoryState(AgentState):
    """``AgentState`` plus what the memory tools put in the state for the next model call."""

    working_notes: NotRequired[Annotated[str, _latest]]
    """The thread's working notes, as ``set_context`` left them."""
    ongoing_task: NotRequired[Annotated[dict[str, Any] | None, _latest]]
    """The thread's ongoing task (description, steps, status), or ``None`` once cleared."""


class _RunError(Exception):
    """The run lacks what a tool needs (no profile, no thread)."""


@dataclass(frozen=True)
class _Run:
    profile: Profile
    contact: str | None
    thread: str | None

    def need_thread(self) -> str:
        if not self.thread:
            raise _RunError("this run has no thread_id (give it in the run's context or in "
                            "config['configurable']), so there is no conversation to use")
        return self.thread


def run_value(context: Any, config: Mapping[str, Any] | None, name: str) -> Any:
    """One field of a run (``profile``, ``contact``, ``thread_id``): the run's ``context``
    first (a :class:`MemoryContext` mapping or any object with that attribute), then
    ``config["configurable"]``; ``None`` when neither has it. The one lookup the tools, the
    graphs' hooks and turn resume share."""
    value = (context.get(name) if isinstance(context, Mapping)
             else getattr(context, name, None))
    if value is None:
        value = ((config or {}).get("configurable") or {}).get(name)
    return value


def _run_value(runtime: ToolRuntime, name: str) -> Any:
    return run_value(runtime.context, runtime.config, name)


def _run(memory: AgentMemory, runtime: ToolRuntime) -> _Run:
    name = _run_value(runtime, "profile")
    if name is None:
        raise _RunError("no memory profile in this run: memory tools need 'profile' in the "
                        "run's context or config['configurable']; nothing was read or "
                        "written")
    return _Run(memory.profile(name), _run_value(runtime, "contact"),
                _run_value(runtime, "thread_id"))


Reply = str | Command
"""What a tool answers: the ToolMessage's text, or a ``Command`` that also updates the state."""


def _guarded(name: str, plan: Plan[Reply]) -> Plan[Reply]:
    """``plan``, with what stops it (no profile, bad arguments) raised as a ``ToolException``:
    the tool answers it as an error ToolMessage naming what was wrong, and the run goes on."""
    try:
        return (yield from plan)
    except (_RunError, LangmemEdgeError) as e:
        raise ToolException(f"{name} failed: {e}") from e


def _memory_tool(plan: Callable[..., Plan[Reply]]) -> BaseTool:
    """The tool of ``plan``, a generator function whose signature and docstring are the
    tool's (its ``runtime: ToolRuntime`` is injected) and whose effects are ``Call`` steps
    with a sync and an async half. The tool's sync half drives it with ``run_sync``, its
    async half with ``run_async``: one body, the same checks and replies."""
    name = plan.__name__

    @functools.wraps(plan)
    def run(*args: Any, **kwargs: Any) -> Reply:
        return run_sync(_guarded(name, plan(*args, **kwargs)))

    @functools.wraps(plan)
    async def arun(*args: Any, **kwargs: Any) -> Reply:
        return await run_async(_guarded(name, plan(*args, **kwargs)))

    return StructuredTool.from_function(run, coroutine=arun, parse_docstring=True,
                                        handle_tool_error=True)


def _update(runtime: ToolRuntime, name: str, text: str, **state: Any) -> Command:
    message = ToolMessage(text, tool_call_id=runtime.tool_call_id or "", name=name)
    return Command(update={**state, "messages": [message]})


def _lines(records: Sequence[Any]) -> str:
    return "\n".join(
        f"- {r.key + ': ' if r.key else ''}{r.text}"
        f"{' (about ' + r.contact + ')' if r.contact else ''}" for r in records)


# -- semantic memory ----------------------------------------------------------------------------


def _remember_tool(memory: AgentMemory) -> BaseTool:
    """The ``remember`` tool."""

    def remember(key: str, value: str, runtime: ToolRuntime,
                 category: str | None = None) -> Plan[Reply]:
        """Remember a lasting fact, preference or instruction for later conversations.

        Use a stable dotted key, e.g. "preference.ui_theme": remembering under a key that
        already holds something replaces the old value (the history is kept). Facts about
        the person you are talking to are remembered for them only.

        Args:
            key: Topic key, e.g. "preference.language" or "identity.employer".
            value: What to remember, as a short self-contained sentence.
            category: Optional type: preference, identity, relationship, decision, event,
                instruction, skill, task, workflow-outcome or workflow-failure.
        """
        run = _run(memory, runtime)
        p = run.profile
        record = yield Call(p.remember, p.aremember, (value,), {
            "key": key, "fact_type": category, "confidence": REMEMBER_CONFIDENCE,
            "source": "explicit", "contact": run.contact, "session_id": run.thread})
        scope = f"for {run.contact}" if run.contact else "agent-wide"
        return f"Remembered {record.key or key!r} ({scope}): {record.text}"

    return _memory_tool(remember)


def _recall_tool(memory: AgentMemory) -> BaseTool:
    """The ``recall`` tool."""

    def recall(runtime: ToolRuntime, key: str | None = None) -> Plan[Reply]:
        """Look up what you remembered under a key, or list everything you remember.

        Facts about the person you are talking to come first, then general ones.

        Args:
            key: The topic key to look up, e.g. "preference.ui_theme". Leave it out to list
                everything remembered.
        """
        run = _run(memory, runtime)
        p = run.profile
        found = yield Call(p.lookup, p.alookup, (key,),
                           {"contact": run.contact, "limit": RECALL_ALL_LIMIT})
        if found:
            return _lines(found)
        return "Nothing remembered yet." if key is None else f"Nothing remembered under {key!r}."

    return _memory_tool(recall)


def _search_memory_tool(memory: AgentMemory) -> BaseTool:
    """The ``search_memory`` tool."""

    def search_memory(query: str, runtime: ToolRuntime, limit: int = SEARCH_LIMIT
                      ) -> Plan[Reply]:
        """Search your long-term memory by meaning, words and dates.

        Use it before answering anything that may depend on what you learned earlier
        (preferences, facts about people, past decisions).

        Args:
            query: What you want to know, in plain words.
            limit: How many memories to return at most.
        """
        run = _run(memory, runtime)
        p = run.profile
        found = yield Call(p.recall, p.arecall, (query,), {
            "limit": limit, "contact": run.contact, "session_id": run.thread})
        records = [c.memory for c in found.candidates if c.memory is not None]
        return _lines(records) if records else f"No memories match {query!r}."

    return _memory_tool(search_memory)


def _recall_conversation_tool(memory: AgentMemory) -> BaseTool:
    """The ``recall_conversation`` tool."""

    def recall_conversation(
        query: str,
        runtime: ToolRuntime,
        mode: Literal["hybrid", "semantic", "keyword"] = "hybrid",
        limit: int = CONVERSATION_LIMIT,
        role: Literal["user", "assistant", "system", "tool"] | None = None,
        scope: Literal["contact", "conversation", "all"] = "contact",
    ) -> Plan[Reply]:
        """Find what was actually said in past messages (word for word).

        Args:
            query: What to look for.
            mode: "hybrid" (default) for meaning and words together, "semantic" to search
                by meaning only, "keyword" for exact words only (names, codes).
            limit: How many messages to return at most.
            role: Only messages of this role.
            scope: "contact": conversations with the person you are talking to;
                "conversation": this conversation only; "all": every conversation.
        """
        run = _run(memory, runtime)
        episodic = run.profile.episodic
        thread = run.need_thread() if scope == "conversation" else run.thread
        found = yield Call(episodic.search, episodic.asearch, (query,), {
            "mode": mode, "limit": limit, "role": role, "scope": scope, "session_id": thread,
            "contact": run.contact})
        if not found:
            return f"No messages match {query!r}."
        return "\n".join(f"- [{m.session_id} #{m.seq}] {m.role}: {m.content}" for m in found)

    return _memory_tool(recall_conversation)


# -- working memory -----------------------------------------------------------------------------


def _set_context_tool(memory: AgentMemory) -> BaseTool:
    """The ``set_context`` tool."""

    def set_context(notes: str, runtime: ToolRuntime,
                    mode: Literal["replace", "append", "clear"] = "replace") -> Plan[Reply]:
        """Keep working notes for this conversation: what you must not lose track of while
        the task goes on (constraints, intermediate results, what is left to check).

        Args:
            notes: The notes (ignored when clearing).
            mode: "replace" the notes, "append" a line to them, or "clear" them.
        """
        run = _run(memory, runtime)
        w = run.profile.working
        now = yield Call(w.set_context, w.aset_context, (run.need_thread(), notes),
                         {"mode": mode})
        text = f"Working notes now:\n{now}" if now else "Working notes cleared."
        return _update(runtime, "set_context", text, working_notes=now)

    return _memory_tool(set_context)


def _task_state(task: Any) -> dict[str, Any]:
    return {"description": task.description, "steps": list(task.steps),
            "status": task.status}


def _set_ongoing_task_tool(memory: AgentMemory) -> BaseTool:
    """The ``set_ongoing_task`` tool."""

    def set_ongoing_task(
        description: str,
        runtime: ToolRuntime,
        steps: list[str] | None = None,
        status: Literal["pending", "in_progress", "blocked", "done"] = "in_progress",
    ) -> Plan[Reply]:
        """Set the task this conversation is working on, so it survives interruptions.

        Call it again to update the steps or the status; it replaces the previous one.

        Args:
            description: What the task is, in one or two sentences.
            steps: The steps, in order.
            status: pending, in_progress, blocked or done.
        """
        run = _run(memory, runtime)
        w = run.profile.working
        task = yield Call(w.set_ongoing_task, w.aset_ongoing_task,
                          (run.need_thread(), description),
                          {"steps": steps or (), "status": status})
        return _update(runtime, "set_ongoing_task",
                       f"Ongoing task ({task.status}): {task.description}",
                       ongoing_task=_task_state(task))

    return _memory_tool(set_ongoing_task)


def _get_ongoing_task_tool(memory: AgentMemory) -> BaseTool:
    """The ``get_ongoing_task`` tool."""

    def get_ongoing_task(runtime: ToolRuntime) -> Plan[Reply]:
        """Show the task this conversation is working on: description, steps and status."""
        run = _run(memory, runtime)
        w = run.profile.working
        task = yield Call(w.get_ongoing_task, w.aget_ongoing_task, (run.need_thread(),))
        if task is None:
            return "No ongoing task."
        steps = "".join(f"\n{i}. {s}" for i, s in enumerate(task.steps, 1))
        return f"Ongoing task ({task.status}): {task.description}{steps}"

    return _memory_tool(get_ongoing_task)


def _clear_ongoing_task_tool(memory: AgentMemory) -> BaseTool:
    """The ``clear_ongoing_task`` tool."""

    def clear_ongoing_task(runtime: ToolRuntime) -> Plan[Reply]:
        """Clear this conversation's ongoing task (it is finished or abandoned)."""
        run = _run(memory, runtime)
        w = run.profile.working
        had = yield Call(w.clear_ongoing_task, w.aclear_ongoing_task, (run.need_thread(),))
        text = "Ongoing task cleared." if had else "There was no ongoing task."
        return _update(runtime, "clear_ongoing_task", text, ongoing_task=None)

    return _memory_tool(clear_ongoing_task)


_BUILDERS: dict[str, Callable[[AgentMemory], BaseTool]] = {
    "remember": _remember_tool,
    "recall": _recall_tool,
    "search_memory": _search_memory_tool,
    "recall_conversation": _recall_conversation_tool,
    "set_context": _set_context_tool,
    "set_ongoing_task": _set_ongoing_task_tool,
    "get_ongoing_task": _get_ongoing_task_tool,
    "clear_ongoing_task": _clear_ongoing_task_tool,
}

TOOL_NAMES: tuple[str, ...] = tuple(_BUILDERS)
"""The names of the memory tools, in the order :func:`create_memory_tools` returns them."""


def create_memory_tools(memory: AgentMemory, *, include: Sequence[str] | None = None
                        ) -> list[BaseTool]:
    """The memory tools over ``memory`` (all of :data:`TOOL_NAMES`, or those in
    ``include``), for ``create_agent(model, tools)`` or a ``ToolNode``."""
    if not isinstance(memory, AgentMemory):
        raise ConfigurationError(f"memory must be an AgentMemory, got {type(memory).__name__}")
    names = TOOL_NAMES if include is None else tuple(include)
    unknown = [n for n in names if n not in _BUILDERS]
    if unknown or isinstance(include, str):
        raise ConfigurationError(
            f"unknown memory tools {unknown or include!r}; allowed: {', '.join(TOOL_NAMES)}")
    return [_BUILDERS[n](memory) for n in names]
