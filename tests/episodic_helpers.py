"""Shared helpers of the episodic-tier tests: store backends and a structured scripted model."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langmem_edge.testing import FakeEmbeddings, ScriptedChatModel

DIMS = 64
BACKENDS = ["memory", "chroma", pytest.param("server", marks=pytest.mark.server)]


def make_backend(
    kind: str, request: pytest.FixtureRequest, tmp_path: Any, made: list[BaseStore]
) -> BaseStore:
    """A fresh store of one backend, all with a FakeEmbeddings index on ``text``."""
    index = {"dims": DIMS, "embed": FakeEmbeddings(DIMS), "fields": ["text"]}
    if kind == "memory":
        store: BaseStore = InMemoryStore(index=index)  # type: ignore[arg-type]
    else:
        from langmem_edge.store import ChromaStore

        if kind == "chroma":
            store = ChromaStore.from_path(str(tmp_path / f"db{len(made)}"), index=index)
        else:
            url = request.getfixturevalue("chroma_server_url")
            store = ChromaStore.from_url(
                url, index=index, collection_prefix=f"ep{uuid.uuid4().hex[:12]}"
            )
    made.append(store)
    return store


class Plain(BaseStore):
    """``inner`` behind ``batch``/``abatch`` alone: no store capability (no keyword channel),
    so recall scans the messages in scope on every backend."""

    def __init__(self, inner: BaseStore) -> None:
        self.inner = inner

    def batch(self, ops: Any) -> list[Any]:
        return self.inner.batch(ops)

    async def abatch(self, ops: Any) -> list[Any]:
        return await self.inner.abatch(ops)


def store_fixture(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[BaseStore]:
    """Body of a ``store`` fixture parametrized over :data:`BACKENDS`."""
    made: list[BaseStore] = []
    yield make_backend(request.param, request, tmp_path, made)
    for store in made:
        close = getattr(store, "close", None)
        if close:
            close()


def system_text(messages: list[BaseMessage]) -> str:
    """The system prompt of a call ("" when none)."""
    return str(messages[0].content) if messages and messages[0].type == "system" else ""


def all_pass(number: int) -> dict[str, Any]:
    """A verdict passing all eight points."""
    return {
        "number": number,
        "entity_identity": True,
        "object_identity": True,
        "location_context": True,
        "temporal_accuracy": True,
        "organisational_context": True,
        "completeness": True,
        "relational_context": True,
        "supported": True,
        "reason": "",
    }


def scripted(
    extract: Callable[[list[BaseMessage]], list[dict[str, Any]]],
    *,
    fail: dict[str, str] | None = None,
    summary: str = "A short summary.",
) -> ScriptedChatModel:
    """A model answering extraction calls with ``extract(messages)``, checks with all-pass
    verdicts (except candidates whose text is in ``fail``: point -> fails), and summaries
    with ``summary``."""
    fail = fail or {}

    def respond(messages: list[BaseMessage]) -> Any:
        system = system_text(messages)
        if system.startswith("You extract"):
            return {"memories": extract(messages)}
        if system.startswith("Check each"):
            body = str(messages[-1].content).split("Candidates:\n", 1)[1]
            checks = []
            for n, line in enumerate(body.splitlines(), start=1):
                verdict = all_pass(n)
                for text, point in fail.items():
                    if json.dumps(text) in line:
                        verdict[point] = False
                        verdict["reason"] = f"{point} is wrong"
                checks.append(verdict)
            return {"checks": checks}
        return summary

    return ScriptedChatModel(respond=respond)
