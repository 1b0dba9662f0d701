"""Plans: the tier's logic written once, driven synchronously or asynchronously.

Every operation of the episodic tier that touches the store or a model is a generator (a
*plan*) that yields steps and receives their results:

- :class:`StoreStep`: langgraph store ops (``GetOp``/``PutOp``/``SearchOp``), run in one
  ``store.batch`` (sync) or ``store.abatch`` (async); the plan receives the batch results;
- :class:`ModelStep`: model calls, run with ``invoke`` in a thread pool (sync) or ``ainvoke``
  under a semaphore (async), at most ``RetryPolicy.concurrency`` at once; the plan receives
  the outputs in order.

:func:`run_plan` and :func:`arun_plan` turn each step into an :class:`~.effects.Call` and hand
the plan to :mod:`.effects`' two drivers, the only code in the package that differs between
sync and async.

Each model call is retried with tenacity while its error is transient (:func:`is_transient`:
timeouts, connection errors, HTTP 408/409/429/5xx, provider errors named like rate-limit,
overloaded or unavailable, and unparseable or missing structured output), with exponential
backoff; any other error, or a transient one outliving the attempts, raises
:class:`~langmem_edge.errors.ExtractionError` with the original as ``__cause__``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Generator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from langchain_core.exceptions import OutputParserException
from langchain_core.runnables import Runnable
from langgraph.store.base import BaseStore, Op
from pydantic import ValidationError
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from langmem_edge.errors import ConfigurationError, ExtractionError
from langmem_edge.memory.config import EpisodicConfig
from langmem_edge.memory.core import effects

__all__ = ["ModelCall", "ModelStep", "Plan", "RetryPolicy", "StoreStep", "arun_plan",
           "is_transient", "run_plan"]

logger = logging.getLogger(__name__)

T = TypeVar("T")




@dataclass(frozen=True)
class StoreStep:
    """Run these store ops in one ``batch``; the plan receives the batch's results."""

    ops: tuple[Op, ...]


@dataclass(frozen=True)
class ModelCall:
    """One model call: ``runnable.invoke(input)``; ``structured`` means None is a failure."""

    runnable: Runnable[Any, Any]
    input: Any
    label: str
    structured: bool = True


@dataclass(frozen=True)
class ModelStep:
    """Run these model calls (concurrently, retried); the plan receives their outputs."""

    calls: tuple[ModelCall, ...]


Plan = Generator[StoreStep | ModelStep, list[Any], T]
"""A plan: yields steps, receives each step's results, returns its outcome."""


@dataclass(frozen=True)
class RetryPolicy:
    """How model calls run: attempts and backoff (tenacity), and how many at once."""

    attempts: int = 3
    wait_initial: float = 0.5
    wait_max: float = 8.0
    concurrency: int = 4

    @classmethod
    def from_config(cls, config: EpisodicConfig) -> RetryPolicy:
        """The policy an :class:`~langmem_edge.memory.config.EpisodicConfig` describes."""
        return cls(
            attempts=config.max_attempts,
            wait_initial=config.retry_wait_initial,
            wait_max=config.retry_wait_max,
            concurrency=config.max_concurrency,
        )


class _NoStructuredOutput(Exception):
    """The model answered without the structured output asked for."""


_TRANSIENT_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
_TRANSIENT_NAMES = ("ratelimit", "timeout", "overloaded", "unavailable", "apiconnection",
                    "internalserver", "tryagain")


def is_transient(exc: BaseException) -> bool:
    """Whether a model call that raised ``exc`` is worth retrying (see the module docstring)."""
    if isinstance(exc, TimeoutError | ConnectionError | asyncio.TimeoutError):
        return True
    if isinstance(exc, OutputParserException | ValidationError | _NoStructuredOutput):
        return True
    status = getattr(exc, "status_code", None)
    if status is None:
        status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(status, int) and status in _TRANSIENT_STATUS:
        return True
    name = type(exc).__name__.lower()
    return any(part in name for part in _TRANSIENT_NAMES)


def _log_retry(state: RetryCallState) -> None:
    exc = state.outcome.exception() if state.outcome else None
    logger.warning("model call failed (attempt %d), retrying: %r", state.attempt_number, exc)


def _retry_kwargs(policy: RetryPolicy) -> dict[str, Any]:
    return {
        "stop": stop_after_attempt(max(1, policy.attempts)),
        "wait": wait_exponential(multiplier=policy.wait_initial, max=policy.wait_max),
        "retry": retry_if_exception(is_transient),
        "reraise": True,
        "before_sleep": _log_retry,
    }


def _checked(call: ModelCall, output: Any) -> Any:
    if call.structured and output is None:
        raise _NoStructuredOutput(f"{call.label}: the model returned no structured output")
    return output


def _fail(call: ModelCall, exc: Exception) -> ExtractionError:
    return ExtractionError(f"model call {call.label!r} failed: {type(exc).__name__}: {exc}")


def _invoke(call: ModelCall, policy: RetryPolicy) -> Any:
    try:
        for attempt in Retrying(**_retry_kwargs(policy)):
            with attempt:
                return _checked(call, call.runnable.invoke(call.input))
    except ExtractionError:
        raise
    except Exception as e:
        raise _fail(call, e) from e
    raise AssertionError("unreachable")  # pragma: no cover


async def _ainvoke(call: ModelCall, policy: RetryPolicy, gate: asyncio.Semaphore) -> Any:
    async with gate:
        try:
            async for attempt in AsyncRetrying(**_retry_kwargs(policy)):
                with attempt:
                    return _checked(call, await call.runnable.ainvoke(call.input))
        except ExtractionError:
            raise
        except Exception as e:
            raise _fail(call, e) from e
    raise AssertionError("unreachable")  # pragma: no cover


def _require(store: BaseStore | None) -> BaseStore:
    if store is None:
        raise ConfigurationError("this plan needs a store")
    return store


def _models(calls: tuple[ModelCall, ...], policy: RetryPolicy, gate: Any) -> list[Any]:
    """Run model calls in order, or in a thread pool when several may run at once.
    (``gate`` is the async half's semaphore: a ``Call`` gives both halves the same args.)"""
    if len(calls) <= 1 or policy.concurrency <= 1:
        return [_invoke(call, policy) for call in calls]
    with ThreadPoolExecutor(max_workers=min(policy.concurrency, len(calls))) as pool:
        return list(pool.map(lambda c: _invoke(c, policy), calls))


async def _amodels(calls: tuple[ModelCall, ...], policy: RetryPolicy,
                   gate: asyncio.Semaphore) -> list[Any]:
    return list(await asyncio.gather(*(_ainvoke(c, policy, gate) for c in calls)))


def _no_ops() -> list[Any]:
    return []


async def _ano_ops() -> list[Any]:
    return []


def _binder(store: BaseStore | None, policy: RetryPolicy,
            gate: asyncio.Semaphore | None) -> Callable[[StoreStep | ModelStep], effects.Call]:
    """What turns each step into an :class:`~langmem_edge.memory.effects.Call`, so the one
    pair of drivers in ``effects`` runs both kinds of plan."""

    def bind(step: StoreStep | ModelStep) -> effects.Call:
        if isinstance(step, ModelStep):
            return effects.Call(_models, _amodels, (step.calls, policy, gate))
        if not step.ops:
            return effects.Call(_no_ops, _ano_ops)
        s = _require(store)
        return effects.Call(s.batch, s.abatch, (list(step.ops),))

    return bind


def run_plan(plan: Plan[T], *, store: BaseStore | None, policy: RetryPolicy) -> T:
    """Drive a plan synchronously: store steps via ``store.batch``, model calls in threads."""
    return effects.run_sync(plan, _binder(store, policy, None))


async def arun_plan(plan: Plan[T], *, store: BaseStore | None, policy: RetryPolicy) -> T:
    """Drive a plan asynchronously: ``store.abatch`` and ``ainvoke`` (bounded concurrency)."""
    gate = asyncio.Semaphore(max(1, policy.concurrency))
    return await effects.run_async(plan, _binder(store, policy, gate))
