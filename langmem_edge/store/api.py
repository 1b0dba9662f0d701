"""``BaseStore``'s public methods as ``ChromaStore`` exposes them: unchanged, except that a bad
namespace raises :class:`langmem_edge.errors.InvalidNamespaceError` (which has a ``.code``
and subclasses langgraph's ``InvalidNamespaceError``, so ``except`` clauses written for
langgraph keep working). langgraph checks labels in these methods before ``batch`` runs, so
each is wrapped once here, keeping langgraph's own signature and docstring."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from langgraph.store.base import BaseStore

from langmem_edge.store import layout

__all__ = ["NamespaceErrorsMixin"]

_NAMESPACE_ARGUMENT = {
    "get": "namespace", "put": "namespace", "delete": "namespace",
    "search": "namespace_prefix", "list_namespaces": None,
}
"""The ``BaseStore`` methods (and their ``a*`` twins) whose namespace errors are translated,
and the argument holding the namespace (``None``: ``prefix`` and ``suffix``, both optional)."""

_MISSING = object()


def _namespaces(argument: str | None, args: tuple[Any, ...], kwargs: dict[str, Any]
                ) -> tuple[tuple[Any, ...], bool]:
    """The namespaces a call names, and whether ``None`` is allowed for them."""
    if argument is None:
        return (kwargs.get("prefix"), kwargs.get("suffix")), True
    found = args[0] if args else kwargs.get(argument, _MISSING)
    return ((() if found is _MISSING else (found,)), False)


def _translating(name: str, argument: str | None) -> Callable[..., Any]:
    """``BaseStore.<name>`` with langgraph's namespace errors raised as ours."""
    base = getattr(BaseStore, name)
    if inspect.iscoroutinefunction(base):
        @functools.wraps(base)
        async def amethod(self: BaseStore, *args: Any, **kwargs: Any) -> Any:
            namespaces, optional = _namespaces(argument, args, kwargs)
            with layout.namespace_errors(*namespaces, optional=optional):
                return await base(self, *args, **kwargs)

        return amethod

    @functools.wraps(base)
    def method(self: BaseStore, *args: Any, **kwargs: Any) -> Any:
        namespaces, optional = _namespaces(argument, args, kwargs)
        with layout.namespace_errors(*namespaces, optional=optional):
            return base(self, *args, **kwargs)

    return method


class NamespaceErrorsMixin:
    """Put first in ``ChromaStore``'s bases, before ``BaseStore``: ``get``, ``put``,
    ``delete``, ``search``, ``list_namespaces`` and their ``a*`` twins, each ``BaseStore``'s
    own with its namespace errors raised as ours."""


for _name, _argument in _NAMESPACE_ARGUMENT.items():
    for _method in (_name, f"a{_name}"):
        setattr(NamespaceErrorsMixin, _method, _translating(_method, _argument))
