"""Memory inside a LangGraph agent: prebuilt nodes, ``MemoryMiddleware`` for
``langchain.agents.create_agent``, turn resume, background extraction, the reflection and
consolidation graphs, ``create_memory_agent``.

::

    from langmem_edge.graphs import MemoryMiddleware, create_memory_agent

This layer sits above ``langmem_edge.tools`` and ``langmem_edge.memory`` and reaches the store
only through them (see ``docs/architecture.md``; ``docs/graphs.md`` has the behaviour).
Public names are imported lazily, so importing the package loads neither langchain's agents
nor chromadb until a name is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langmem_edge._lazy import lazy_exports

if TYPE_CHECKING:
    from langmem_edge.graphs.agent import (
        create_memory_agent,
    )
    from langmem_edge.graphs.background import (
        BackgroundExecutor,
    )
    from langmem_edge.graphs.background_config import (
        BackgroundConfig,
        BackgroundStats,
        SetAsideJob,
    )
    from langmem_edge.graphs.hooks import (
        MemoryHooks,
    )
    from langmem_edge.graphs.middleware import (
        MemoryMiddleware,
        MemoryResumeState,
    )
    from langmem_edge.graphs.nodes import (
        MemoryExtractionNode,
        MemoryModelNode,
        MemoryRecallNode,
    )
    from langmem_edge.graphs.offline import (
        RecallChatModel,
    )
    from langmem_edge.graphs.options import (
        MemoryOptions,
    )
    from langmem_edge.graphs.recall import (
        inject_block,
    )
    from langmem_edge.graphs.reflection import (
        ConsolidationState,
        ReflectionState,
        create_consolidation_graph,
        create_reflection_graph,
    )
    from langmem_edge.graphs.resume import (
        TurnResume,
        TurnResumeMiddleware,
        TurnResumeState,
        tool_idempotency_key,
    )

_EXPORTS: dict[str, str] = {
    "BackgroundConfig": "langmem_edge.graphs.background_config",
    "BackgroundExecutor": "langmem_edge.graphs.background",
    "BackgroundStats": "langmem_edge.graphs.background_config",
    "SetAsideJob": "langmem_edge.graphs.background_config",
    "ConsolidationState": "langmem_edge.graphs.reflection",
    "create_consolidation_graph": "langmem_edge.graphs.reflection",
    "create_memory_agent": "langmem_edge.graphs.agent",
    "create_reflection_graph": "langmem_edge.graphs.reflection",
    "inject_block": "langmem_edge.graphs.recall",
    "MemoryExtractionNode": "langmem_edge.graphs.nodes",
    "MemoryHooks": "langmem_edge.graphs.hooks",
    "MemoryMiddleware": "langmem_edge.graphs.middleware",
    "MemoryModelNode": "langmem_edge.graphs.nodes",
    "MemoryOptions": "langmem_edge.graphs.options",
    "MemoryRecallNode": "langmem_edge.graphs.nodes",
    "MemoryResumeState": "langmem_edge.graphs.middleware",
    "ReflectionState": "langmem_edge.graphs.reflection",
    "tool_idempotency_key": "langmem_edge.graphs.resume",
    "TurnResume": "langmem_edge.graphs.resume",
    "TurnResumeMiddleware": "langmem_edge.graphs.resume",
    "TurnResumeState": "langmem_edge.graphs.resume",
    "RecallChatModel": "langmem_edge.graphs.offline",
}

__all__ = [
    "BackgroundConfig",
    "BackgroundExecutor",
    "BackgroundStats",
    "ConsolidationState",
    "create_consolidation_graph",
    "create_memory_agent",
    "create_reflection_graph",
    "inject_block",
    "MemoryExtractionNode",
    "MemoryHooks",
    "MemoryMiddleware",
    "MemoryModelNode",
    "MemoryOptions",
    "MemoryRecallNode",
    "MemoryResumeState",
    "ReflectionState",
    "SetAsideJob",
    "tool_idempotency_key",
    "TurnResume",
    "TurnResumeMiddleware",
    "TurnResumeState",
    "RecallChatModel",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals(), __all__)
