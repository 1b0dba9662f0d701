"""Prebuilt nodes for hand-built ``StateGraph``\\s: recall before the model, extraction after
the turn, and the model call with both.

::

    from langgraph.graph import START, END, MessagesState, StateGraph
    from langmem_edge.graphs import MemoryExtractionNode, MemoryModelNode

    extract = MemoryExtractionNode(memory)
    graph = StateGraph(MessagesState)
    graph.add_node("model", MemoryModelNode(model, memory))   # recall + compaction inside
    graph.add_node("extract", extract)
    graph.add_edge(START, "model"); graph.add_edge("model", "extract")
    app = graph.compile(checkpointer=saver)
    app.invoke({"messages": [...]}, {"configurable": {"thread_id": "t1"}},
               context={"profile": "user:alice"})
    extract.close()                                           # at shutdown

Each node is a runnable with a sync and an async body (``invoke`` / ``ainvoke``), reads
``messages_key`` (``"messages"`` by default) of the state, and resolves the run as the
middleware does (:mod:`langmem_edge.graphs.run`): the memory given, or one over the graph's
store; the profile, contact and thread from the run's context, then ``configurable``. A run
with no profile passes through unchanged. The behaviour is :class:`~langmem_edge.graphs.hooks.
MemoryHooks`', shared with :class:`~langmem_edge.graphs.MemoryMiddleware`.

- :class:`MemoryRecallNode` writes the memory block (a string, ``""`` when there is nothing)
  to ``output_key`` (``"memory_context"``), replaced each turn, never appended; the model
  node puts it in front of the model with :func:`~langmem_edge.graphs.recall.inject_block`.
- :class:`MemoryModelNode` calls a chat model on the messages as the middleware shows them
  (compaction, then the memory block) and appends only its reply: the block is never in the
  state.
- :class:`MemoryExtractionNode` queues the turn for the background ingest and returns
  nothing; ``close()`` / ``aclose()`` run what waits.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import SystemMessage
from langchain_core.runnables import RunnableLambda
from langgraph.runtime import get_runtime

from langmem_edge.errors import ConfigurationError
from langmem_edge.graphs.extraction import BackgroundJobs, TurnExtractor
from langmem_edge.graphs.hooks import MemoryHooks
from langmem_edge.graphs.options import MemoryOptions
from langmem_edge.memory import AgentMemory

__all__ = ["MemoryExtractionNode", "MemoryModelNode", "MemoryRecallNode"]

DEFAULT_MESSAGES_KEY = "messages"
"""The state key the nodes read the conversation from."""
DEFAULT_CONTEXT_KEY = "memory_context"
"""The state key :class:`MemoryRecallNode` writes the memory block to."""


class _MemoryNode(RunnableLambda[dict[str, Any], dict[str, Any]]):
    """A node over :class:`MemoryHooks`: ``hooks`` given, or made from ``memory`` and
    ``options``."""

    def __init__(self, memory: AgentMemory | None, options: MemoryOptions | None,
                 hooks: MemoryHooks | None, messages_key: str, name: str) -> None:
        if hooks is not None and (memory is not None or options is not None):
            raise ConfigurationError(
                "give a node either hooks (shared with another node) or memory and options")
        self.hooks = hooks if hooks is not None else MemoryHooks(memory, options)
        self.messages_key = messages_key
        super().__init__(self._sync, afunc=self._async, name=name)

    def _messages(self, state: dict[str, Any]) -> list[Any]:
        return list(state.get(self.messages_key) or [])

    def _sync(self, state: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    async def _async(self, state: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError


class MemoryRecallNode(_MemoryNode):
    """Writes the memory block for the latest user message to ``output_key``.

    Args:
        memory: The memory; ``None``: one over the graph's store.
        options: :class:`~langmem_edge.graphs.MemoryOptions` (recall budget and limit,
            document passages, ...); ``None``: the defaults.
        hooks: Share another node's :class:`MemoryHooks` instead of making one (then give
            neither ``memory`` nor ``options``).
        messages_key: Where the conversation is. Default ``"messages"``.
        output_key: Where the block goes. Default ``"memory_context"``.
    """

    def __init__(self, memory: AgentMemory | None = None, options: MemoryOptions | None = None,
                 *, hooks: MemoryHooks | None = None, messages_key: str = DEFAULT_MESSAGES_KEY,
                 output_key: str = DEFAULT_CONTEXT_KEY) -> None:
        self.output_key = output_key
        super().__init__(memory, options, hooks, messages_key, "memory_recall")

    def _sync(self, state: dict[str, Any]) -> dict[str, Any]:
        block = self.hooks.memory_block(self._messages(state), get_runtime())
        return {self.output_key: block or ""}

    async def _async(self, state: dict[str, Any]) -> dict[str, Any]:
        block = await self.hooks.amemory_block(self._messages(state), get_runtime())
        return {self.output_key: block or ""}


class MemoryModelNode(_MemoryNode):
    """Calls ``model`` on the conversation with compaction and the memory block; appends
    the reply to ``messages_key``.

    Args:
        model: The chat model to call (bind its tools first, if any).
        memory: The memory; ``None``: one over the graph's store.
        options: :class:`~langmem_edge.graphs.MemoryOptions`; ``None``: the defaults. With
            ``trim_state`` the node's update also cuts ``messages_key`` to head + overlays +
            tail before the reply (the key needs langgraph's ``add_messages`` reducer, as
            ``MessagesState`` has).
        hooks: Share another node's :class:`MemoryHooks` instead of making one (then give
            neither ``memory`` nor ``options``).
        messages_key: Where the conversation is. Default ``"messages"``.
        system_prompt: Put first in the model's input (never stored).
    """

    def __init__(self, model: Any, memory: AgentMemory | None = None,
                 options: MemoryOptions | None = None, *, hooks: MemoryHooks | None = None,
                 messages_key: str = DEFAULT_MESSAGES_KEY,
                 system_prompt: str | None = None) -> None:
        self.model = model
        self.system_prompt = system_prompt
        super().__init__(memory, options, hooks, messages_key, "memory_model")

    def _prompt(self, view: list[Any]) -> list[Any]:
        if self.system_prompt is None:
            return view
        return [SystemMessage(content=self.system_prompt), *view]

    @staticmethod
    def _trimmed(messages: list[Any], trim: dict[str, Any] | None) -> tuple[list[Any], list[Any]]:
        """``(conversation, update prefix)`` after ``trim_state``'s update, if any."""
        if trim is None:
            return messages, []
        update = list(trim["messages"])
        return update[1:], update  # update[0] is RemoveMessage(REMOVE_ALL_MESSAGES)

    def _sync(self, state: dict[str, Any]) -> dict[str, Any]:
        runtime = get_runtime()
        messages, head = self._trimmed(self._messages(state),
                                       self.hooks.trim_update(self._messages(state), runtime))
        view = self.hooks.model_input(messages, runtime)
        reply = self.model.invoke(self._prompt(messages if view is None else view))
        return {self.messages_key: [*head, reply]}

    async def _async(self, state: dict[str, Any]) -> dict[str, Any]:
        runtime = get_runtime()
        trim = await self.hooks.atrim_update(self._messages(state), runtime)
        messages, head = self._trimmed(self._messages(state), trim)
        view = await self.hooks.amodel_input(messages, runtime)
        reply = await self.model.ainvoke(self._prompt(messages if view is None else view))
        return {self.messages_key: [*head, reply]}


class MemoryExtractionNode(BackgroundJobs, _MemoryNode):
    """Queues the turn's messages for the background ingest; returns at once.

    Args:
        memory: The memory; ``None``: one over the graph's store.
        options: :class:`~langmem_edge.graphs.MemoryOptions` (``compaction_budget_tokens``
            sets when the ingest also writes summaries); ``None``: the defaults.
        hooks: Share another node's :class:`MemoryHooks` (and so its background executor:
            ``MemoryHooks(memory, options, background=executor)``); then give neither
            ``memory`` nor ``options``.
        messages_key: Where the conversation is. Default ``"messages"``.
    """

    def __init__(self, memory: AgentMemory | None = None, options: MemoryOptions | None = None,
                 *, hooks: MemoryHooks | None = None,
                 messages_key: str = DEFAULT_MESSAGES_KEY) -> None:
        super().__init__(memory, options, hooks, messages_key, "memory_extraction")

    def _sync(self, state: dict[str, Any]) -> dict[str, Any]:
        self.hooks.after_turn(self._messages(state), get_runtime())
        return {}

    async def _async(self, state: dict[str, Any]) -> dict[str, Any]:
        await self.hooks.aafter_turn(self._messages(state), get_runtime())
        return {}

    @property
    def extractor(self) -> TurnExtractor:
        """The post-turn jobs' extractor (``stats``, ``flush``, ``close`` come from it)."""
        return self.hooks.extractor
