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
``InMemoryStore``'s ``_prepare_ops`` does for its ``batch``/``abatch``. :class:`planned`
writes such a pair once: the method returns its plan, the decorator gives it a sync face and
``.twin`` its async one, both with the one written-out signature.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Coroutine, Generator, Sequence
from dataclasses import dataclass, field
from typing import (
    Any,
    Concatenate,
    Generic,
    ParamSpec,
    TypeVar,
    get_args,
    get_origin,
    overload,
)

from langchain_core.runnables import Runnable
from langgraph.store.base import BaseStore, Op

from langmem_edge._twins import bound
from langmem_edge.errors import ConfigurationError
from langmem_edge.memory.core.models import ModelCall, RetryPolicy, arun_calls, run_calls
from langmem_edge.memory.core.stores import distinct_text_batches

__all__ = [
    "Call",
    "ModelStep",
    "Plan",
    "Step",
    "StoreStep",
    "batch",
    "invoke",
    "planned",
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
        s = _store(step, store)
        parts = distinct_text_batches(s, step.ops)
        if len(parts) > 1:
            for part in parts:
                s.batch(part)
            return [None] * len(step.ops)
        return s.batch(list(step.ops)) if step.ops else []
    if isinstance(step, ModelStep):
        return run_calls(step.calls, policy)
    return step.sync(*step.args, **step.kwargs)


async def _async(step: Step, store: BaseStore | None, policy: RetryPolicy,
                 gate: asyncio.Semaphore) -> Any:
    if isinstance(step, StoreStep):
        s = _store(step, store)
        parts = distinct_text_batches(s, step.ops)
        if len(parts) > 1:
            for part in parts:
                await s.abatch(part)
            return [None] * len(step.ops)
        return await s.abatch(list(step.ops)) if step.ops else []
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


S = TypeVar("S")
P = ParamSpec("P")


class planned(Generic[S, P, T]):  # noqa: N801 - used as a decorator, like ``property``
    """A method written once, as the plan it runs: ``obj.name(...)`` drives the plan with
    :func:`run_sync`, and the async twin, declared ``aname = name.twin`` in the class body,
    with :func:`run_async`. Both have the method's one written-out signature (and its return
    type without ``Plan[...]``), for type checkers, ``help()`` and ``inspect``::

        class ProfileWorking:
            @planned
            def get_context(self, thread: str) -> Plan[str]:
                \"\"\"The thread's working notes.\"\"\"
                return plan_get_notes(self._scope, thread)

            aget_context = get_context.twin
    """

    def __init__(self, build: Callable[Concatenate[S, P], Plan[T]]) -> None:
        self.build = build
        self.__doc__ = build.__doc__
        self.__name__ = build.__name__
        self.__signature__ = _unplanned(build)
        self.twin: _AsyncTwin[S, P, T] = _AsyncTwin(self)
        """The async twin: the same method, its steps awaited."""

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> planned[S, P, T]: ...
    @overload
    def __get__(self, obj: S, owner: type[Any]) -> Callable[P, T]: ...
    def __get__(self, obj: S | None, owner: type[Any]) -> Any:
        if obj is None:
            return self
        build = self.build

        def run(*args: P.args, **kwargs: P.kwargs) -> T:
            return run_sync(build(obj, *args, **kwargs))

        return bound(run, self.__name__, self.__doc__, self.__signature__)

    def __call__(self, obj: S, *args: P.args, **kwargs: P.kwargs) -> T:
        """Called on the class: ``Cls.name(obj, ...)``."""
        return run_sync(self.build(obj, *args, **kwargs))



class _AsyncTwin(Generic[S, P, T]):
    def __init__(self, sync: planned[S, P, T]) -> None:
        self.sync = sync
        self.__doc__ = f"Async :meth:`{sync.__name__}`."
        self.__signature__ = sync.__signature__

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.__name__ = name

    async def __call__(self, obj: S, *args: P.args, **kwargs: P.kwargs) -> T:
        """Called on the class: ``await Cls.aname(obj, ...)``."""
        return await run_async(self.sync.build(obj, *args, **kwargs))

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> _AsyncTwin[S, P, T]: ...
    @overload
    def __get__(self, obj: S, owner: type[Any]
                ) -> Callable[P, Coroutine[Any, Any, T]]: ...
    def __get__(self, obj: S | None, owner: type[Any]) -> Any:
        if obj is None:
            return self
        build = self.sync.build

        async def run(*args: P.args, **kwargs: P.kwargs) -> T:
            return await run_async(build(obj, *args, **kwargs))

        return bound(run, self.__name__, self.__doc__, self.__signature__)


def _unplanned(build: Callable[..., Any]) -> inspect.Signature:
    """``build``'s signature, its return annotation ``Plan[X]`` shown as ``X``."""
    sig = inspect.signature(build)
    ret = sig.return_annotation
    if isinstance(ret, str) and ret.startswith("Plan[") and ret.endswith("]"):
        return sig.replace(return_annotation=ret[len("Plan["):-1])
    if get_origin(ret) is Generator:
        return sig.replace(return_annotation=get_args(ret)[2])
    return sig
