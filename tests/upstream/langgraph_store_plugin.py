"""A pytest plugin that runs langgraph's own store tests with ``ChromaStore`` as the store.

The store suites of ``langgraph-checkpoint-sqlite`` (``tests/test_store.py`` and
``tests/test_async_store.py`` of its source distribution) build every store with
``SqliteStore.from_conn_string(...)`` (``async with AsyncSqliteStore.from_conn_string(...)``)
and then call ``store.setup()``. This plugin replaces both classes in
``langgraph.store.sqlite`` before the test modules import them, with stand-ins whose
``from_conn_string`` yields a ``ChromaStore`` over a fresh embedded folder (the index
config's ``text_fields`` passed as ``fields``). Tests of
SQLite's own internals (its SQL patterns, its connection) are deselected by
``run_langgraph_tests.py``, which loads this plugin with ``-p``.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import pytest

from langmem_edge.store import ChromaStore


class _UpstreamChromaStore(ChromaStore):
    """A ChromaStore with the ``setup()`` a SQLite store's callers make first."""

    def setup(self) -> None:
        """Nothing to set up: collections are created on open."""

    @classmethod
    @contextmanager
    def from_conn_string(
        cls, conn_string: str, *, index: dict[str, Any] | None = None, ttl: Any = None
    ) -> Iterator[ChromaStore]:
        folder = tempfile.mkdtemp(prefix="lg-upstream-store-")
        config = None
        if index is not None:
            config = {"dims": index["dims"], "embed": index["embed"]}
            if index.get("text_fields") is not None:
                config["fields"] = index["text_fields"]
        try:
            store = cls.from_path(folder, index=config, ttl=ttl)
            try:
                yield store
            finally:
                store.close()
        finally:
            shutil.rmtree(folder, ignore_errors=True)


class _UpstreamAsyncChromaStore(_UpstreamChromaStore):
    """The async stand-in: ``async with from_conn_string(...)`` and ``await setup()``."""

    async def setup(self) -> None:  # type: ignore[override]
        """Nothing to set up: collections are created on open."""

    @classmethod
    @asynccontextmanager
    async def from_conn_string(  # type: ignore[override]
        cls, conn_string: str, *, index: dict[str, Any] | None = None, ttl: Any = None
    ) -> AsyncIterator[ChromaStore]:
        with _UpstreamChromaStore.from_conn_string.__func__(  # type: ignore[attr-defined]
                cls, conn_string, index=index, ttl=ttl) as store:
            yield store


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Swap ``SqliteStore`` before langgraph's store tests import it."""
    import langgraph.store.sqlite as upstream

    upstream.SqliteStore = _UpstreamChromaStore  # type: ignore[misc]
    upstream.AsyncSqliteStore = _UpstreamAsyncChromaStore  # type: ignore[misc]
