""":class:`MemoryMiddleware`: memory for ``langchain.agents.create_agent`` in one line.

::

    from langchain.agents import create_agent
    from langmem_edge.graphs import MemoryMiddleware

    memory_mw = MemoryMiddleware(memory)            # or MemoryMiddleware(): runtime.store
    agent = create_agent(model, tools, middleware=[memory_mw], checkpointer=saver,
                         context_schema=MemoryContext)
    agent.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "t1"}},
                 context={"profile": "user:alice", "contact": "bob"})
    memory_mw.close()                               # at shutdown: runs the waiting jobs

What each hook does (all of it in :class:`~langmem_edge.graphs.hooks.MemoryHooks`, shared with
the nodes):

- ``wrap_model_call`` / ``awrap_model_call``: the model sees the compacted view of a long
  thread and the memory block (recall, working notes, ongoing task) through
  ``request.override(messages=...)``; the checkpointed state never holds the block;
- ``before_model`` / ``abefore_model``: only with ``trim_state``, cuts the state itself;
  like the resume hooks below, it is defined only on the instances that use it (each hook
  of that kind is a graph node, one more checkpoint write a step);
- ``after_agent`` / ``aafter_agent``: hands the turn's messages to the background ingest
  (extraction, then compaction's summaries and pre-compaction flush), off the reply's path;
- ``before_agent``, ``after_model``, ``wrap_tool_call`` (and their twins): delegate to the
  ``resume`` collaborator when one is given (turn resume); without one they change nothing.

A run with no profile (in its context or ``configurable``) is left alone by every hook.
``close()`` / ``aclose()`` run the waiting background jobs (and stop the executor when the
middleware made it); ``stats()`` gives their counters. The state adds the memory tools' keys
(``working_notes``, ``ongoing_task``: :class:`~langmem_edge.tools.MemoryState`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ModelCallResult, ToolCallRequest
from langchain_core.messages import ToolMessage
from langgraph.types import Command

from langmem_edge.graphs.extraction import BackgroundJobs, TurnExtractor
from langmem_edge.graphs.hooks import MemoryHooks
from langmem_edge.memory import AgentMemory
from langmem_edge.tools import MemoryState

__all__ = ["MemoryMiddleware"]

ToolResult = ToolMessage | Command


class MemoryMiddleware(BackgroundJobs, AgentMiddleware[MemoryState, Any]):
    """Recall before each model call, extraction after each turn, compaction of long threads
    (see the module docstring).

    Args:
        memory: The memory; ``None``: an ``AgentMemory`` over the graph's store
            (``create_agent(store=...)`` or a deployment's store).
        resume: Turn resume (``langmem_edge.graphs.resume.TurnResume``): receives
            ``before_agent``, ``wrap_tool_call`` and ``after_model`` (and their async twins).
            ``None``: no turn resume.
        **options: :class:`~langmem_edge.graphs.hooks.MemoryHooks` options: ``model`` (of
            a memory made over the graph's store), ``recall_budget_tokens`` (800),
            ``recall_limit`` (10), ``compaction_budget_tokens`` (8,000; ``None``: off),
            ``trim_state`` (``False``), ``background`` (an executor; default the
            middleware's own).
    """

    state_schema = MemoryState

    def __new__(cls, memory: AgentMemory | None = None, *, resume: Any | None = None,
                **options: Any) -> MemoryMiddleware:
        # the hooks that add graph nodes only when they are used (see _NodeHooksMiddleware)
        wanted = resume is not None or bool(options.get("trim_state"))
        return super().__new__(_NodeHooksMiddleware if wanted and cls is MemoryMiddleware
                               else cls)

    def __init__(self, memory: AgentMemory | None = None, *, resume: Any | None = None,
                 **options: Any) -> None:
        super().__init__()
        self.hooks = MemoryHooks(memory, **options)
        # TURN RESUME: the one place it plugs in. ``resume`` is a TurnResume (graphs/resume.py)
        # or None; the three hook pairs of _NodeHooksMiddleware (below) hand it their calls.
        self.resume = resume
        self.tools = []

    # -- recall injection and compaction -----------------------------------------------------

    def wrap_model_call(self, request: ModelRequest,
                        handler: Callable[[ModelRequest], ModelResponse]) -> ModelCallResult:
        """Call the model on the compacted view with the memory block (state untouched)."""
        messages = self.hooks.model_input(request.messages, request.runtime)
        return handler(request if messages is None else request.override(messages=messages))

    async def awrap_model_call(
        self, request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]]) -> ModelCallResult:
        """Async :meth:`wrap_model_call`."""
        messages = await self.hooks.amodel_input(request.messages, request.runtime)
        return await handler(request if messages is None
                             else request.override(messages=messages))

    # -- post-turn extraction ----------------------------------------------------------------

    def after_agent(self, state: MemoryState, runtime: Any) -> dict[str, Any] | None:
        """Queue the turn for the background ingest; returns at once."""
        self.hooks.after_turn(state["messages"], runtime)
        return None

    async def aafter_agent(self, state: MemoryState, runtime: Any) -> dict[str, Any] | None:
        """Async :meth:`after_agent`."""
        await self.hooks.aafter_turn(state["messages"], runtime)
        return None

    @property
    def extractor(self) -> TurnExtractor:
        """The post-turn jobs' extractor (``stats``, ``flush``, ``close`` come from it)."""
        return self.hooks.extractor


class _NodeHooksMiddleware(MemoryMiddleware):
    """:class:`MemoryMiddleware` with the hooks that add graph nodes: ``before_model``
    (``trim_state``) and turn resume's ``before_agent`` / ``after_model`` /
    ``wrap_tool_call``. ``MemoryMiddleware(...)`` gives an instance of this class only when
    one of them is used, since every node of an agent is one more checkpoint write a step."""

    @property
    def name(self) -> str:
        """The middleware's name in the graph (its nodes' prefix): ``MemoryMiddleware``."""
        return "MemoryMiddleware"

    # -- trimming the state ------------------------------------------------------------------

    def before_model(self, state: MemoryState, runtime: Any) -> dict[str, Any] | None:
        """With ``trim_state``: cut an over-budget thread's messages in the state."""
        return self.hooks.trim_update(state["messages"], runtime)

    async def abefore_model(self, state: MemoryState, runtime: Any) -> dict[str, Any] | None:
        """Async :meth:`before_model`."""
        return await self.hooks.atrim_update(state["messages"], runtime)

    # -- turn resume (delegated) -------------------------------------------------------------

    def before_agent(self, state: MemoryState, runtime: Any) -> dict[str, Any] | None:
        """Turn resume's ``before_agent`` (nothing without ``resume``)."""
        return None if self.resume is None else self.resume.before_agent(state, runtime)

    async def abefore_agent(self, state: MemoryState, runtime: Any) -> dict[str, Any] | None:
        """Async :meth:`before_agent`."""
        return None if self.resume is None else await self.resume.abefore_agent(state, runtime)

    def after_model(self, state: MemoryState, runtime: Any) -> dict[str, Any] | None:
        """Turn resume's ``after_model`` (nothing without ``resume``)."""
        return None if self.resume is None else self.resume.after_model(state, runtime)

    async def aafter_model(self, state: MemoryState, runtime: Any) -> dict[str, Any] | None:
        """Async :meth:`after_model`."""
        return None if self.resume is None else await self.resume.aafter_model(state, runtime)

    def wrap_tool_call(self, request: ToolCallRequest,
                       handler: Callable[[ToolCallRequest], ToolResult]) -> ToolResult:
        """Turn resume's ``wrap_tool_call`` (the plain call without ``resume``)."""
        if self.resume is None:
            return handler(request)
        return self.resume.wrap_tool_call(request, handler)

    async def awrap_tool_call(
        self, request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolResult]]) -> ToolResult:
        """Async :meth:`wrap_tool_call`."""
        if self.resume is None:
            return await handler(request)
        return await self.resume.awrap_tool_call(request, handler)
