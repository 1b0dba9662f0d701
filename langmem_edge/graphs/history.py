"""A thread's messages as the episodic tier stores them: :func:`entries`.

The graph state holds LangChain messages; the episodic tier stores each as ``{"role",
"content", "name", "tool_call_id"}`` under the id ``sha256(session, role, content)``
(:mod:`langmem_edge.memory.episodic.messages`). Extraction ingests these stored forms and
compaction maps the tier's window back onto the state through the same ids, so both read one
conversion: :func:`entries`.

A message over the tier's size limit (``max_message_bytes``, 32 KB) is cut to fit, marked
``[...]``, instead of failing the whole ingest (a long tool result would otherwise keep a
thread from ever being remembered): the episodic tier's own cut
(:func:`~langmem_edge.memory.episodic.messages.fit_content`, what ``Profile.ingest`` does by
default), so the id is the one the tier gives the message. Empty messages have no entry, as
the tier skips them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from langchain_core.messages import BaseMessage

from langmem_edge._lru import LRU
from langmem_edge.errors import InvalidInputError
from langmem_edge.memory.config import EpisodicConfig
from langmem_edge.memory.episodic.compaction import message_tokens
from langmem_edge.memory.episodic.messages import fit_content, message_id, normalize_messages

__all__ = [
    "DEFAULT_ENTRY_CACHE_SIZE",
    "INJECTED_FLAG",
    "Entry",
    "EntryCache",
    "entries",
    "flagged",
    "is_injected",
    "may_exceed",
    "total_tokens",
]

_UNLIMITED = 2**62
"""Limits lifted while converting (a message over the size limit is cut afterwards)."""


@dataclass(frozen=True)
class Entry:
    """One state message and its stored form."""

    index: int
    """Position in the state's message list."""
    id: str
    """The episodic tier's id of the stored form."""
    stored: dict[str, Any]
    """What is ingested: ``role``, ``content`` (cut to the size limit), ``name``,
    ``tool_call_id``."""
    tokens: int
    """Estimated tokens in a window (content plus the per-message overhead)."""


INJECTED_FLAG = "langmem_edge_injected"
"""``additional_kwargs`` flag of a message this package put in front of the model (the memory
block, a window's head and overlays): never taken for the user's, never ingested."""


def flagged(message: BaseMessage) -> BaseMessage:
    """``message`` flagged as injected (:data:`INJECTED_FLAG`)."""
    message.additional_kwargs[INJECTED_FLAG] = True
    return message


def is_injected(message: BaseMessage) -> bool:
    """Whether ``message`` was injected by this package."""
    return bool(getattr(message, "additional_kwargs", {}).get(INJECTED_FLAG))


def entries(messages: Sequence[BaseMessage], thread: str, config: EpisodicConfig
            ) -> list[Entry]:
    """The entries of ``messages`` (empty and injected ones left out), in order."""
    now = datetime.now(UTC)
    unlimited = config.model_copy(update={"max_message_bytes": _UNLIMITED,
                                          "max_messages_per_call": _UNLIMITED})
    out: list[Entry] = []
    for i, message in enumerate(messages):
        if is_injected(message):
            continue
        try:
            found = normalize_messages([message], unlimited, now=now)
        except InvalidInputError:  # not a message the tier takes (an unknown role)
            continue
        if not found:
            continue
        norm = found[0]
        content = fit_content(norm["content"], config.max_message_bytes)
        stored = {"role": norm["role"], "content": content, "name": norm["name"],
                  "tool_call_id": norm["tool_call_id"]}
        out.append(Entry(index=i, id=message_id(thread, norm["role"], content), stored=stored,
                         tokens=message_tokens(content, config)))
    return out


def total_tokens(items: Sequence[Entry]) -> int:
    """Estimated tokens of these entries in a window."""
    return sum(e.tokens for e in items)


def may_exceed(messages: Sequence[BaseMessage], budget_tokens: int, config: EpisodicConfig
               ) -> bool:
    """A cheap bound: ``False`` when ``messages`` certainly fit ``budget_tokens`` (their
    characters at the densest ratio of the estimate, plus the overhead, stay under it)."""
    ratio = min(config.cjk_chars_per_token, config.json_chars_per_token,
                config.default_chars_per_token)
    chars = sum(len(m.content) if isinstance(m.content, str) else len(str(m.content))
                for m in messages)
    calls = sum(len(str(getattr(m, "tool_calls", None) or "")) for m in messages)
    bound = (chars + calls) / ratio + len(messages) * (config.message_overhead_tokens + 1)
    return bound > budget_tokens


DEFAULT_ENTRY_CACHE_SIZE = 100_000
"""Entries an :class:`EntryCache` keeps (least recently used go first)."""


class EntryCache:
    """:func:`entries` with each message's entry kept, so a long thread's messages are
    converted once, not at every model call (the conversion scans every character).

    An entry is keyed by the thread, the message's id and a hash of its content and tool
    calls, so a message edited in place (same id) is converted again. Thread-safe.
    """

    def __init__(self, size: int = DEFAULT_ENTRY_CACHE_SIZE) -> None:
        self.size = size
        self._items: LRU[tuple[Any, ...], tuple[Entry | None]] = LRU(size)

    @staticmethod
    def _key(message: BaseMessage, thread: str) -> tuple[Any, ...] | None:
        if not message.id:
            return None
        content = message.content
        calls = getattr(message, "tool_calls", None)
        return (thread, message.id, message.type,
                hash(content if isinstance(content, str) else repr(content)),
                hash(repr(calls)) if calls else 0)

    def entries(self, messages: Sequence[BaseMessage], thread: str, config: EpisodicConfig
                ) -> list[Entry]:
        """The entries of ``messages``, as :func:`entries` gives them."""
        keys = [self._key(m, thread) for m in messages]
        found: dict[int, Entry | None] = {}
        for i, key in enumerate(keys):
            if key is not None and (kept := self._items.get(key)) is not None:
                found[i] = kept[0]
        missing = [i for i in range(len(messages)) if i not in found]
        fresh = {e.index: e for e in entries([messages[i] for i in missing], thread, config)}
        for j, i in enumerate(missing):
            made = fresh.get(j)
            found[i] = None if made is None else replace(made, index=i)
            if keys[i] is not None:
                self._items.put(keys[i], (found[i],))
        return [e if e.index == i else replace(e, index=i)
                for i in range(len(messages)) if (e := found[i]) is not None]
