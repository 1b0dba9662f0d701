"""A chatbot that remembers across runs: :func:`create_chatbot` and :func:`chat_loop`.

What ``langmem-edge chat`` and ``examples/chatbot.py`` share::

    from langmem_edge.graphs import chat_loop, choose_chat_model, create_chatbot

    chosen = choose_chat_model("openai:gpt-4o-mini")   # or the model-free mode
    bot = create_chatbot(chosen.model, memory=memory, checkpointer=saver)
    chat_loop(bot, profile="user:ana", thread="chat-1", lines=sys.stdin, write=print)

Each run of the terminal chatbot is a new thread of one profile: what it recalls from an
earlier run comes from memory (the profile's memories), not from the thread's messages. The
loop ends at the end of its input or at one of :data:`EXIT_WORDS`, then closes the agent's
memory middleware, which runs the extraction jobs still waiting, so the last turns are
remembered before the process exits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from langchain_core.language_models import BaseChatModel

from langmem_edge.graphs.agent import create_memory_agent
from langmem_edge.memory import AgentMemory

__all__ = ["CHATBOT_SYSTEM_PROMPT", "EXIT_WORDS", "chat_loop", "create_chatbot"]

CHATBOT_SYSTEM_PROMPT = (
    "You are a friendly assistant with a long-term memory of this user. Before each of your "
    "replies you are shown what you remember that bears on it; use it where it helps, and "
    "say so when you do not know something.")
"""The chatbot's system prompt."""

EXIT_WORDS = ("/quit", "/exit", "/bye")
"""Lines that end :func:`chat_loop` (as does the end of its input)."""


def create_chatbot(model: BaseChatModel, *, memory: AgentMemory | None = None,
                   store: Any = None, checkpointer: Any = None,
                   system_prompt: str = CHATBOT_SYSTEM_PROMPT) -> Any:
    """The chatbot's agent: :func:`~langmem_edge.graphs.create_memory_agent` with ``model``
    (a real chat model, or :class:`~langmem_edge.graphs.RecallChatModel`), the memory tools,
    and :data:`CHATBOT_SYSTEM_PROMPT`.

    Args:
        model: The chat model (:func:`~langmem_edge.graphs.choose_chat_model` picks one).
        memory: The memory; ``None``: one over ``store`` (model-free extraction).
        store: The graph's store, when ``memory`` is not given.
        checkpointer: Keeps each thread's messages (``ChromaSaver``, ``InMemorySaver``).
        system_prompt: The system prompt. Default :data:`CHATBOT_SYSTEM_PROMPT`.
    """
    return create_memory_agent(model, memory=memory, store=store, checkpointer=checkpointer,
                               system_prompt=system_prompt)


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
