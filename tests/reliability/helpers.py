"""What the reliability suites share: opening a store, a saver and a memory on a folder or a
server with cheap fake embeddings, an fsync'd journal of acknowledged writes, a Chroma server
the test owns (killed and restarted on the same folder and port), and the quick/long scale.

Children (writer and worker processes) import this module too: it has no pytest imports.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx

from langmem_edge.testing import FakeEmbeddings, chroma_command

DIMS = 64
"""Vector size of the fake embeddings every suite uses (cheap, deterministic)."""

APP = ("rel",)
"""The AgentMemory namespace of every suite."""

LONG_ENV = "LANGMEM_EDGE_LONG"
"""Environment switch of the long variants (``1``), same as pytest's ``--long``."""

FRACTION_ENV = "LANGMEM_EDGE_LONG_FRACTION"
"""Scale of the long variants (``0.2``: a fifth of each long size; default 1), for a machine
without the time for the full runs."""

SERVER_STARTUP_SECONDS = 60.0
"""How long a server the test owns may take to answer its first heartbeat."""

HEARTBEAT_POLL_SECONDS = 0.2
"""Pause between two heartbeats while waiting for a server."""

CHILD_TIMEOUT_SECONDS = 600.0
"""Longest a worker child of a suite may run before the suite gives up on it."""

SCRATCH_ENV = "LANGMEM_EDGE_SCRATCH"
"""A folder under which :func:`scratch_folder` makes the stores of the suites that check no
durability (isolation, bad input, soak); unset: :data:`RAM_FOLDER` when it is there."""

RAM_FOLDER = Path("/dev/shm")
"""A RAM file system (Linux): Chroma's upserts are ~3x faster there than on this machine's
disk (its SQLite syncs), and nothing the isolation, bad-input or soak suites check depends on
the disk. The crash and server-fault suites keep their folders on disk."""

TESTS = Path(__file__).resolve().parents[1]
WORKTREE = TESTS.parent


def is_long(config: Any = None) -> bool:
    """Whether the long variants run: pytest's ``--long`` or ``LANGMEM_EDGE_LONG=1``."""
    if os.environ.get(LONG_ENV, "") not in ("", "0"):
        return True
    return bool(config is not None and config.getoption("--long", default=False))


def long_size(full: int) -> int:
    """A long variant's size ``full`` scaled by ``LANGMEM_EDGE_LONG_FRACTION`` (at least 1)."""
    return max(1, round(full * float(os.environ.get(FRACTION_ENV, "1"))))


def index_config(dims: int = DIMS) -> dict[str, Any]:
    """A store index over the ``text`` field with :class:`FakeEmbeddings`."""
    return {"dims": dims, "embed": FakeEmbeddings(dims), "fields": ["text"]}


def rss_mb() -> float:
    """This process's resident set size in MB (``/proc/self/status``; NaN without it)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def scratch_folder(prefix: str) -> str:
    """A new empty folder for a store that needs no disk: under ``LANGMEM_EDGE_SCRATCH``,
    else :data:`RAM_FOLDER` if it is a writable folder, else the system's temporary folder.
    Remove it with :func:`remove_folder` (a RAM folder holds memory until then)."""
    root = os.environ.get(SCRATCH_ENV) or (
        str(RAM_FOLDER) if RAM_FOLDER.is_dir() and os.access(RAM_FOLDER, os.W_OK) else None)
    return tempfile.mkdtemp(prefix=prefix, dir=root)


def remove_folder(folder: str | os.PathLike[str]) -> None:
    """Remove a folder of :func:`scratch_folder` and everything in it (gone already: fine)."""
    shutil.rmtree(folder, ignore_errors=True)


def is_url(location: str) -> bool:
    """Whether ``location`` names a server (``http://...``) rather than a folder."""
    return location.startswith(("http://", "https://"))


def open_store(location: str, *, prefix: str = "rel", **kwargs: Any) -> Any:
    """A ChromaStore on a folder or a server URL, indexed with fake embeddings."""
    from langmem_edge import ChromaStore

    kwargs.setdefault("index", index_config())
    if is_url(location):
        return ChromaStore.from_url(location, collection_prefix=prefix, **kwargs)
    return ChromaStore.from_path(location, collection_prefix=prefix, **kwargs)


def open_saver(location: str, *, prefix: str = "rel", **kwargs: Any) -> Any:
    """A ChromaSaver on a folder or a server URL."""
    from langmem_edge.checkpointers import ChromaSaver

    if is_url(location):
        return ChromaSaver.from_url(location, collection_prefix=prefix, **kwargs)
    return ChromaSaver.from_path(location, collection_prefix=prefix, **kwargs)


def open_memory(store: Any, **kwargs: Any) -> Any:
    """An AgentMemory (no model) under :data:`APP`."""
    from langmem_edge import AgentMemory

    return AgentMemory(store, namespace=APP, embeddings=FakeEmbeddings(DIMS), **kwargs)


def checkpoint_config(thread: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    """A checkpointer config for ``thread`` (the root namespace), optionally one checkpoint."""
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ""}
    if checkpoint_id is not None:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


def make_checkpoint(value: str) -> dict[str, Any]:
    """A fresh checkpoint whose channel ``v`` holds ``value``."""
    from langgraph.checkpoint.base import empty_checkpoint

    cp = dict(empty_checkpoint())
    cp["channel_values"] = {"v": value}
    cp["channel_versions"] = {"v": "1"}
    return cp


CHECKPOINT_WRITES = 2
"""Writes ``put_checkpoint`` stores with every checkpoint (one ``put_writes`` call)."""


def put_checkpoint(saver: Any, thread: str, value: str) -> str:
    """Put a checkpoint holding ``value`` and its :data:`CHECKPOINT_WRITES` writes; its id."""
    cp = make_checkpoint(value)
    conf = saver.put(checkpoint_config(thread), cp, {"source": "loop", "step": 1}, {"v": "1"})
    writes = [(f"w{i}", f"{value}/{i}") for i in range(CHECKPOINT_WRITES)]
    saver.put_writes(conf, writes, task_id="task")
    return str(conf["configurable"]["checkpoint_id"])


class Journal:
    """Acknowledged writes, one JSON line each, flushed and fsync'd before the next write
    starts: a SIGKILL can cut the line being written (the reader drops it), never one that
    was complete."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - kept open

    def append(self, entry: Mapping[str, Any]) -> None:
        """Record one acknowledged write."""
        self._fh.write(json.dumps(entry, sort_keys=True) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        """Close the file."""
        self._fh.close()

    @staticmethod
    def read(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
        """Every complete entry of the journal at ``path`` (a cut last line is dropped)."""
        p = Path(path)
        if not p.exists():
            return []
        out = []
        for line in p.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # the line a kill cut
        return out


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ChromaProcess:
    """A ``chroma run`` the test owns, on a fixed folder and port, so it can be SIGKILLed and
    started again on the same data. Stopped by its own PID only."""

    def __init__(self, folder: str | os.PathLike[str], *, port: int | None = None) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        """Start the server and wait for its heartbeat."""
        args = ["run", "--path", str(self.folder), "--host", "127.0.0.1",
                "--port", str(self.port)]
        log = open(self.folder / f"server-{self.starts}.log", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen([*chroma_command(), *args], stdout=log,
                                     stderr=subprocess.STDOUT)
        log.close()
        self.starts += 1
        deadline = time.monotonic() + SERVER_STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chroma run on {self.url} exited with {self.proc.returncode}")
            try:
                if httpx.get(f"{self.url}/api/v2/heartbeat", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(HEARTBEAT_POLL_SECONDS)
        raise RuntimeError(f"chroma run did not answer on {self.url} in "
                           f"{SERVER_STARTUP_SECONDS} s")

    def kill(self) -> None:
        """SIGKILL the server (no shutdown of any kind) and reap it."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        """Terminate the server politely, then reap it."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> ChromaProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a worker child: this checkout and ``tests/`` first on the path,
    Hugging Face offline, Chroma telemetry off."""
    env = dict(os.environ)
    paths = [str(WORKTREE), str(TESTS)]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("ANONYMIZED_TELEMETRY", "False")
    env.update(extra or {})
    return env


def spawn(module: str, *args: str, stderr: Any = None) -> subprocess.Popen[str]:
    """Start ``python -m <module> <args>`` (a module of this package) as a child, its
    stdout a pipe of text lines, its stderr to ``stderr`` (an open file; default inherited)."""
    return subprocess.Popen([sys.executable, "-m", module, *args], env=child_env(),
                            cwd=str(WORKTREE), stdout=subprocess.PIPE, stderr=stderr,
                            text=True)


def lines(stream: Any) -> Iterator[str]:
    """The lines of a child's text stream, stripped, until it closes."""
    for line in stream:
        yield line.rstrip("\n")
