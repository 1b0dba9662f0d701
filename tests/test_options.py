"""Every option dict the package accepts refuses a misspelt key, naming it and the nearest
valid one (a typo used to pass in silence: ``index={"fileds": ...}`` indexed nothing).

Differential: for each public constructor or config and each of its valid keys, the same
call with that one key misspelt raises ``ConfigurationError``; the call with the key spelt
right does not.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import IndexConfig, TTLConfig
from langgraph.store.memory import InMemoryStore

from langmem_edge import AgentMemory, ChromaSaver, ChromaStore
from langmem_edge._chroma import RetryConfig
from langmem_edge.checkpointers.ttl import CheckpointTTLConfig
from langmem_edge.errors import ConfigurationError
from langmem_edge.graphs.background import BackgroundExecutor
from langmem_edge.graphs.background_config import DEFAULT_BACKGROUND_CONFIG
from langmem_edge.memory.config import MemoryConfig
from langmem_edge.retrieval.config import DEFAULT_HYBRID_CONFIG, HybridConfig, KeywordConfig
from langmem_edge.testing import FakeEmbeddings


def typo(key: str) -> str:
    """A plausible misspelling: two letters swapped, or the last one doubled."""
    if len(key) >= 4 and key[1] != key[2]:
        return key[0] + key[2] + key[1] + key[3:]
    return key + key[-1]


def _store(tmp: Path, **options: Any) -> None:
    ChromaStore.from_path(str(tmp / "chroma"), **options).close()


def _saver(tmp: Path, **options: Any) -> None:
    ChromaSaver.from_path(str(tmp / "chroma"), **options).close()


EMBED = FakeEmbeddings(8)
VALID_INDEX = {"dims": 8, "embed": EMBED, "fields": ["text"]}
VALID_STORE_TTL = {"default_ttl": 5.0, "refresh_on_read": True, "omit_expired": True,
                   "sweep_interval_minutes": 5.0}
VALID_RETRY = {"attempts": 2, "initial_wait": 0.1, "max_wait": 1.0}
VALID_SAVER_TTL = {"default_ttl": 5.0, "strategy": "delete", "sweep_interval_minutes": 5.0}
VALID_HYBRID = dict(DEFAULT_HYBRID_CONFIG)
VALID_KEYWORD = dict(DEFAULT_HYBRID_CONFIG["keyword"])

# (what, allowed keys, a valid dict, a call taking the dict)
CASES: list[tuple[str, Any, dict[str, Any], Callable[[Path, dict[str, Any]], None]]] = [
    ("index", IndexConfig, VALID_INDEX, lambda t, d: _store(t, index=d)),
    ("ttl", TTLConfig, VALID_STORE_TTL, lambda t, d: _store(t, ttl=d)),
    ("retry", RetryConfig, VALID_RETRY, lambda t, d: _store(t, retry=d)),
    ("hybrid", HybridConfig, VALID_HYBRID, lambda t, d: _store(t, hybrid=d)),
    ("hybrid keyword", KeywordConfig, VALID_KEYWORD,
     lambda t, d: _store(t, hybrid={"keyword": d})),
    ("ttl", CheckpointTTLConfig, VALID_SAVER_TTL, lambda t, d: _saver(t, ttl=d)),
    ("retry", RetryConfig, VALID_RETRY, lambda t, d: _saver(t, retry=d)),
    ("BackgroundConfig", None, dict(DEFAULT_BACKGROUND_CONFIG),
     lambda t, d: BackgroundExecutor(d).close()),
]


def _memory_sections() -> list[tuple[str, dict[str, Any]]]:
    """``(section, its default values)`` of every nested model of ``MemoryConfig``."""
    defaults = MemoryConfig().model_dump()
    return [(name, value) for name, value in defaults.items()
            if isinstance(value, dict) and name != "confidence_by_source"]


def _params() -> list[Any]:
    out = []
    for what, typed, valid, call in CASES:
        keys = list(typed.__annotations__) if typed is not None else list(valid)
        assert set(valid) == set(keys), (what, sorted(set(keys) ^ set(valid)))
        for key in keys:
            out.append(pytest.param(what, key, valid, call, id=f"{what}-{key}"))
    for section, values in _memory_sections():
        for key in values:
            out.append(pytest.param(
                f"{section}", key, values,
                lambda t, d, s=section: AgentMemory(InMemoryStore(), config={s: d}),
                id=f"memory.{section}-{key}"))
    return out


@pytest.mark.parametrize(("what", "key", "valid", "call"), _params())
def test_a_misspelt_option_is_refused_naming_the_nearest(
    tmp_path: Path, what: str, key: str, valid: dict[str, Any], call: Any
) -> None:
    call(tmp_path, dict(valid))  # spelt right: accepted
    wrong = typo(key)
    assert wrong not in valid
    bad = {(wrong if k == key else k): v for k, v in valid.items()}
    with pytest.raises(ConfigurationError) as caught:
        call(tmp_path, bad)
    message = str(caught.value)
    assert f"option {wrong!r}" in message
    assert f"did you mean {key!r}?" in message


@pytest.mark.parametrize(("options", "wrong", "near"), [
    ({"index": {"dims": 8, "embed": EMBED, "fileds": ["text"]}}, "fileds", "fields"),
    ({"retry": {"attempt": 2}}, "attempt", "attempts"),
    ({"ttl": {"default_tll": 5}}, "default_tll", "default_ttl"),
])
def test_the_reported_typos(tmp_path: Path, options: dict[str, Any], wrong: str,
                            near: str) -> None:
    with pytest.raises(ConfigurationError, match=f"'{wrong}' \\(did you mean '{near}'\\?\\)"):
        _store(tmp_path, **options)


def test_a_memory_section_typo_names_the_section(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="RecallConfig option 'limt' .*'limit'"):
        AgentMemory(InMemoryStore(), config={"recall": {"limt": 3}})
    with pytest.raises(ConfigurationError, match="option 'recal' .*'recall'"):
        AgentMemory(InMemoryStore(), config={"recal": {"limit": 3}})
