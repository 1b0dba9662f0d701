"""Shared fixtures: a real Chroma server for the session, fake embeddings, store backends.

The server is started once per test session (``chroma run`` on 127.0.0.1, a free port, a
temporary folder) and stopped by its PID at the end. Set ``LANGMEM_EDGE_TEST_SERVER`` to a URL
to use a server you started yourself instead.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _chroma_executable() -> list[str]:
    exe = shutil.which("chroma")
    if exe:
        return [exe]
    return [sys.executable, "-m", "chromadb.cli.cli"]


@pytest.fixture(scope="session")
def chroma_server_url() -> Iterator[str]:
    """URL of a Chroma server that lives for the whole test session."""
    given = os.environ.get("LANGMEM_EDGE_TEST_SERVER")
    if given:
        yield given
        return
    port = _free_port()
    folder = tempfile.mkdtemp(prefix="langmem-edge-chroma-")
    log = open(Path(folder) / "server.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [
            *_chroma_executable(),
            "run",
            "--path",
            folder,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"chroma run exited with {proc.returncode}: "
                    + (Path(folder) / "server.log").read_text(errors="replace")[-2000:]
                )
            try:
                if httpx.get(f"{url}/api/v2/heartbeat", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("chroma run did not answer within 60 s")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(folder, ignore_errors=True)
