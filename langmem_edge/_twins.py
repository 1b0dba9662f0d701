""":class:`threaded`: the async twin of a blocking method, written as one line.

``ChromaStore`` and ``ChromaSaver`` call Chroma, whose client blocks; their async methods run
the sync ones on a worker thread (langchain's ``run_in_executor``, as langgraph's own stores
do). ``aname = threaded(name)`` in the class body makes that twin with the sync method's one
written-out signature, for type checkers, ``help()`` and ``inspect``. (Memory's methods, which
are plans, have :class:`langmem_edge.memory.core.plans.planned` instead.)
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, cast, overload

from langchain_core.runnables.config import run_in_executor

__all__ = ["bound", "threaded"]

S = TypeVar("S")
P = ParamSpec("P")
T = TypeVar("T")


class threaded(Generic[S, P, T]):  # noqa: N801 - used like ``property``
    """``aname = threaded(name)``: ``await obj.aname(...)`` runs ``obj.name(...)`` on a worker
    thread."""

    def __init__(self, sync: Callable[Concatenate[S, P], T]) -> None:
        self.sync = sync
        self.__name__ = f"a{sync.__name__}"
        self.__doc__ = f"Async :meth:`{sync.__name__}` (on a worker thread)."
        self.__signature__ = inspect.signature(sync)

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.__name__ = name

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> threaded[S, P, T]: ...
    @overload
    def __get__(self, obj: S, owner: type[Any]) -> Callable[P, Coroutine[Any, Any, T]]: ...
    def __get__(self, obj: S | None, owner: type[Any]) -> Any:
        if obj is None:
            return self
        sync = self.sync

        async def run(*args: P.args, **kwargs: P.kwargs) -> T:
            return await run_in_executor(None, lambda: sync(obj, *args, **kwargs))

        return bound(run, self.__name__, self.__doc__, self.__signature__)

    async def __call__(self, obj: S, *args: P.args, **kwargs: P.kwargs) -> T:
        """Called on the class: ``await Cls.aname(obj, ...)``."""
        return await run_in_executor(None, lambda: self.sync(obj, *args, **kwargs))


def bound(run: Callable[..., Any], name: str, doc: str | None,
          signature: inspect.Signature) -> Callable[..., Any]:
    """``run`` dressed as a bound method: ``name``, ``doc``, and ``signature`` without its
    first parameter (``self``)."""
    dressed = cast(Any, run)
    dressed.__name__ = dressed.__qualname__ = name
    dressed.__doc__ = doc
    dressed.__signature__ = signature.replace(
        parameters=list(signature.parameters.values())[1:])
    return run
