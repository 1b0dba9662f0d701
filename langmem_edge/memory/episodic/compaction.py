"""Compaction: the model's view of a long conversation, and the overlays that summarise it.

Messages are never rewritten. What changes is the *window* a model sees for a token budget
``B`` (tokens estimated by :mod:`langmem_edge.memory.core.tokens`, plus ``message_overhead_tokens``
per message):

- **head**, ``floor(0.10 B)``: the first ``head_messages`` (2) messages of the session. When
  they do not both fit, each gets half of the head budget (a message needing less gives the
  rest to the other) and the one over its share is *cut* (its text truncated and marked
  ``[...]``), never dropped. (A share smaller than ``message_overhead_tokens`` leaves an empty
  message that still costs its overhead: budgets under ~100 tokens are not honoured exactly.)
- **overlays**, ``floor(0.20 B)``: summaries bound to a message range (``from_seq``..``to_seq``,
  ``from_ts``/``to_ts``, ``message_count``, ``summary``, ``tokens``) that lie wholly between
  head and tail. The newest that fit are chosen and rendered in conversation order, as system
  messages.
- **tail**, the rest (``B`` minus the two above, at least 70 %): the newest messages,
  verbatim, newest first until the next one does not fit. The newest message is always in
  the tail (cut if it alone exceeds the tail budget).

History is read newest first in pages of ``page_size`` (10) rows. Order comes from the tier's
own per-session sequence number ``seq``, never from the store's result order (which differs
between backends: InMemoryStore returns insertion order, SQL-like stores and ChromaStore
``updated_at`` descending). Each message also carries its page, ``page = str(seq //
page_size)`` (the page size is fixed per session, in its session record, when the session
starts), and a page is one ``search`` with the equality filter ``{"profile", "page"}`` and
``limit=page_size``. Equality on a short string is the filter every store runs natively;
a numeric range filter would be exact too but ChromaStore evaluates ranges in Python over the
whole namespace (about 1 s per page at 10,000 messages). Reading stops when the tail budget
is full or when the next page would pass ``max_rows_scanned`` (200) rows. The session record
and the session's overlays mark, read first, list the ids of its first page, of its newest
pages (:mod:`.pages`) and of its overlays (:func:`overlays_mark`), so those are read by key,
not searched: a window is that read, one batch of the head's and the newest page's ids with
the overlays', then the older pages the tail seems to need by the tokens of those read
(more, twice as many a batch, while it has room). Nothing is kept between calls. Overlays a
mark does not list are listed without a store filter (ChromaStore pays a pass over the
collection for any pushed-down filter), and kept only when their ``profile`` matches.

No message is both in an overlay and in the tail: when an overlay straddles the tail's start
(the budget grew since it was made), the tail starts after the overlay instead.

**Compaction.** When the stretch between head and tail holds a range not covered by any
stored overlay, the *oldest* uncovered range of at least ``min_range_messages`` (3) messages
is summarised, up to ``max_range_messages`` (60) of it, into one new overlay per call (with the
model when there is one, extractively otherwise), and the **pre-compaction flush** lifts up to
``flush_max_facts`` (10) durable memories (facts, events, instructions; no tasks) from that
range with source ``"pre-compaction"`` and confidence 0.6. They are returned in
:attr:`ContextWindow.flushed` for the Profile to write through the semantic tier; since a range
is summarised once, it is flushed once. An overlay's id is derived from its session and range,
so two processes compacting the same range write the same record. Uncovered stretches shorter
than 3 messages wait until they grow. Model calls run before the overlay is written: when
they fail, nothing is written.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from functools import partial
from itertools import takewhile
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.store.base import GetOp, Item, Op, PutOp, SearchOp
from pydantic import BaseModel, Field

from langmem_edge.errors import InvalidInputError
from langmem_edge.memory.config import EpisodicConfig
from langmem_edge.memory.core.models import ModelCall, message_text
from langmem_edge.memory.core.plans import ModelStep, Plan, StoreStep
from langmem_edge.memory.core.tokens import estimate_tokens, truncate_to_tokens
from langmem_edge.memory.episodic.extraction import (
    ExtractedMemory,
    StoredMessage,
    model_extraction_plan,
)
from langmem_edge.memory.episodic.pages import recent_keys
from langmem_edge.memory.episodic.rules import extractive_summary, rule_based_memories

__all__ = [
    "ContextWindow",
    "Overlay",
    "WindowMessage",
    "fill_head",
    "fill_tail",
    "history_ops",
    "in_range",
    "overlay_id",
    "overlays_mark",
    "page_ops",
    "pick_overlays",
    "split_budget",
    "uncovered_ranges",
    "window_plan",
]

DURABLE_KINDS = frozenset({"fact", "event", "instruction"})
"""Kinds the pre-compaction flush keeps (tasks are not durable)."""

SUMMARY_PROMPT = """\
Summarise this part of a conversation in at most {tokens} tokens (about {words} words) of plain
prose. Keep names, numbers, dates, decisions, stated preferences and open tasks; say who said
what ("the user", "the assistant"). Output only the summary."""


class Overlay(BaseModel):
    """A summary bound to a message range of one session."""

    id: str
    session_id: str
    from_seq: int
    to_seq: int
    from_ts: datetime
    to_ts: datetime
    message_count: int
    summary: str
    tokens: int
    method: Literal["model", "extractive"]
    created_at: datetime

    def render(self) -> str:
        """The text the model sees for this overlay."""
        return (f"[Summary of messages {self.from_seq}-{self.to_seq} ({self.message_count} "
                f"messages, {self.from_ts:%Y-%m-%d %H:%M} to {self.to_ts:%Y-%m-%d %H:%M})] "
                f"{self.summary}")

    def to_value(self, profile: str) -> dict[str, Any]:
        """The store value of this overlay."""
        value = self.model_dump(mode="json")
        value.update(kind="overlay", profile=profile)
        return value

    @classmethod
    def from_value(cls, value: dict[str, Any]) -> Overlay:
        """Rebuild an overlay from its store value."""
        return cls.model_validate({k: v for k, v in value.items() if k in cls.model_fields})


class WindowMessage(StoredMessage):
    """A message as placed in a window: its estimated tokens, and whether it was cut."""

    tokens: int
    truncated: bool = False


class ContextWindow(BaseModel):
    """The model's view of a session for a budget; see the module docstring."""

    session_id: str
    budget_tokens: int
    head_budget: int
    overlay_budget: int
    tail_budget: int
    head: list[WindowMessage] = Field(default_factory=list)
    overlays: list[Overlay] = Field(default_factory=list)
    tail: list[WindowMessage] = Field(default_factory=list)
    rows_scanned: int = 0
    uncovered: list[tuple[int, int]] = Field(default_factory=list)
    new_overlay: Overlay | None = None
    flushed: list[ExtractedMemory] = Field(default_factory=list)

    @property
    def tokens(self) -> int:
        """Estimated tokens of everything in the window."""
        return (sum(m.tokens for m in self.head) + sum(o.tokens for o in self.overlays)
                + sum(m.tokens for m in self.tail))

    def to_messages(self) -> list[BaseMessage]:
        """LangChain messages: head, overlays (system messages), tail. Tool results are given
        as human messages prefixed ``[tool result]`` (their tool calls may be out of view)."""
        out: list[BaseMessage] = [_as_message(m) for m in self.head]
        out += [SystemMessage(content=o.render()) for o in self.overlays]
        out += [_as_message(m) for m in self.tail]
        return out


def _as_message(msg: StoredMessage) -> BaseMessage:
    if msg.role == "user":
        return HumanMessage(content=msg.content, name=msg.name)
    if msg.role == "assistant":
        return AIMessage(content=msg.content, name=msg.name)
    if msg.role == "system":
        return SystemMessage(content=msg.content)
    label = f"[tool result{': ' + msg.name if msg.name else ''}]"
    return HumanMessage(content=f"{label} {msg.content}")


def overlay_id(session_id: str, from_seq: int, to_seq: int) -> str:
    """Deterministic overlay key: 32 hex of sha256 over JSON ``[session, from, to]``."""
    raw = json.dumps([session_id, from_seq, to_seq], separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]


def split_budget(budget_tokens: int, config: EpisodicConfig) -> tuple[int, int, int]:
    """``(head, overlays, tail)`` budgets: floors of the head/overlay shares, tail the rest."""
    head = math.floor(budget_tokens * config.head_share)
    overlays = math.floor(budget_tokens * config.overlay_share)
    return head, overlays, budget_tokens - head - overlays


def _ratios(config: EpisodicConfig) -> dict[str, float]:
    return {
        "cjk_threshold": config.cjk_threshold,
        "cjk_ratio": config.cjk_chars_per_token,
        "json_threshold": config.json_threshold,
        "json_ratio": config.json_chars_per_token,
        "default_ratio": config.default_chars_per_token,
    }


def message_tokens(text: str, config: EpisodicConfig) -> int:
    """Estimated tokens of one message in a window (text plus per-message overhead)."""
    return estimate_tokens(text, **_ratios(config)) + config.message_overhead_tokens


def _placed(msg: StoredMessage, budget: int | None, config: EpisodicConfig,
            tokens: int | None = None) -> WindowMessage:
    """``msg`` in a window: whole (``tokens``, its estimate, when the caller has it) or cut
    to ``budget``."""
    text, cut = msg.content, False
    if budget is not None:
        text, cut = truncate_to_tokens(msg.content, budget - config.message_overhead_tokens,
                                       **_ratios(config))
        tokens = None
    data = msg.model_dump(exclude={"content"})
    return WindowMessage(**data, content=text, truncated=cut,
                         tokens=message_tokens(text, config) if tokens is None else tokens)


def fill_head(
    messages: Sequence[StoredMessage], budget: int, config: EpisodicConfig
) -> list[WindowMessage]:
    """Place the head messages: whole when they fit, else fair shares with the over-share
    message(s) cut (never dropped)."""
    need = [message_tokens(m.content, config) for m in messages]
    if sum(need) <= budget:
        return [_placed(m, None, config, t) for m, t in zip(messages, need, strict=True)]
    placed: list[WindowMessage] = []
    remaining, left = budget, len(messages)
    order = sorted(range(len(messages)), key=lambda i: need[i])  # small ones first
    shares: dict[int, int] = {}
    for i in order:
        share = remaining // left
        shares[i] = min(need[i], share)
        remaining -= shares[i]
        left -= 1
    for i, msg in enumerate(messages):
        placed.append(_placed(msg, None if shares[i] >= need[i] else shares[i], config))
    return placed


def fill_tail(
    newest_first: Sequence[StoredMessage], budget: int, config: EpisodicConfig, *,
    cost: Callable[[StoredMessage], int] | None = None,
) -> tuple[list[WindowMessage], bool]:
    """Tail from messages newest first: ``(tail oldest-first, budget_reached)``. The newest
    message is always placed (cut if needed); then whole messages while they fit. ``cost``
    gives a message's :func:`message_tokens` (a memo of them); computed when omitted."""
    tail: list[WindowMessage] = []
    used = 0
    for i, msg in enumerate(newest_first):
        cost_i = cost(msg) if cost is not None else message_tokens(msg.content, config)
        if i == 0 and cost_i > budget:
            tail.append(_placed(msg, budget, config))
            return tail, True
        if used + cost_i > budget:
            tail.reverse()
            return tail, True
        tail.append(_placed(msg, None, config, cost_i))
        used += cost_i
    tail.reverse()
    return tail, False


def uncovered_ranges(overlays: Sequence[Overlay], lo: int, hi: int) -> list[tuple[int, int]]:
    """Inclusive seq ranges within ``[lo, hi)`` that no overlay covers, oldest first."""
    gaps: list[tuple[int, int]] = []
    cursor = lo
    for ov in sorted(overlays, key=lambda o: o.from_seq):
        if ov.to_seq < cursor:
            continue
        if ov.from_seq >= hi:
            break
        if ov.from_seq > cursor:
            gaps.append((cursor, min(ov.from_seq, hi) - 1))
        cursor = max(cursor, ov.to_seq + 1)
    if cursor < hi:
        gaps.append((cursor, hi - 1))
    return gaps


def pick_overlays(
    overlays: Sequence[Overlay], lo: int, hi: int, budget: int
) -> list[Overlay]:
    """Overlays wholly within ``[lo, hi)``: the newest that fit ``budget``, in order."""
    inside = [o for o in overlays if o.from_seq >= lo and o.to_seq < hi]
    chosen: list[Overlay] = []
    used = 0
    for ov in sorted(inside, key=lambda o: (o.to_seq, o.from_seq), reverse=True):
        if used + ov.tokens > budget:
            continue
        if any(not (ov.to_seq < c.from_seq or ov.from_seq > c.to_seq) for c in chosen):
            continue  # never render two overlays over the same messages
        chosen.append(ov)
        used += ov.tokens
    return sorted(chosen, key=lambda o: o.from_seq)


def overlays_mark(profile: str, session_id: str, ids: Iterable[str]) -> dict[str, Any]:
    """The value of a session's overlays mark, ``(*R, "overlays")`` / session id: the ids of
    its overlays, so a window reads them by key instead of listing the namespace (a filtered
    pass over the collection on ChromaStore). Written after every overlay write; a deletion
    of overlays deletes it (the next window lists them and writes it again). A mark without
    ``ids`` (earlier releases) is listed the same way."""
    return {"kind": "overlays-mark", "profile": profile, "session_id": session_id,
            "ids": sorted(set(ids))}


def page_ops(ns: tuple[str, ...], profile: str, lo: int, hi: int, page_size: int
             ) -> tuple[SearchOp, ...]:
    """Ops reading the messages with ``lo <= seq < hi``: one equality search per history page
    (``{"profile": ..., "page": str(seq // page_size)}``); filter with :func:`in_range`."""
    if hi <= lo:
        return ()
    return tuple(SearchOp(ns, filter={"profile": profile, "page": str(b)}, limit=page_size)
                 for b in range(lo // page_size, (hi - 1) // page_size + 1))


def history_ops(ns: tuple[str, ...], profile: str, lo: int, hi: int, page_size: int,
                record: Mapping[str, Any] | None) -> tuple[GetOp | SearchOp, ...]:
    """Ops reading the messages with ``lo <= seq < hi`` under session ``record``: by key when
    the record lists their ids (``recent``, :mod:`.pages`), else :func:`page_ops`; filter the
    results with :func:`in_range`."""
    keys = recent_keys(record, lo, hi)
    if keys is None:
        return page_ops(ns, profile, lo, hi, page_size)
    return tuple(GetOp(ns, key) for key in keys)


def in_range(results: Sequence[Sequence[Item] | Item | None], lo: int, hi: int, *,
             profile: str | None = None) -> list[StoredMessage]:
    """The messages with ``lo <= seq < hi`` in the results of :func:`page_ops` or
    :func:`history_ops` (pages of items, or items read by key), in seq order; with
    ``profile``, only that profile's."""
    items = [it for r in results for it in ((r,) if isinstance(r, Item) else r or ())]
    found = [StoredMessage.from_value(it.key, it.value) for it in items
             if profile is None or it.value.get("profile") == profile]
    return sorted((m for m in found if lo <= m.seq < hi), key=lambda m: (m.seq, m.id))


def _build_overlay(session_id: str, lo: int, hi: int, msgs: Sequence[StoredMessage],
                   summary: str, method: str, config: EpisodicConfig) -> Overlay:
    now = datetime.now(UTC)
    ov = Overlay(
        id=overlay_id(session_id, lo, hi), session_id=session_id, from_seq=lo, to_seq=hi,
        from_ts=msgs[0].ts if msgs else now, to_ts=msgs[-1].ts if msgs else now,
        message_count=len(msgs), summary=summary, tokens=0, method=method,  # type: ignore
        created_at=now)
    return ov.model_copy(update={"tokens": message_tokens(ov.render(), config)})


def window_plan(
    *,
    messages_ns: tuple[str, ...],
    overlays_ns: tuple[str, ...],
    sessions_ns: tuple[str, ...],
    profile: str,
    session_id: str,
    budget_tokens: int,
    config: EpisodicConfig,
    model: BaseChatModel | None,
    compact: bool,
) -> Plan[ContextWindow]:
    """Plan: assemble the window of ``session_id`` and, when ``compact``, add at most one
    overlay (with its pre-compaction flush). See the module docstring. Nothing is kept
    between calls: the session record is read first, then the pages the window needs, by key
    where the record lists their ids (:mod:`.pages`)."""
    if budget_tokens <= 0:
        raise InvalidInputError(f"budget_tokens must be > 0, got {budget_tokens}")
    head_b, over_b, tail_b = split_budget(budget_tokens, config)
    window = ContextWindow(session_id=session_id, budget_tokens=budget_tokens,
                           head_budget=head_b, overlay_budget=over_b, tail_budget=tail_b)
    ov_page = config.overlay_page_size
    marks_ns = overlays_ns[:-1]
    meta, mark = yield StoreStep((GetOp(sessions_ns, session_id),
                                  GetOp(marks_ns, session_id)))
    if meta is None or meta.value.get("profile") != profile:
        return window
    listed = mark.value.get("ids") if mark is not None and (
        mark.value.get("profile") == profile) else None
    by_key = isinstance(listed, list)
    n = int(meta.value["next_seq"])
    ps = int(meta.value.get("page_size", config.page_size))
    head_n = min(config.head_messages, n)
    cap = config.max_rows_scanned

    def read(wanted: Sequence[int]) -> Plan[dict[int, tuple[StoredMessage, ...]]]:
        """History pages by number, in one batch (by key where the record lists their ids),
        with the session's overlays on the first call (by key where the mark lists them,
        else listed without a store filter: a pushed-down filter costs some stores a pass
        over the collection; checked against the profile below)."""
        steps = [history_ops(messages_ns, profile, b * ps, (b + 1) * ps, ps, meta.value)
                 for b in wanted]
        listing: tuple[Op, ...] = ()
        if not overlays_read:
            listing = (tuple(GetOp(overlays_ns, key) for key in listed) if by_key
                       else (SearchOp(overlays_ns, limit=ov_page),))
        found = yield StoreStep((*listing, *(op for step in steps for op in step)))
        if listing:
            head, found = found[:len(listing)], found[len(listing):]
            if by_key:
                raw_overlays.extend(it for it in head if isinstance(it, Item))
            else:
                raw_overlays.extend(head[0])
        got, pos = {}, 0
        for b, step in zip(wanted, steps, strict=True):
            got[b] = tuple(in_range(found[pos:pos + len(step)], b * ps, (b + 1) * ps,
                                    profile=profile))
            pos += len(step)
        return got

    raw_overlays: list[Item] = []
    overlays_read = False

    def cost(msg: StoredMessage) -> int:
        return message_tokens(msg.content, config)

    # head and the newest history page first (with the overlays), then older pages while the
    # tail has room (each step one batch)
    bucket, last_bucket = (n - 1) // ps, head_n // ps
    head_pages = range((head_n - 1) // ps + 1) if head_n else range(0)
    got = yield from read([*head_pages, bucket])
    overlays_read = True
    while not by_key and len(raw_overlays) < config.max_overlays \
            and len(raw_overlays) % ov_page == 0 and raw_overlays:  # a full page: maybe more
        (more,) = yield StoreStep((SearchOp(overlays_ns, limit=ov_page,
                                            offset=len(raw_overlays)),))
        raw_overlays += more
        if len(more) < ov_page:
            break
    step = 1
    head_msgs = [m for b in head_pages for m in got[b] if m.seq < head_n]
    scanned: list[StoredMessage] = []  # newest first
    used, full = 0, False
    while True:
        lo = max(head_n, bucket * ps)
        for msg in reversed(got[bucket]):
            if not lo <= msg.seq < n:
                continue
            if not full:  # fill_tail's rule: the newest always, then while whole ones fit
                need = cost(msg)
                full = need > tail_b if not scanned else used + need > tail_b
                used += need
            scanned.append(msg)
        bucket -= 1
        if full or bucket < last_bucket or len(scanned) + ps > cap:
            break
        if bucket not in got:  # pages listed by key: as many as the tail seems to need
            room = max(1, (cap - len(scanned)) // ps)  # (by the tokens of those read so far)
            wanted = math.ceil((tail_b - used) * len(scanned) / max(used, 1) / ps) + 1
            more = list(takewhile(
                lambda b: recent_keys(meta.value, b * ps, (b + 1) * ps) is not None,
                range(bucket, max(last_bucket - 1, bucket - min(max(step, wanted), room)),
                      -1)))
            got.update((yield from read(more or [bucket])))  # searched: one page a step
            step *= 2
    tail, _ = fill_tail(scanned, tail_b, config, cost=cost)
    newest = tail[-1].seq if tail else n
    overlays = sorted((Overlay.from_value(it.value) for it in raw_overlays
                       if it.value.get("profile") == profile), key=lambda o: o.from_seq)
    overlays = [o for o in overlays if o.to_seq < newest]
    tail_start = tail[0].seq if tail else n
    for ov in overlays:  # an overlay straddling the tail's start pushes the tail forward
        if ov.from_seq < tail_start <= ov.to_seq:
            tail_start = ov.to_seq + 1
    tail = [m for m in tail if m.seq >= tail_start]

    gaps = uncovered_ranges(overlays, head_n, tail_start)
    if compact and not by_key:  # listed: write the mark that lists them
        yield StoreStep((PutOp(marks_ns, session_id, overlays_mark(
            profile, session_id, [it.key for it in raw_overlays]), index=False),))
    todo = next((g for g in gaps if g[1] - g[0] + 1 >= config.min_range_messages), None)
    if compact and todo is not None:
        lo, hi_seq = todo[0], min(todo[1], todo[0] + config.max_range_messages - 1)
        found = yield StoreStep(history_ops(messages_ns, profile, lo, hi_seq + 1, ps,
                                            meta.value))
        range_msgs = in_range(found, lo, hi_seq + 1, profile=profile)
        overlay, flushed = yield from _compact_plan(session_id, lo, hi_seq, range_msgs,
                                                    over_b, config, model)
        yield StoreStep((PutOp(overlays_ns, overlay.id, overlay.to_value(profile),
                               index=False),))
        # then the mark listing it: a window reads the overlays by key
        yield StoreStep((PutOp(marks_ns, session_id, overlays_mark(
            profile, session_id, [*(it.key for it in raw_overlays), overlay.id]),
            index=False),))
        by_key = True
        overlays = sorted([*overlays, overlay], key=lambda o: o.from_seq)
        window.new_overlay, window.flushed = overlay, flushed
        gaps = uncovered_ranges(overlays, head_n, tail_start)

    window.head = fill_head(head_msgs, head_b, config)
    window.overlays = pick_overlays(overlays, head_n, tail_start, over_b)
    window.tail = tail
    window.rows_scanned = len(scanned)
    window.uncovered = gaps
    return window


def _compact_plan(
    session_id: str, lo: int, hi: int, msgs: Sequence[StoredMessage], overlay_budget: int,
    config: EpisodicConfig, model: BaseChatModel | None,
) -> Plan[tuple[Overlay, list[ExtractedMemory]]]:
    """Plan: summary and pre-compaction flush of one range (model calls, no writes)."""
    probe = _build_overlay(session_id, lo, hi, msgs, "", "extractive", config)
    max_tokens = max(1, min(config.overlay_summary_max_tokens, overlay_budget - probe.tokens))
    if not msgs:
        return probe, []
    if model is None:
        summary = extractive_summary(msgs, max_tokens=max_tokens, **_ratios(config))
        flushed = rule_based_memories(
            msgs, source=config.flush_source, confidence=config.flush_confidence,
            session_id=session_id, kinds=DURABLE_KINDS, max_items=config.flush_max_facts,
            max_fact_chars=config.max_fact_chars)
        return _build_overlay(session_id, lo, hi, msgs, summary, "extractive", config), flushed
    rendered = "\n".join(f"{m.role}: {m.content}" for m in msgs)
    prompt = SUMMARY_PROMPT.format(tokens=max_tokens, words=int(max_tokens * 0.75))
    (reply,) = yield ModelStep((ModelCall(
        model, [SystemMessage(content=prompt), HumanMessage(content=rendered)],
        f"summarise messages {lo}-{hi}", structured=False),))
    summary, _ = truncate_to_tokens(message_text(reply).strip(), max_tokens, **_ratios(config))
    flushed = yield from model_extraction_plan(
        msgs, model, config=config, source=config.flush_source,
        confidence=config.flush_confidence, session_id=session_id, detail=False,
        kinds=DURABLE_KINDS, max_items=config.flush_max_facts, fallback=partial(
            rule_based_memories, source=config.flush_source,
            confidence=config.flush_confidence, session_id=session_id, kinds=DURABLE_KINDS,
            max_fact_chars=config.max_fact_chars))
    return _build_overlay(session_id, lo, hi, msgs, summary, "model", config), flushed
