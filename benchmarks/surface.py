"""Counts of the public surface (issue 38): what a newcomer has to learn.

    python benchmarks/surface.py

Prints, for the modules ``tests/test_reference.py`` treats as public: the names each
exports (``__all__``) and the distinct names over all of them; the public methods and
properties of ``Profile`` and of its tier attributes (``.working``, ``.episodic``,
``.reflective``, ``.documents``); the public functions and methods with the most parameters
(constructors of dataclasses and pydantic models, whose parameters are their fields, left
out); the async twins written out against those made by ``planned`` (one signature for both
faces); and the ``type: ignore`` comments in the package. No timing: the numbers are exact
and the same on any machine.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from test_reference import PUBLIC_MODULES  # noqa: E402


def public_members(cls: type) -> list[str]:
    return sorted(n for n in dir(cls) if not n.startswith("_"))


def is_record(cls: type) -> bool:
    """A dataclass or pydantic model: its fields are its parameters (options and results)."""
    return dataclasses.is_dataclass(cls) or hasattr(cls, "model_fields")


def ours(member: object) -> bool:
    return (getattr(member, "__module__", None) or "").startswith("langmem_edge")


def parameters(obj: object) -> int:
    try:
        sig = inspect.signature(obj)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0
    return sum(1 for p in sig.parameters.values() if p.name not in ("self", "cls"))


def main() -> None:
    distinct: set[tuple[int, str]] = set()
    callables: list[tuple[int, str]] = []
    total = 0
    print("## public names per module")
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        exported = list(module.__all__)
        total += len(exported)
        print(f"- {name}: {len(exported)}")
        for attr in exported:
            obj = getattr(module, attr)
            distinct.add((id(obj), attr))
            if inspect.isclass(obj):
                if not is_record(obj):
                    callables.append((parameters(obj), f"{name}.{attr}()"))
                for m in public_members(obj):
                    member = getattr(obj, m, None)
                    if callable(member) and ours(member):
                        callables.append((parameters(member), f"{attr}.{m}"))
            elif callable(obj):
                callables.append((parameters(obj), f"{name}.{attr}"))
    print(f"- entries: {total}, distinct names: {len({a for _, a in distinct})}")

    from langmem_edge.memory import Profile
    from langmem_edge.memory.documents import ProfileDocuments
    from langmem_edge.memory.episodic import ProfileEpisodic
    from langmem_edge.memory.reflective import ProfileReflective
    from langmem_edge.memory.working import ProfileWorking

    print("\n## Profile")
    for cls in (Profile, ProfileWorking, ProfileEpisodic, ProfileReflective, ProfileDocuments):
        print(f"- {cls.__name__}: {len(public_members(cls))} public methods and properties")

    print("\n## longest public signatures")
    for count, where in sorted(set(callables), reverse=True)[:8]:
        print(f"- {where}: {count} parameters")

    package = [p.read_text() for p in (ROOT / "langmem_edge").rglob("*.py")]
    written = sum(len(re.findall(r"^\s+async def a[a-z_]+\(", t, re.M)) for t in package)
    twins = sum(len(re.findall(r"^    a[a-z_]+ = (?:[a-z_]+\.twin|threaded\([a-z_]+\))$", t, re.M))
                for t in package)
    print(f"\n## async twins: {written} written out (`async def a...`), {twins} from `planned` "
          "or `threaded`")

    ignores = subprocess.run(
        ["grep", "-rn", "type: ignore", str(ROOT / "langmem_edge")],
        capture_output=True, text=True,
    ).stdout.splitlines()
    print(f"\n## `type: ignore` in langmem_edge/: {len(ignores)}")


if __name__ == "__main__":
    main()
