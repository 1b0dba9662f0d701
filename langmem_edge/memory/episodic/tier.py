"""The episodic tier (L2): every message of every session, never rewritten.

Layout, under a profile's root ``R = (*app_namespace, "profiles", profile)`` of any langgraph
``BaseStore`` (only its public API: ``batch``/``abatch`` with ``GetOp``/``PutOp``/``SearchOp``):

- ``(*R, "messages", session_id)``: one item per message, key = message id, value
  ``{"kind": "message", "profile", "session_id", "seq", "page", "role", "text", "ts",
  "contact"?, "name"?, "tool_call_id"?, "embed_text"}``; ``text`` is the message as given,
  never rewritten; the item is put with ``index=["embed_text"]`` (what :mod:`.embedded`
  makes; the store's index config decides whether anything is embedded);
  ``page`` = ``str(seq // page_size)`` is how history is read (see :mod:`.compaction`);
- ``(*R, "overlays", session_id)``: compaction overlays (:mod:`.compaction`), not embedded;
- ``(*R, "sessions")``: one item per session, key = session id: ``next_seq``, ``count``,
  ``page_size``, first/last timestamps, contact, and ``epoch`` (a random token given when the
  session is created, or at the first ingest of a session from before it), ``recent`` and
  ``first``, the ids of the newest pages' messages and of the first page's (read by key,
  :mod:`.pages`), and
  ``tail``, the last messages' ids and text (the context of the next ingest's first
  message, :mod:`.embedded`). It is what makes ordering possible on any backend.

Every value carries ``profile`` and every read filters on it (a guard besides the namespace).

**Ingest** (validation, normalisation and ids in :mod:`.messages`). A message is a LangChain
message or a ``{"role", "content"}`` dict (optional ``name``, ``tool_call_id``, ``timestamp``);
roles user, assistant, system, tool (and their aliases). Its id is ``sha256(json([session_id,
role, content]))[:32]``, so a re-ingest adds nothing (the same text said twice by one role in
a session is stored once). Empty messages are skipped; an assistant's tool calls are appended
as ``[tool call] name({...})``. New messages get ``seq`` = the session's ``next_seq`` onwards.
Limits: ``max_messages_per_call`` (500) a call (more: ``LimitExceededError``, nothing
written) and ``max_message_bytes`` (32 KB) a message: a longer one is stored cut to fit,
marked ``" [...]"``, listed in ``IngestOutcome.cut`` (``strict=True``: refused). Everything
is validated, and extraction runs, before the messages and the session record are written in
one ``batch`` (one write of the episodic change protocol, :mod:`.writes`). Two processes
ingesting *new* messages into one session at once may give two the same ``seq`` (ties are
ordered by id); ingest a session from one writer at a time.

**Extraction** on ingest covers the new messages, with up to ``extraction_context_messages``
(2) earlier messages of the session shown as context: with a model,
:func:`~.extraction.model_extraction_plan` (a unit whose reply cannot be parsed falls back to
the rules, counted in ``IngestOutcome.fallbacks``; candidates dropped, ungrounded ones among
them, are in ``IngestOutcome.dropped``); without, :func:`~.rules.rule_based_memories`.
Results are :class:`~.extraction.ExtractedMemory` with source ``"turn"`` (per-turn extraction) and
confidence 0.5; the Profile writes them through the semantic tier.

**The extraction mark.** The session record's ``extracted_to`` is the first message whose
memories are not known to be written. ``ingest(..., confirm_later=True)`` leaves it where it
was, and the caller moves it with :meth:`EpisodicTier.confirm_extracted` once the memories
are written; every ingest of the session extracts the messages from the mark on
(``IngestOutcome.resumed``), so a failure between the two writes is repaired by the next
ingest. The Profile's ingest first offers the memories' puts to ride in the messages' own
batch (``MemoryPuts``; on a store that applies it whole), which then moves the mark too.

**Recall.** ``recall_conversation(query, mode=...)`` searches raw messages: ``"semantic"``
is the store's own search, ``"keyword"`` BM25 over the messages in scope, ``"hybrid"`` (the
default) the two fused by weighted RRF, each message scored with its neighbours
(:mod:`.recall`). Scopes: ``"conversation"`` (needs ``session_id``), ``"contact"`` (messages
ingested with that ``contact``; none given: the whole profile), ``"all"``.

**Deletion.** :meth:`EpisodicTier.delete_session` removes the session's messages, overlays and
record; :meth:`EpisodicTier.delete_messages` deletes messages with every overlay whose range
holds one (:func:`orphaned_messages`: those no remaining memory cites; docs/episodic.md).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from functools import partial
from typing import Any, Literal, TypeVar

from langchain_core.language_models import BaseChatModel
from langgraph.store.base import BaseStore, GetOp, Item, PutOp, SearchOp

from langmem_edge.errors import InvalidInputError
from langmem_edge.memory.config import EpisodicConfig
from langmem_edge.memory.core.labels import check_namespace
from langmem_edge.memory.core.layout import ProfileLayout
from langmem_edge.memory.core.models import RetryPolicy
from langmem_edge.memory.core.plans import Plan, StoreStep, run_async, run_sync
from langmem_edge.memory.core.stores import KeywordSearch
from langmem_edge.memory.episodic.compaction import (
    ContextWindow,
    Overlay,
    history_ops,
    in_range,
    overlays_mark,
    page_ops,
    window_plan,
)
from langmem_edge.memory.episodic.deletion import delete_messages_plan, delete_session_plan
from langmem_edge.memory.episodic.embedded import MESSAGE_INDEX_FIELDS, TAIL_FIELD, plan_after
from langmem_edge.memory.episodic.extraction import (
    ExtractedMemory,
    ExtractionStats,
    IngestOutcome,
    StoredMessage,
    model_extraction_plan,
)
from langmem_edge.memory.episodic.messages import (
    CUT_FLAG,
    ROLE_ALIASES,
    message_id,
    normalize_messages,
    orphaned_messages,
    validate_session_id,
)
from langmem_edge.memory.episodic.recall import (
    cut_off_keys,
    hybrid_ranking,
    keyword_only_ranking,
    message_fields,
    message_keyword_ranking,
    stands_alone,
)
from langmem_edge.memory.episodic.rules import rule_based_memories
from langmem_edge.memory.episodic.search import store_hybrid_plan
from langmem_edge.memory.episodic.sessions import mark_after, record_after_append
from langmem_edge.memory.episodic.writes import applies_whole, plan_new_rows
from langmem_edge.retrieval.text import default_analyzer

__all__ = [
    "EpisodicConfig",
    "EpisodicTier",
    "ExtractedMemory",
    "IngestOutcome",
    "StoredMessage",
    "message_id",
    "orphaned_messages",
]

MAX_ROOT_LABEL_CHARS = 200
"""Longest label of a tier's ``namespace_root``."""

logger = logging.getLogger(__name__)

T = TypeVar("T")

MemoryPuts = Callable[[list[ExtractedMemory], bool], Plan[list[PutOp] | None]]
"""A Profile's hook: the puts of extracted memories (and whether the ingest resumed an
earlier one) to write in the messages' own batch, or None to write them itself later."""

Scope = Literal["contact", "conversation", "all"]
Mode = Literal["hybrid", "semantic", "keyword"]


class EpisodicTier:
    """Raw messages, conversation recall and compaction windows of one profile.

    Args:
        store: Any langgraph ``BaseStore``.
        namespace_root: The profile's root, ``(*app_namespace, "profiles", profile)``.
        config: Numbers; :class:`EpisodicConfig` defaults when omitted.
        model: Chat model for extraction and summaries; ``None`` for the model-free paths.
        profile: The profile name written into every value; default ``namespace_root[-1]``.
    """

    def __init__(
        self,
        store: BaseStore,
        namespace_root: tuple[str, ...],
        *,
        config: EpisodicConfig | None = None,
        model: BaseChatModel | None = None,
        profile: str | None = None,
    ) -> None:
        check_namespace(namespace_root, "namespace_root", MAX_ROOT_LABEL_CHARS)
        self.store = store
        self.root = tuple(namespace_root)
        self.config = config or EpisodicConfig()
        self.model = model
        self.profile = profile if profile is not None else self.root[-1]
        self.layout = ProfileLayout.from_root(self.root, self.profile)
        self._policy = RetryPolicy.from_config(self.config)

    # namespaces --------------------------------------------------------------------------
    def messages_namespace(self, session_id: str | None = None) -> tuple[str, ...]:
        """``(*root, "messages")`` or, with a session, ``(*root, "messages", session_id)``."""
        return self.layout.session_messages(session_id)

    def overlays_namespace(self, session_id: str) -> tuple[str, ...]:
        """``(*root, "overlays", session_id)``."""
        return self.layout.overlays(session_id)

    @property
    def sessions_namespace(self) -> tuple[str, ...]:
        """``(*root, "sessions")``: one record per session."""
        return self.layout.sessions

    # plans -------------------------------------------------------------------------------
    def _ingest_plan(self, messages: Sequence[Any], session_id: str, contact: str | None,
                     extract: bool, confirm_later: bool = False, strict: bool = False,
                     memory_puts: MemoryPuts | None = None) -> Plan[IngestOutcome]:
        sid = validate_session_id(session_id)
        if contact is not None and not isinstance(contact, str):
            raise InvalidInputError(f"contact must be a string or None, got {contact!r}")
        now = datetime.now(UTC)
        unique: dict[str, dict[str, Any]] = {}
        cut: set[str] = set()
        for norm in normalize_messages(messages, self.config, now=now, strict=strict):
            mid = message_id(sid, norm["role"], norm["content"])
            if norm.pop(CUT_FLAG, None) is not None:
                cut.add(mid)
            unique.setdefault(mid, norm)
        outcome = yield from self._append_plan(unique, sid, now, contact, extract,
                                               confirm_later, memory_puts)
        outcome.cut = [m.id for m in outcome.messages if m.id in cut]
        if outcome.cut:
            logger.info("%d message(s) of session %r over %d bytes stored cut to fit",
                        len(outcome.cut), sid, self.config.max_message_bytes)
        return outcome

    def _append_plan(self, unique: dict[str, dict[str, Any]], sid: str, now: datetime,
                     contact: str | None, extract: bool, confirm_later: bool,
                     memory_puts: MemoryPuts | None = None) -> Plan[IngestOutcome]:
        """Ingest: one read of the session record and the messages' keys, the rows in one
        batch (:mod:`.writes`; with ``memory_puts``, the memories' rows ride in it where the
        store applies it whole), then the turns after the messages before them
        (:func:`~.embedded.plan_after`)."""
        ns = self.messages_namespace(sid)
        found = (yield StoreStep((GetOp(self.sessions_namespace, sid),
                                  *(GetOp(ns, mid) for mid in unique))))
        meta = found[0] if found[0] is not None and found[0].value.get("profile") == (
            self.profile) else None
        start = int(meta.value["next_seq"]) if meta else 0
        ps = int(meta.value.get("page_size", self.config.page_size)) if meta else (
            self.config.page_size)
        fresh = [mid for mid, item in zip(unique, found[1:], strict=True) if item is None]
        new = [StoredMessage(id=mid, session_id=sid, seq=start + i, contact=contact,
                             **unique[mid]) for i, mid in enumerate(fresh)]
        # messages before ``mark`` have had their memories written (sessions from before the
        # mark existed: all of them)
        mark = int(meta.value.get("extracted_to", start)) if meta else 0
        behind: list[StoredMessage] = []
        if extract and mark < start:
            found = yield StoreStep(history_ops(ns, self.profile, mark, start, ps, meta.value))
            behind = in_range(found, mark, start, profile=self.profile)
        todo = [*behind, *new]
        memories: list[ExtractedMemory] = []
        stats = ExtractionStats()
        if extract and todo:
            first = todo[0].seq
            context: list[StoredMessage] = []
            k = min(self.config.extraction_context_messages, first)
            if k:
                found = yield StoreStep(history_ops(ns, self.profile, first - k, first, ps,
                                                    meta.value if meta else None))
                context = in_range(found, first - k, first, profile=self.profile)
            rules = partial(rule_based_memories, source=self.config.extraction_source,
                            confidence=self.config.extraction_confidence, session_id=sid,
                            max_fact_chars=self.config.max_fact_chars)
            if self.model is not None:
                memories = yield from model_extraction_plan(
                    todo, self.model, config=self.config,
                    source=self.config.extraction_source,
                    confidence=self.config.extraction_confidence, session_id=sid,
                    context=context, fallback=rules, stats=stats)
            else:
                memories = rules(todo)
        end = start + len(new)
        riding = None  # the memories' puts, written with the messages (the mark moves too)
        if (memory_puts is not None and memories and new
                and applies_whole(self.store, len(new) + len(memories) + 2)):
            riding = yield from memory_puts(memories, bool(behind))
        # nothing extracted (or written here): nothing to wait for
        wait = confirm_later and bool(memories) and riding is None
        if new:
            value, embedded = record_after_append(
                meta.value if meta else None, new, profile=self.profile, session_id=sid,
                page_size=ps, start=start, now=now, contact=contact,
                # stored now, extracted later (``ingest(extract=False, confirm_later=True)``):
                # the mark stays, so the session owes these messages' memories
                extracted_to=(mark if confirm_later and not extract
                              else mark_after(mark, start, end, extract, wait)))
            yield from plan_new_rows(self.store, [
                *(PutOp(ns, m.id, m.to_value(self.profile, ps) | embedded[m.id],
                        index=MESSAGE_INDEX_FIELDS) for m in new),
                PutOp(self.sessions_namespace, sid, value, index=False),
                *(() if meta else (PutOp(self.overlays_namespace(sid)[:-1], sid, overlays_mark(
                    self.profile, sid, ()), index=False),)),  # a new session: no overlays
                *(riding or ())])
            yield from plan_after(self.store, ns, meta.value.get(TAIL_FIELD) or [] if meta
                                  else [], new)
        elif behind and not wait:
            yield from self._confirm_plan(sid, end)
        return IngestOutcome(messages=new, memories=memories, resumed=behind,
                             fallbacks=stats.fallbacks, dropped=stats.dropped,
                             extracted_to=end if wait and extract and todo else None)

    def _confirm_plan(self, session_id: str, extracted_to: int) -> Plan[None]:
        sid = validate_session_id(session_id)
        (meta,) = yield StoreStep((GetOp(self.sessions_namespace, sid),))
        if meta is None or meta.value.get("profile") != self.profile:
            return
        mark = int(meta.value.get("extracted_to", meta.value["next_seq"]))
        if extracted_to > mark:
            yield StoreStep((PutOp(self.sessions_namespace, sid,
                                   {**meta.value, "extracted_to": extracted_to}, index=False),))

    def _list_plan(self, session_id: str, start: int, limit: int) -> Plan[list[StoredMessage]]:
        sid = validate_session_id(session_id)
        if start < 0 or limit < 1:
            raise InvalidInputError("start must be >= 0 and limit >= 1")
        (meta,) = yield StoreStep((GetOp(self.sessions_namespace, sid),))
        if meta is None or meta.value.get("profile") != self.profile:
            return []
        ps = int(meta.value.get("page_size", self.config.page_size))
        end = min(int(meta.value["next_seq"]), start + limit)
        out: list[StoredMessage] = []
        step = max(ps, self.config.scan_page_size // ps * ps)
        for lo in range(start, end, step):
            hi = min(end, lo + step)
            found = yield StoreStep(page_ops(self.messages_namespace(sid), self.profile, lo, hi,
                                             ps))
            out += in_range(found, lo, hi)
        return out

    def _scan_plan(self, namespace: tuple[str, ...], flt: dict[str, Any], cap: int, *,
                   start: int = 0) -> Plan[list[Item]]:
        """Up to ``cap`` items of ``namespace`` matching ``flt``, in pages, from ``start``."""
        items: list[Item] = []
        while len(items) < cap:
            want = min(self.config.scan_page_size, cap - len(items))
            (page,) = yield StoreStep((SearchOp(namespace, filter=flt or None, limit=want,
                                                offset=start + len(items)),))
            items += page
            if len(page) < want:
                break
        return items

    def _recall_plan(self, query: str, mode: str | None, limit: int | None, role: str | None,
                     scope: str, session_id: str | None, contact: str | None
                     ) -> Plan[list[StoredMessage]]:
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError("query must be a non-empty string")
        mode = self.config.recall_mode if mode is None else mode
        if mode not in ("hybrid", "semantic", "keyword"):
            raise InvalidInputError(
                f"mode must be 'hybrid', 'semantic' or 'keyword', got {mode!r}")
        limit = self.config.recall_limit if limit is None else limit
        if limit < 1:
            raise InvalidInputError(f"limit must be >= 1, got {limit}")
        flt: dict[str, Any] = {"profile": self.profile}
        if scope == "conversation":
            if session_id is None:
                raise InvalidInputError("scope='conversation' needs session_id")
            prefix = self.messages_namespace(validate_session_id(session_id))
        elif scope in ("contact", "all"):
            prefix = self.messages_namespace()
            if scope == "contact" and contact is not None:
                flt["contact"] = contact
        else:
            raise InvalidInputError(
                f"scope must be 'contact', 'conversation' or 'all', got {scope!r}")
        if role is not None:
            if role.lower() not in ROLE_ALIASES:
                raise InvalidInputError(f"role {role!r} is not one of "
                                        f"{', '.join(sorted(ROLE_ALIASES))}")
            flt["role"] = ROLE_ALIASES[role.lower()]
        if mode == "semantic":
            (items,) = yield StoreStep((SearchOp(prefix, filter=flt, limit=limit, query=query),))
            return [StoredMessage.from_value(it.key, it.value, score=getattr(it, "score", None))
                    for it in items if it.value.get("profile") == self.profile]
        if mode == "hybrid":
            return (yield from self._hybrid_plan(query, prefix, flt, limit))
        docs = yield from self._scan_plan(prefix, flt, self.config.keyword_scan_limit)
        docs = [d for d in docs if d.value.get("profile") == self.profile]
        return [StoredMessage.from_value(d.key, d.value, score=score) for d, score in
                keyword_only_ranking(query, docs, k1=self.config.bm25_k1,
                                     b=self.config.bm25_b, limit=limit)]

    def _hybrid_plan(self, query: str, prefix: tuple[str, ...], flt: dict[str, Any],
                     limit: int) -> Plan[list[StoredMessage]]:
        """The store's vector ranking fused with BM25 over each message and its neighbours
        (:mod:`.recall`); without vector scores (a store with no index), BM25 alone. On a
        ``KeywordSearch`` store (``ChromaStore``) the store ranks the keyword side
        (:mod:`.search`); elsewhere the messages in scope are read and ranked in process
        (at most ``keyword_scan_limit``). Nothing is kept between calls."""
        cfg = self.config
        if isinstance(self.store, KeywordSearch):
            return (yield from store_hybrid_plan(self, query, prefix, flt, limit))
        search = SearchOp(prefix, filter=flt, limit=max(cfg.recall_depth, limit), query=query)
        (near,) = yield StoreStep((search,))
        near = [it for it in near if it.value.get("profile") == self.profile]
        vector = [(it.key, float(it.score)) for it in near if it.score is not None]
        docs = yield from self._scan_plan(prefix, flt, cfg.keyword_scan_limit)
        docs = [d for d in docs if d.value.get("profile") == self.profile]
        item = ({d.key: d for d in docs} | {it.key: it for it in near}).get
        fields = message_fields(docs, context_turns=cfg.recall_context_turns)

        def rank(q: str) -> list[tuple[str, float]]:
            return message_keyword_ranking(
                q, fields, analyzer=default_analyzer(), k1=cfg.bm25_k1, b=cfg.bm25_b,
                limit=max(cfg.recall_depth, limit), field_weights=self._recall_field_weights())

        def text(key: str) -> str:
            return str(getattr(item(key), "value", {}).get("text", ""))

        contextless = cut_off_keys(docs, context_turns=cfg.recall_context_turns).__contains__
        fused = hybrid_ranking(query, keyword=rank(query), vector=vector,
                               days={key: f.get("date", "") for key, f in fields.items()},
                               rank=rank, text=text, config=cfg, limit=limit,
                               alone=lambda key: stands_alone(text(key)),
                               bare=lambda key: stands_alone(text(key)) or contextless(key))
        return [StoredMessage.from_value(key, found.value, score=score)
                for key, score in fused if (found := item(key)) is not None]

    def _recall_field_weights(self) -> dict[str, float]:
        cfg = self.config
        return {"context": cfg.recall_context_weight, "name": cfg.recall_name_weight,
                "date": cfg.recall_date_weight}

    def _window_plan(self, session_id: str, budget_tokens: int, compact: bool
                     ) -> Plan[ContextWindow]:
        sid = validate_session_id(session_id)
        return window_plan(
            messages_ns=self.messages_namespace(sid), overlays_ns=self.overlays_namespace(sid),
            sessions_ns=self.sessions_namespace, profile=self.profile, session_id=sid,
            budget_tokens=budget_tokens, config=self.config, model=self.model, compact=compact)

    def _overlays_plan(self, session_id: str) -> Plan[list[Overlay]]:
        sid = validate_session_id(session_id)
        items = yield from self._scan_plan(self.overlays_namespace(sid),
                                           {"profile": self.profile}, self.config.max_overlays)
        return sorted((Overlay.from_value(it.value) for it in items), key=lambda o: o.from_seq)

    def _run(self, plan: Plan[T]) -> T:
        return run_sync(plan, store=self.store, policy=self._policy)

    async def _arun(self, plan: Plan[T]) -> T:
        return await run_async(plan, store=self.store, policy=self._policy)

    # public API: each method is a thin shell over one plan --------------------------------
    def ingest(self, messages: Sequence[Any], session_id: str, *, contact: str | None = None,
               confirm_later: bool = False, strict: bool = False, extract: bool = True
               ) -> IngestOutcome:
        """Store the new messages and extract memories from them (extraction first: when it
        fails, nothing is written). Idempotent: a re-ingest adds and extracts nothing.

        A message over ``max_message_bytes`` is stored cut to fit and marked (its id in
        ``outcome.cut``); with ``strict`` it raises ``LimitExceededError`` and nothing is
        written.

        With ``confirm_later``, the caller writes the memories and then calls
        :meth:`confirm_extracted` with ``outcome.extracted_to``; until it does, every ingest
        of the session extracts those messages again (``outcome.resumed``), so memories lost
        to a failure between the two writes are not lost for good.

        ``extract=False`` with ``confirm_later`` stores the messages and extracts nothing:
        the mark stays where it was, so the session owes their memories (the next ingest of
        it extracts them).
        """
        return self._run(self._ingest_plan(messages, session_id, contact, extract,
                                           confirm_later, strict))

    async def aingest(self, messages: Sequence[Any], session_id: str, *,
                      contact: str | None = None, confirm_later: bool = False,
                      strict: bool = False, extract: bool = True) -> IngestOutcome:
        """Async :meth:`ingest`."""
        return await self._arun(self._ingest_plan(messages, session_id, contact, extract,
                                                  confirm_later, strict))

    def _ingest_with(self, messages: Sequence[Any], session_id: str, contact: str | None,
                     strict: bool, extract: bool, memory_puts: MemoryPuts) -> IngestOutcome:
        """``ingest(confirm_later=True)`` whose memories' puts may ride in its write."""
        return self._run(self._ingest_plan(messages, session_id, contact, extract, True,
                                           strict, memory_puts))

    async def _aingest_with(self, messages: Sequence[Any], session_id: str,
                            contact: str | None, strict: bool, extract: bool,
                            memory_puts: MemoryPuts) -> IngestOutcome:
        """Async :meth:`_ingest_with`."""
        return await self._arun(self._ingest_plan(messages, session_id, contact, extract,
                                                  True, strict, memory_puts))

    def confirm_extracted(self, session_id: str, extracted_to: int) -> None:
        """Record that the memories of the session's messages before ``extracted_to`` are
        written (see :meth:`ingest`)."""
        self._run(self._confirm_plan(session_id, extracted_to))

    async def aconfirm_extracted(self, session_id: str, extracted_to: int) -> None:
        """Async :meth:`confirm_extracted`."""
        await self._arun(self._confirm_plan(session_id, extracted_to))

    def add_messages(self, messages: Sequence[Any], session_id: str, *,
                     contact: str | None = None, strict: bool = False
                     ) -> list[StoredMessage]:
        """Store messages without extraction; returns only the ones that were new. Over-long
        messages as in :meth:`ingest` (cut to fit; ``strict``: refused)."""
        return self._run(self._ingest_plan(messages, session_id, contact, False,
                                           strict=strict)).messages

    async def aadd_messages(self, messages: Sequence[Any], session_id: str, *,
                            contact: str | None = None, strict: bool = False
                            ) -> list[StoredMessage]:
        """Async :meth:`add_messages`."""
        out = await self._arun(self._ingest_plan(messages, session_id, contact, False,
                                                 strict=strict))
        return out.messages

    def list_messages(self, session_id: str, *, start: int = 0, limit: int = 100
                      ) -> list[StoredMessage]:
        """Messages of a session in order, from position ``start``, at most ``limit``."""
        return self._run(self._list_plan(session_id, start, limit))

    async def alist_messages(self, session_id: str, *, start: int = 0, limit: int = 100
                             ) -> list[StoredMessage]:
        """Async :meth:`list_messages`."""
        return await self._arun(self._list_plan(session_id, start, limit))

    def recall_conversation(self, query: str, *, mode: Mode | None = None,
                            limit: int | None = None, role: str | None = None,
                            scope: Scope = "contact", session_id: str | None = None,
                            contact: str | None = None) -> list[StoredMessage]:
        """Search raw messages (see the module docstring); each result carries ``score``.
        ``mode`` None is ``config.recall_mode`` (``"hybrid"`` unless configured)."""
        return self._run(self._recall_plan(query, mode, limit, role, scope, session_id,
                                           contact))

    async def arecall_conversation(self, query: str, *, mode: Mode | None = None,
                                   limit: int | None = None, role: str | None = None,
                                   scope: Scope = "contact", session_id: str | None = None,
                                   contact: str | None = None) -> list[StoredMessage]:
        """Async :meth:`recall_conversation`."""
        return await self._arun(self._recall_plan(query, mode, limit, role, scope,
                                                  session_id, contact))

    def window(self, session_id: str, budget_tokens: int, *, compact: bool = True
               ) -> ContextWindow:
        """The model's view of a session for a token budget; with ``compact``, summarise the
        oldest uncovered range into one new overlay and return its flushed memories."""
        return self._run(self._window_plan(session_id, budget_tokens, compact))

    async def awindow(self, session_id: str, budget_tokens: int, *, compact: bool = True
                      ) -> ContextWindow:
        """Async :meth:`window`."""
        return await self._arun(self._window_plan(session_id, budget_tokens, compact))

    def overlays(self, session_id: str) -> list[Overlay]:
        """Every overlay of a session, in range order."""
        return self._run(self._overlays_plan(session_id))

    async def aoverlays(self, session_id: str) -> list[Overlay]:
        """Async :meth:`overlays`."""
        return await self._arun(self._overlays_plan(session_id))

    def delete_session(self, session_id: str) -> int:
        """Delete a session's messages, overlays and record; returns the messages deleted."""
        return self._run(delete_session_plan(self, session_id))

    async def adelete_session(self, session_id: str) -> int:
        """Async :meth:`delete_session`."""
        return await self._arun(delete_session_plan(self, session_id))

    def delete_messages(self, session_id: str, message_ids: Iterable[str]) -> int:
        """Delete messages (see :func:`orphaned_messages`) and the overlays over them."""
        return self._run(delete_messages_plan(self, session_id, message_ids))

    async def adelete_messages(self, session_id: str, message_ids: Iterable[str]) -> int:
        """Async :meth:`delete_messages`."""
        return await self._arun(delete_messages_plan(self, session_id, message_ids))
