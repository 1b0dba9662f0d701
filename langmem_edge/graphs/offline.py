""":class:`RecallChatModel`: a chat model that needs no LLM, answering from the memory block.

The model-free mode of ``langmem-edge chat``, ``langmem-edge demo`` and
``examples/chatbot.py``. Put it where a real chat model would go::

    from langmem_edge.graphs import RecallChatModel, create_memory_agent

    agent = create_memory_agent(RecallChatModel(), memory=memory, checkpointer=saver)

It reads what :class:`~langmem_edge.graphs.MemoryMiddleware` showed it (the ``<memory>``
block of :mod:`langmem_edge.graphs.recall`, just before the latest user message) and composes
a reply from it, nothing else:

- a question (the latest user message ends with ``?`` or starts with a question word) is
  answered with the first :data:`DEFAULT_ANSWER_LINES` remembered lines, in recall order,
  after :data:`RECALL_PREFIX`; with nothing remembered, :data:`NOTHING_RECALLED`;
- anything else is acknowledged with :data:`NOTED_REPLY`: what the user said is remembered by
  the middleware's extraction after the turn (the rule-based extractor when the memory has no
  model), not by this model.

Every reply starts with :data:`MODEL_FREE_MARK`, so nobody mistakes it for an LLM's answer.
It never calls a tool (bound tools are accepted and ignored), so an agent's turn is one model
call.

``langmem-edge chat`` picks between a real model and this one
(:func:`langmem_edge.cli.chatbot.choose_chat_model`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from langmem_edge.graphs.history import is_injected
from langmem_edge.graphs.recall import BLOCK_OPEN, RECALLED_SECTION_TITLE

__all__ = [
    "DEFAULT_ANSWER_LINES",
    "MODEL_FREE_MARK",
    "NOTED_REPLY",
    "NOTHING_RECALLED",
    "RECALL_PREFIX",
    "RecallChatModel",
    "recalled_lines",
]

DEFAULT_ANSWER_LINES = 3
"""Remembered lines a reply to a question quotes (the best of the recall, in its order)."""

MODEL_FREE_MARK = "[model-free]"
"""What every reply starts with: no language model wrote it."""
RECALL_PREFIX = "From memory:"
"""Before the remembered lines that answer a question."""
NOTHING_RECALLED = "I don't remember anything about that yet."
"""The answer to a question when the memory block has no remembered lines."""
NOTED_REPLY = "Noted."
"""The reply to a statement (the middleware's extraction remembers it after the turn)."""

_QUESTION = re.compile(
    r"^\s*(?:what|which|who|whom|whose|where|when|why|how|do|does|did|is|are|am|was|were|"
    r"can|could|should|would|will|have|has|tell me|remind me what)\b", re.I)


def recalled_lines(block: str) -> list[str]:
    """The remembered lines of a memory block (``"key: text"``, without the ``"- "``), in
    recall order; ``[]`` when it has none."""
    lines = block.splitlines()
    try:
        start = lines.index(RECALLED_SECTION_TITLE) + 1
    except ValueError:
        return []
    found: list[str] = []
    for line in lines[start:]:
        if not line.startswith("- "):
            break
        found.append(line[2:])
    return found


def _is_question(text: str) -> bool:
    return text.rstrip().endswith("?") or bool(_QUESTION.match(text))


class RecallChatModel(BaseChatModel):
    """A chat model that answers from the recalled memory block (see the module docstring).

    Args:
        answer_lines: Remembered lines quoted in answer to a question. Default
            :data:`DEFAULT_ANSWER_LINES` (3).
    """

    answer_lines: int = DEFAULT_ANSWER_LINES

    @property
    def _llm_type(self) -> str:
        return "langmem-edge-recall"

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        """Accept the agent's tools; the model never calls them."""
        return self

    def reply(self, messages: Sequence[BaseMessage]) -> str:
        """The reply to ``messages``: the composition the module docstring describes."""
        block, question = "", ""
        for message in reversed(messages):
            if not isinstance(message, HumanMessage):
                continue
            text = message.text
            if is_injected(message):
                if text.startswith(BLOCK_OPEN) and not block:
                    block = text
            elif not question:
                question = text
            if block and question:
                break
        if not _is_question(question):
            return f"{MODEL_FREE_MARK} {NOTED_REPLY}"
        lines = recalled_lines(block)[: self.answer_lines]
        if not lines:
            return f"{MODEL_FREE_MARK} {NOTHING_RECALLED}"
        return "\n".join([f"{MODEL_FREE_MARK} {RECALL_PREFIX}", *(f"- {x}" for x in lines)])

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any
                  ) -> ChatResult:
        reply = AIMessage(content=self.reply(messages))
        return ChatResult(generations=[ChatGeneration(message=reply)])
