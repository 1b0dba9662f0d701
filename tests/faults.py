"""Fault injection for crash-safety tests of anything that writes to Chroma through a caller.

``ChromaStore`` and ``ChromaSaver`` send every Chroma call through one object,
``self._call`` (a :class:`langmem_edge._chroma.ChromaCaller`), called as
``caller(fn, *args, **kwargs)``. :class:`FaultyCaller` wraps that object and makes the Nth
*write* call (``upsert``, ``add``, ``update``, ``delete``; 1-based) fail before it reaches
Chroma, either by raising :class:`InjectedFault` (the in-process variant) or by killing the
process with ``os._exit(77)`` (the crash variant: no ``finally`` blocks, no cleanup).

The usual loop::

    counter = FaultyCaller(saver._call)              # fail_at=None: only counts
    saver._call = counter
    operation(saver)
    total = len(counter.calls)                       # write calls the operation makes

    for n in range(1, total + 1):
        saver = fresh_saver_with_the_same_setup()
        saver._call = FaultyCaller(saver._call, fail_at=n)
        with pytest.raises(InjectedFault):
            operation(saver)
        check_state(reopen_the_folder())             # calls 1..n-1 happened, n.. did not

For the kill variant, write the setup and the operation as a Python snippet, run it with
:func:`run_child` (the snippet installs ``FaultyCaller(..., fail_at=n, mode="exit")``), assert
the exit code is :data:`EXIT_CODE`, and open the folder afresh in the parent.

The caller is replaced on the instance only (``obj._call = FaultyCaller(obj._call, ...)``),
so nothing global is patched and other objects keep their own caller.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

WRITE_METHODS = frozenset({"upsert", "add", "update", "delete"})
"""Names of the Chroma collection methods that change data."""

EXIT_CODE = 77
"""Exit status of a child process killed by ``FaultyCaller(mode="exit")``."""

WORKTREE = Path(__file__).resolve().parents[1]
"""The repository root this test tree belongs to (put on a child's ``PYTHONPATH``)."""

FaultMode = Literal["raise", "exit"]


class InjectedFault(Exception):
    """Raised by :class:`FaultyCaller` in place of the write call it was told to fail."""


class FaultyCaller:
    """A caller ``inner(fn, *args, **kwargs)`` whose Nth write call fails before it runs.

    Args:
        inner: The wrapped caller (e.g. ``saver._call``); every call that does not fail is
            passed through to it unchanged (retries, error translation and all).
        fail_at: 1-based number of the write call to fail; ``None`` fails nothing and only
            counts (to learn how many write calls an operation makes).
        mode: ``"raise"``: raise :class:`InjectedFault`; ``"exit"``: ``os._exit(77)``, the
            closest thing to a power cut a test can do.

    Attributes:
        calls: The method names (``fn.__name__``) of the write calls seen so far, the failing
            one included; reads are not recorded.
        fired: Whether the fault was injected.
    """

    def __init__(
        self,
        inner: Callable[..., Any],
        *,
        fail_at: int | None = None,
        mode: FaultMode = "raise",
    ) -> None:
        if fail_at is not None and fail_at < 1:
            raise ValueError(f"fail_at is 1-based, got {fail_at!r}")
        if mode not in ("raise", "exit"):
            raise ValueError(f"mode must be 'raise' or 'exit', got {mode!r}")
        self.inner = inner
        self.fail_at = fail_at
        self.mode: FaultMode = mode
        self.calls: list[str] = []
        self.fired = False

    def __call__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``inner(fn, ...)``, unless this is the write call to fail."""
        name = getattr(fn, "__name__", "")
        if name in WRITE_METHODS:
            self.calls.append(name)
            if self.fail_at is not None and len(self.calls) == self.fail_at:
                self.fired = True
                if self.mode == "exit":
                    sys.stdout.flush()
                    sys.stderr.flush()
                    os._exit(EXIT_CODE)
                raise InjectedFault(f"injected fault at write call {self.fail_at} ({name})")
        return self.inner(fn, *args, **kwargs)

    @property
    def count(self) -> int:
        """Number of write calls seen."""
        return len(self.calls)


@dataclass
class ChildResult:
    """What :func:`run_child` saw: the exit status and the captured output."""

    returncode: int
    stdout: str
    stderr: str


def run_child(
    code: str,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 120.0,
    cwd: str | os.PathLike[str] | None = None,
) -> ChildResult:
    """Run a Python snippet in a child interpreter (this one, ``sys.executable``).

    ``code`` is dedented first, so it can be written indented in a test. The child gets the
    worktree first on ``PYTHONPATH`` (it imports this checkout's ``langmem_edge`` and can
    ``from faults import FaultyCaller``, the tests folder is on the path too), Hugging Face
    offline and Chroma telemetry off, plus ``env``. Pass values in through ``env`` (read them
    with ``os.environ``) rather than formatting them into the code.
    """
    child_env = dict(os.environ)
    paths = [str(WORKTREE), str(WORKTREE / "tests")]
    if child_env.get("PYTHONPATH"):
        paths.append(child_env["PYTHONPATH"])
    child_env["PYTHONPATH"] = os.pathsep.join(paths)
    child_env.setdefault("HF_HUB_OFFLINE", "1")
    child_env.setdefault("ANONYMIZED_TELEMETRY", "False")
    child_env.update(env or {})
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=child_env,
        cwd=str(cwd or WORKTREE),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return ChildResult(done.returncode, done.stdout, done.stderr)
