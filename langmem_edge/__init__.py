"""langmem_edge: four-tier agent memory for LangGraph, stored in Chroma.

Public names are imported lazily, so ``import langmem_edge`` loads neither chromadb, langchain
nor an embedding model until one of them is used. The memory tools
(``create_memory_tools``, ``MemoryContext``, ``MemoryState``) are ``langmem_edge.tools``'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langmem_edge._lazy import lazy_exports

if TYPE_CHECKING:
    from langmem_edge.checkpointers import CheckpointTTLConfig, ChromaSaver
    from langmem_edge.embeddings import default_embeddings
    from langmem_edge.errors import (
        BackendError,
        BackendUnavailableError,
        BackgroundClosedError,
        ConfigurationError,
        DecryptionError,
        EmbeddingError,
        ExtractionError,
        InvalidInputError,
        InvalidNamespaceError,
        LangmemEdgeError,
        LimitExceededError,
        NotFoundError,
        TurnInProgressError,
        UnsupportedDurabilityError,
    )
    from langmem_edge.graphs import MemoryMiddleware, MemoryOptions, create_memory_agent
    from langmem_edge.memory import (
        AgentMemory,
        Candidate,
        MemoryConfig,
        MemoryRecord,
        Profile,
        RecallResult,
        generate_encryption_key,
    )
    from langmem_edge.store import ChromaStore
    from langmem_edge.tools import MemoryContext, MemoryState, create_memory_tools

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "AgentMemory": "langmem_edge.memory",
    "Candidate": "langmem_edge.memory",
    "MemoryConfig": "langmem_edge.memory",
    "MemoryRecord": "langmem_edge.memory",
    "Profile": "langmem_edge.memory",
    "RecallResult": "langmem_edge.memory",
    "generate_encryption_key": "langmem_edge.memory",
    "ChromaStore": "langmem_edge.store",
    "ChromaSaver": "langmem_edge.checkpointers",
    "CheckpointTTLConfig": "langmem_edge.checkpointers",
    "default_embeddings": "langmem_edge.embeddings",
    "MemoryMiddleware": "langmem_edge.graphs",
    "MemoryOptions": "langmem_edge.graphs",
    "create_memory_agent": "langmem_edge.graphs",
    "BackendError": "langmem_edge.errors",
    "BackendUnavailableError": "langmem_edge.errors",
    "BackgroundClosedError": "langmem_edge.errors",
    "TurnInProgressError": "langmem_edge.errors",
    "UnsupportedDurabilityError": "langmem_edge.errors",
    "ConfigurationError": "langmem_edge.errors",
    "DecryptionError": "langmem_edge.errors",
    "EmbeddingError": "langmem_edge.errors",
    "ExtractionError": "langmem_edge.errors",
    "InvalidInputError": "langmem_edge.errors",
    "InvalidNamespaceError": "langmem_edge.errors",
    "LangmemEdgeError": "langmem_edge.errors",
    "LimitExceededError": "langmem_edge.errors",
    "NotFoundError": "langmem_edge.errors",
    "MemoryContext": "langmem_edge.tools",
    "MemoryState": "langmem_edge.tools",
    "create_memory_tools": "langmem_edge.tools",
}

__all__ = [
    "AgentMemory",
    "Candidate",
    "MemoryConfig",
    "MemoryRecord",
    "Profile",
    "RecallResult",
    "generate_encryption_key",
    "BackendError",
    "BackendUnavailableError",
    "CheckpointTTLConfig",
    "ChromaSaver",
    "ChromaStore",
    "ConfigurationError",
    "DecryptionError",
    "EmbeddingError",
    "ExtractionError",
    "InvalidInputError",
    "InvalidNamespaceError",
    "LangmemEdgeError",
    "LimitExceededError",
    "NotFoundError",
    "TurnInProgressError",
    "UnsupportedDurabilityError",
    "BackgroundClosedError",
    "default_embeddings",
    "MemoryMiddleware",
    "MemoryOptions",
    "create_memory_agent",
    "MemoryContext",
    "MemoryState",
    "create_memory_tools",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals(), __all__)
