"""The examples run as a user would run them, offline."""

from __future__ import annotations

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
    ).stdout
    assert "ui_theme: Prefers dark mode" in out
    assert "home: Lives in Singapore" in out
    assert "after reopening: Lives in Singapore" in out
