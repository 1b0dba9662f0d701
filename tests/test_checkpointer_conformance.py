"""ChromaSaver against langgraph-checkpoint-conformance: every base and optional capability.

The suite (0.0.2) runs 58 base tests plus copy_thread (8), delete_for_runs (7) and prune (8),
all through the async methods. Each capability gets a fresh saver: a new embedded folder, or a
new collection (unique prefix) on the session's Chroma server.
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator

import pytest
from checkpointer_helpers import drop_server_collection, unique_prefix
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES

from langmem_edge.checkpointers import ChromaSaver

EXPECTED_TESTS = 81
"""58 base + 8 copy_thread + 7 delete_for_runs + 8 prune, as shipped in 0.0.2."""


def assert_fully_passing(report) -> None:
    """Every capability detected and passing, and all 81 tests ran."""
    failures = {cap: res.failures for cap, res in report.results.items() if res.passed is not True}
    assert not failures, f"conformance failures: {failures}"
    assert {c.value for c in ALL_CAPABILITIES} <= {
        cap for cap, res in report.results.items() if res.detected
    }
    passed = sum(res.tests_passed for res in report.results.values())
    assert passed == EXPECTED_TESTS, f"expected {EXPECTED_TESTS} tests to pass, got {passed}"
    assert report.conformance_level() == "FULL"


async def test_conformance_embedded() -> None:
    folders: list[tempfile.TemporaryDirectory] = []

    @checkpointer_test(name="ChromaSaver-embedded")
    async def factory() -> AsyncIterator[ChromaSaver]:
        folder = tempfile.TemporaryDirectory(prefix="chromasaver-conf-")
        folders.append(folder)
        async with ChromaSaver.from_path(folder.name) as saver:
            yield saver

    try:
        report = await validate(factory)
    finally:
        for folder in folders:
            folder.cleanup()
    assert_fully_passing(report)


@pytest.mark.server
async def test_conformance_server(chroma_server_url: str) -> None:
    made: list[ChromaSaver] = []

    @checkpointer_test(name="ChromaSaver-server")
    async def factory() -> AsyncIterator[ChromaSaver]:
        saver = ChromaSaver.from_url(chroma_server_url, collection_prefix=unique_prefix("conf"))
        made.append(saver)
        async with saver:
            yield saver
        drop_server_collection(chroma_server_url, saver.collection_name)

    report = await validate(factory)
    assert_fully_passing(report)
    assert len(made) == len(ALL_CAPABILITIES)
