""":func:`create_memory_agent`: ``create_agent`` with memory wired in.

::

    from langmem_edge.graphs import create_memory_agent

    agent = create_memory_agent(model, [search_flights], memory=memory, checkpointer=saver)
    agent.invoke({"messages": [("user", "I'm vegetarian")]},
                 {"configurable": {"thread_id": "t1"}}, context={"profile": "user:alice"})
    agent.memory_middleware.close()      # at shutdown: runs the waiting extraction jobs

The agent is ``langchain.agents.create_agent`` with a :class:`~langmem_edge.graphs.
MemoryMiddleware` first among its middleware, the memory tools (:func:`langmem_edge.tools.
create_memory_tools`) after the caller's tools, ``context_schema=MemoryContext`` and the
state of the tools (``working_notes``, ``ongoing_task``).

Without ``memory``: with a ``store``, the memory is ``AgentMemory(store, model=
memory_model)``; with neither (a deployment, whose server gives the store at run time) the
middleware uses the run's store and the memory tools are left out (they are bound to one
``AgentMemory``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import SystemMessage
from langgraph.store.base import BaseStore

from langmem_edge.graphs.background import BackgroundExecutor
from langmem_edge.graphs.middleware import MemoryMiddleware
from langmem_edge.graphs.options import MemoryOptions
from langmem_edge.graphs.resume import TurnResume
from langmem_edge.memory import AgentMemory
from langmem_edge.tools import MemoryContext, create_memory_tools

__all__ = ["create_memory_agent"]


def create_memory_agent(
    model: str | BaseChatModel,
    tools: Sequence[Any] = (),
    *,
    memory: AgentMemory | None = None,
    options: MemoryOptions | None = None,
    checkpointer: Any = None,
    store: BaseStore | None = None,
    system_prompt: str | SystemMessage | None = None,
    context_schema: type[Any] = MemoryContext,
    middleware: Sequence[AgentMiddleware[Any, Any]] = (),
    memory_tools: bool | Sequence[str] = True,
    memory_model: BaseChatModel | None = None,
    resume: bool | TurnResume = True,
    background: BackgroundExecutor | None = None,
) -> Any:
    """A ``create_agent`` agent with memory (see the module docstring).

    Args:
        model: The agent's chat model (or a ``create_agent`` model string).
        tools: The agent's own tools.
        memory: The memory; ``None``: one over ``store``, or the run's store.
        options: What memory does around each model call
            (:class:`~langmem_edge.graphs.MemoryOptions`: recall budget and limit, document
            passages, compaction, ``trim_state``, ``strict``); ``None``: the defaults.
        checkpointer: The checkpointer (``None`` for a served graph: the server has its own).
        store: The graph's store (also the memory's when ``memory`` is not given).
        system_prompt: The system prompt.
        context_schema: The run context's schema. Default
            :class:`~langmem_edge.tools.MemoryContext` (``profile``, ``contact``,
            ``thread_id``).
        middleware: More middleware, after the memory middleware.
        memory_tools: ``True``: every memory tool; a list of names: those
            (:data:`langmem_edge.tools.TOOL_NAMES`); ``False``: none.
        memory_model: Chat model of a memory made over ``store`` or the run's store
            (extraction, summaries); ``None``: model-free.
        resume, background: As :class:`~langmem_edge.graphs.MemoryMiddleware`'s (turn resume
            on; the middleware's own executor).

    Returns:
        The compiled agent; its ``memory_middleware`` attribute is the middleware (``close()``
        it at shutdown, ``stats()`` for its counters).
    """
    if memory is None and store is not None:
        memory = AgentMemory(store, model=memory_model)
    mw = MemoryMiddleware(memory, options, resume=resume, model=memory_model,
                          background=background)
    extra: list[Any] = []
    if memory is not None and memory_tools is not False:
        include = None if memory_tools is True else list(memory_tools)
        extra = create_memory_tools(memory, include=include)
    agent = create_agent(model, [*tools, *extra], system_prompt=system_prompt,
                         middleware=[mw, *middleware], context_schema=context_schema,
                         checkpointer=checkpointer, store=store)
    agent.memory_middleware = mw
    return agent
