"""Fixtures of the reliability suites: ``long_run`` (``--long`` / ``LANGMEM_EDGE_LONG=1``)."""

from __future__ import annotations

import pytest

from .helpers import is_long


@pytest.fixture(scope="session")
def long_run(request: pytest.FixtureRequest) -> bool:
    """Whether the long variants run (``--long`` or ``LANGMEM_EDGE_LONG=1``)."""
    return is_long(request.config)
