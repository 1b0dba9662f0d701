"""Plans: every operation written once, driven synchronously or asynchronously.

Every memory operation that touches the store or a model is a generator (a *plan*) that
yields steps and receives their results (or has their exception thrown in). One vocabulary
of steps serves every tier:

- :class:`StoreStep`: langgraph store ops (``GetOp``/``PutOp``/``SearchOp``/...), run in one
  ``store.batch`` (sync) or ``store.abatch`` (async); the plan receives the batch results.
  The step names its store (:func:`batch`), or leaves it to the driver's ``store``.
- :class:`ModelStep`: model calls, retried and run concurrently by
  :mod:`langmem_edge.memory.core.models`; the plan receives their outputs in order.
- :class:`Call`: any other effect with a sync and an async half (``nearest_keys``,
  ``delete_prefix``, embeddings, another tier's public method).

:func:`run_sync` and :func:`run_async` are the only code in the package that differs between
sync and async, so ``Profile.recall`` and ``Profile.arecall`` share one body, as
``InMemoryStore``'s ``_prepare_ops`` does for its ``batch``/``abatch``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langchain_core.runnables import Runnable
from langgraph.store.base import BaseStore, Op

from langmem_edge.errors import ConfigurationError
from langmem_edge.memory.core.models import ModelCall, RetryPolicy, arun_calls, run_calls

__all__ = [
    "Call",
    "ModelStep",
    "Plan",
    "Step",
    "StoreStep",
    "batch",
    "invoke",
    "ready",
    "run_async",
    "run_sync",
]

T = TypeVar("T")

DEFAULT_POLICY = RetryPolicy()
"""Retries and concurrency of model calls when the driver is given no policy."""


@dataclass(frozen=True)
class Call:
    """One effect: call ``sync(*args, **kwargs)``, or await ``async_(*args, **kwargs)``."""

    sync: Callable[..., Any]
    async_: Callable[..., Awaitable[Any]]
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StoreStep:
    """Run these store ops in one ``batch``; the plan receives the batch's results."""

    ops: tuple[Op, ...]
    store: BaseStore | None = None
    """The store to run them on; ``None``: the driver's."""


@dataclass(frozen=True)
class ModelStep:
    """Run these model calls (concurrently, retried); the plan receives their outputs."""

    calls: tuple[ModelCall, ...]


Step = StoreStep | ModelStep | Call
"""What a plan yields."""

Plan = Generator[Step, Any, T]
"""A plan returning ``T``: yields steps, receives each step's result."""


def ready(value: T) -> Plan[T]:
    """A plan of no step that returns ``value`` (where a plan is asked for and the answer is
    at hand)."""
    return value
    yield  # pragma: no cover - makes this a generator


def batch(store: BaseStore, ops: Sequence[Op]) -> StoreStep:
    """The step of one ``store.batch(ops)`` / ``store.abatch(ops)``."""
    return StoreStep(tuple(ops), store)


def invoke(runnable: Runnable[Any, Any], input: Any, label: str, *,
           structured: bool = False) -> ModelStep:
    """The step of one model call (retried like every other); the plan receives a list of one
    output."""
    return ModelStep((ModelCall(runnable, input, label, structured=structured),))


def _store(step: StoreStep, store: BaseStore | None) -> BaseStore:
    s = step.store if step.store is not None else store
    if s is None:
        raise ConfigurationError("this plan needs a store")
    return s


def _sync(step: Step, store: BaseStore | None, policy: RetryPolicy) -> Any:
    if isinstance(step, StoreStep):
        return _store(step, store).batch(list(step.ops)) if step.ops else []
    if isinstance(step, ModelStep):
        return run_calls(step.calls, policy)
    return step.sync(*step.args, **step.kwargs)


async def _async(step: Step, store: BaseStore | None, policy: RetryPolicy,
                 gate: asyncio.Semaphore) -> Any:
    if isinstance(step, StoreStep):
        return await _store(step, store).abatch(list(step.ops)) if step.ops else []
    if isinstance(step, ModelStep):
        return await arun_calls(step.calls, policy, gate)
    return await step.async_(*step.args, **step.kwargs)


def run_sync(plan: Plan[T], *, store: BaseStore | None = None,
             policy: RetryPolicy = DEFAULT_POLICY) -> T:
    """Drive a plan, running each step's sync half (model calls in threads)."""
    result: Any = None
    error: Exception | None = None
    while True:
        try:
            step = plan.throw(error) if error is not None else plan.send(result)
        except StopIteration as stop:
            value: T = stop.value
            return value
        try:
            result, error = _sync(step, store, policy), None
        except Exception as e:
            result, error = None, e


async def run_async(plan: Plan[T], *, store: BaseStore | None = None,
                    policy: RetryPolicy = DEFAULT_POLICY) -> T:
    """Drive a plan, awaiting each step's async half (model calls at most
    ``policy.concurrency`` at once)."""
    gate = asyncio.Semaphore(max(1, policy.concurrency))
    result: Any = None
    error: Exception | None = None
    while True:
        try:
            step = plan.throw(error) if error is not None else plan.send(result)
        except StopIteration as stop:
            value: T = stop.value
            return value
        try:
            result, error = await _async(step, store, policy, gate), None
        except Exception as e:
            result, error = None, e
