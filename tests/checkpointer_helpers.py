"""Shared helpers for the ChromaSaver tests: savers on a tmp folder or the session server,
checkpoint builders, and a spy counting Chroma calls."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import chromadb
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint
from langgraph.checkpoint.base.id import uuid6

from langmem_edge._chroma import open_http_client
from langmem_edge.checkpointers import ChromaSaver


def unique_prefix(tag: str = "cp") -> str:
    """A collection prefix no other test uses (isolates tests sharing one server)."""
    return f"t-{tag}-{uuid.uuid4().hex[:12]}"


@contextmanager
def server_saver(url: str, **kwargs: Any) -> Iterator[ChromaSaver]:
    """A saver on the test server in a fresh collection, dropped afterwards."""
    kwargs.setdefault("collection_prefix", unique_prefix())
    saver = ChromaSaver.from_url(url, **kwargs)
    try:
        yield saver
    finally:
        drop_collection(saver.client, saver.collection_name)
        saver.close()


def drop_collection(client: chromadb.api.ClientAPI, name: str) -> None:
    """Delete a collection if it exists."""
    try:
        client.delete_collection(name)
    except Exception:
        pass


def drop_server_collection(url: str, name: str) -> None:
    """Delete a collection on a server through a fresh client."""
    client = open_http_client(url)
    try:
        drop_collection(client, name)
    finally:
        client.close()


def make_checkpoint(
    values: dict[str, Any] | None = None, versions: dict[str, Any] | None = None
) -> Checkpoint:
    """A well-formed checkpoint with a fresh, increasing id."""
    values = values or {}
    return Checkpoint(
        v=1,
        id=str(uuid6(clock_seq=-1)),
        ts=datetime.now(UTC).isoformat(),
        channel_values=values,
        channel_versions=versions if versions is not None else {k: 1 for k in values},
        versions_seen={},
        updated_channels=None,
    )


def config(thread_id: str, ns: str = "", checkpoint_id: str | None = None) -> RunnableConfig:
    """A config addressing a thread (and optionally one checkpoint)."""
    conf: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ns}
    if checkpoint_id is not None:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


def put_chain(
    saver: ChromaSaver,
    thread_id: str,
    n: int,
    *,
    ns: str = "",
    metadata: Any = None,
    values: Any = None,
) -> list[RunnableConfig]:
    """Put ``n`` checkpoints, each the child of the previous; returns their configs.

    ``metadata(i)`` and ``values(i)`` (callables) customise each checkpoint.
    """
    stored: list[RunnableConfig] = []
    parent: RunnableConfig | None = None
    for i in range(n):
        cfg = config(thread_id, ns)
        if parent is not None:
            cfg["configurable"]["checkpoint_id"] = parent["configurable"]["checkpoint_id"]
        vals = values(i) if values else {}
        md = metadata(i) if metadata else {"source": "loop", "step": i, "parents": {}}
        parent = saver.put(cfg, make_checkpoint(vals), md, {k: 1 for k in vals})
        stored.append(parent)
    return stored


class CallSpy:
    """Counts calls to a collection's methods (``get``, ``upsert``, ``add``, ``delete``)."""

    METHODS = ("get", "upsert", "add", "delete", "update")

    def __init__(self, saver: ChromaSaver) -> None:
        self.saver = saver
        self.counts: Counter[str] = Counter()
        self._originals: dict[str, Any] = {}

    def __enter__(self) -> CallSpy:
        collection = self.saver.collection
        for name in self.METHODS:
            original = getattr(collection, name)
            self._originals[name] = original

            def spy(*args: Any, _name: str = name, _orig: Any = original, **kw: Any) -> Any:
                self.counts[_name] += 1
                return _orig(*args, **kw)

            spy.__name__ = name
            object.__setattr__(collection, name, spy)
        return self

    def __exit__(self, *exc: Any) -> None:
        for name in self._originals:
            object.__delattr__(self.saver.collection, name)

    @property
    def writes(self) -> int:
        """Number of write calls (upsert + add + delete + update)."""
        return sum(self.counts[m] for m in ("upsert", "add", "delete", "update"))
