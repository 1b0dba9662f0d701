"""The README's first example runs as written (offline, with the real default model)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.slow
def test_readme_example_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    block = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)[0]
    exec(compile(block.replace('"./memory"', repr(str(tmp_path / "memory"))), "README", "exec"))
    out = capsys.readouterr().out
    assert out.startswith("ui_theme ")
    assert "'Lives in Singapore'" in out


def test_the_first_command_runs_the_demo() -> None:
    """The quick start's first command installs and runs ``langmem-edge demo``; the second
    installs the test extra and runs the tests. Neither installs torch first: nothing needs it
    (``tests/test_embeddings.py`` checks the default model against the torch model's vectors
    without it)."""
    from typer.testing import CliRunner

    from langmem_edge.cli import app

    block = re.findall(r"```bash\n(.*?)```", README.read_text(), re.S)[0]
    commands = [line for line in block.splitlines() if line and not line.startswith("#")]
    assert commands == [
        "pip install -e . && langmem-edge demo",
        'pip install -e ".[test]" && python -m pytest',
    ]
    assert CliRunner().invoke(app, ["demo", "--help"]).exit_code == 0
