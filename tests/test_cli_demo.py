"""``langmem-edge demo`` and ``langmem-edge chat``: run as a person runs them, on a folder and
on the server, and what they print is what the store holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from typer.testing import CliRunner

from langmem_edge.cli import app
from langmem_edge.cli.base import EXIT_FAILURE, FAKE_EMBEDDINGS_ENV
from langmem_edge.cli.demo import CHANGED_KEY, DEMO_PROFILE, TEMP_PREFIX

ROOT = Path(__file__).resolve().parents[1]


def invoke(*args: str, input: str | None = None, code: int = 0) -> Result:
    result = CliRunner(env={FAKE_EMBEDDINGS_ENV: "1"}).invoke(app, list(args), input=input)
    assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
    return result


@pytest.fixture
def temp_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where ``tempfile`` makes folders during the test (to see what is left behind)."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def test_demo_shows_memory_recall_and_supersession_and_leaves_nothing(temp_root: Path
                                                                      ) -> None:
    text = invoke("demo").stdout
    assert "The user's favourite colour is teal." in text  # remembered after session 1
    session_2 = text.split("Session 2")[1].split("Session 3")[0]
    assert "From memory:" in session_2 and "teal" in session_2  # recalled on a new thread
    assert "superseded   The user lives in Lisbon." in text
    assert "active       The user lives in Porto now." in text
    session_3 = text.split("Session 3")[1].split("What the demo showed")[0]
    assert "Porto" in session_3 and "Lisbon" not in session_3
    assert "NO" not in text.split("What the demo showed")[1]
    assert list(temp_root.iterdir()) == []  # the temporary folder is gone


def test_demo_json(temp_root: Path) -> None:
    got = json.loads(invoke("demo", "--json").stdout)
    assert got["ok"] is True and all(got["checks"].values()) and got["kept"] is False
    assert [s["thread"] for s in got["sessions"]] == [
        f"{got['sessions'][0]['thread'][:-2]}-{n}" for n in (1, 2, 3)]
    assert len({s["thread"] for s in got["sessions"]}) == 3
    assert "teal" in got["sessions"][1]["turns"][0]["reply"]
    assert any(m["key"] == "preference.favorite_colour" and "teal" in m["text"]
               for m in got["remembered_after_session_1"])
    versions = got["history"]["versions"]
    assert got["history"]["key"] == CHANGED_KEY
    assert [(v["status"], v["text"]) for v in versions] == [
        ("superseded", "The user lives in Lisbon."), ("active", "The user lives in Porto now.")]
    assert versions[0]["superseded_by"] == versions[1]["id"]
    assert list(temp_root.iterdir()) == []


def history_of(*options: str, profile: str = DEMO_PROFILE) -> list[dict[str, Any]]:
    done = invoke(*options, "history", CHANGED_KEY, "-p", profile, "--json")
    return json.loads(done.stdout)


def test_demo_path_keeps_the_folder_for_the_other_commands(tmp_path: Path,
                                                           temp_root: Path) -> None:
    folder = tmp_path / "kept"
    text = invoke("demo", "--path", str(folder)).stdout
    assert f"--path {folder} history {CHANGED_KEY}" in text
    assert [v["status"] for v in history_of("--path", str(folder))] == ["superseded", "active"]
    again = invoke("demo", "--path", str(folder), code=EXIT_FAILURE)
    assert "profile 'demo' already exists" in again.stderr
    other = json.loads(invoke("--path", str(folder), "demo", "-p", "demo2", "--json").stdout)
    assert other["kept"] is True and other["ok"] is True  # the global --path keeps it too
    assert [v["status"] for v in history_of("--path", str(folder), profile="demo2")] == [
        "superseded", "active"]
    assert list(temp_root.iterdir()) == []


def test_demo_ignores_the_path_environment_variable(tmp_path: Path, temp_root: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    mine = tmp_path / "my-memory"
    monkeypatch.setenv("LANGMEM_EDGE_PATH", str(mine))
    assert json.loads(invoke("demo", "--json").stdout)["kept"] is False
    assert not mine.exists()


@pytest.mark.server
def test_demo_on_the_server(chroma_server_url: str) -> None:
    options = ["--url", chroma_server_url, "--namespace", f"t{uuid.uuid4().hex[:12]}"]
    got = json.loads(invoke(*options, "demo", "--json").stdout)
    assert got["ok"] is True and got["kept"] is False
    assert chroma_server_url in got["where"]
    stats = json.loads(invoke(*options, "stats", "--json").stdout)
    assert stats["total"] == 0  # its profile was deleted
    kept = json.loads(invoke(*options, "demo", "--keep", "--json").stdout)
    assert kept["kept"] is True
    assert [v["status"] for v in history_of(*options)] == ["superseded", "active"]


@pytest.mark.slow
def test_demo_in_a_real_process_with_the_real_model(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != FAKE_EMBEDDINGS_ENV}
    env["TMPDIR"] = str(tmp_path)
    done = subprocess.run([sys.executable, "-m", "langmem_edge.cli", "demo"],
                          capture_output=True, text=True, env=env, timeout=900, cwd=ROOT)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "Loading weights" not in done.stderr
    assert "The user lives in Porto now." in done.stdout
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(TEMP_PREFIX)]


# -- chat --------------------------------------------------------------------------------------


@pytest.fixture(params=["folder", pytest.param("server", marks=pytest.mark.server)])
def store_options(request: pytest.FixtureRequest, tmp_path: Path) -> list[str]:
    """The global options of one store: a folder, or a namespace of its own on the server."""
    if request.param == "folder":
        return ["--path", str(tmp_path / "memory")]
    url = request.getfixturevalue("chroma_server_url")
    return ["--url", url, "--namespace", f"t{uuid.uuid4().hex[:12]}"]


def test_chat_model_free_remembers_across_runs(store_options: list[str]) -> None:
    first = invoke(*store_options, "chat", "-p", "ana", input=(
        "My name is Ana and I live in Lisbon.\n\nMy favourite colour is teal.\n"))
    assert first.stdout.splitlines() == ["[model-free] Noted.", "[model-free] Noted."]
    assert "model-free mode" in first.stderr and "2 turns" in first.stderr
    second = invoke(*store_options, "chat", "-p", "ana", input=(
        "What is my favourite colour?\n/quit\nWhere do I live?\n"))
    assert second.stdout.startswith("[model-free] From memory:\n")
    assert "The user's favourite colour is teal." in second.stdout
    assert "1 turn on" in second.stderr  # /quit ended it
    threads = [s["session_id"] for s in
               json.loads(invoke(*store_options, "sessions", "-p", "ana", "--json").stdout)]
    assert len(threads) == 2 and all(t.startswith("chat-") for t in threads)  # a thread a run


def test_chat_with_a_named_model(store_options: list[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """``--model provider:name`` goes through ``init_chat_model``; the model sees the memory
    block on the second run's new thread."""
    import langchain.chat_models

    from langmem_edge.testing import ScriptedChatModel

    model = ScriptedChatModel(responses=["Nice to meet you, Ana."])
    asked: list[str] = []

    def init_chat_model(name: str, **kwargs: Any) -> ScriptedChatModel:
        asked.append(name)
        return model

    monkeypatch.setattr(langchain.chat_models, "init_chat_model", init_chat_model)
    first = invoke(*store_options, "chat", "-p", "ana", "--model", "acme:chat-1",
                   input="My favourite colour is teal.\n")
    assert asked == ["acme:chat-1"] and "chat model: acme:chat-1" in first.stderr
    assert first.stdout.strip() == "Nice to meet you, Ana."
    invoke(*store_options, "chat", "-p", "ana", "--model", "acme:chat-1",
           input="Which colour do I like?\n")
    shown = [m.text for m in model.calls[-1]]
    assert any("<memory>" in t and "favourite colour is teal" in t for t in shown)
    assert not any("My favourite colour is teal." == t for t in shown)  # a new thread


def test_chat_falls_back_when_the_model_cannot_be_made(tmp_path: Path) -> None:
    done = invoke("--path", str(tmp_path / "m"), "chat", "--model", "no-such-provider:x",
                  input="Hello\n")
    assert "model-free mode" in done.stderr and "'no-such-provider:x' could not be loaded" \
        in done.stderr
    assert done.stdout.strip() == "[model-free] Noted."


def test_chat_reports_a_failing_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import langchain.chat_models

    from langmem_edge.testing import ScriptedChatModel

    broken = ScriptedChatModel(responses=[RuntimeError("401 invalid api key")])
    monkeypatch.setattr(langchain.chat_models, "init_chat_model", lambda name: broken)
    done = invoke("--path", str(tmp_path / "m"), "chat", "--model", "acme:x",
                  input="Hello\n", code=EXIT_FAILURE)
    assert "error: the chat model acme:x failed: RuntimeError: 401 invalid api key" \
        in done.stderr


def test_help_lists_demo_and_chat() -> None:
    listed = CliRunner().invoke(app, ["--help"]).stdout
    assert "demo" in listed and "chat" in listed


def test_demo_path_with_a_url_is_a_usage_error(tmp_path: Path) -> None:
    done = invoke("--url", "http://127.0.0.1:9", "demo", "--path", str(tmp_path), code=2)
    assert "not both" in done.stderr
    assert list(tmp_path.iterdir()) == []
