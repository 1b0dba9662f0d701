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
