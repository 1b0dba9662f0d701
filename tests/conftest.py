"""Shared fixtures: a real Chroma server for the session, fake embeddings, store backends.

The server is started once per test session (``chroma run`` on 127.0.0.1, a free port, a
temporary folder) and stopped by its PID at the end. Set ``LANGMEM_EDGE_TEST_SERVER`` to a URL
to use a server you started yourself instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

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
