"""The public surface: what `from langmem_edge import *` gives, that it resolves, and that
`import langmem_edge` stays lazy."""

import subprocess
import sys

import langmem_edge

EXPECTED_ALL = [
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

LAZY = ["chromadb", "langchain", "langchain_core", "langgraph", "langmem_edge.memory",
        "langmem_edge.tools", "langmem_edge.store", "langmem_edge.checkpointers"]
"""What a bare ``import langmem_edge`` must not load."""


def test_all_is_the_curated_list() -> None:
    assert sorted(langmem_edge.__all__) == sorted(EXPECTED_ALL)


def test_every_public_name_resolves_and_is_documented() -> None:
    for name in langmem_edge.__all__:
        obj = getattr(langmem_edge, name)
        assert obj.__doc__, f"{name} has no docstring"


def test_graphs_exports_resolve_and_are_documented() -> None:
    import langmem_edge.graphs as graphs

    for name in graphs.__all__:
        assert getattr(graphs, name).__doc__, f"graphs.{name} has no docstring"


def test_import_is_lazy() -> None:
    code = ("import sys, langmem_edge; "
            f"print([m for m in {LAZY!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_the_tools_names_are_those_of_langmem_edge_tools() -> None:
    import langmem_edge.tools as tools

    for name in ("MemoryContext", "MemoryState", "create_memory_tools"):
        assert getattr(langmem_edge, name) is getattr(tools, name)
        assert name in tools.__all__


def test_every_memory_name_resolves_and_is_documented() -> None:
    import langmem_edge.memory as memory

    for name in memory.__all__:
        obj = getattr(memory, name)
        assert name == "NOT_PROVIDED" or obj.__doc__, f"{name} has no docstring"
    for name in ("ProfileWorking", "WorkingConfig", "TurnRecord", "TurnRow", "OngoingTask",
                 "EpisodicConfig", "ContextWindow", "StoredMessage", "ProfileView"):
        assert name in memory.__all__


def test_error_codes_are_stable() -> None:
    from langmem_edge import errors

    codes = {name: getattr(errors, name).code for name in errors.__all__}
    assert codes == {
        "BackendError": "backend",
        "BackendUnavailableError": "backend_unavailable",
        "BackgroundClosedError": "closed",
        "ConfigurationError": "configuration",
        "DecryptionError": "decryption",
        "EmbeddingError": "embedding",
        "ExtractionError": "extraction",
        "InvalidInputError": "invalid_input",
        "InvalidNamespaceError": "invalid_namespace",
        "LangmemEdgeError": "error",
        "LimitExceededError": "limit_exceeded",
        "NotFoundError": "not_found",
        "TurnInProgressError": "turn_in_progress",
        "UnsupportedDurabilityError": "unsupported_durability",
    }
    assert issubclass(errors.InvalidInputError, ValueError)
    assert issubclass(errors.BackendUnavailableError, errors.BackendError)
