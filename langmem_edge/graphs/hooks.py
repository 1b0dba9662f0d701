""":class:`MemoryHooks`: the one implementation behind both faces of the graphs layer.

``MemoryMiddleware`` (for ``create_agent``) and the nodes (for hand-built ``StateGraph``\\s)
are thin shells over these methods, each written once as a plan and driven sync or async
(:mod:`langmem_edge.memory.core.plans`):

- :meth:`MemoryHooks.model_input` / ``amodel_input``: the messages the model should see
  (compaction, then recall injection); :meth:`MemoryHooks.prepare` / ``aprepare`` give them
  with the run and the thread's working state as read for them (one store call: notes, task,
  turn record), so turn resume can end the turn without reading its record again;
- :meth:`MemoryHooks.trim_update` / ``atrim_update``: the state update that trims a thread
  over budget (only with ``trim_state``);
- :meth:`MemoryHooks.after_turn` / ``aafter_turn``: hand the turn to the background job.

Each resolves the run first (:mod:`langmem_edge.graphs.run`); a run without a profile gets
``None`` (nothing to change). A memory failure while building the model's input (the store
down, a decryption error) is logged with the thread and the model is called without memory:
memory never takes the reply down with it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.store.base import NOT_PROVIDED, NotProvided

from langmem_edge.errors import LangmemEdgeError
from langmem_edge.graphs.background import BackgroundExecutor
from langmem_edge.graphs.compaction import plan_compacted
from langmem_edge.graphs.extraction import BackgroundJobs, TurnExtractor
from langmem_edge.graphs.history import EntryCache
from langmem_edge.graphs.options import MemoryOptions, checked_options
from langmem_edge.graphs.recall import (
    inject_block,
    latest_user_message,
    latest_user_text,
    plan_memory_block,
    plan_thread_state,
)
from langmem_edge.graphs.resume_history import resumed_calls
from langmem_edge.graphs.run import MemoryRun, RunResolver, ThreadStateHandoff
from langmem_edge.memory import AgentMemory
from langmem_edge.memory.core.plans import Call, Plan, run_async, run_sync
from langmem_edge.memory.working import ThreadState

__all__ = ["MemoryHooks", "ModelInput"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class ModelInput:
    """What :meth:`MemoryHooks.prepare` gives one model call."""

    messages: list[BaseMessage]
    """The messages the model should see (compacted view, memory block)."""
    run: MemoryRun
    """Whose memory they came from."""
    thread: ThreadState | None
    """The thread's working state as read for them (``None``: the run has no thread)."""


class MemoryHooks(BackgroundJobs):
    """Recall injection, compaction and post-turn extraction for one agent.

    Args:
        memory: The memory; ``None``: an ``AgentMemory`` over the graph's store.
        options: What memory does around each model call
            (:class:`~langmem_edge.graphs.MemoryOptions`); ``None``: the defaults.
        model: Chat model of a memory made over the graph's store (extraction, summaries);
            ``None``: model-free. Ignored when ``memory`` is given.
        background: The executor of post-turn jobs; ``None``: one of its own, closed by
            :meth:`close`.
    """

    def __init__(self, memory: AgentMemory | None = None, options: MemoryOptions | None = None,
                 *, model: BaseChatModel | None = None,
                 background: BackgroundExecutor | None = None) -> None:
        self.options = options = checked_options(options)
        self.resolver = RunResolver(memory, model=model, strict=options.strict)
        self.entry_cache = EntryCache()
        self.handoff = ThreadStateHandoff()
        self.extractor = TurnExtractor(background,
                                       compaction_budget=options.compaction_budget_tokens,
                                       cache=self.entry_cache)

    # -- the model's input -------------------------------------------------------------------

    def _input_plan(self, run: MemoryRun, messages: Sequence[BaseMessage]
                    ) -> Plan[ModelInput]:
        asked = latest_user_message(messages)
        thread = None
        if run.thread:
            thread = self.handoff.take(run.memory, run.profile.name, run.thread,
                                       asked.id if asked is not None else None)
        if thread is None:
            thread = yield from plan_thread_state(run)
        view = list(messages)
        budget = self.options.compaction_budget_tokens
        if budget is not None:
            found = yield from plan_compacted(run, messages, budget,
                                              self.entry_cache)
            if found is not None:
                prefix, start = found
                view = [*prefix, *messages[start:]]
        block = yield from self._block_plan(run, messages, thread)
        return ModelInput(messages=inject_block(view, block), run=run, thread=thread)

    def _block_plan(self, run: MemoryRun, messages: Sequence[BaseMessage],
                    thread: ThreadState | None | NotProvided = NOT_PROVIDED
                    ) -> Plan[str | None]:
        calls, resources = resumed_calls(messages)
        return (yield from plan_memory_block(run, latest_user_text(messages), self.options,
                                             thread=thread, resumed=calls,
                                             open_resources=resources))

    def _run(self, runtime: Any, plan_of: Callable[[MemoryRun], Plan[T]]) -> T | None:
        run = self.resolver.resolve(runtime)
        if run is None:
            return None
        try:
            return run_sync(plan_of(run))
        except LangmemEdgeError as e:
            self._failed(run, e)
            return None

    async def _arun(self, runtime: Any, plan_of: Callable[[MemoryRun], Plan[T]]
                    ) -> T | None:
        run = self.resolver.resolve(runtime)
        if run is None:
            return None
        try:
            return await run_async(plan_of(run))
        except LangmemEdgeError as e:
            self._failed(run, e)
            return None

    def _failed(self, run: MemoryRun, error: Exception) -> None:
        logger.warning("memory left out of the model call (profile %r, thread %r): %s",
                       run.profile.name, run.thread, error)

    def memory_block(self, messages: Sequence[BaseMessage], runtime: Any) -> str | None:
        """The memory block for the latest user message of ``messages`` (``None``: no
        profile, or nothing to show)."""
        return self._run(runtime, lambda run: self._block_plan(run, messages))

    async def amemory_block(self, messages: Sequence[BaseMessage], runtime: Any
                            ) -> str | None:
        """Async :meth:`memory_block`."""
        return await self._arun(runtime, lambda run: self._block_plan(run, messages))

    def prepare(self, messages: Sequence[BaseMessage], runtime: Any) -> ModelInput | None:
        """The model's input with the run and the thread's working state it was built from,
        or ``None`` (no profile, or memory failed: leave the messages)."""
        return self._run(runtime, lambda run: self._input_plan(run, messages))

    async def aprepare(self, messages: Sequence[BaseMessage], runtime: Any
                       ) -> ModelInput | None:
        """Async :meth:`prepare`."""
        return await self._arun(runtime, lambda run: self._input_plan(run, messages))

    def model_input(self, messages: Sequence[BaseMessage], runtime: Any
                    ) -> list[BaseMessage] | None:
        """The messages the model should see, or ``None`` (no profile: leave them)."""
        prepared = self.prepare(messages, runtime)
        return None if prepared is None else prepared.messages

    async def amodel_input(self, messages: Sequence[BaseMessage], runtime: Any
                           ) -> list[BaseMessage] | None:
        """Async :meth:`model_input`."""
        prepared = await self.aprepare(messages, runtime)
        return None if prepared is None else prepared.messages

    # -- trimming the state (trim_state) -----------------------------------------------------

    def _trim_plan(self, run: MemoryRun, messages: Sequence[BaseMessage]
                   ) -> Plan[dict[str, Any] | None]:
        budget = self.options.compaction_budget_tokens
        assert budget is not None
        found = yield from plan_compacted(run, messages, budget,
                                          self.entry_cache)
        if found is None or (found[1] == 0 and not found[0]):
            return None
        # what leaves the state waits in the thread's buffer for its ingest
        yield Call(self.extractor.submit, self.extractor.asubmit, (run, messages))
        prefix, start = found
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *prefix,
                             *messages[start:]]}

    def trim_update(self, messages: Sequence[BaseMessage], runtime: Any
                    ) -> dict[str, Any] | None:
        """With ``trim_state``: the update that cuts an over-budget thread's messages to
        head + overlays + tail; else ``None``."""
        if not self.options.trim_state:
            return None
        return self._run(runtime, lambda run: self._trim_plan(run, messages))

    async def atrim_update(self, messages: Sequence[BaseMessage], runtime: Any
                           ) -> dict[str, Any] | None:
        """Async :meth:`trim_update`."""
        if not self.options.trim_state:
            return None
        return await self._arun(runtime, lambda run: self._trim_plan(run, messages))

    # -- after the turn ----------------------------------------------------------------------

    def after_turn(self, messages: Sequence[BaseMessage], runtime: Any) -> None:
        """Queue the turn's messages for the background ingest (returns at once)."""
        run = self.resolver.resolve(runtime)
        if run is not None:
            self.extractor.submit(run, messages)

    async def aafter_turn(self, messages: Sequence[BaseMessage], runtime: Any) -> None:
        """Async :meth:`after_turn`."""
        run = self.resolver.resolve(runtime)
        if run is not None:
            await self.extractor.asubmit(run, messages)
