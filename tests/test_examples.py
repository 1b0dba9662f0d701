"""The examples run as a user would run them, offline."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_store_demo_runs(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "store_demo.py"), "--path", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},  # this checkout's package
    ).stdout
    assert "ui_theme: Prefers dark mode" in out
    assert "home: Lives in Singapore" in out
    assert "after reopening: Lives in Singapore" in out


def load(spec: str, base: Path) -> object:
    """Load ``./file.py:attr`` relative to ``base`` the way langgraph's server does: the file
    imported by path as its own module, then the attribute."""
    import importlib.util

    path, _, attr = spec.partition(":")
    file = (base / path).resolve()
    module_spec = importlib.util.spec_from_file_location(f"served_{file.stem}", file)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_spec.name] = module
    module_spec.loader.exec_module(module)
    return getattr(module, attr)


@pytest.mark.parametrize("mode", ["folder", pytest.param("server", marks=pytest.mark.server)])
async def test_the_deployment_config_serves_a_memory_agent(
        mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        request: pytest.FixtureRequest) -> None:
    import json
    import uuid

    from langmem_edge import AgentMemory

    config = json.loads((ROOT / "examples" / "langgraph.json").read_text())
    base = ROOT / "examples"
    monkeypatch.setenv("LANGMEM_EDGE_EMBEDDINGS", "fake")
    monkeypatch.delenv("LANGMEM_EDGE_MODEL", raising=False)
    if mode == "folder":
        monkeypatch.delenv("LANGMEM_EDGE_CHROMA_URL", raising=False)
        monkeypatch.setenv("LANGMEM_EDGE_PATH", str(tmp_path / "memory"))
    else:
        monkeypatch.setenv("LANGMEM_EDGE_CHROMA_URL", request.getfixturevalue("chroma_server_url"))
    make_graph = load(config["graphs"]["memory_agent"], base)
    generate_store = load(config["store"]["path"], base)
    generate_checkpointer = load(config["checkpointer"]["path"], base)
    async with generate_store() as store, generate_checkpointer() as saver:  # type: ignore[operator]
        graph = make_graph()  # type: ignore[operator]
        assert graph.checkpointer is None and graph.store is None  # the server gives both
        served = graph.copy(update={"checkpointer": saver, "store": store})
        thread = f"t-{uuid.uuid4().hex[:8]}"
        profile = f"user-{uuid.uuid4().hex[:8]}"
        run = {"configurable": {"thread_id": thread}}
        out = await served.ainvoke({"messages": [("user", "My favourite colour is teal.")]},
                                   run, context={"profile": profile})
        assert out["messages"][-1].content == "I remember nothing about this yet."
        await graph.memory_middleware.aclose()
        assert (await served.aget_state(run)).values["messages"][0].content.endswith("teal.")
        said = AgentMemory(store).profile(profile).recall_conversation("teal", mode="keyword")
        assert [m.session_id for m in said] == [thread]
