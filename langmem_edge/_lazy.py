"""Lazy exports for a package ``__init__``: a name is imported from its module on first use,
so ``import langmem_edge`` (or ``langmem_edge.graphs``) loads neither chromadb, langchain nor a
model until code asks for something that needs them."""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping, Sequence
from importlib import import_module
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str], namespace: MutableMapping[str, Any],
                 public: Sequence[str]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``(__getattr__, __dir__)`` pair of ``package``: ``exports`` maps each lazy name to
    the module that defines it; a name is cached in ``namespace`` (the package's
    ``globals()``) once imported; ``public`` is its ``__all__``."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(public))

    return __getattr__, __dir__
