"""Model calls: one helper for every call to a chat model, with retries and structured output.

Every model call of the package (extraction, checks, summaries, verification, HyDE, answers)
is a :class:`ModelCall` in a :class:`~langmem_edge.memory.core.plans.ModelStep`, run by the
plan drivers through :func:`run_calls` / :func:`arun_calls`:

- each call is retried with tenacity while its error is transient (:func:`is_transient`:
  timeouts, connection errors, HTTP 408/409/429/5xx, provider errors named like rate-limit,
  overloaded or unavailable, and unparseable or missing structured output), with
  exponential backoff (:class:`RetryPolicy`);
- any other error, or a transient one outliving the attempts, raises
  :class:`~langmem_edge.errors.ExtractionError` with the original as ``__cause__``; callers
  with a fallback (verification's model-free rule, recall's answer) catch it and log; a
  call made with ``unparsed_ok`` whose output still cannot be parsed after the attempts
  returns :data:`UNPARSED` instead (extraction then falls back to the rules for that unit);
- several calls of one step run at once (a thread pool, or ``asyncio.gather`` under a
  semaphore), at most ``RetryPolicy.concurrency``.

Structured output has one path, :func:`structured_runnable`, taken by every call that wants
a schema: the model's native ``with_structured_output(schema, include_raw=True)`` where the
model has it (a reply in plain text is then parsed as JSON); otherwise (the model raises
``NotImplementedError``, as ``ChatHuggingFace`` does) the schema's JSON format instructions
(``PydanticOutputParser.get_format_instructions()``) are appended to the prompt and the reply
is parsed as JSON. Either way an unparseable reply is a transient error, retried (unless it
repeats the previous attempt's reply word for word: a deterministic model would say it again);
so is a reply in text whose JSON object has keys but none of the schema's fields (a small
model's echo of the format instructions' schema, which would otherwise pass as an empty
answer).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.output_parsers import JsonOutputParser, PydanticOutputParser
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import BaseModel, ValidationError
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from langmem_edge.errors import ExtractionError
from langmem_edge.memory.config import EpisodicConfig

__all__ = [
    "ModelCall",
    "RetryPolicy",
    "UNPARSED",
    "arun_calls",
    "is_transient",
    "message_text",
    "run_calls",
    "structured_runnable",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelCall:
    """One model call: ``runnable.invoke(input)``; ``structured`` means None is a failure;
    ``unparsed_ok`` means output that still cannot be parsed after the attempts gives
    :data:`UNPARSED` instead of raising (other errors still raise)."""

    runnable: Runnable[Any, Any]
    input: Any
    label: str
    structured: bool = True
    unparsed_ok: bool = False


class _Unparsed:
    def __repr__(self) -> str:
        return "UNPARSED"


UNPARSED: Any = _Unparsed()
"""The output of a ``ModelCall(unparsed_ok=True)`` whose reply could not be parsed."""


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


def message_text(message: Any) -> str:
    """The text of a model reply (an ``AIMessage``, content blocks, or anything else)."""
    content = getattr(message, "content", message)
    if isinstance(content, list):
        return " ".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return str(content)


def _parse_text(message: Any, schema: type[BaseModel]) -> BaseModel:
    """``schema`` from a reply in text (JSON, fenced or not). A JSON object with keys, none of
    them a field of the schema, is no answer (``{}`` is one: every field's default): a small
    model echoes the format instructions' schema (``{"properties": ...}``), which would
    otherwise validate as an empty answer when every field has a default, and the unit would
    be lost instead of retried and given to the rules."""
    text = message_text(message)
    found = JsonOutputParser().parse(text)
    names = {f.alias or name for name, f in schema.model_fields.items()} | set(
        schema.model_fields)
    if isinstance(found, dict) and found and names and not names & found.keys():
        raise OutputParserException(
            f"the reply's JSON names none of {schema.__name__}'s fields "
            f"({', '.join(sorted(schema.model_fields))}): keys {sorted(found)[:5]}",
            llm_output=text)
    return PydanticOutputParser(pydantic_object=schema).parse(text)


def _with_instructions(prompt: Any, instructions: str) -> Any:
    """``prompt`` (a string or a list of messages) with ``instructions`` appended to its text
    (to the last message's, so that chat templates keep their turn order)."""
    if isinstance(prompt, str):
        return f"{prompt}\n\n{instructions}"
    if isinstance(prompt, list) and prompt and isinstance(prompt[-1], BaseMessage) and (
            isinstance(prompt[-1].content, str)):
        last = prompt[-1]
        return [*prompt[:-1], last.model_copy(
            update={"content": f"{last.content}\n\n{instructions}"})]
    return prompt


def structured_runnable(model: BaseChatModel, schema: type[BaseModel]) -> Runnable[Any, Any]:
    """A runnable returning a ``schema`` instance from ``model``, whatever the model.

    Native structured output where the model has it (a reply in plain text is parsed as JSON;
    a reply with neither is None, a failure :func:`run_calls` retries); for a model without
    ``with_structured_output``, the schema's JSON format instructions appended to the prompt
    and the reply parsed as JSON (an unparseable reply raises ``OutputParserException``,
    retried too).
    """
    try:
        structured = model.with_structured_output(schema, include_raw=True)
    except NotImplementedError:
        logger.debug("%s has no native structured output: asking for JSON",
                     type(model).__name__)
        instructions = PydanticOutputParser(pydantic_object=schema).get_format_instructions()
        return (RunnableLambda(lambda prompt: _with_instructions(prompt, instructions))
                | model | RunnableLambda(lambda message: _parse_text(message, schema)))

    def pick(out: Any) -> BaseModel | None:
        parsed = out.get("parsed") if isinstance(out, dict) else out
        if isinstance(parsed, schema):
            return parsed
        if isinstance(parsed, dict):
            return schema.model_validate(parsed)
        if isinstance(out, dict) and message_text(out.get("raw")).strip():
            return _parse_text(out.get("raw"), schema)
        return None

    return structured | RunnableLambda(pick)


def _log_retry(state: RetryCallState) -> None:
    exc = state.outcome.exception() if state.outcome else None
    logger.warning("model call failed (attempt %d), retrying: %r", state.attempt_number, exc)


def _worth_another_try() -> Callable[[RetryCallState], bool]:
    """The retry test of one call: a transient error, except an unparseable reply that
    repeats the previous attempt's word for word (a deterministic model, such as a local one
    decoding greedily, would only say it again: measured at ~15 s an attempt on 2 cores)."""
    replies: list[str] = []
    transient = retry_if_exception(is_transient)

    def test(state: RetryCallState) -> bool:
        if not transient(state):
            return False
        exc = state.outcome.exception() if state.outcome else None
        reply = getattr(exc, "llm_output", None)
        if isinstance(exc, OutputParserException) and isinstance(reply, str):
            if replies and replies[-1] == reply:
                logger.debug("the model repeated an unparseable reply word for word: not retried")
                return False
            replies.append(reply)
        return True

    return test


def _retry_kwargs(policy: RetryPolicy) -> dict[str, Any]:
    return {
        "stop": stop_after_attempt(max(1, policy.attempts)),
        "wait": wait_exponential(multiplier=policy.wait_initial, max=policy.wait_max),
        "retry": _worth_another_try(),
        "reraise": True,
        "before_sleep": _log_retry,
    }


def _checked(call: ModelCall, output: Any) -> Any:
    if call.structured and output is None:
        raise _NoStructuredOutput(f"{call.label}: the model returned no structured output")
    return output


def _fail(call: ModelCall, exc: Exception) -> ExtractionError:
    return ExtractionError(f"model call {call.label!r} failed: {type(exc).__name__}: {exc}")


_PARSE_ERRORS = (OutputParserException, ValidationError, _NoStructuredOutput)


def _settle(call: ModelCall, exc: Exception) -> Any:
    """What a call that failed with ``exc`` (after its attempts) gives: :data:`UNPARSED`
    for an unparseable reply to a ``unparsed_ok`` call; else it raises."""
    if call.unparsed_ok and isinstance(exc, _PARSE_ERRORS):
        logger.debug("model call %r: reply unparseable after its attempts: %r", call.label, exc)
        return UNPARSED
    raise _fail(call, exc) from exc


def _invoke(call: ModelCall, policy: RetryPolicy) -> Any:
    try:
        for attempt in Retrying(**_retry_kwargs(policy)):
            with attempt:
                return _checked(call, call.runnable.invoke(call.input))
    except ExtractionError:
        raise
    except Exception as e:
        return _settle(call, e)
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
            return _settle(call, e)
    raise AssertionError("unreachable")  # pragma: no cover


def run_calls(calls: tuple[ModelCall, ...], policy: RetryPolicy) -> list[Any]:
    """Run model calls (retried), in order, or in a thread pool when several may run at once;
    returns their outputs in order."""
    if len(calls) <= 1 or policy.concurrency <= 1:
        return [_invoke(call, policy) for call in calls]
    with ThreadPoolExecutor(max_workers=min(policy.concurrency, len(calls))) as pool:
        return list(pool.map(lambda c: _invoke(c, policy), calls))


async def arun_calls(calls: tuple[ModelCall, ...], policy: RetryPolicy,
                     gate: asyncio.Semaphore | None = None) -> list[Any]:
    """Async :func:`run_calls`: at most ``policy.concurrency`` at once (or ``gate``'s)."""
    gate = gate or asyncio.Semaphore(max(1, policy.concurrency))
    return list(await asyncio.gather(*(_ainvoke(c, policy, gate) for c in calls)))
