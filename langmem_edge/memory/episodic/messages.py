"""Messages as the episodic tier takes them in: validation, normalisation and ids.

A message is a LangChain ``BaseMessage`` or a dict with ``role`` and ``content`` (and
optionally ``name``, ``tool_call_id``, ``timestamp``). Content blocks are joined into text,
tool calls appended as ``[tool call] name(args)`` lines, roles mapped to user / assistant /
system / tool, and empty messages dropped. A batch is checked whole, limits included, before
anything is written. A message's id is a hash of its session, role and content, so ingesting
the same message twice stores it once.

**Over-long messages.** A message over ``max_message_bytes`` (32 KB of UTF-8) is cut to fit
and marked (:func:`fit_content`: its first bytes, ending with
:data:`~langmem_edge.memory.core.tokens.TRUNCATION_MARK` ``" [...]"``), the one mechanism
the graphs' post-turn ingest uses too; with ``strict=True`` it is refused instead
(:class:`~langmem_edge.errors.LimitExceededError`, nothing written). The id is computed over
the **cut** content: the cut is deterministic, so re-ingesting the same long message gives
the same id and adds nothing, and a message cut by the graphs before its ingest and one cut
here get the same id.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from langchain_core.messages import BaseMessage

from langmem_edge.errors import InvalidInputError, LimitExceededError
from langmem_edge.memory.config import EpisodicConfig
from langmem_edge.memory.core.labels import check_label
from langmem_edge.memory.core.tokens import TRUNCATION_MARK

__all__ = [
    "CUT_FLAG",
    "ROLE_ALIASES",
    "fit_content",
    "message_id",
    "normalize_messages",
    "orphaned_messages",
    "validate_session_id",
]

MAX_SESSION_ID_CHARS = 200
"""Longest session id (a namespace label of the episodic tier)."""

ROLE_ALIASES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant",
                "system": "system", "tool": "tool", "function": "tool"}
"""Accepted role names (and LangChain message types) and the role each is stored as."""


CUT_FLAG = "cut_from_bytes"
"""Key of a normalised message that was cut to fit: its size before the cut, in bytes."""


def fit_content(text: str, max_bytes: int) -> str:
    """``text`` if it fits ``max_bytes`` of UTF-8, else its first bytes (whole characters)
    followed by :data:`~langmem_edge.memory.core.tokens.TRUNCATION_MARK`, ``max_bytes`` in
    all. Deterministic: the same text and limit give the same cut."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    keep = max(0, max_bytes - len(TRUNCATION_MARK.encode("utf-8")))
    return data[:keep].decode("utf-8", errors="ignore") + TRUNCATION_MARK


def message_id(session_id: str, role: str, content: str) -> str:
    """A message's id: 32 hex chars of sha256 over JSON ``[session_id, role, content]``."""
    raw = json.dumps([session_id, role, content], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]


def orphaned_messages(deleted: Iterable[str], still_cited: Iterable[Iterable[str]]) -> list[str]:
    """Message ids cited by a deleted memory (``deleted``) that no remaining memory cites.

    ``still_cited`` is the ``source_message_ids`` of every other memory of the profile.
    """
    cited = {mid for ids in still_cited for mid in ids}
    return [mid for mid in dict.fromkeys(deleted) if mid not in cited]


def validate_session_id(session_id: object) -> str:
    """Check a session id: a non-empty string of at most 200 chars without '.' or control
    characters (it becomes a namespace label:
    :func:`~langmem_edge.memory.core.labels.check_label`)."""
    return check_label(session_id, "session_id", MAX_SESSION_ID_CHARS, allow_blank=True)


def _text_of(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [c if isinstance(c, str) else c.get("text", "") for c in content
                 if isinstance(c, str) or (isinstance(c, dict) and c.get("type") == "text")]
        return "".join(parts)
    raise InvalidInputError(f"{where}: content must be a string or a list of content blocks, "
                            f"got {type(content).__name__}")


def _timestamp(value: Any, now: datetime, where: str) -> datetime:
    if value is None:
        return now
    try:
        if isinstance(value, datetime):
            when = value
        elif isinstance(value, int | float):
            when = datetime.fromtimestamp(value, tz=UTC)
        else:
            when = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except (ValueError, OverflowError, OSError) as e:
        raise InvalidInputError(f"{where}: timestamp {value!r} is not a datetime, ISO 8601 "
                                "string or epoch seconds") from e
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _normalize_one(raw: Any, index: int, now: datetime) -> dict[str, Any] | None:
    where = f"message {index}"
    if isinstance(raw, BaseMessage):
        kind = raw.type
        role = getattr(raw, "role", None) if kind == "chat" else kind
        text = _text_of(raw.content, where)
        calls = getattr(raw, "tool_calls", None) or []
        text += "".join(f"\n[tool call] {c['name']}({json.dumps(c.get('args', {}))})"
                        for c in calls)
        fields = {"name": raw.name, "tool_call_id": getattr(raw, "tool_call_id", None),
                  "ts": now}
    elif isinstance(raw, Mapping):
        if "role" not in raw or "content" not in raw:
            raise InvalidInputError(f"{where}: a dict message needs 'role' and 'content'")
        role = raw["role"]
        text = _text_of(raw["content"], where)
        fields = {"name": raw.get("name"), "tool_call_id": raw.get("tool_call_id"),
                  "ts": _timestamp(raw.get("timestamp"), now, where)}
    else:
        raise InvalidInputError(f"{where}: expected a LangChain message or a dict with 'role' "
                                f"and 'content', got {type(raw).__name__}")
    if not isinstance(role, str) or role.lower() not in ROLE_ALIASES:
        allowed = ", ".join(sorted(ROLE_ALIASES))
        raise InvalidInputError(f"{where}: role {role!r} is not one of {allowed}")
    if not text.strip():
        return None
    return {"role": ROLE_ALIASES[role.lower()], "content": text, **fields}


def normalize_messages(
    messages: Sequence[Any], config: EpisodicConfig, *, now: datetime, strict: bool = True
) -> list[dict[str, Any]]:
    """Validate and normalise a batch (limits included) before anything is written.

    A message over ``config.max_message_bytes`` raises :class:`LimitExceededError` with
    ``strict``; without, it is cut to fit (:func:`fit_content`) and its dict carries
    :data:`CUT_FLAG` (its size before the cut)."""
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
        raise InvalidInputError("messages must be a list of messages")
    if len(messages) > config.max_messages_per_call:
        raise LimitExceededError(
            f"{len(messages)} messages in one call; the limit is "
            f"{config.max_messages_per_call}: split the conversation into batches")
    out: list[dict[str, Any]] = []
    for i, raw in enumerate(messages):
        norm = _normalize_one(raw, i, now)
        if norm is None:
            continue
        size = len(norm["content"].encode("utf-8"))
        if size > config.max_message_bytes:
            if strict:
                raise LimitExceededError(
                    f"message {i} ({norm['role']}) is {size} bytes; the limit is "
                    f"{config.max_message_bytes} bytes a message. Nothing was written")
            norm["content"] = fit_content(norm["content"], config.max_message_bytes)
            norm[CUT_FLAG] = size
        out.append(norm)
    return out
