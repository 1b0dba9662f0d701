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

from langmem_edge import AgentMemory, ChromaSaver, ChromaStore, default_embeddings
from langmem_edge.graphs import chat_loop, choose_chat_model, create_chatbot
from langmem_edge.testing import FakeEmbeddings

DIMS = 384
"""Vector size of the embeddings."""
FAKE_ENV = "LANGMEM_EDGE_FAKE_EMBEDDINGS"
"""``1``: hashed fake embeddings instead of the model (tests)."""


def embeddings() -> Any:
    """The embedding model, or the fakes when :data:`FAKE_ENV` is ``1``."""
    return FakeEmbeddings(DIMS) if os.environ.get(FAKE_ENV) == "1" else default_embeddings()


def build_graph(model: Any = None, *, memory: AgentMemory | None = None, store: Any = None,
                checkpointer: Any = None) -> Any:
    """The chatbot: a memory agent. ``model`` is a chat model, a ``provider:name``, or
    ``None`` (``LANGMEM_EDGE_MODEL``, else model-free); which one answers goes to stderr."""
    if model is None or isinstance(model, str):
        chosen = choose_chat_model(model)
        print(chosen.note, file=sys.stderr)
        model = chosen.model
    return create_chatbot(model, memory=memory, store=store, checkpointer=checkpointer)


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
        prompt = (lambda: print("you> ", end="", flush=True)) if sys.stdin.isatty() else None
        chat_loop(bot, profile=args.profile, thread=f"run-{uuid.uuid4().hex[:8]}",
                  lines=sys.stdin, write=print, prompt=prompt)


if __name__ == "__main__":
    main()
