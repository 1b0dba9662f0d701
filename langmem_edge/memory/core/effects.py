"""Plans and their two shells: one body for every sync/async pair.

Every memory operation is written once, as a *plan*: a generator that yields :class:`Call`
effects (a store batch, a model invocation, ...) and receives each call's result (or has its
exception thrown in). :func:`run_sync` and :func:`run_async` are the only places that
actually call out, with the sync or the async half of each effect. So ``Profile.recall`` and
``Profile.arecall`` share one body, as ``InMemoryStore``'s ``_prepare_ops`` does for its
``batch``/``abatch``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langgraph.store.base import BaseStore, Op

__all__ = ["Call", "Plan", "batch", "invoke", "run_async", "run_sync"]

T = TypeVar("T")


@dataclass(frozen=True)
class Call:
    """One effect: call ``sync(*args, **kwargs)``, or await ``async_(*args, **kwargs)``."""

    sync: Callable[..., Any]
    async_: Callable[..., Awaitable[Any]]
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


Plan = Generator[Call, Any, T]
"""A plan returning ``T``."""


def batch(store: BaseStore, ops: Sequence[Op]) -> Call:
    """The effect of one ``store.batch(ops)`` / ``store.abatch(ops)``."""
    return Call(store.batch, store.abatch, (list(ops),))


def invoke(runnable: Any, input: Any) -> Call:
    """The effect of ``runnable.invoke(input)`` / ``runnable.ainvoke(input)``."""
    return Call(runnable.invoke, runnable.ainvoke, (input,))


def run_sync(plan: Generator[Any, Any, T], bind: Callable[[Any], Call] | None = None) -> T:
    """Drive a plan, calling each effect's sync half. ``bind`` turns what the plan yields
    into a :class:`Call` (plans of other step kinds: ``plans.py``)."""
    result: Any = None
    error: BaseException | None = None
    while True:
        try:
            call = plan.throw(error) if error is not None else plan.send(result)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        if bind is not None:
            call = bind(call)
        try:
            result, error = call.sync(*call.args, **call.kwargs), None
        except Exception as e:
            result, error = None, e


async def run_async(plan: Generator[Any, Any, T],
                    bind: Callable[[Any], Call] | None = None) -> T:
    """Drive a plan, awaiting each effect's async half (``bind`` as for :func:`run_sync`)."""
    result: Any = None
    error: BaseException | None = None
    while True:
        try:
            call = plan.throw(error) if error is not None else plan.send(result)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        if bind is not None:
            call = bind(call)
        try:
            result, error = await call.async_(*call.args, **call.kwargs), None
        except Exception as e:
            result, error = None, e
