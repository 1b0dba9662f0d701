"""One person, two gateways, one contact's memory.

    python examples/multi_channel.py [--path ./multi-channel-memory]

Ana writes to the concierge agent on Telegram (``telegram:123``) and, another day, by email
(``email:ana@example.com``). The gateways know only their own ids; ``link_contact`` records
that both are the contact ``ana``, and each gateway passes ``contact_for(its id)`` as the
run's contact. So what Ana said on Telegram is recalled when she writes by email, while Bob
(``telegram:456``, never linked: his id is his contact) has a memory of his own. Model-free
unless ``--model provider:name`` names a chat model; ``LANGMEM_EDGE_FAKE_EMBEDDINGS=1`` swaps
the embedding model for hashed fakes.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import tempfile
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

AGENT = "agent:concierge"
"""The profile: the agent's memory, with one contact per person it talks to."""
LINKS = {"telegram:123": "ana", "email:ana@example.com": "ana"}
"""Gateway ids of one person, and the contact they are."""
SCRIPT = [
    ("telegram:123", "Hi, I'm Ana. My favourite colour is teal."),
    ("telegram:456", "Hello, Bob here. My favourite colour is red."),
    ("email:ana@example.com", "What is my favourite colour?"),
    ("telegram:456", "What is my favourite colour?"),
]
"""What arrives, in order: (the sender's gateway id, the message)."""
DIMS = 384
"""Vector size of the embeddings."""
FAKE_ENV = "LANGMEM_EDGE_FAKE_EMBEDDINGS"
"""``1``: hashed fake embeddings instead of the model (tests)."""


def embeddings() -> Any:
    """The embedding model, or the fakes when :data:`FAKE_ENV` is ``1``."""
    return FakeEmbeddings(DIMS) if os.environ.get(FAKE_ENV) == "1" else default_embeddings()


def build_graph(model: Any = None, *, memory: AgentMemory, checkpointer: Any = None) -> Any:
    """The concierge: a memory agent over ``memory`` (``model``: a chat model, a
    ``provider:name`` or ``None`` for the model-free mode)."""
    if isinstance(model, str):
        from langchain.chat_models import init_chat_model

        model = init_chat_model(model)
    return create_memory_agent(model or RecallChatModel(), memory=memory,
                               checkpointer=checkpointer,
                               system_prompt="You are a concierge who remembers each guest.")


def link_channels(memory: AgentMemory, links: dict[str, str] = LINKS) -> None:
    """Record which gateway ids are which contact."""
    for channel_id, contact in links.items():
        memory.profile(AGENT).link_contact(channel_id, contact)


def receive(graph: Any, memory: AgentMemory, channel_id: str, text: str) -> str:
    """What a gateway does with an incoming message: the contact of its sender's id, one
    thread per channel id, the agent's reply. Extraction is flushed so the next message
    (on any channel) sees what this one taught."""
    contact = memory.profile(AGENT).contact_for(channel_id)
    thread = re.sub(r"[^\w:-]", "-", channel_id)  # thread ids may not contain "."
    state = graph.invoke({"messages": [("user", text)]}, {"configurable": {"thread_id": thread}},
                         context={"profile": AGENT, "contact": contact})
    graph.memory_middleware.flush()
    return str(state["messages"][-1].text)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", default=None, help="Chroma folder (default: a temp folder, "
                        "removed at the end)")
    parser.add_argument("--model", default=None, help="a chat model, provider:name")
    args = parser.parse_args(argv)
    path = args.path or tempfile.mkdtemp(prefix="langmem-edge-channels-")
    index = {"dims": DIMS, "embed": embeddings(), "fields": ["text"]}
    try:
        with ChromaStore.from_path(path, index=index) as store, \
                ChromaSaver.from_path(path) as saver:
            memory = AgentMemory(store)
            link_channels(memory)
            graph = build_graph(args.model, memory=memory, checkpointer=saver)
            for channel_id, text in SCRIPT:
                contact = memory.profile(AGENT).contact_for(channel_id)
                reply = receive(graph, memory, channel_id, text)
                print(f"{channel_id} (contact {contact}): {text}")
                print("  agent: " + reply.replace("\n", "\n  "))
            graph.memory_middleware.close()
            for m in memory.profile(AGENT).list().memories:
                print(f"remembered for {m.contact}: {m.text}")
    finally:
        if args.path is None:
            shutil.rmtree(path, ignore_errors=True)

if __name__ == "__main__":
    main()
