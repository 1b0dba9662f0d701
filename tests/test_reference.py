"""docs/reference.md lists exactly the public names: every module's ``__all__``, nothing more."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "reference.md"

PUBLIC_MODULES = (
    "langmem_edge",
    "langmem_edge.store",
    "langmem_edge.checkpointers",
    "langmem_edge.retrieval",
    "langmem_edge.memory",
    "langmem_edge.graphs",
    "langmem_edge.tools",
    "langmem_edge.testing",
    "langmem_edge.errors",
    "langmem_edge.embeddings",
    "langmem_edge.chat_models",
    "langmem_edge.cli",
    "langmem_edge.inspector",
)
"""The modules whose ``__all__`` is the public API (docs/reference.md has one section each)."""


def sections() -> dict[str, list[str]]:
    """``{module: [listed names]}`` from the reference's ``## `module``` sections."""
    listed: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in REFERENCE.read_text().splitlines():
        if heading := re.fullmatch(r"## `([\w.]+)`", line):
            current = listed.setdefault(heading.group(1), [])
        elif (entry := re.match(r"- `(\w+)`", line)) and current is not None:
            current.append(entry.group(1))
    return listed


def test_every_public_module_has_a_section() -> None:
    assert list(sections()) == list(PUBLIC_MODULES)


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_section_lists_exactly_the_modules_exports(module: str) -> None:
    exported = importlib.import_module(module).__all__
    listed = sections()[module]
    assert sorted(set(exported) - set(listed)) == [], "exported but not in docs/reference.md"
    assert sorted(set(listed) - set(exported)) == [], "in docs/reference.md but not exported"
    assert len(listed) == len(set(listed)), "listed twice"


def test_every_entry_says_what_it_is() -> None:
    entries = [line for line in REFERENCE.read_text().splitlines() if line.startswith("- `")]
    assert entries
    shape = re.compile(r"- `\w+`(: see `[\w.]+`\.| \((class|function|constant|object)\): \S)")
    for line in entries:
        assert shape.match(line), line
