"""The examples run as a user would run them, offline."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow  # the examples run as real processes

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
        said = AgentMemory(store).profile(profile).episodic.search("teal", mode="keyword")
        assert [m.session_id for m in said] == [thread]


def example(name: str) -> Any:
    """``examples/<name>.py`` imported by path (as a user's ``python examples/...`` runs it)."""
    load(f"./{name}.py:build_graph", ROOT / "examples")
    return sys.modules[f"served_{name}"]


def fake_memory() -> Any:
    from langgraph.store.memory import InMemoryStore

    from langmem_edge import AgentMemory
    from langmem_edge.testing import FakeEmbeddings

    return AgentMemory(InMemoryStore(index={"dims": 64, "embed": FakeEmbeddings(64),
                                            "fields": ["text"]}))


def test_chatbot_build_graph_with_a_scripted_model() -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    from langmem_edge.testing import ScriptedChatModel

    model = ScriptedChatModel(responses=["Noted, Ana."])
    bot = example("chatbot").build_graph(model, memory=fake_memory(),
                                         checkpointer=InMemorySaver())
    ana = {"profile": "ana"}
    bot.invoke({"messages": [("user", "My favourite colour is teal.")]},
               {"configurable": {"thread_id": "run-1"}}, context=ana)
    bot.memory_middleware.flush()
    out = bot.invoke({"messages": [("user", "Which colour do I like?")]},
                     {"configurable": {"thread_id": "run-2"}}, context=ana)
    bot.memory_middleware.close()
    assert out["messages"][-1].content == "Noted, Ana."
    shown = [m.text for m in model.calls[-1]]
    assert any(t.startswith("<memory>") and "favourite colour is teal" in t for t in shown)
    assert "My favourite colour is teal." not in shown  # run 2 is a new thread


def test_chatbot_build_graph_model_free(monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    monkeypatch.delenv("LANGMEM_EDGE_MODEL", raising=False)
    memory = fake_memory()
    memory.profile("ana").remember("Ana's favourite colour is teal",
                                   key="preference.favorite_colour")
    bot = example("chatbot").build_graph(memory=memory, checkpointer=InMemorySaver())
    assert "model-free mode" in capsys.readouterr().err
    out = bot.invoke({"messages": [("user", "What is my favourite colour?")]},
                     {"configurable": {"thread_id": "run-1"}}, context={"profile": "ana"})
    bot.memory_middleware.close()
    assert out["messages"][-1].content.startswith("[model-free] From memory:\n")
    assert "Ana's favourite colour is teal" in out["messages"][-1].content


def run_example(name: str, *args: str, input: str | None = None) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LANGMEM_EDGE_FAKE_EMBEDDINGS": "1"}
    env.pop("LANGMEM_EDGE_MODEL", None)
    done = subprocess.run([sys.executable, str(ROOT / "examples" / f"{name}.py"), *args],
                          input=input, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_chatbot_remembers_across_two_runs(tmp_path: Path) -> None:
    folder = str(tmp_path / "memory")
    first = run_example("chatbot", "--path", folder, "--profile", "ana",
                        input="I live in Lisbon.\n")
    assert first.strip() == "[model-free] Noted."
    second = run_example("chatbot", "--path", folder, "--profile", "ana",
                         input="Where do I live?\n")
    assert "The user lives in Lisbon." in second
    other = run_example("chatbot", "--path", folder, "--profile", "bob",
                        input="Where do I live?\n")
    assert other.strip() == "[model-free] I don't remember anything about that yet."


def test_multi_channel_build_graph_with_a_scripted_model() -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    from langmem_edge.testing import ScriptedChatModel

    channels = example("multi_channel")
    model = ScriptedChatModel(responses=["ok"])
    memory = fake_memory()
    channels.link_channels(memory)
    graph = channels.build_graph(model, memory=memory, checkpointer=InMemorySaver())
    channels.receive(graph, memory, "telegram:123", "My favourite colour is teal.")
    channels.receive(graph, memory, "telegram:456", "My favourite colour is red.")
    channels.receive(graph, memory, "email:ana@example.com", "What is my favourite colour?")
    by_email = "\n".join(m.text for m in model.calls[-1])
    channels.receive(graph, memory, "telegram:456", "What is my favourite colour?")
    by_bob = "\n".join(m.text for m in model.calls[-1])
    graph.memory_middleware.close()
    assert "colour is teal. (about ana)" in by_email and "colour is red" not in by_email
    assert "colour is red" in by_bob and "colour is teal" not in by_bob
    contacts = {m.contact for m in memory.profile(channels.AGENT).list().memories}
    assert contacts == {"ana", "telegram:456"}  # Ana's two channels: one contact


def test_multi_channel_runs(tmp_path: Path) -> None:
    out = run_example("multi_channel", "--path", str(tmp_path / "m"))
    email = out.split("email:ana@example.com (contact ana)")[1].split("telegram:456")[0]
    assert "favourite colour is teal. (about ana)" in email
    assert "remembered for ana: The user's favourite colour is teal." in out
