"""Turn resume's pure parts: whose turn a run is, idempotency keys, and the history with
its dangling tool calls answered. No I/O here; :mod:`langmem_edge.graphs.resume` drives them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.types import Command

from langmem_edge.errors import InvalidInputError
from langmem_edge.graphs.history import is_injected
from langmem_edge.memory.working import TurnRecord, TurnRow
from langmem_edge.tools import run_value

__all__ = [
    "Dangling",
    "IDEMPOTENCY_KEY",
    "KEY_CHARS",
    "NOT_COMPLETED_TEMPLATE",
    "OPEN_RESOURCES_TEMPLATE",
    "RESOURCES_FIELD",
    "RESUMED_FIELD",
    "ResumedCall",
    "RunIdentity",
    "TURN_RESOURCES_FIELD",
    "TRUNCATED_TEMPLATE",
    "answers",
    "dangling_tool_calls",
    "idempotency_key",
    "key_of",
    "result_preview",
    "resumed_calls",
    "run_identity",
    "tool_idempotency_key",
    "tool_message",
    "with_answers",
    "without_refused_repeats",
]

IDEMPOTENCY_KEY = "idempotency_key"
"""Where a tool finds its idempotency key: ``runtime.config["configurable"][...]``."""
RESOURCES_FIELD = "resources"
"""The key of a ``ToolMessage`` artifact dict that lists the resource ids a tool left open."""
RESUMED_FIELD = "resumed"
"""The artifact key (``True``) that marks a ``ToolMessage`` answered from a turn record."""
TURN_RESOURCES_FIELD = "turn_resources"
"""The artifact key of a resumed turn's last answer: every resource the turn left open (the
ones :data:`OPEN_RESOURCES_TEMPLATE` names in its text)."""


KEY_CHARS = 32
"""Length of an idempotency key (hex of a SHA-256 digest)."""

NOT_COMPLETED_TEMPLATE = (
    "Tool call {name!r} did not complete: the turn was interrupted before it returned, so "
    "there is no result. It was not run again; call it again if it is still needed.")
"""The answer to a dangling tool call the turn record has no result for."""
TRUNCATED_TEMPLATE = "\n[result cut to its first {chars} characters]"
"""Added to a replayed result the turn record had cut."""
OPEN_RESOURCES_TEMPLATE = (
    "\n\n[This turn was interrupted and is resumed: the tool results above are from before "
    "the interruption. Still open from it, reuse them instead of opening new ones: "
    "{resources}.]")
"""Added to the last answer of a resumed turn whose tools reported open resources."""


Dangling = list[tuple[int, dict[str, Any]]]
"""Unanswered tool calls: (index of their ``AIMessage``, the call)."""


# -- who and where: the run's identity ----------------------------------------------------------


@dataclass(frozen=True)
class RunIdentity:
    """Whose turn record: the profile and thread of a run (and its contact)."""

    profile: str
    thread: str
    contact: str | None = None


def _field(source: Any, name: str) -> Any:
    if isinstance(source, Mapping):
        return source.get(name)
    return getattr(source, name, None)


def run_identity(context: Any, config: Mapping[str, Any] | None,
                 execution_info: Any = None) -> RunIdentity | None:
    """The run's profile, contact and thread: ``context`` first (a mapping or an object
    with ``profile``, ``contact``, ``thread_id``, like ``MemoryContext``), then
    ``config["configurable"]``, the thread last from ``execution_info.thread_id``. ``None``
    when the run has no profile or no thread (turn resume leaves such a run alone)."""
    def pick(name: str) -> Any:
        return run_value(context, config, name)

    profile = pick("profile")
    thread = pick("thread_id") or _field(execution_info, "thread_id")
    if profile is not None and not isinstance(profile, str):
        raise InvalidInputError(
            f"the run's profile must be a string, got {type(profile).__name__} {profile!r}")
    if profile is None or not thread:
        return None
    return RunIdentity(profile=profile, thread=str(thread), contact=pick("contact"))


# -- idempotency keys -------------------------------------------------------------------------


def idempotency_key(thread: str, checkpoint_id: str, tool_call_id: str) -> str:
    """The idempotency key of one tool call: a hash of (thread, checkpoint, tool call id),
    :data:`KEY_CHARS` hex characters. The same when LangGraph re-runs the call from the same
    checkpoint after a crash; different for the same call id in another turn."""
    raw = json.dumps([thread, checkpoint_id, tool_call_id], ensure_ascii=False)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:KEY_CHARS]


def key_of(runtime: Any) -> str | None:
    """The idempotency key computed from a ``ToolRuntime``'s ``execution_info`` and
    ``tool_call_id``; ``None`` when one of them is missing (no checkpointed run)."""
    info = getattr(runtime, "execution_info", None)
    call_id = getattr(runtime, "tool_call_id", None)
    config = getattr(runtime, "config", None) or {}
    thread = _field(info, "thread_id") or (config.get("configurable") or {}).get("thread_id")
    checkpoint = _field(info, "checkpoint_id")
    if not (thread and checkpoint and call_id):
        return None
    return idempotency_key(str(thread), str(checkpoint), str(call_id))


def tool_idempotency_key(runtime: Any) -> str | None:
    """A tool's idempotency key, from its ``ToolRuntime``: the one :class:`TurnResume` put in
    ``runtime.config["configurable"]["idempotency_key"]``, else computed from
    ``runtime.execution_info`` and ``runtime.tool_call_id``; ``None`` outside a
    checkpointed run. Pass it to the service the tool calls (an ``Idempotency-Key`` header,
    a unique column) so a re-run does not act twice."""
    config = getattr(runtime, "config", None) or {}
    given = (config.get("configurable") or {}).get(IDEMPOTENCY_KEY)
    return str(given) if given else key_of(runtime)


# -- the history: dangling calls and their answers -----------------------------------------------


def dangling_tool_calls(messages: Sequence[AnyMessage]) -> Dangling:
    """The tool calls no ``ToolMessage`` answers, as (index of their ``AIMessage``, call),
    oldest first."""
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    return [(i, call) for i, m in enumerate(messages) if isinstance(m, AIMessage)
            for call in m.tool_calls if call.get("id") not in answered]


def _replayed(call: dict[str, Any], row: TurnRow, chars: int) -> ToolMessage:
    text = row.result_preview + (TRUNCATED_TEMPLATE.format(chars=chars) if row.truncated
                                 else "")
    return ToolMessage(text, tool_call_id=call["id"], name=row.name, status=row.status,
                       artifact={RESUMED_FIELD: True,
                                 RESOURCES_FIELD: list(row.open_resources)})


def _not_completed(call: dict[str, Any]) -> ToolMessage:
    return ToolMessage(NOT_COMPLETED_TEMPLATE.format(name=call.get("name", "")),
                       tool_call_id=call["id"], name=call.get("name"), status="error",
                       artifact={RESUMED_FIELD: True, "completed": False})


def answers(dangling: Dangling, turn: TurnRecord | None,
             chars: int) -> dict[int, list[ToolMessage]]:
    """The answers to the dangling calls, by the index of their ``AIMessage``; the last one
    says what the turn left open."""
    rows = {r.call_id: r for r in turn.rows} if turn else {}
    by_ai: dict[int, list[ToolMessage]] = {}
    for index, call in dangling:
        row = rows.get(call["id"])
        by_ai.setdefault(index, []).append(
            _replayed(call, row, chars) if row else _not_completed(call))
    resources = turn.open_resources if turn else ()
    if resources and by_ai:
        last = by_ai[max(by_ai)][-1]
        last.content = last.text + OPEN_RESOURCES_TEMPLATE.format(
            resources=", ".join(resources))
        last.artifact = {**last.artifact, TURN_RESOURCES_FIELD: list(resources)}
    return by_ai


@dataclass(frozen=True)
class ResumedCall:
    """A tool call of an interrupted turn, as turn resume answered it in the history."""

    call_id: str
    name: str
    completed: bool
    """Whether the record had its result (``False``: answered "did not complete")."""
    status: str
    """The replayed ``ToolMessage.status`` (``"success"`` or ``"error"``)."""
    result: str
    """The recorded result as replayed, without the open-resources note (``""`` when not
    completed)."""


def resumed_calls(messages: Sequence[BaseMessage]
                  ) -> tuple[list[ResumedCall], tuple[str, ...]]:
    """The tool calls of the turn resumed for the latest user message (the answers turn
    resume put between the previous user message and that one), oldest first, and the
    resources that turn left open; ``([], ())`` when the latest message resumed nothing."""
    users = [i for i, m in enumerate(messages)
             if isinstance(m, HumanMessage) and not is_injected(m)]
    if not users:
        return [], ()
    start = users[-2] + 1 if len(users) > 1 else 0
    calls: list[ResumedCall] = []
    listed: list[str] = []  # the turn's own list first (its order), then each call's
    reported: list[str] = []
    for m in messages[start:users[-1]]:
        artifact = m.artifact if isinstance(m, ToolMessage) else None
        if not isinstance(artifact, Mapping) or artifact.get(RESUMED_FIELD) is not True:
            continue
        assert isinstance(m, ToolMessage)
        text = m.text
        turn = [str(r) for r in artifact.get(TURN_RESOURCES_FIELD) or ()]
        note = OPEN_RESOURCES_TEMPLATE.format(resources=", ".join(turn))
        if turn and text.endswith(note):
            text = text[: -len(note)]
        listed += turn
        reported += [str(r) for r in artifact.get(RESOURCES_FIELD) or ()]
        completed = artifact.get("completed") is not False
        calls.append(ResumedCall(call_id=m.tool_call_id, name=m.name or "",
                                 completed=completed, status=m.status,
                                 result=text if completed else ""))
    return calls, tuple(dict.fromkeys([*listed, *reported]))


def with_answers(messages: Sequence[AnyMessage], by_ai: Mapping[int, list[ToolMessage]]
                  ) -> list[AnyMessage]:
    """The history with each answer right after its ``AIMessage`` and the tool messages that
    already follow it, so no tool call is left unanswered in front of a later message."""
    out: list[AnyMessage] = []
    pending: list[ToolMessage] = []
    for i, m in enumerate(messages):
        if pending and not isinstance(m, ToolMessage):
            out += pending
            pending = []
        out.append(m)
        if i in by_ai:
            pending = list(by_ai[i])
    return out + pending


def without_refused_repeats(messages: Sequence[AnyMessage], turn_start: BaseMessage
                            ) -> list[AnyMessage]:
    """The history without the earlier copies of the latest user message sent while the
    interrupted turn (from its ``AIMessage`` ``turn_start`` on) was still unanswered.

    Such a copy can only come from a request that was refused (``TurnInProgressError``: its
    message was already in the checkpoint when turn resume refused it) or that crashed
    before resuming: "send the message again", as the error says, must not leave the message
    twice in the history, nor hide the resumed answers before the first copy. A different
    message sent meanwhile is kept: it is something the user said.
    """
    latest = next((i for i in range(len(messages) - 1, -1, -1)
                   if isinstance(messages[i], HumanMessage) and not is_injected(messages[i])),
                  None)
    start = next((i for i, m in enumerate(messages) if m is turn_start), None)
    if latest is None or start is None or start > latest:
        return list(messages)
    text = messages[latest].text
    return [m for i, m in enumerate(messages)
            if not (start < i < latest and isinstance(m, HumanMessage)
                    and not is_injected(m) and m.text == text)]


def tool_message(result: Any, call_id: Any) -> ToolMessage | None:
    """The ``ToolMessage`` answering ``call_id`` in a tool's result: the message itself, or
    the one in a ``Command``'s ``messages`` update; ``None`` if there is none."""
    if isinstance(result, ToolMessage):
        return result
    if isinstance(result, Command) and isinstance(result.update, Mapping):
        for m in result.update.get("messages") or ():
            if isinstance(m, ToolMessage) and m.tool_call_id == call_id:
                return m
    return None


def result_preview(message: ToolMessage | None) -> tuple[str, list[str], str]:
    """What to record of a tool's answer: its text, the resource ids it reports and its
    status (``"success"`` or ``"error"``)."""
    if message is None:
        return "(the tool answered with a Command and no message)", [], "success"
    artifact = message.artifact
    found = artifact.get(RESOURCES_FIELD) if isinstance(artifact, Mapping) else None
    resources = [str(r) for r in found] if isinstance(found, list | tuple) else []
    return message.text, resources, "error" if message.status == "error" else "success"
