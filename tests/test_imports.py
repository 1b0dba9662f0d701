"""The public surface: what `from langmem_edge import *` gives, and that it resolves."""

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
    "default_embeddings",
    "MemoryMiddleware",
    "create_memory_agent",
]


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


def test_error_codes_are_stable() -> None:
    from langmem_edge import errors

    codes = {name: getattr(errors, name).code for name in errors.__all__}
    assert codes == {
        "BackendError": "backend",
        "BackendUnavailableError": "backend_unavailable",
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
