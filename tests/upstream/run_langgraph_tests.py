"""Run langgraph's own tests, unchanged, against ChromaSaver and ChromaStore.

    python tests/upstream/run_langgraph_tests.py [saver|store ...]

For each suite it fetches the source distribution of the *installed* version of the package
that holds the tests (``pip download --no-binary :all: --no-deps``, cached under
``$LANGMEM_EDGE_UPSTREAM_DIR``, default ``~/.cache/langmem-edge/upstream``), unpacks it and runs
pytest inside it with a plugin of ours that swaps our class in:

- ``saver``: langgraph's graph tests (interrupts, time travel, subgraph persistence; sync and
  async) on the ``memory`` checkpointer, which ``langgraph_saver_plugin`` makes a
  ``ChromaSaver``.
- ``store``: the store suites of ``langgraph-checkpoint-sqlite`` (``tests/test_store.py`` and
  ``tests/test_async_store.py``), where ``langgraph_store_plugin`` makes every ``SqliteStore``
  and ``AsyncSqliteStore`` a ``ChromaStore``.

``DESELECTED`` lists, with the reason, each upstream test left out. Exit status: 0 when every
suite passed. ``tests/test_upstream_langgraph.py`` runs this in the project's own suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent

SUITES: dict[str, dict[str, object]] = {
    "saver": {
        "package": "langgraph",
        "plugin": "langgraph_saver_plugin",
        "args": [
            "tests/test_time_travel.py", "tests/test_time_travel_async.py",
            "tests/test_subgraph_persistence.py", "tests/test_subgraph_persistence_async.py",
            "tests/test_interruption.py", "tests/test_interrupt_state.py",
            "tests/test_pregel.py", "tests/test_pregel_async.py",
            "-k", "memory and (interrupt or resume or subgraph or time_travel or replay or fork"
                  " or nested or checkpoint or state_history)",
        ],
        "env": {"NO_DOCKER": "true"},
    },
    "store": {
        "package": "langgraph-checkpoint-sqlite",
        "plugin": "langgraph_store_plugin",
        "args": ["tests/test_store.py", "tests/test_async_store.py"],
        "env": {},
    },
}

DESELECTED: dict[str, str] = {
    # Timing, not persistence: parallel tasks that sleep 10 and 20 ms are expected to finish
    # in that order; a ChromaSaver write takes tens of ms on this machine, and the order
    # varies from run to run (langgraph's in-memory saver writes in microseconds).
    "tests/test_pregel_async.py::test_imp_nested": "timing",
    "tests/test_pregel_async.py::test_stream_subgraphs_during_execution": "timing",
    "tests/test_pregel.py::test_stream_subgraphs_during_execution": "timing",
    # SQLite's own internals: its vector tables, its migration list, and its refusal of
    # filter keys that could inject SQL (InMemoryStore accepts any key, as ChromaStore does).
    "tests/test_store.py::test_vector_store_initialization": "sqlite internals",
    "tests/test_store.py::test_nonnull_migrations": "sqlite internals",
    "tests/test_store.py::test_sql_injection_vulnerability": "sqlite internals",
    # AsyncSqliteStore's own rule: an async-only store refuses sync calls made on its event
    # loop (InvalidStateError); ChromaStore serves sync and async callers alike.
    "tests/test_async_store.py::test_no_running_loop": "async-only store",
}


def cache_dir() -> Path:
    """Where source distributions are downloaded and unpacked."""
    default = Path.home() / ".cache" / "langmem-edge" / "upstream"
    return Path(os.environ.get("LANGMEM_EDGE_UPSTREAM_DIR", default))


def unpacked(package: str) -> Path:
    """The unpacked source distribution of the installed version of ``package``."""
    want = version(package)
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    stems = {f"{package}-{want}", f"{package.replace('-', '_')}-{want}"}
    for stem in stems:
        if (root / stem / "tests").is_dir():
            return root / stem
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
         "--no-binary", ":all:", "--no-deps", "-d", str(root), f"{package}=={want}"],
        check=True,
    )
    for stem in stems:
        archive = root / f"{stem}.tar.gz"
        if archive.exists():
            with tarfile.open(archive) as tar:
                tar.extractall(root, filter="data")
            return root / stem
    raise FileNotFoundError(f"no source distribution of {package}=={want} in {root}")


def run(name: str) -> int:
    """Run one suite; its pytest exit status."""
    suite = SUITES[name]
    source = unpacked(str(suite["package"]))
    env = {**os.environ, **suite["env"]}  # type: ignore[dict-item]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    deselect = [a for test in DESELECTED for a in ("--deselect", test)]
    cmd = [sys.executable, "-m", "pytest", "-p", str(suite["plugin"]), "-p", "no:cacheprovider",
           "-q", "-o", "addopts=", *suite["args"], *deselect]  # type: ignore[misc]
    print(f"[{name}] {source.name}: {' '.join(cmd[1:])}", flush=True)
    return subprocess.run(cmd, cwd=source, env=env).returncode


def main(argv: list[str]) -> int:
    names = argv or list(SUITES)
    codes = [run(name) for name in names]
    return max(codes, default=0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
