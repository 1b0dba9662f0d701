"""A terminal chatbot that remembers you across runs.

    python examples/chatbot.py --profile ana                      # model-free
    python examples/chatbot.py --profile ana --model openai:gpt-4o-mini

Tell it something, quit (/quit or Ctrl-D), run it again: it recalls what you said, on a new
thread, from its Chroma folder (``--path``, default ``./chatbot-memory``). With ``--model``
(or ``LANGMEM_EDGE_MODEL``) naming a chat model that is installed and configured, that model
answers (``init_chat_model("provider:name")``); otherwise the chatbot is model-free: it
answers from what it recalls and says so. ``LANGMEM_EDGE_FAKE_EMBEDDINGS=1`` swaps the
embedding model for hashed fakes (quick tests; never on a folder you keep).
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from typing import Any

from langmem_edge import (
    AgentMemory,
    ChromaSaver,
    ChromaStore,
    create_memory_agent,
    default_embeddings,
)
from langmem_edge.graphs import RecallChatModel
from langmem_edge.testing import FakeEmbeddings

DIMS = 384
"""Vector size of the embeddings."""
FAKE_ENV = "LANGMEM_EDGE_FAKE_EMBEDDINGS"
"""``1``: hashed fake embeddings instead of the model (tests)."""
MODEL_ENV = "LANGMEM_EDGE_MODEL"
"""The chat model (``provider:name``) when ``--model`` is not given."""
SYSTEM_PROMPT = (
    "You are a friendly assistant with a long-term memory of this user. Before each of your "
    "replies you are shown what you remember that bears on it; use it where it helps, and "
    "say so when you do not know something.")
"""The chatbot's system prompt."""


def embeddings() -> Any:
    """The embedding model, or the fakes when :data:`FAKE_ENV` is ``1``."""
    return FakeEmbeddings(DIMS) if os.environ.get(FAKE_ENV) == "1" else default_embeddings()


def chat_model(name: str | None) -> Any:
    """The chat model ``name`` (``provider:name``, else :data:`MODEL_ENV`) names, or the
    model-free ``RecallChatModel`` (it answers from what memory recalls)."""
    name = name or os.environ.get(MODEL_ENV)
    if not name:
        print("model-free mode: answers come from memory only", file=sys.stderr)
        return RecallChatModel()
    from langchain.chat_models import init_chat_model

    print(f"chat model: {name}", file=sys.stderr)
    return init_chat_model(name)


def build_graph(model: Any = None, *, memory: AgentMemory | None = None, store: Any = None,
                checkpointer: Any = None) -> Any:
    """The chatbot: a memory agent. ``model`` is a chat model, a ``provider:name``, or
    ``None`` (``LANGMEM_EDGE_MODEL``, else model-free); which one answers goes to stderr."""
    if model is None or isinstance(model, str):
        model = chat_model(model)
    return create_memory_agent(model, memory=memory, store=store, checkpointer=checkpointer,
                               system_prompt=SYSTEM_PROMPT)


def chat(bot: Any, *, profile: str, thread: str) -> None:
    """Each line of stdin is a user message on ``thread``; each reply is printed. Ends at
    the end of input or ``/quit``, then closes the memory middleware: the extraction jobs
    still waiting run, so the last turns are remembered before the process exits."""
    config = {"configurable": {"thread_id": thread}}
    try:
        while True:
            if sys.stdin.isatty():
                print("you> ", end="", flush=True)
            line = sys.stdin.readline()
            text = line.strip()
            if not line or text == "/quit":
                break
            if text:
                state = bot.invoke({"messages": [("user", text)]}, config,
                                   context={"profile": profile})
                print(state["messages"][-1].text)
    finally:
        bot.memory_middleware.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="me", help="whose memory (default: me)")
    parser.add_argument("--path", default="./chatbot-memory", help="the Chroma folder")
    parser.add_argument("--model", default=None, help="a chat model, provider:name")
    args = parser.parse_args(argv)
    index = {"dims": DIMS, "embed": embeddings(), "fields": ["text"]}
    with ChromaStore.from_path(args.path, index=index) as store, \
            ChromaSaver.from_path(args.path) as saver:
        bot = build_graph(args.model, memory=AgentMemory(store), checkpointer=saver)
        chat(bot, profile=args.profile, thread=f"run-{uuid.uuid4().hex[:8]}")


if __name__ == "__main__":
    main()
