""":class:`MemoryMiddleware`: memory for ``langchain.agents.create_agent`` in one line.

::

    from langchain.agents import create_agent
    from langmem_edge.graphs import MemoryMiddleware

    memory_mw = MemoryMiddleware(memory)            # or MemoryMiddleware(): runtime.store
    # MemoryMiddleware(memory, MemoryOptions(recall_limit=5, documents=3)): see MemoryOptions
    agent = create_agent(model, tools, middleware=[memory_mw], checkpointer=saver,
                         context_schema=MemoryContext)
    agent.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "t1"}},
                 context={"profile": "user:alice", "contact": "bob"})
    memory_mw.close()                               # at shutdown: runs the waiting jobs

What each hook does (all of it in :class:`~langmem_edge.graphs.hooks.MemoryHooks`, shared with
the nodes):

- ``wrap_model_call`` / ``awrap_model_call``: the model sees the compacted view of a long
  thread and the memory block (recall, working notes, ongoing task, a resumed turn's
  results) through ``request.override(messages=...)``; the checkpointed state never holds
  the block; the thread's working state is read once for it (one store call), and turn
  resume ends the turn from that read;
- ``before_model`` / ``abefore_model``: only with ``options.trim_state``, cuts the state
  itself; like turn resume's ``before_agent`` below, it is defined only on the instances
  that use it (each hook of that kind is a graph node, one more checkpoint write a step);
- ``after_agent`` / ``aafter_agent``: hands the turn's messages to the background ingest
  (extraction, then compaction's summaries and pre-compaction flush), off the reply's path;
- turn resume (on by default, ``resume=False`` turns it off; ``docs/resume.md``):
  ``before_agent`` answers an interrupted turn's dangling tool calls from its turn record (or
  raises ``TurnInProgressError`` while it may still run), ``wrap_tool_call`` records each
  finished call, and ``wrap_model_call`` stamps the tool round and deletes the record with
  the final answer (all delegated to one :class:`~langmem_edge.graphs.resume.TurnResume`).

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
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import ToolMessage
from langgraph.types import Command

from langmem_edge.errors import ConfigurationError
from langmem_edge.graphs.background import BackgroundExecutor
from langmem_edge.graphs.extraction import BackgroundJobs, TurnExtractor
from langmem_edge.graphs.hooks import MemoryHooks, ModelInput
from langmem_edge.graphs.options import MemoryOptions, checked_options
from langmem_edge.graphs.resume import SeenTurn, TurnResume, TurnResumeState
from langmem_edge.memory import AgentMemory
from langmem_edge.tools import MemoryState

__all__ = ["MemoryMiddleware", "MemoryResumeState"]

ToolResult = ToolMessage | Command


class MemoryMiddleware(BackgroundJobs, AgentMiddleware[MemoryState, Any]):
    """Recall before each model call, extraction after each turn, compaction of long threads
    and turn resume (see the module docstring).

    Args:
        memory: The memory; ``None``: an ``AgentMemory`` over the graph's store
            (``create_agent(store=...)`` or a deployment's store).
        options: What memory does around each model call (recall budget and limit, document
            passages, compaction, ``trim_state``, ``strict``:
            :class:`~langmem_edge.graphs.MemoryOptions`); ``None``: the defaults.
        resume: Turn resume (``docs/resume.md``): ``True`` (default) a
            :class:`~langmem_edge.graphs.resume.TurnResume` over the same memory; a
            ``TurnResume`` of your own (a clock, ``wait=True``); ``False``: off (no turn
            record, and runs with ``durability="exit"`` are accepted).
        model: Chat model of a memory made over the graph's store (extraction, summaries);
            ignored when ``memory`` is given.
        background: The executor of the post-turn jobs; default one of the middleware's own
            (stopped by :meth:`close`).
    """

    state_schema = MemoryState

    def __new__(cls, memory: AgentMemory | None = None, options: MemoryOptions | None = None,
                *, resume: bool | TurnResume = True, model: BaseChatModel | None = None,
                background: BackgroundExecutor | None = None) -> MemoryMiddleware:
        # the hooks that add graph nodes only when they are used (see _variant)
        if cls is MemoryMiddleware:
            cls = _variant(resume is not False, checked_options(options).trim_state)
        return super().__new__(cls)

    def __init__(self, memory: AgentMemory | None = None, options: MemoryOptions | None = None,
                 *, resume: bool | TurnResume = True, model: BaseChatModel | None = None,
                 background: BackgroundExecutor | None = None) -> None:
        super().__init__()
        self.hooks = MemoryHooks(memory, options, model=model, background=background)
        if resume is True:  # one AgentMemory a store for the hooks and turn resume
            resume = TurnResume(memory)
            resume.resolver = self.hooks.resolver
        elif resume is not False and not isinstance(resume, TurnResume):
            raise ConfigurationError(
                f"resume must be True, False or a TurnResume, got {type(resume).__name__}")
        self.resume: TurnResume | None = resume or None
        self.tools = []

    # -- recall injection, compaction, and turn resume's end of turn ------------------------

    def wrap_model_call(self, request: ModelRequest,
                        handler: Callable[[ModelRequest], ModelResponse]) -> ModelCallResult:
        """Call the model on the compacted view with the memory block (state untouched);
        with turn resume, stamp the tool round / end the turn inside the model node."""
        prepared = self.hooks.prepare(request.messages, request.runtime)
        if prepared is not None:
            request = request.override(messages=prepared.messages)
        if self.resume is None:
            return handler(request)
        return self.resume.wrap_model_call(request, handler, seen=_seen(prepared))

    async def awrap_model_call(
        self, request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]]) -> ModelCallResult:
        """Async :meth:`wrap_model_call`."""
        prepared = await self.hooks.aprepare(request.messages, request.runtime)
        if prepared is not None:
            request = request.override(messages=prepared.messages)
        if self.resume is None:
            return await handler(request)
        return await self.resume.awrap_model_call(request, handler, seen=_seen(prepared))

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


def _seen(prepared: ModelInput | None) -> SeenTurn | None:
    """The turn record the recall read saw, for turn resume to end the turn with."""
    if prepared is None or prepared.thread is None or not prepared.run.thread:
        return None
    return SeenTurn(profile=prepared.run.profile.name, thread=prepared.run.thread,
                    record=prepared.thread.turn)


class MemoryResumeState(MemoryState, TurnResumeState):
    """:class:`~langmem_edge.tools.MemoryState` plus turn resume's round stamp: the state of a
    :class:`MemoryMiddleware` with turn resume on."""


class _Named(MemoryMiddleware):
    """The subclasses below keep the middleware's name in the graph (its nodes' prefix)."""

    @property
    def name(self) -> str:
        """The middleware's name in the graph (its nodes' prefix): ``MemoryMiddleware``."""
        return "MemoryMiddleware"


class _Trimming(_Named):
    """``before_model`` (``trim_state``): a graph node, so only on the instances that trim."""

    # -- trimming the state ------------------------------------------------------------------

    def before_model(self, state: MemoryState, runtime: Any) -> dict[str, Any] | None:
        """With ``trim_state``: cut an over-budget thread's messages in the state."""
        return self.hooks.trim_update(state["messages"], runtime)

    async def abefore_model(self, state: MemoryState, runtime: Any) -> dict[str, Any] | None:
        """Async :meth:`before_model`."""
        return await self.hooks.atrim_update(state["messages"], runtime)


class _Resuming(_Named):
    """Turn resume's ``before_agent`` (a graph node) and ``wrap_tool_call``: only on the
    instances with turn resume on."""

    state_schema = MemoryResumeState

    # -- turn resume (delegated) -------------------------------------------------------------

    def before_agent(self, state: MemoryState, runtime: Any) -> dict[str, Any] | None:
        """Turn resume's ``before_agent`` (nothing without ``resume``)."""
        if self.resume is None:
            return None
        return self.resume.before_agent(state, runtime, handoff=self.hooks.handoff)

    async def abefore_agent(self, state: MemoryState, runtime: Any) -> dict[str, Any] | None:
        """Async :meth:`before_agent`."""
        if self.resume is None:
            return None
        return await self.resume.abefore_agent(state, runtime, handoff=self.hooks.handoff)

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


class _ResumingAndTrimming(_Resuming, _Trimming):
    """Both of the above."""


def _variant(resume: bool, trim: bool) -> type[MemoryMiddleware]:
    """The class of a ``MemoryMiddleware(...)``: the node-adding hooks it uses, no others
    (every node of an agent is one more checkpoint write a step)."""
    return {(False, False): MemoryMiddleware, (True, False): _Resuming,
            (False, True): _Trimming, (True, True): _ResumingAndTrimming}[(resume, trim)]
