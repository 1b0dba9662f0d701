"""The profile API: one user's (or contact's, tenant's, agent's) memory.

A :class:`Profile` is the isolation unit: every call reads and writes only under
``(*namespace, "profiles", name)`` and checks the ``profile`` field of every value it reads,
so no call on one profile can return another's data, whatever the query, filter or key.

Every method has an async twin (``aremember``, ``arecall``, ...). Both are thin shells over
one plan (``core/plans.py``): the sync one runs it with ``run_sync``, the async one awaits
``run_async``.

``profile.at(ts)`` (:class:`~langmem_edge.memory.view.ProfileView`) and the Markdown of
``summary()`` live in :mod:`~langmem_edge.memory.view`, one floor below: they read the
semantic tier only, while this module is the one that composes tiers.
"""

from __future__ import annotations

import builtins
import logging
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langgraph.store.base import SearchOp

from langmem_edge.errors import InvalidInputError
from langmem_edge.memory.config import EpisodicConfig
from langmem_edge.memory.core.contacts import ContactMethods
from langmem_edge.memory.core.plans import Call, Plan, batch, planned
from langmem_edge.memory.core.validate import check_optional_name, to_utc
from langmem_edge.memory.documents import DocumentWorker, ProfileDocuments
from langmem_edge.memory.episodic.api import ProfileEpisodic
from langmem_edge.memory.index.store_io import LOAD_LIMIT
from langmem_edge.memory.records import (
    NOT_PROVIDED,
    IngestResult,
    MemoryPage,
    MemoryRecord,
    RecallResult,
    SessionDeletion,
)
from langmem_edge.memory.reflection import ReflectionResult, plan_forget_session, plan_reflect
from langmem_edge.memory.reflective.api import ProfileReflective
from langmem_edge.memory.semantic.bulk import (
    BulkItem,
    Riding,
    plan_finish_riding,
    plan_remember_many,
    plan_riding_puts,
    riding_failed,
    written_texts,
)
from langmem_edge.memory.semantic.context import ProfileContext, plan_read
from langmem_edge.memory.semantic.edits import (
    plan_delete,
    plan_end_session,
    plan_forget,
    plan_get,
    plan_history,
    plan_list,
    plan_update,
)
from langmem_edge.memory.semantic.recall import RecallRequest, plan_lookup, plan_recall
from langmem_edge.memory.semantic.write import MAX_NAME_CHARS, WriteSpec, plan_write
from langmem_edge.memory.view import ProfileView, plan_summary
from langmem_edge.memory.working.api import ProfileWorking

if TYPE_CHECKING:
    from langmem_edge.memory.episodic.compaction import ContextWindow
    from langmem_edge.memory.episodic.tier import EpisodicTier

__all__ = ["Profile"]

logger = logging.getLogger(__name__)


class Profile(ContactMethods):
    """One profile of an ``AgentMemory`` (get it with ``memory.profile(name)``)."""

    def __init__(self, ctx: ProfileContext, episodic: EpisodicConfig, *,
                 documents: DocumentWorker | None = None) -> None:
        self._ctx = ctx
        self._episodic_config = episodic
        self._tier: EpisodicTier | None = None
        self._worker = documents if documents is not None else DocumentWorker()

    def __repr__(self) -> str:
        return f"Profile({self.name!r})"

    @property
    def name(self) -> str:
        """The profile name."""
        return self._ctx.profile

    @property
    def working(self) -> ProfileWorking:
        """The working tier (L1): notes, ongoing task and turn records of each thread."""
        return ProfileWorking(self._ctx.store, self._ctx.layout, self._ctx.config.working)

    @property
    def reflective(self) -> ProfileReflective:
        """The reflective tier (L4): goals with their history, and reflections."""
        return ProfileReflective(self._ctx.store, self._ctx.layout, self._ctx.config.reflection)

    @property
    def episodic(self) -> ProfileEpisodic:
        """The episodic tier (L2): each session's raw messages, their search, the overlays and
        the context window (``docs/episodic.md``)."""
        return ProfileEpisodic(self._episodic(), self._window_plan)

    @property
    def documents(self) -> ProfileDocuments:
        """The profile's documents (``docs/documents.md``): ``add``, ``get``, ``list``,
        ``search``, ``delete`` and their ``a*`` twins."""
        c = self._ctx
        return ProfileDocuments(c.store, c.layout, has_vectors=c.has_vectors,
                                page=c.config.index.page_size, worker=self._worker)

    # -- remember ----------------------------------------------------------------------------

    @planned
    def remember(
        self,
        text: str,
        *,
        key: str | None = None,
        kind: str | None = None,
        fact_type: str | None = None,
        confidence: float | None = None,
        source: str = "explicit",
        writer: str | None = None,
        contact: str | None = None,
        session_id: str | None = None,
        tags: Sequence[str] = (),
        metadata: dict[str, Any] | None = None,
        valid_from: datetime | str | float | None = None,
        valid_until: datetime | str | float | None = None,
        encrypted: bool = False,
        verify: bool | None = None,
    ) -> Plan[MemoryRecord]:
        """Write a memory and return it.

        Args:
            text: What to remember.
            key: Topic key; a fact or instruction under an active key supersedes it.
            kind: fact (default), event, instruction or task.
            fact_type: Finer type (decides the kind when ``kind`` is omitted).
            confidence: 0-1; default by ``source`` (explicit 0.9).
            source: explicit, turn, pre-compaction, reflection or consolidation.
            writer: The agent, skill or persona writing it.
            contact: Contact scope; ``None`` for agent-wide.
            session_id: The conversation it belongs to.
            tags: Labels. metadata: JSON-serialisable extras.
            valid_from: When it became true (default now). valid_until: when it stops.
            encrypted: Seal the text with the memory's ``encryption_key`` (AES-256-GCM).
            verify: Override the verification switch for this write.
        """
        spec = WriteSpec(text=text, key=key, kind=kind, fact_type=fact_type,
                         confidence=confidence, source=source, writer=writer, contact=contact,
                         session_id=session_id, tags=tags, metadata=metadata,
                         valid_from=valid_from, valid_until=valid_until, encrypted=encrypted)
        return plan_write(self._ctx, spec, verify=verify)

    aremember = remember.twin

    @planned
    def remember_many(
        self,
        items: Iterable[BulkItem],
        *,
        source: str = "explicit",
        writer: str | None = None,
        contact: str | None = None,
        session_id: str | None = None,
        verify: bool = False,
    ) -> Plan[builtins.list[MemoryRecord]]:
        """Write many memories at once (imports, backfills) and return them in order.

        Each item is a text or a dict of :meth:`remember`'s fields (``text`` required); its
        own ``source``, ``writer``, ``contact`` and ``session_id`` win over the call's. The
        rules are ``remember``'s (keys supersede, in item order), but the memories are
        embedded and written in chunks of ``limits.bulk_chunk`` (1,000), a constant number of
        store batches each. Every item is checked first: a bad one raises
        ``InvalidInputError`` naming its position (``items[3]: ...``) and nothing is
        written. ``verify`` (off by default) judges each item against the memories stored
        before its chunk (``semantic/bulk.py``).
        """
        return plan_remember_many(self._ctx, items, source=source, writer=writer,
                                  contact=contact, session_id=session_id,
                                  verify=verify)

    aremember_many = remember_many.twin

    # -- recall ------------------------------------------------------------------------------

    @planned
    def recall(
        self,
        query: str,
        *,
        limit: int | None = None,
        contact: str | None = None,
        kind: str | Sequence[str] | None = None,
        writer: str | None = None,
        tags: Sequence[str] = (),
        scorer: str = "rrf",
        reference_date: datetime | str | float | None = None,
        session_id: str | None = None,
        fill: bool | None = None,
        use_model: bool | None = None,
    ) -> Plan[RecallResult]:
        """Recall memories for ``query``: ``RecallResult(count, answer, candidates)``.

        Args:
            query: The question or topic.
            limit: Most candidates (default 20, at most 500).
            contact: Recall that contact's memories first, then agent-wide ones. Without it,
                agent-wide memories only.
            kind: Only these kinds. writer: only memories by this writer.
            tags: Tags the composite scorer matches.
            scorer: ``"rrf"`` (fused channels) or ``"composite"``.
            reference_date: Anchor of relative dates in the query ("last week"); default now.
            session_id: The current session: tasks of other sessions rank lower.
            fill: Override the relevance fill switch.
            use_model: The one knob for the memory's model in recall. ``None`` (default):
                the HyDE and raw-message channels run when the memory's thinking level
                (``RecallConfig.thinking_level``: low, medium (default) or high, which also
                sets each channel's depth) is medium or high, and the model writes the answer;
                ``False``: no model call (no model channels, the answer is the top memories
                joined); ``True``: the model channels at every level.
        """
        req = RecallRequest(query=query, limit=limit, contact=contact, kind=kind, writer=writer,
                            tags=tags, scorer=scorer,
                            reference_date=to_utc(reference_date, "reference_date"),
                            session_id=session_id, fill=fill, as_of=None,
                            use_model=use_model)
        return plan_recall(self._ctx, req)

    arecall = recall.twin

    # -- reading -----------------------------------------------------------------------------

    @planned
    def list(
        self,
        kind: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        *,
        status: str = "active",
        contact: Any = NOT_PROVIDED,
        writer: str | None = None,
        session_id: str | None = None,
        newest_first: bool = False,
    ) -> Plan[MemoryPage]:
        """A page of memories (oldest first), at most ``limit`` (default 50, at most 500).

        ``status``: active (default), superseded, forgotten or all. ``contact``: only that
        scope (``None``: agent-wide only; omitted: every scope). Pass ``next_cursor`` back as
        ``cursor`` for the next page. The page iterates over its records
        (``for m in profile.list()``).
        """
        return plan_list(self._ctx, kind=kind, limit=limit, cursor=cursor,
                         status=status, contact=contact, writer=writer,
                         session_id=session_id, newest_first=newest_first)

    alist = list.twin

    @planned
    def get(self, memory_id: str) -> Plan[MemoryRecord | None]:
        """The memory with this id in this profile (any status), or ``None``."""
        return plan_get(self._ctx, memory_id)

    aget = get.twin

    @planned
    def history(self, key: str, *, contact: Any = NOT_PROVIDED
                ) -> Plan[builtins.list[MemoryRecord]]:
        """The supersession chain of ``key`` (or of a memory id), oldest first."""
        return plan_history(self._ctx, key, contact)

    ahistory = history.twin

    @planned
    def lookup(self, key: str | None = None, *, contact: str | None = None,
               limit: int | None = None) -> Plan[builtins.list[MemoryRecord]]:
        """Memories found without ranking, each counted as an access (like a recall's).

        With ``key``: ``[the memory under exactly that key]`` (``contact``'s if it has one,
        else the agent-wide one), or ``[]``. Without: every memory a recall could return,
        ``contact``'s first, then agent-wide ones, newest first, at most ``limit`` (50).
        """
        return plan_lookup(self._ctx, key, contact, limit)

    alookup = lookup.twin

    def at(self, timestamp: datetime | str | float) -> ProfileView:
        """A read-only view of the profile as of ``timestamp``."""
        ts = to_utc(timestamp, "timestamp")
        assert ts is not None
        return ProfileView(self._ctx, ts)

    @planned
    def summary(self) -> Plan[str]:
        """Markdown of what is remembered (active memories, by scope and kind)."""
        return plan_summary(self._ctx)

    asummary = summary.twin

    # -- editing -----------------------------------------------------------------------------

    @planned
    def update(
        self,
        memory_id: str,
        *,
        text: str = NOT_PROVIDED,
        key: str | None = NOT_PROVIDED,
        kind: str = NOT_PROVIDED,
        fact_type: str | None = NOT_PROVIDED,
        confidence: float = NOT_PROVIDED,
        tags: Sequence[str] = NOT_PROVIDED,
        metadata: dict[str, Any] | None = NOT_PROVIDED,
        valid_from: datetime | str | float | None = NOT_PROVIDED,
        valid_until: datetime | str | float | None = NOT_PROVIDED,
    ) -> Plan[MemoryRecord]:
        """Write a new version of an active memory with the fields given (the others are
        the old version's, as :meth:`remember` takes them); it supersedes the old one and
        shows in ``history``. Changing ``kind`` without ``fact_type`` clears the fact type.
        Another name is a ``TypeError``, as for any Python call."""
        given = {"text": text, "key": key, "kind": kind, "fact_type": fact_type,
                 "confidence": confidence, "tags": tags, "metadata": metadata,
                 "valid_from": valid_from, "valid_until": valid_until}
        changes = {k: v for k, v in given.items() if v is not NOT_PROVIDED}
        return plan_update(self._ctx, memory_id, changes)

    aupdate = update.twin

    @planned
    def forget(self, memory_id: str, *, reason: str | None = None) -> Plan[MemoryRecord]:
        """Mark a memory forgotten (kept, never recalled); returns it."""
        return plan_forget(self._ctx, memory_id, reason)

    aforget = forget.twin

    @planned
    def delete(self, memory_id: str) -> Plan[bool]:
        """Remove a memory for good (and the raw messages only it cited); ``False`` if none."""
        return bool((yield from self._delete_plan([memory_id])))

    adelete = delete.twin

    @planned
    def end_session(self, session_id: str) -> Plan[int]:
        """Mark a session's task memories as ended (they rank lower); returns how many."""
        return plan_end_session(self._ctx, session_id)

    aend_session = end_session.twin

    def _delete_plan(self, memory_ids: Sequence[str], cascade: bool = True) -> Plan[int]:
        ctx = self._ctx
        deleted = yield from plan_delete(ctx, memory_ids)
        cited: dict[str, set[str]] = defaultdict(set)
        for v in deleted:
            if v.get("session_id") and v.get("source_message_ids"):
                cited[v["session_id"]].update(v["source_message_ids"])
        if cascade and cited:
            from langmem_edge.memory.episodic.tier import orphaned_messages

            tier = self._episodic()
            ctx = yield from plan_read(ctx, counts=False)
            still = [v.get("source_message_ids") or () for v in ctx.index.values.values()]
            for sid, ids in cited.items():
                orphans = orphaned_messages(ids, still)
                if orphans:
                    yield Call(tier.delete_messages, tier.adelete_messages, (sid, orphans))
        return len(deleted)

    # -- episodic delegation -----------------------------------------------------------------

    def _episodic(self) -> EpisodicTier:
        if self._tier is None:
            from langmem_edge.memory.episodic.tier import EpisodicTier

            self._tier = EpisodicTier(self._ctx.store, self._ctx.layout.root,
                                      config=self._episodic_config,
                                      model=self._ctx.model, profile=self.name)
        return self._tier

    def _write_extracted(self, memories: Sequence[Any], contact: str | None,
                         writer: str | None) -> Plan[builtins.list[MemoryRecord]]:
        """Write each extracted memory; one the write path refuses as invalid (over a limit,
        say) is logged and left out, never stopping the others."""
        written = []
        for spec in _extracted_specs(memories, contact, writer):
            try:
                written.append((yield from plan_write(self._ctx, spec)))
            except InvalidInputError as e:  # checked before any write: nothing half-done
                logger.warning("extracted memory %.80r of profile %r left out: %s", spec.text,
                               self.name, e)
        return written

    def _ingest_plan(self, messages: Sequence[Any], session_id: str, contact: str | None,
                     writer: str | None, strict: bool, extract: bool = True
                     ) -> Plan[IngestResult]:
        # checked before the messages are written, not when the extracted memories are
        check_optional_name(contact, "contact", MAX_NAME_CHARS)
        check_optional_name(writer, "writer", MAX_NAME_CHARS)
        tier = self._episodic()
        # the memories' rows ride in the messages' write where they can (moving the session's
        # extraction mark with them); else the mark moves only once they are written, so an
        # ingest that failed in between is extracted again by the next one
        riding = Riding()

        def memory_puts(memories: builtins.list[Any], resumed: bool
                        ) -> Plan[builtins.list[Any] | None]:
            specs = _extracted_specs(memories, contact, writer)
            return plan_riding_puts(self._ctx, specs, resumed, riding)

        try:
            outcome = yield Call(tier._ingest_with, tier._aingest_with,
                                 (messages, session_id, contact, strict, extract, memory_puts))
        except Exception as e:
            riding_failed(riding, e)
            raise
        if riding.records is not None:
            written = yield from plan_finish_riding(riding)
        else:
            memories = outcome.memories
            if outcome.resumed:  # some may have been written before the failure
                ctx = yield from plan_read(self._ctx, counts=False)
                have = written_texts(ctx)
                memories = [m for m in memories if (m.session_id, m.text) not in have]
            written = yield from self._write_extracted(memories, contact, writer)
            if outcome.extracted_to is not None:
                yield Call(tier.confirm_extracted, tier.aconfirm_extracted,
                           (session_id, outcome.extracted_to))
        return IngestResult(messages_added=len(outcome.messages), messages_cut=outcome.cut,
                            memories_written=written, extraction_fallbacks=outcome.fallbacks,
                            candidates_dropped=outcome.dropped)

    @planned
    def ingest(self, messages: Sequence[Any], *, session_id: str, contact: str | None = None,
               writer: str | None = None, strict: bool = False, extract: bool = True
               ) -> Plan[IngestResult]:
        """Store a conversation's messages (idempotent) and remember what they teach.

        New messages go to the episodic tier; memories extracted from them (by the model, or
        the rule-based extractor without one) are written through the semantic write path,
        contact-scoped when ``contact`` is given.

        A message over ``max_message_bytes`` (32 KB) is stored cut to fit and marked
        ``" [...]"``, as the graphs' post-turn ingest does, and its id is listed in
        ``messages_cut``; its id is computed over the cut text, so ingesting it again adds
        nothing. ``strict=True`` refuses it instead: ``LimitExceededError`` naming the
        message, and nothing written.

        ``extract=False`` stores the messages now and writes no memory: the session then owes
        their memories (``SessionInfo.pending`` counts them), written by its next ingest in
        any process, by ``ingest([], session_id=...)`` or by ``langmem-edge flush``. The
        graphs' post-turn job records a turn this way before the reply returns, then extracts
        in the background.
        """
        return self._ingest_plan(messages, session_id, contact, writer, strict,
                                 extract)

    aingest = ingest.twin

    def _window_plan(self, session_id: str, budget_tokens: int, compact: bool,
                     contact: str | None) -> Plan[ContextWindow]:
        check_optional_name(contact, "contact", MAX_NAME_CHARS)
        tier = self._episodic()
        window = yield Call(tier.window, tier.awindow, (session_id, budget_tokens),
                            {"compact": compact})
        yield from self._write_extracted(window.flushed, contact, None)
        return window

    def _delete_session_plan(self, session_id: str) -> Plan[SessionDeletion]:
        tier = self._episodic()
        messages = yield Call(tier.delete_session, tier.adelete_session, (session_id,))
        (found,) = yield batch(self._ctx.store, [SearchOp(
            self._ctx.layout.memories, filter={"session_id": session_id}, limit=LOAD_LIMIT)])
        ids = [it.key for it in found if it.value.get("profile") == self.name
               and it.value.get("session_id") == session_id]
        memories = yield from self._delete_plan(ids, cascade=False)
        yield Call(self.working.delete_thread, self.working.adelete_thread, (session_id,))
        yield from plan_forget_session(self._ctx, session_id)
        docs = self.documents
        yield Call(docs.delete_session, docs.adelete_session, (session_id,))
        return SessionDeletion(messages_deleted=int(messages), memories_deleted=memories)

    @planned
    def delete_session(self, session_id: str) -> Plan[SessionDeletion]:
        """Delete a session: raw messages, overlays, working memory, memories written in it,
        documents added with it."""
        return self._delete_session_plan(session_id)

    adelete_session = delete_session.twin

    @planned
    def reflect(self, *, model: BaseChatModel | None = None,
                now: datetime | str | float | None = None) -> Plan[ReflectionResult]:
        """Review the activity since the last reflection (``memory/reflection.py``): writes
        a reflection, goal updates and learnings (confidence 0.85); with ``model`` (default
        the memory's) by structured output, without one by the documented rules."""
        return plan_reflect(self._ctx, self._episodic_config, model or self._ctx.model,
                            now=to_utc(now, "now"))

    areflect = reflect.twin


def _extracted_specs(memories: Sequence[Any], contact: str | None, writer: str | None
                     ) -> builtins.list[WriteSpec]:
    """The write specs of an ingest's extracted memories."""
    return [WriteSpec(text=m.text, key=m.key, kind=m.kind, fact_type=m.fact_type,
                      confidence=m.confidence, source=m.source, writer=writer,
                      contact=contact, session_id=m.session_id, tags=m.tags,
                      valid_from=m.valid_from,
                      extra={"source_message_ids": builtins.list(m.source_message_ids)})
            for m in memories]
