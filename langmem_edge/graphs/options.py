""":class:`MemoryOptions`: what memory does around each model call, written once.

The one options object of :class:`~langmem_edge.graphs.MemoryMiddleware`,
:func:`~langmem_edge.graphs.create_memory_agent`, :class:`~langmem_edge.graphs.MemoryHooks`
and the nodes::

    from langmem_edge.graphs import MemoryMiddleware, MemoryOptions

    options = MemoryOptions(recall_limit=5, documents=3)
    agent = create_agent(model, tools, middleware=[MemoryMiddleware(memory, options)])

Every field has a documented default; a bad value raises ``ConfigurationError`` when the
options are made, before any graph runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from langmem_edge.errors import ConfigurationError
from langmem_edge.graphs.compaction import DEFAULT_COMPACTION_BUDGET_TOKENS

__all__ = [
    "DEFAULT_DOCUMENT_PASSAGES",
    "DEFAULT_RECALL_BUDGET_TOKENS",
    "DEFAULT_RECALL_LIMIT",
    "MemoryOptions",
    "checked_options",
]

DEFAULT_RECALL_BUDGET_TOKENS = 800
"""Estimated tokens the memory block may take, delimiters and notice included."""
DEFAULT_RECALL_LIMIT = 10
"""Memories asked of the fused recall (the budget may keep fewer)."""
DEFAULT_DOCUMENT_PASSAGES = 0
"""Document passages asked of ``documents.search`` per model call; 0: none (off)."""


@dataclass(frozen=True)
class MemoryOptions:
    """What memory does around each model call of an agent.

    Attributes:
        recall_budget_tokens: Estimated tokens of the memory block. Default
            :data:`DEFAULT_RECALL_BUDGET_TOKENS` (800).
        recall_limit: Memories asked of recall per model call. Default
            :data:`DEFAULT_RECALL_LIMIT` (10).
        documents: Passages of the profile's ready documents shown in the memory block
            (``docs/documents.md``); 0 (default): none.
        recall_model: Let the block's recall call the memory's model (HyDE, the raw-message
            channel, a written answer): a model round trip before each model call. Default
            ``False``.
        compaction_budget_tokens: Estimated tokens of a thread's messages above which the
            model sees head + overlays + tail (8,000); ``None``: no compaction.
        trim_state: Also cut the checkpointed messages of an over-budget thread to that view
            (destructive, as langchain's ``SummarizationMiddleware`` does). Default
            ``False``: the state keeps every message, only the model's input is compacted.
        strict: A run without a profile raises ``ConfigurationError`` instead of running
            without memory (warned once a process). Default ``False``.
    """

    recall_budget_tokens: int = DEFAULT_RECALL_BUDGET_TOKENS
    recall_limit: int = DEFAULT_RECALL_LIMIT
    documents: int = DEFAULT_DOCUMENT_PASSAGES
    recall_model: bool = False
    compaction_budget_tokens: int | None = DEFAULT_COMPACTION_BUDGET_TOKENS
    trim_state: bool = False
    strict: bool = False

    def __post_init__(self) -> None:
        for name in ("recall_model", "trim_state", "strict"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigurationError(
                    f"{name} must be True or False, got {getattr(self, name)!r}")
        if not _is_int(self.documents) or self.documents < 0:
            raise ConfigurationError(
                f"documents must be an integer >= 0 (0: off), got {self.documents!r}")
        budget = self.compaction_budget_tokens  # None: compaction off
        for name, value in (("recall_budget_tokens", self.recall_budget_tokens),
                            ("recall_limit", self.recall_limit),
                            ("compaction_budget_tokens", 1 if budget is None else budget)):
            if not _is_int(value) or value < 1:
                raise ConfigurationError(f"{name} must be an integer >= 1, got {value!r}")
        if self.trim_state and self.compaction_budget_tokens is None:
            raise ConfigurationError("trim_state needs a compaction_budget_tokens")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def checked_options(options: MemoryOptions | None) -> MemoryOptions:
    """``options``, or the defaults for ``None``; anything else is a ``ConfigurationError``."""
    if options is None:
        return MemoryOptions()
    if not isinstance(options, MemoryOptions):
        raise ConfigurationError(
            f"options must be a MemoryOptions, got {type(options).__name__}")
    return options
