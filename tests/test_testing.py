"""The public fakes behave as documented."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from langmem_edge.testing import FakeEmbeddings, ScriptedChatModel


class Verdict(BaseModel):
    replaces: float
    reason: str


def test_fake_embeddings_are_deterministic_and_similarity_tracks_words() -> None:
    emb = FakeEmbeddings(64)
    a, b, c = emb.embed_documents(["dark mode theme", "dark mode", "quarterly revenue"])
    assert a == FakeEmbeddings(64).embed_query("dark mode theme")
    dot = lambda x, y: sum(p * q for p, q in zip(x, y, strict=True))  # noqa: E731
    assert dot(a, b) > dot(a, c)
    assert dot(a, a) == pytest.approx(1.0)


def test_scripted_replies_in_order_then_last_repeats() -> None:
    model = ScriptedChatModel(responses=["one", "two"])
    assert [model.invoke("hi").content for _ in range(3)] == ["one", "two", "two"]
    assert len(model.calls) == 3


def test_scripted_structured_output_and_errors() -> None:
    model = ScriptedChatModel(
        responses=[{"replaces": 0.9, "reason": "newer"}, Verdict(replaces=0.1, reason="no")]
    )
    structured = model.with_structured_output(Verdict)
    assert structured.invoke("judge") == Verdict(replaces=0.9, reason="newer")
    assert structured.invoke("judge") == Verdict(replaces=0.1, reason="no")
    failing = ScriptedChatModel(responses=[TimeoutError("scripted outage")])
    with pytest.raises(TimeoutError):
        failing.invoke("hi")


def test_chroma_server_starts_serves_and_stops() -> None:
    import httpx

    from langmem_edge import ChromaStore
    from langmem_edge.testing import chroma_server

    with chroma_server() as url:
        with ChromaStore.from_url(url, index=None) as store:
            store.put(("t",), "k", {"v": 1})
            assert store.get(("t",), "k").value == {"v": 1}
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{url}/api/v2/heartbeat", timeout=1)


def _path_without_python_scripts() -> str:
    """PATH with every folder that holds a ``chroma`` script removed (the venv's bin, pyenv's
    shims): what a test runner started as ``/path/to/venv/bin/python -m pytest`` sees."""
    import os
    import shutil

    folders = os.environ.get("PATH", "").split(os.pathsep)
    kept = [d for d in folders if d and not shutil.which("chroma", path=d)]
    return os.pathsep.join(kept)


def test_chroma_server_starts_without_the_venv_bin_on_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import shutil

    from langmem_edge import ChromaStore
    from langmem_edge.testing import chroma_server

    monkeypatch.setenv("PATH", _path_without_python_scripts())
    assert shutil.which("chroma") is None
    with chroma_server() as url:
        with ChromaStore.from_url(url, index=None) as store:
            store.put(("t",), "k", {"v": 1})
            assert store.get(("t",), "k").value == {"v": 1}


def test_chroma_server_that_exits_early_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from langmem_edge.testing import chroma_server

    with socket.socket() as busy:  # a port already taken: `chroma run` exits with a message
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(RuntimeError) as info:
            with chroma_server(port=port, startup_timeout=30):
                pass  # pragma: no cover - must not start
    message = str(info.value)
    assert "exited with code" in message
    assert "not available" in message  # chroma's own words, not "(nothing)"


def test_scripted_model_in_a_tool_calling_agent_ends_after_the_final_answer() -> None:
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import tool

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    call = {"name": "add", "args": {"a": 1, "b": 2}, "id": "call_1"}
    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[call]),
                                         "final answer"])
    agent = create_agent(model, [add])
    out = agent.invoke({"messages": [("user", "1 + 2?")]}, {"recursion_limit": 10})
    assert len(model.calls) == 2
    assert [type(m).__name__ for m in out["messages"]] == [
        "HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
    tool_message = out["messages"][2]
    assert isinstance(tool_message, ToolMessage) and tool_message.content == "3"
    assert out["messages"][-1].content == "final answer"
    assert not out["messages"][-1].tool_calls


def test_scripted_plain_replies_stay_plain_once_tools_are_bound() -> None:
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool

    @tool
    def lookup(q: str) -> str:
        """Look something up."""
        return q

    bound = ScriptedChatModel(responses=["hello", AIMessage(content="hi")]).bind_tools([lookup])
    assert [bound.invoke("x").tool_calls for _ in range(2)] == [[], []]


def test_a_script_ending_in_a_tool_call_does_not_loop() -> None:
    from langchain_core.messages import AIMessage

    call = {"name": "add", "args": {}, "id": "c"}
    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[call])])
    assert model.invoke("x").tool_calls
    with pytest.raises(RuntimeError, match="loop"):
        model.invoke("x")
