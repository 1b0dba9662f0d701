"""Turn resume: a turn cut short by a crash is answered from its record, never re-run.

LangGraph saves each finished task's writes, and ``invoke(None)`` re-runs only what did not
finish; but NEW input on the thread drops the unfinished tasks and their saved results and
leaves the last ``AIMessage``'s tool calls unanswered (see DESIGN.md, "The agent half"). This
module keeps what survives that case: every finished tool call goes into the working tier's
turn record of (profile, thread) as it completes, and the next request on the thread is
handled by the rule of the turn record (``WorkingConfig.resume_after_seconds``, 45 s):

- touched within 45 s: the turn is still running; :class:`TurnInProgressError` (or, with
  ``wait=True``, wait until it finishes or goes quiet for 45 s);
- untouched for longer: every dangling tool call is answered in the history, right after its
  ``AIMessage`` (a ``ToolMessage`` with the recorded result for each finished call, not
  re-run; :data:`NOT_COMPLETED_TEMPLATE` for the others), the model is told which resources
  the turn left open (:data:`OPEN_RESOURCES_TEMPLATE`), the record is deleted, then the new
  message is handled.

The record goes when the final assistant message (no tool calls) is produced, and expires
after 24 h. A run with ``durability="exit"`` is refused (:class:`UnsupportedDurabilityError`).

Written once in :class:`TurnResume`, whose methods have the shape of ``AgentMiddleware`` hooks
(sync and async twins over one plan each); :class:`TurnResumeMiddleware` delegates to it for
``langchain.agents.create_agent``, and another middleware can delegate to it the same way.
The pure parts (whose run, idempotency keys, the answered history) are in
:mod:`langmem_edge.graphs.resume_history`; ``docs/resume.md`` has the whole story.

**What a tool reports.** A tool reports what it left open (a browser session, a file, a job)
as ids in its ``ToolMessage``'s artifact, ``{"resources": ["browser:7"]}`` (a tool with
``response_format="content_and_artifact"`` returns ``(content, {"resources": [...]})``).
**What a tool gets.** An idempotency key for (thread, checkpoint, tool call id), the same
when LangGraph re-runs the call after a crash (``invoke(None)``), in
``runtime.config["configurable"]["idempotency_key"]``; read it with
:func:`tool_idempotency_key` (``ToolRuntime`` -> ``str | None``), which also works without
the middleware.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, NotRequired

from langchain.agents import AgentState
from langchain.agents.middleware import (
    AgentMiddleware,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    ToolCallRequest,
)
from langchain.agents.middleware.types import ModelCallResult
from langchain_core.messages import AIMessage, RemoveMessage, ToolMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.store.base import NOT_PROVIDED, NotProvided
from langgraph.types import Command

from langmem_edge.errors import (
    BackendUnavailableError,
    ConfigurationError,
    InvalidInputError,
    TurnInProgressError,
    UnsupportedDurabilityError,
)
from langmem_edge.graphs.recall import latest_user_message
from langmem_edge.graphs.resume_history import (
    IDEMPOTENCY_KEY,
    NOT_COMPLETED_TEMPLATE,
    OPEN_RESOURCES_TEMPLATE,
    RESOURCES_FIELD,
    Dangling,
    RunIdentity,
    answers,
    dangling_tool_calls,
    idempotency_key,
    key_of,
    result_preview,
    run_identity,
    tool_idempotency_key,
    tool_message,
    with_answers,
    without_refused_repeats,
)
from langmem_edge.graphs.run import RunResolver, ThreadStateHandoff, current_config
from langmem_edge.memory import AgentMemory
from langmem_edge.memory.core.plans import Call, Plan, planned, run_async, run_sync
from langmem_edge.memory.working import ProfileWorking, ThreadState, TurnRecord

__all__ = [
    "IDEMPOTENCY_KEY",
    "NOT_COMPLETED_TEMPLATE",
    "OPEN_RESOURCES_TEMPLATE",
    "RESOURCES_FIELD",
    "RunIdentity",
    "SeenTurn",
    "TurnResume",
    "TurnResumeMiddleware",
    "TurnResumeState",
    "dangling_tool_calls",
    "idempotency_key",
    "run_identity",
    "tool_idempotency_key",
]

logger = logging.getLogger(__name__)

ROUND_KEY = "turn_round_at"
"""The state key stamped (epoch seconds) when the model asks for a tool round; it tells a
running turn from an interrupted one when no tool call has finished yet."""
DURABILITY_KEY = "__pregel_durability"
"""Where LangGraph (1.x) puts a run's ``durability`` in ``config["configurable"]`` when it is
given explicitly; absent means the default, ``"async"``."""
POLL_SECONDS = 1.0
"""With ``wait=True``: how often the turn record is read again while the turn runs."""
MAX_WAIT_SECONDS = 120.0
"""With ``wait=True``: how long to wait for a running turn before raising
:class:`TurnInProgressError` anyway (a turn that keeps finishing tool calls)."""

ToolResult = ToolMessage | Command[Any]
"""What a tool call's handler returns."""


@dataclass(frozen=True)
class SeenTurn:
    """A thread's turn record as read in a model call before the model ran (by
    ``MemoryMiddleware``'s recall read): no tool call of the thread can be recorded during
    the model call, so a final answer deletes exactly these rows without reading them
    again."""

    profile: str
    thread: str
    record: TurnRecord | None
    """The record read (``None``: there was none, nothing to delete)."""


class TurnResumeState(AgentState):
    """``AgentState`` plus the stamp of the current tool round (declare it in a middleware's
    ``state_schema``; without it the stamp is dropped and a turn with no finished tool call
    counts as interrupted at once)."""

    turn_round_at: NotRequired[float | None]
    """Epoch seconds when the model last asked for tools in this turn; ``None`` after the
    final answer."""


# -- the behaviour, once --------------------------------------------------------------------------


class TurnResume:
    """Turn resume for an agent: hook-shaped methods (``before_agent``, ``wrap_tool_call``,
    ``after_model`` and their ``a*`` twins) a middleware delegates to.

    Args:
        memory: Whose working tier holds the turn records; ``None``: an ``AgentMemory`` over
            the graph's store (``runtime.store``), made once per store.
        wait: When a request finds the turn still running, wait (polling every
            ``poll_seconds``, at most ``max_wait_seconds``) until it finishes or goes quiet
            for ``resume_after_seconds``, instead of raising :class:`TurnInProgressError`.
        clock: Epoch seconds (default ``time.time``); inject one in tests.
        poll_seconds: See ``wait`` (default :data:`POLL_SECONDS`, 1 s).
        max_wait_seconds: See ``wait`` (default :data:`MAX_WAIT_SECONDS`, 120 s).
        messages_key: The state key of the messages (default ``"messages"``).
    """

    def __init__(self, memory: AgentMemory | None = None, *, wait: bool = False,
                 clock: Callable[[], float] | None = None,
                 poll_seconds: float = POLL_SECONDS,
                 max_wait_seconds: float = MAX_WAIT_SECONDS,
                 messages_key: str = "messages") -> None:
        self.resolver = RunResolver(memory)
        """Gives the memory of a run's store (the hooks' own when a middleware shares it)."""
        if poll_seconds <= 0 or max_wait_seconds < 0:
            raise ConfigurationError(
                f"poll_seconds must be > 0 and max_wait_seconds >= 0, got {poll_seconds!r} "
                f"and {max_wait_seconds!r}")
        self.memory = memory
        self.wait = wait
        self.clock: Callable[[], float] = clock or time.time
        self.poll_seconds = poll_seconds
        self.max_wait_seconds = max_wait_seconds
        self.messages_key = messages_key
        self._record_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"TurnResume(memory={self.memory!r}, wait={self.wait!r})"

    def _working(self, store: Any, who: RunIdentity) -> ProfileWorking | None:
        memory = self.resolver.memory_for(store)
        if memory is None:
            return None
        return memory.profile(who.profile).working.with_clock(self.clock)

    def _resume_after(self, store: Any) -> float:
        memory = self.resolver.memory_for(store)
        assert memory is not None
        return memory.config.working.resume_after_seconds

    # -- before_agent: the rule of the turn record ----------------------------------------------

    def _plan_rule(self, who: RunIdentity, working: ProfileWorking, store: Any,
                   state: Mapping[str, Any], handoff: Callable[[ThreadState], None] | None = None
                   ) -> Plan[tuple[Dangling, TurnRecord | None] | None]:
        """The rule of the turn record: ``None`` when the last turn is finished; raises
        :class:`TurnInProgressError` while it runs (or waits, with ``wait``); otherwise the
        dangling calls and the record to answer them from. With ``handoff``, the first read
        is the thread's whole working state, given to ``handoff`` when the turn is
        finished (the model call then need not read it again)."""
        messages = list(state.get(self.messages_key) or [])
        dangling = dangling_tool_calls(messages)
        try:
            if handoff is None:
                turn = yield Call(working.unfinished_turn, working.aunfinished_turn,
                                  (who.thread,))
            else:
                seen: ThreadState = yield Call(working.thread_state, working.athread_state,
                                               (who.thread,))
                turn = seen.turn
                if not dangling and turn is None:
                    handoff(seen)
        except BackendUnavailableError as e:
            if dangling:  # a crashed turn's results are in its record: never guess them
                raise
            logger.warning("thread %r: the turn record could not be read (%s); the turn "
                           "runs without it (nothing in the history is left unanswered)",
                           who.thread, e)
            return None
        if not dangling and turn is None:
            return None
        resume_after = self._resume_after(store)
        round_at = state.get(ROUND_KEY) if dangling else None
        deadline = self.clock() + self.max_wait_seconds
        while True:
            touched = _touched(turn, round_at)
            now = self.clock()
            if touched is None or now - touched > resume_after:
                return dangling, turn
            if not self.wait or now >= deadline:
                ago = max(0.0, now - touched)
                raise TurnInProgressError(
                    f"thread {who.thread!r} of profile {who.profile!r} has a turn in "
                    f"progress: it was last touched {ago:.1f} s ago, and a turn is resumed "
                    f"only once untouched for {resume_after:g} s; send the message again in "
                    f"{resume_after - ago:.1f} s (it is kept once, and the turn is resumed), "
                    "or use TurnResume(wait=True)",
                    thread=who.thread, touched_at=touched, retry_after=resume_after - ago)
            yield Call(time.sleep, asyncio.sleep, (self.poll_seconds,))
            now_turn = yield Call(working.unfinished_turn, working.aunfinished_turn,
                                  (who.thread,))
            if turn is not None and now_turn is None:
                return dangling, None  # the running turn finished meanwhile
            turn = now_turn

    def _plan_before(self, state: Mapping[str, Any], runtime: Any,
                     handoff: ThreadStateHandoff | None = None
                     ) -> Plan[dict[str, Any] | None]:
        config = current_config()
        who = run_identity(runtime.context, config, getattr(runtime, "execution_info", None))
        working = self._working(runtime.store, who) if who else None
        if who is None or working is None:
            return None
        durability = (config.get("configurable") or {}).get(DURABILITY_KEY)
        if durability == "exit":
            raise UnsupportedDurabilityError(
                f"thread {who.thread!r}: durability='exit' saves nothing until the run ends, "
                "so a crash would leave no checkpoint and no tool results to resume the turn "
                "from; run it with durability='sync' or 'async' (the default)",
                durability=durability)
        memory = self.resolver.memory_for(runtime.store)
        assert memory is not None
        give = None
        if handoff is not None:
            asked = latest_user_message(list(state.get(self.messages_key) or []))
            message_id = asked.id if asked is not None else None

            def give(seen: ThreadState) -> None:
                handoff.put(memory, who.profile, who.thread, message_id, seen)

        found = yield from self._plan_rule(who, working, runtime.store, state, give)
        if found is None:
            return None
        dangling, turn = found
        by_ai = answers(dangling, turn, memory.config.working.preview_chars)
        if turn is not None:
            yield Call(working.finish_turn, working.afinish_turn, (who.thread,))
        if not by_ai:
            return None
        logger.info("thread %s: resumed an interrupted turn, %d dangling tool calls answered",
                    who.thread, len(dangling))
        messages = list(state.get(self.messages_key) or [])
        rebuilt = without_refused_repeats(with_answers(messages, by_ai),
                                          messages[min(by_ai)])
        return {self.messages_key: [RemoveMessage(id=REMOVE_ALL_MESSAGES), *rebuilt],
                ROUND_KEY: None}

    @planned
    def before_agent(self, state: Mapping[str, Any], runtime: Any, *,
                     handoff: ThreadStateHandoff | None = None) -> Plan[dict[str, Any] | None]:
        """Before the turn: refuse ``durability="exit"``; if the thread's last turn is
        unfinished, raise :class:`TurnInProgressError` (touched within 45 s) or return the
        state update that answers its dangling tool calls from the record. ``handoff``: read
        the thread's whole working state and hand it to the turn's first model call there
        (``MemoryMiddleware`` does, so a reply reads the working tier once)."""
        return self._plan_before(state, runtime, handoff)

    abefore_agent = before_agent.twin

    def _plan_check(self, graph: Any, config: Mapping[str, Any], context: Any,
                    snapshot: Any) -> Plan[None]:
        who = run_identity(context, config)
        store = getattr(graph, "store", None)
        working = self._working(store, who) if who else None
        if who is None or working is None:
            return None
        yield from self._plan_rule(who, working, store, getattr(snapshot, "values", {}) or {})
        return None

    def check_turn(self, graph: Any, config: Mapping[str, Any], *, context: Any = None
                   ) -> None:
        """Before ``graph.invoke(input, config, context=context)``: raise
        :class:`TurnInProgressError` if the thread's last turn is still running (or wait,
        with ``wait``), without running the graph. Refused in ``before_agent`` instead, the
        request's message is already in the checkpoint (LangGraph saves the input before
        the first node runs); refused here, nothing is written. ``graph`` is the compiled
        agent (its ``get_state`` and ``store`` are used)."""
        run_sync(self._plan_check(graph, config, context, graph.get_state(config)))

    async def acheck_turn(self, graph: Any, config: Mapping[str, Any], *,
                          context: Any = None) -> None:
        """Async :meth:`check_turn`."""
        snapshot = await graph.aget_state(config)
        await run_async(self._plan_check(graph, config, context, snapshot))

    # -- wrap_tool_call: record each finished call -----------------------------------------------

    def _plan_tool(self, request: ToolCallRequest, handler: Callable[..., Any]
                   ) -> Plan[ToolResult]:
        result: ToolResult = yield Call(handler, handler, (_with_key(request),))
        runtime = request.runtime
        who = run_identity(getattr(runtime, "context", None), getattr(runtime, "config", None),
                           getattr(runtime, "execution_info", None))
        if who is None:
            return result
        call = request.tool_call
        text, resources, status = result_preview(tool_message(result, call.get("id")))
        row = (who.thread, call["id"], call["name"], call.get("args"), text, resources)
        how = {"status": status}
        try:
            working = self._working(getattr(runtime, "store", None), who)
            if working is None:
                return result
            record = functools.partial(self._record, working)
            try:
                yield Call(record, working.arecord_tool_call, row, how)
            except InvalidInputError as e:  # arguments too large or not JSON: keep the rest
                logger.warning("thread %s: tool call %s is recorded without its arguments "
                               "(%s)", who.thread, call["id"], e)
                yield Call(record, working.arecord_tool_call, (*row[:3], None, *row[4:]), how)
        except Exception:  # the tool did run: its answer goes on, the miss is logged
            logger.exception("thread %s: tool call %s finished but is not in the turn "
                             "record; a resume after a crash will report it as not completed",
                             who.thread, call["id"])
        return result

    def _record(self, working: ProfileWorking, *row: Any, **how: Any) -> Any:
        """Record a row, one tool thread at a time: a sync agent runs the calls of a round
        in threads, and not every store takes concurrent writes and reads (langgraph's
        ``InMemoryStore`` raises "dictionary changed size during iteration")."""
        with self._record_lock:
            return working.record_tool_call(*row, **how)

    def wrap_tool_call(self, request: ToolCallRequest,
                       handler: Callable[[ToolCallRequest], ToolResult]) -> ToolResult:
        """Run the tool (with its idempotency key in ``runtime.config``), then record the
        finished call (name, args, id, result preview, open resources) in the turn record."""
        return run_sync(self._plan_tool(request, handler))

    async def awrap_tool_call(self, request: ToolCallRequest,
                              handler: Callable[[ToolCallRequest], Awaitable[ToolResult]]
                              ) -> ToolResult:
        """Async :meth:`wrap_tool_call`."""
        return await run_async(self._plan_tool(request, handler))

    # -- after_model: stamp the tool round, or finish the turn -----------------------------------

    def _plan_turn_end(self, last: Any, state: Mapping[str, Any], runtime: Any,
                       seen: SeenTurn | None = None) -> Plan[dict[str, Any] | None]:
        """After a model call whose reply is ``last``: a tool round's stamp, or (the final
        answer) the record deleted (in one write, without a read, when ``seen`` is this
        run's); the state update, if any."""
        who = run_identity(runtime.context, current_config(),
                           getattr(runtime, "execution_info", None))
        working = self._working(runtime.store, who) if who else None
        if who is None or working is None or not isinstance(last, AIMessage):
            return None
        if last.tool_calls:
            return {ROUND_KEY: float(self.clock())}
        record: TurnRecord | None | NotProvided = NOT_PROVIDED
        if seen is not None and (seen.profile, seen.thread) == (who.profile, who.thread):
            record = seen.record
        try:
            yield Call(working.finish_turn, working.afinish_turn, (who.thread,),
                       {"seen": record})
        except Exception:  # the answer stands; the record goes at the next resume or expires
            logger.exception("thread %s: the turn's final answer is saved but its turn record "
                             "was not deleted", who.thread)
        return {ROUND_KEY: None} if state.get(ROUND_KEY) is not None else None

    def _plan_after(self, state: Mapping[str, Any], runtime: Any
                    ) -> Plan[dict[str, Any] | None]:
        messages = state.get(self.messages_key) or []
        last = messages[-1] if messages else None
        return (yield from self._plan_turn_end(last, state, runtime))

    @planned
    def after_model(self, state: Mapping[str, Any], runtime: Any) -> Plan[dict[str, Any] | None]:
        """After each model call, as a hook node of its own: a tool round stamps
        :data:`ROUND_KEY`; the final assistant message (no tool calls) deletes the turn
        record. :meth:`wrap_model_call` does the same inside the model node (one checkpoint
        fewer per model call); use one of the two."""
        return self._plan_after(state, runtime)

    aafter_model = after_model.twin

    def _plan_model(self, request: ModelRequest, handler: Callable[..., Any],
                    seen: SeenTurn | None) -> Plan[ModelCallResult]:
        response: ModelCallResult = yield Call(handler, handler, (request,))
        update = yield from self._plan_turn_end(_reply(response), request.state,
                                                request.runtime, seen)
        return _with_update(response, update)

    def wrap_model_call(self, request: ModelRequest,
                        handler: Callable[[ModelRequest], ModelCallResult], *,
                        seen: SeenTurn | None = None) -> ModelCallResult:
        """Call the model, then do what :meth:`after_model` does, inside the model node: the
        stamp goes out as the response's ``Command``; the record is deleted once the reply
        has no tool calls (safe before the reply is checkpointed: every ToolMessage of the
        turn already is, so nothing is left for the record to answer). ``seen``: the
        record as read before the model ran in this same call (:class:`SeenTurn`), so
        deleting it needs no read."""
        return run_sync(self._plan_model(request, handler, seen))

    async def awrap_model_call(self, request: ModelRequest,
                               handler: Callable[[ModelRequest], Awaitable[ModelCallResult]],
                               *, seen: SeenTurn | None = None) -> ModelCallResult:
        """Async :meth:`wrap_model_call`."""
        return await run_async(self._plan_model(request, handler, seen))


def _reply(response: Any) -> AIMessage | None:
    """The last ``AIMessage`` of a model call's result, in any of its three shapes."""
    if isinstance(response, ExtendedModelResponse):
        response = response.model_response
    messages = response.result if isinstance(response, ModelResponse) else [response]
    return next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)


def _with_update(response: ModelCallResult, update: dict[str, Any] | None
                 ) -> ModelCallResult:
    """The model call's result carrying ``update`` as its state ``Command`` (merged into an
    inner middleware's command when there is one)."""
    if not update:
        return response
    if isinstance(response, ExtendedModelResponse):
        inner = response.command
        if inner is None:
            return dataclasses.replace(response, command=Command(update=update))
        if isinstance(inner.update, Mapping):
            merged = dataclasses.replace(inner, update={**inner.update, **update})
            return dataclasses.replace(response, command=merged)
        logger.warning("the tool round's stamp is dropped: an inner middleware's command "
                       "updates the state with %s, not a mapping", type(inner.update).__name__)
        return response
    model_response = (response if isinstance(response, ModelResponse)
                      else ModelResponse(result=[response]))
    return ExtendedModelResponse(model_response=model_response, command=Command(update=update))


def _touched(turn: TurnRecord | None, round_at: Any) -> float | None:
    """When the turn was last touched (epoch seconds): its newest recorded call or its tool
    round's stamp, whichever is later; ``None`` when neither exists."""
    times = [turn.touched_at.timestamp()] if turn is not None else []
    if isinstance(round_at, int | float):
        times.append(float(round_at))
    return max(times, default=None)


def _with_key(request: ToolCallRequest) -> ToolCallRequest:
    """The request with the call's idempotency key in its runtime's ``configurable``."""
    runtime = request.runtime
    key = key_of(runtime) if runtime is not None else None
    if key is None or not dataclasses.is_dataclass(runtime):
        return request
    config = dict(runtime.config or {})
    config["configurable"] = {**(config.get("configurable") or {}), IDEMPOTENCY_KEY: key}
    return dataclasses.replace(request, runtime=dataclasses.replace(runtime, config=config))




class TurnResumeMiddleware(AgentMiddleware):  # type: ignore[type-arg]
    """Turn resume for ``langchain.agents.create_agent``: every hook delegates to a
    :class:`TurnResume` (``self.resume``); the arguments are its arguments.

    ::

        agent = create_agent(model, tools, middleware=[TurnResumeMiddleware(memory)],
                             checkpointer=saver, store=store)
    """

    state_schema = TurnResumeState

    def __init__(self, memory: AgentMemory | None = None, *, wait: bool = False,
                 clock: Callable[[], float] | None = None,
                 poll_seconds: float = POLL_SECONDS,
                 max_wait_seconds: float = MAX_WAIT_SECONDS) -> None:
        super().__init__()
        self.resume = TurnResume(memory, wait=wait, clock=clock, poll_seconds=poll_seconds,
                                 max_wait_seconds=max_wait_seconds)
        self.tools = []

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """:meth:`TurnResume.before_agent`."""
        return self.resume.before_agent(state, runtime)

    async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """:meth:`TurnResume.abefore_agent`."""
        return await self.resume.abefore_agent(state, runtime)

    def wrap_model_call(self, request: ModelRequest,
                        handler: Callable[[ModelRequest], ModelCallResult]
                        ) -> ModelCallResult:
        """:meth:`TurnResume.wrap_model_call` (in the model node: no extra checkpoint)."""
        return self.resume.wrap_model_call(request, handler)

    async def awrap_model_call(self, request: ModelRequest,
                               handler: Callable[[ModelRequest], Awaitable[ModelCallResult]]
                               ) -> ModelCallResult:
        """:meth:`TurnResume.awrap_model_call`."""
        return await self.resume.awrap_model_call(request, handler)

    def wrap_tool_call(self, request: ToolCallRequest,
                       handler: Callable[[ToolCallRequest], ToolResult]) -> ToolResult:
        """:meth:`TurnResume.wrap_tool_call`."""
        return self.resume.wrap_tool_call(request, handler)

    async def awrap_tool_call(self, request: ToolCallRequest,
                              handler: Callable[[ToolCallRequest], Awaitable[ToolResult]]
                              ) -> ToolResult:
        """:meth:`TurnResume.awrap_tool_call`."""
        return await self.resume.awrap_tool_call(request, handler)
