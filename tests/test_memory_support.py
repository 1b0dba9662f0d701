"""Shared fixtures and fakes of the semantic-tier tests (``tests/test_memory_*.py``).

``store`` / ``make_store`` are parametrized over the backends: ``InMemoryStore`` (the
reference) and ``ChromaStore`` on an embedded folder (skipped when it cannot be imported).
``judge_model`` builds a ``ScriptedChatModel`` that answers verification, HyDE and answer
prompts from plain Python functions.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langmem_edge.memory import AgentMemory
from langmem_edge.testing import FakeEmbeddings, ScriptedChatModel

DIMS = 384
BACKENDS = ["memory", "chroma", pytest.param("server", marks=pytest.mark.server)]


def chroma_store_class() -> Any:
    """``ChromaStore`` if it imports, else ``None``."""
    try:
        from langmem_edge.store import ChromaStore
    except Exception:  # pragma: no cover - depends on the lead's progress
        return None
    return ChromaStore


class FlakyEmbeddings(FakeEmbeddings):
    """Fake embeddings that fail while ``failing`` is set (for the pending / reembed path)."""

    def __init__(self, dims: int = DIMS) -> None:
        super().__init__(dims)
        self.failing = False

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.failing:
            raise RuntimeError("embedding service down")
        return super().embed_documents(texts)


MakeStore = Callable[..., BaseStore]


@pytest.fixture(params=BACKENDS)
def make_store(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[MakeStore]:
    """A factory of fresh stores of one backend (``InMemoryStore``, ``ChromaStore`` on a
    folder, ``ChromaStore`` on the session's Chroma server): ``make_store(embed=..., path=...)``.

    Stores made with the same ``path`` share their data (two "processes").
    """
    made: list[Any] = []

    def make(*, embed: Any = None, path: str = "db", index: bool = True) -> BaseStore:
        embed = embed if embed is not None else FakeEmbeddings(DIMS)
        cfg = {"dims": DIMS, "embed": embed, "fields": ["text"]} if index else None
        if request.param == "memory":
            shared = getattr(make, "_shared", {})
            make._shared = shared  # type: ignore[attr-defined]
            if path in shared:
                return shared[path]
            store: Any = InMemoryStore(index=cfg)  # type: ignore[arg-type]
            shared[path] = store
            return store  # type: ignore[no-any-return]
        cls = chroma_store_class()
        if cls is None:
            pytest.skip("ChromaStore is not importable yet")
        if request.param == "chroma":
            store = cls.from_path(str(tmp_path / path), index=cfg)
        else:  # one collection prefix per path: same path, same data
            url = request.getfixturevalue("chroma_server_url")
            prefixes = getattr(make, "_prefixes", {})
            make._prefixes = prefixes  # type: ignore[attr-defined]
            prefix = prefixes.setdefault(path, f"m{uuid.uuid4().hex[:12]}")
            store = cls.from_url(url, index=cfg, collection_prefix=prefix)
        made.append(store)
        return store  # type: ignore[no-any-return]

    yield make
    for store in made:
        store.close()


@pytest.fixture
def embed() -> FakeEmbeddings:
    """The fake embedder of the default store (counts texts embedded)."""
    return FakeEmbeddings(DIMS)


@pytest.fixture
def store(make_store: MakeStore, embed: FakeEmbeddings) -> BaseStore:
    """A fresh store with a vector index on ``text``."""
    return make_store(embed=embed)


@pytest.fixture
def memory(store: BaseStore) -> AgentMemory:
    """A model-free ``AgentMemory`` on ``store``."""
    return AgentMemory(store)


# -- a scripted decision model ---------------------------------------------------------------

Judge = Callable[[str, str], tuple[float, bool]]
"""``(new text, existing text) -> (replace probability, contradicts)``."""


def parse_verification(messages: Sequence[BaseMessage]) -> tuple[str, list[str]]:
    """The new text and the existing texts of a verification prompt."""
    body = str(messages[-1].content)
    new = body.split("NEW memory:\n", 1)[1].split("\n\nEXISTING memories:\n", 1)[0]
    existing = body.split("EXISTING memories:\n", 1)[1].splitlines()
    return new, [re.sub(r"^\d+\. ", "", line) for line in existing]


def judge_model(
    judge: Judge | None = None,
    *,
    answer: str | Callable[[str], str] = "the answer",
    hyde: str = "a hypothetical note",
    as_text: bool = False,
) -> ScriptedChatModel:
    """A model that judges with ``judge`` (as a tool call, or JSON text with ``as_text``),
    writes HyDE passages and answers."""

    def respond(messages: Sequence[BaseMessage]) -> str:
        system = str(messages[0].content)
        if "long-term memory" in system:
            new, existing = parse_verification(messages)
            verdicts = []
            for i, old in enumerate(existing, start=1):
                p, contradicts = judge(new, old) if judge else (0.0, False)
                verdicts.append(
                    {
                        "index": i,
                        "replace_probability": p,
                        "contradicts": contradicts,
                        "reason": "scripted",
                    }
                )
            reply = {"verdicts": verdicts}  # a structured reply: a tool call
            return json.dumps(reply) if as_text else reply
        if "hypothetical" in system or "memory note" in system:
            return hyde
        if "using only the memories" in system:
            return answer(str(messages[-1].content)) if callable(answer) else answer
        return ""

    return ScriptedChatModel(respond=respond)


def calls_of(model: ScriptedChatModel, marker: str) -> list[list[BaseMessage]]:
    """The calls whose system prompt contains ``marker``."""
    return [c for c in model.calls if marker in str(c[0].content)]


def texts(result: Any) -> list[str]:
    """Candidate texts of a ``RecallResult``."""
    return [c.text for c in result.candidates]
