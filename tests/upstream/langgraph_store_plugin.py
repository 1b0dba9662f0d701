"""A pytest plugin that runs langgraph's own store tests with ``ChromaStore`` as the store.

The store suite of ``langgraph-checkpoint-sqlite`` (``tests/test_store.py`` of its source
distribution) builds every store with ``SqliteStore.from_conn_string(...)`` and then calls
``store.setup()``. This plugin replaces ``langgraph.store.sqlite.SqliteStore`` before the test
module imports it, with a stand-in whose ``from_conn_string`` yields a ``ChromaStore`` over a
fresh embedded folder (the index config's ``text_fields`` passed as ``fields``). Tests of
SQLite's own internals (its SQL patterns, its connection) are deselected by
``run_langgraph_tests.py``, which loads this plugin with ``-p``.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
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


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Swap ``SqliteStore`` before langgraph's store tests import it."""
    import langgraph.store.sqlite as upstream

    upstream.SqliteStore = _UpstreamChromaStore  # type: ignore[misc]
