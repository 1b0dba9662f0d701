"""Compaction: a long thread's model input is head + overlays + tail, within a budget.

When the thread's messages pass ``budget_tokens`` (the episodic tier's estimate: content-aware
chars per token plus a per-message overhead), the model's input becomes the episodic tier's
window (``profile.episodic.window(thread, budget, compact=False)``: the session's first
messages, the summaries (overlays) of the ranges between, and the newest messages) followed
by the state's own newest messages. It is built by :func:`plan_compacted`:

- The window's tail is mapped back onto the state through the stored ids
  (:mod:`langmem_edge.graphs.history`), and the state's messages from there on are used as
  they are (with their real tool calls), together with every newer message not yet ingested.
- **An AI message and its tool messages are never split**: a tail that would start at a tool
  message starts at the AI message that called it, and whole spans (an AI message with its
  tool messages, or one message) are dropped from the front, oldest first, until head +
  overlays + tail fit the budget. The newest span is always kept (the head and overlays go
  first when even that is over the budget).
- The head and the overlays are shown as ``HumanMessage``\\s (an overlay's text is a summary
  of what a user may have written: data, not instructions), flagged as injected.

**Where the summaries come from, and when.** The window here is only read
(``compact=False``: no model call on the reply's path). Summarising a new range and its
pre-compaction flush (at most 10 durable facts, confidence 0.6, source "pre-compaction") run in
the thread's post-turn job (:mod:`langmem_edge.graphs.extraction`), right after that turn's
messages are ingested, so the window always reads ingested messages, and the next turn sees
the new overlay. Until a thread's first job has run, the window is empty and the input is the
state's newest spans that fit.

**Non-destructive by default**: the checkpointed messages stay; only the request is
rewritten. With ``trim_state`` the state itself is cut to the same head + overlays + tail
(``RemoveMessage(REMOVE_ALL_MESSAGES)`` then the kept messages, as langchain's
``SummarizationMiddleware`` does); the removed messages stay in the episodic tier.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langmem_edge.graphs.history import Entry, EntryCache, flagged, may_exceed, total_tokens
from langmem_edge.graphs.run import MemoryRun
from langmem_edge.memory.core.plans import Call, Plan
from langmem_edge.memory.episodic.compaction import ContextWindow

__all__ = ["DEFAULT_COMPACTION_BUDGET_TOKENS", "compacted_view", "plan_compacted", "spans"]

DEFAULT_COMPACTION_BUDGET_TOKENS = 8_000
"""Estimated tokens of a thread's messages above which the model sees a compacted view."""


def spans(messages: Sequence[BaseMessage]) -> list[tuple[int, int]]:
    """``[begin, end)`` spans that must stay together: an AI message with the tool messages
    that answer it, or one message. A tool message with no AI message before it in
    ``messages`` is its own span."""
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(messages):
        j = i + 1
        if isinstance(messages[i], AIMessage) and messages[i].tool_calls:
            while j < len(messages) and isinstance(messages[j], ToolMessage):
                j += 1
        out.append((i, j))
        i = j
    return out


def _tail_start(items: Sequence[Entry], window: ContextWindow) -> int | None:
    """State index where the window's tail starts, or ``None`` when no message of the tail
    is in the state (nothing of the thread ingested yet)."""
    tail_ids = {m.id for m in window.tail}
    i = len(items) - 1
    while i >= 0 and items[i].id not in tail_ids:  # newer than anything ingested
        i -= 1
    if i < 0:
        return None
    while i >= 0 and items[i].id in tail_ids:
        i -= 1
    return items[i + 1].index


def compacted_view(messages: Sequence[BaseMessage], items: Sequence[Entry],
                   window: ContextWindow, budget_tokens: int
                   ) -> tuple[list[BaseMessage], int]:
    """``(prefix, start)``: the head and overlays to show, and the state index the kept
    messages start at (see the module docstring)."""
    start = _tail_start(items, window)
    prefix: list[BaseMessage] = []
    fixed = 0
    if start is not None:
        prefix = [flagged(HumanMessage(content=m.content)) for m in window.head]
        prefix += [flagged(HumanMessage(content=o.render())) for o in window.overlays]
        fixed = (sum(m.tokens for m in window.head)
                 + sum(o.tokens for o in window.overlays))
    tokens = {e.index: e.tokens for e in items}
    groups = spans(messages)
    begin = 0 if start is None else next(
        (k for k, (b, e) in enumerate(groups) if b <= start < e), len(groups) - 1)
    kept = groups[begin:]
    cost = [sum(tokens.get(i, 0) for i in range(b, e)) for b, e in kept]
    while len(kept) > 1 and fixed + sum(cost) > budget_tokens:
        kept, cost = kept[1:], cost[1:]
    if kept and fixed + sum(cost) > budget_tokens:
        prefix, fixed = [], 0
    return prefix, (kept[0][0] if kept else len(messages))


def plan_compacted(run: MemoryRun, messages: Sequence[BaseMessage], budget_tokens: int,
                   cache: EntryCache) -> Plan[tuple[list[BaseMessage], int] | None]:
    """Plan: ``(prefix, start)`` of the compacted view of ``messages``
    (:func:`compacted_view`), or ``None`` while they fit ``budget_tokens`` (or the run has
    no thread). Entries come from ``cache`` (a long thread is converted once)."""
    config = run.memory.config.episodic
    if not run.thread or not may_exceed(messages, budget_tokens, config):
        return None
    items = cache.entries(messages, run.thread, config)
    if total_tokens(items) <= budget_tokens:
        return None
    episodic = run.profile.episodic
    window = yield Call(episodic.window, episodic.awindow, (run.thread, budget_tokens),
                        {"compact": False, "contact": run.contact})
    return compacted_view(messages, items, window, budget_tokens)
