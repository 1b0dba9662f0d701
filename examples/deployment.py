"""Serve a memory agent with the LangGraph server (``langgraph dev`` / ``langgraph up``).

``examples/langgraph.json`` points here: the server enters :func:`generate_store` and
:func:`generate_checkpointer` (async context managers yielding a ``ChromaStore`` and a
``ChromaSaver``) once, and builds the graph with :func:`make_graph`. The graph is compiled
without a checkpointer or a store of its own: the server gives it both, and the memory
middleware reads the run's store (``runtime.store``).

Environment:

- ``LANGMEM_EDGE_CHROMA_URL``: a Chroma server (``chroma run``) to use; unset, the folder
  ``LANGMEM_EDGE_PATH`` (default ``./memory``) is used, embedded.
- ``LANGMEM_EDGE_MODEL``: a ``provider:model`` string for ``init_chat_model``; unset, an
  offline scripted model that repeats the memory it was shown (a demo, no LLM).
- ``LANGMEM_EDGE_EMBEDDINGS``: ``default`` (the offline all-MiniLM-L6-v2) or ``fake``
  (hashed bag of words, for tests and quick demos).

Runs are given a profile in their context: ``{"profile": "user:alice"}``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from langchain_core.messages import BaseMessage

from langmem_edge import ChromaSaver, ChromaStore, create_memory_agent

URL_ENV = "LANGMEM_EDGE_CHROMA_URL"
"""Environment variable naming a Chroma server; unset: an embedded folder."""
PATH_ENV = "LANGMEM_EDGE_PATH"
"""Environment variable naming the embedded folder."""
DEFAULT_PATH = "./memory"
"""The embedded folder when ``LANGMEM_EDGE_PATH`` is unset."""
MODEL_ENV = "LANGMEM_EDGE_MODEL"
"""Environment variable with the chat model (``init_chat_model`` string)."""
EMBEDDINGS_ENV = "LANGMEM_EDGE_EMBEDDINGS"
"""``default`` or ``fake``."""
DIMS = 384
"""Vector size of both embeddings."""


def _index() -> dict[str, Any]:
    if os.environ.get(EMBEDDINGS_ENV, "default") == "fake":
        from langmem_edge.testing import FakeEmbeddings

        embed: Any = FakeEmbeddings(DIMS)
    else:
        from langmem_edge import default_embeddings

        embed = default_embeddings()
    return {"dims": DIMS, "embed": embed, "fields": ["text"]}


@asynccontextmanager
async def generate_store() -> AsyncIterator[ChromaStore]:
    """The server's store: a ChromaStore on the server URL, or on the folder."""
    url = os.environ.get(URL_ENV)
    store = (ChromaStore.from_url(url, index=_index()) if url else
             ChromaStore.from_path(os.environ.get(PATH_ENV, DEFAULT_PATH), index=_index()))
    try:
        yield store
    finally:
        store.close()


@asynccontextmanager
async def generate_checkpointer() -> AsyncIterator[ChromaSaver]:
    """The server's checkpointer: a ChromaSaver on the server URL, or on the folder."""
    url = os.environ.get(URL_ENV)
    saver = (ChromaSaver.from_url(url) if url else
             ChromaSaver.from_path(os.environ.get(PATH_ENV, DEFAULT_PATH)))
    try:
        yield saver
    finally:
        saver.close()


def _echo_memory(messages: Sequence[BaseMessage]) -> str:
    shown = [str(m.content) for m in messages if str(m.content).startswith("<memory>")]
    return shown[0] if shown else "I remember nothing about this yet."


def _model() -> Any:
    name = os.environ.get(MODEL_ENV)
    if name:
        from langchain.chat_models import init_chat_model

        return init_chat_model(name)
    from langmem_edge.testing import ScriptedChatModel

    return ScriptedChatModel(respond=_echo_memory)


def make_graph() -> Any:
    """The served graph: a memory agent with no checkpointer or store of its own."""
    return create_memory_agent(_model(), system_prompt="You are a helpful assistant.")
