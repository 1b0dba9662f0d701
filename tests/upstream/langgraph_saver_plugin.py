"""A pytest plugin that runs langgraph's own graph tests with ``ChromaSaver`` as the saver.

langgraph's test suite (``tests/`` of its source distribution) builds its in-memory
checkpointer in ``tests.conftest_checkpointer._checkpointer_memory``; its ``conftest`` imports
that name when it loads. This plugin replaces it first, so every test parametrized with the
``memory`` checkpointer (sync and async) runs unchanged on a ``ChromaSaver`` over a fresh
embedded folder instead. The ids still say ``memory``. Loaded by ``run_langgraph_tests.py``
with ``-p``; nothing here is imported by the project's own suite.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from langmem_edge.checkpointers import ChromaSaver


@contextmanager
def _chroma_saver() -> Iterator[ChromaSaver]:
    folder = tempfile.mkdtemp(prefix="lg-upstream-")
    try:
        yield ChromaSaver.from_path(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Swap the in-memory checkpointer before langgraph's conftest imports it."""
    root = str(early_config.invocation_params.dir)  # the unpacked langgraph sdist
    if root not in sys.path:
        sys.path.insert(0, root)
    import tests.conftest_checkpointer as upstream  # langgraph's, from its sdist

    upstream._checkpointer_memory = _chroma_saver
