"""What the store embeds for a message: its day, its speaker, its text, and the turns before it.

A message's ``text`` is what users read back and is never rewritten. Embedding the bare text
loses what a question about a conversation usually leans on (who said it, when, and what was
being talked about just before), so the tier writes one more field into every new message
value and puts the message with ``index=`` :data:`MESSAGE_INDEX_FIELDS`: ``embed_text`` =
``"[8 May 2023] Caroline: <text> <the text of the messages before>"``: the message's day (from
``ts``), its speaker (``name``, else its role), its text, then the text of the
:data:`EMBED_CONTEXT_TURNS` messages before it in the same session (none for a session's first
message). A message of at least :data:`~.recall.ALONE_CHARS` (500) characters stands alone: it
is embedded as it is, its bare text, and lends no context to the turns after it; it also ends
their context: the turns before it belong to another exchange (issue 40: on long technical
chats the turn before a user's message is a long answer, which would fill the model's window,
and the user's message before that is another request; :func:`~.recall.context_window`).
One text, so one embedding a message (on LoCoMo one combined field beat the message and its
context as two fields, each scored on its own, and two vectors a message, the bare text and
the text with its context, the better cosine kept, lost 0.010 / 0.013 recall@5 / @10 in
cross-validation). Only the turns *before* a message are known when it is ingested, so
that is what it carries; the keyword side of hybrid recall (:mod:`.recall`) still sees both
sides, built at recall time. On LoCoMo, ``benchmarks/locomo_profile_cv.py`` measures what the
turns after would add (``docs/retrieval.md``).

The turns before the first message of an ingest come from the session record's ``tail`` (the
last :data:`EMBED_CONTEXT_TURNS` messages' ids and text, each cut to
:data:`EMBED_CONTEXT_CHARS`), which the ingest reads and writes anyway: no extra read, the
same batches. Whether anything is embedded, and with which model, is still the store's index
config: a store without one embeds nothing, and ``index=[...]`` only names the fields.

Messages written before this module have no ``embed_text`` nor a ``tail`` in their session
record: they keep the vectors the store's fields gave them (usually the bare ``text``) and are
found as before; the first message ingested after an upgrade into an old session carries no
context. A deleted message's text is taken out of the ``tail`` and out of the context of the
messages after it (:func:`context_repairs`), as overlays over it are deleted.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.store.base import Item, PutOp

from langmem_edge.memory.core.plans import Call, Plan
from langmem_edge.memory.core.stores import KEYWORD_ONLY, KeywordSearch, PutExisting
from langmem_edge.memory.episodic.compaction import in_range
from langmem_edge.memory.episodic.extraction import StoredMessage
from langmem_edge.memory.episodic.recall import context_window, message_day, stands_alone

__all__ = [
    "EMBED_CONTEXT_CHARS",
    "EMBED_CONTEXT_TURNS",
    "EMBEDDED_FIELDS",
    "KEYWORD_FIELDS",
    "MESSAGE_INDEX_FIELDS",
    "TAIL_FIELD",
    "after_patches",
    "plan_after",
    "context_repairs",
    "embedded_fields",
    "embedded_text",
    "repair_ops",
    "repair_range",
    "session_tail",
]

logger = logging.getLogger(__name__)

KEYWORD_FIELDS = ("text", "context", "after", "name", "day")
"""A message's keyword fields, weighed per recall (BM25F): its text, the context of the turns
before (the one :func:`embedded_fields` embeds), the turns after (``after``: written by the
ingest that brings them, :func:`after_patches`), its speaker and its day."""

EMBED_CONTEXT_TURNS = 2
"""Messages before a message (same session) whose text its ``embed_text`` carries."""

EMBED_CONTEXT_CHARS = 1000
"""Characters of each earlier message kept in a context (the default embedding model reads
about 256 word pieces, roughly 1,000 characters, of a field in any case)."""

MESSAGE_INDEX_FIELDS = ["embed_text", *(f"{KEYWORD_ONLY}{f}" for f in KEYWORD_FIELDS)]
"""The ``index=`` of a message put: ``embed_text``, the one field the store embeds (when it
embeds anything), and the keyword-only fields of :data:`KEYWORD_FIELDS`, which a
:class:`~langmem_edge.memory.core.stores.KeywordSearch` store analyses for hybrid recall's
keyword side and other stores ignore."""

EMBEDDED_FIELDS = ("embed_text", "context", "after", "day")
"""The fields this module adds to a message value (rewritten when a deletion changes a
message's context)."""

TAIL_FIELD = "tail"
"""The session record's field holding its last messages' ``{"id", "text"}``."""


def embedded_text(message: StoredMessage) -> str:
    """``"[<day>] <speaker>: <text>"``: the day of ``ts``, ``name`` (else the role)."""
    return f"[{message_day(message.ts.isoformat())}] {message.name or message.role}: " \
        f"{message.content}"


def _context(texts: Sequence[str], turns: int = EMBED_CONTEXT_TURNS) -> str:
    """The context of the ``turns`` messages before: a message that stands alone (at least
    :data:`~.recall.ALONE_CHARS`; its tail entry is cut to 1,000) lends none, and ends the
    context (:func:`~.recall.context_window`)."""
    window = [*texts[-turns:], ""] if turns else []  # "": the message itself, short
    return " ".join(window[j][:EMBED_CONTEXT_CHARS]
                    for j in context_window(window, len(window) - 1, turns, after=False)
                    ) if len(window) > 1 else ""


def embedded_fields(
    new: Sequence[StoredMessage], tail: Sequence[Mapping[str, Any]], *,
    context_turns: int = EMBED_CONTEXT_TURNS,
) -> dict[str, dict[str, str]]:
    """Each new message's embedded fields (:data:`EMBEDDED_FIELDS`) by id; ``tail`` is the
    session record's ``tail`` (the messages just before the first new one), ``new`` in
    ``seq`` order; ``context_turns`` (default :data:`EMBED_CONTEXT_TURNS`) earlier messages in
    a context. ``context`` and ``day`` are left out when empty."""
    before = [str(t.get("text", "")) for t in tail]
    later = _after_texts([*before, *(m.content for m in new)], context_turns)[len(before):]
    out: dict[str, dict[str, str]] = {}
    for m, after in zip(new, later, strict=True):
        extra = {"after": after} if after else {}
        day = message_day(m.ts.isoformat())
        fields = {"day": day} if day else {}
        if stands_alone(m.content) or (before and stands_alone(before[-1])):
            # a long message, or the first of an exchange after one: embedded as it is
            out[m.id] = {"embed_text": m.content, **fields, **extra}
            before.append(m.content)
            continue
        context = _context(before, context_turns) if context_turns and before else ""
        if context:
            fields["context"] = context
        out[m.id] = {"embed_text": f"{embedded_text(m)} {context}".rstrip(), **fields,
                     **extra}
        before.append(m.content)
    return out


def _after_texts(texts: Sequence[str], turns: int = EMBED_CONTEXT_TURNS) -> list[str]:
    """Each message's ``after`` among ``texts`` (a session's messages in ``seq`` order): the
    text of up to ``turns`` messages after it, each cut to :data:`EMBED_CONTEXT_CHARS`, by
    :func:`~.recall.context_window`'s rule (none for a message that stands alone; a message
    that stands alone lends none and ends the window)."""
    return [" ".join(texts[j][:EMBED_CONTEXT_CHARS]
                     for j in context_window(texts, i, turns) if j > i) if turns else ""
            for i in range(len(texts))]


def after_patches(
    tail: Sequence[Mapping[str, Any]], new: Sequence[StoredMessage], *,
    context_turns: int = EMBED_CONTEXT_TURNS,
) -> dict[str, str]:
    """The ``after`` field the messages of ``tail`` (the session record's, before ``new`` was
    appended) get now that ``new`` follows them, by id: only those whose ``after`` grows. A
    message's keyword side then holds the turns on both sides, as the scan's does
    (:func:`~.recall.message_fields`); its ``embed_text`` (and so its vector) is unchanged."""
    if not tail or not new:
        return {}
    texts = [str(t.get("text", "")) for t in tail]
    was = _after_texts(texts, context_turns)
    now = _after_texts([*texts, *(m.content for m in new)], context_turns)
    return {str(t["id"]): now[i] for i, t in enumerate(tail) if now[i] and now[i] != was[i]}


def session_tail(
    tail: Sequence[Mapping[str, Any]], new: Sequence[StoredMessage]
) -> list[dict[str, str]]:
    """The session record's ``tail`` after ``new`` was appended."""
    entries = [{"id": str(t["id"]), "text": str(t["text"])} for t in tail]
    entries += [{"id": m.id, "text": m.content[:EMBED_CONTEXT_CHARS]} for m in new]
    return entries[-EMBED_CONTEXT_TURNS:] if EMBED_CONTEXT_TURNS else []


def plan_after(store: Any, namespace: tuple[str, ...], tail: Sequence[Mapping[str, Any]],
               new: Sequence[StoredMessage]) -> Plan[None]:
    """Write :func:`after_patches` into the messages before ``new`` (in ``namespace``, their
    session's), on a store that ranks their keyword fields
    (:class:`~langmem_edge.memory.core.stores.KeywordSearch`) and rewrites only what exists
    (:class:`~langmem_edge.memory.core.stores.PutExisting`: a message deleted meanwhile
    stays deleted; its vector is kept, ``embed_text`` being unchanged): one read and one
    write on ``ChromaStore``. Elsewhere nothing: the scan builds both sides at recall. It
    runs after the ingest's own write; a failure is logged, and costs those messages the
    turns after them in keyword recall, nothing else."""
    patches = after_patches(tail, new)
    if not patches or not isinstance(store, KeywordSearch) or not isinstance(store, PutExisting):
        return
    items = [(namespace, mid, {"after": text}, MESSAGE_INDEX_FIELDS)
             for mid, text in patches.items()]
    try:
        yield Call(store.put_existing, store.aput_existing, (items,),
                   {"merge": True, "confirm": False})
    except Exception as e:  # recall quality, not the ingest: its messages are written
        logger.warning("writing the turns after %d message(s) of %r failed: %s",
                       len(items), namespace, e)


def context_repairs(
    session: Sequence[StoredMessage], deleted: set[str]
) -> dict[str, dict[str, str]]:
    """After deleting ``deleted`` from a stretch of a session (``session``: its messages in
    ``seq`` order, deleted ones included, starting at least :data:`EMBED_CONTEXT_TURNS`
    before the first deleted one and ending as many after the last): the messages whose
    ``embed_text`` or ``after`` carried a deleted message's text, by id, with the fields they
    get now (the context of the messages left around them). ``after`` is in the fields only
    where it changed (``""``: none left)."""
    out: dict[str, dict[str, str]] = {}
    kept = [m for m in session if m.id not in deleted]
    after = _after_texts([m.content for m in kept])
    position = {m.id: i for i, m in enumerate(session)}
    for j, m in enumerate(kept):
        i = position[m.id]
        before = any(w.id in deleted for w in session[max(0, i - EMBED_CONTEXT_TURNS):i])
        behind = any(w.id in deleted for w in session[i + 1:i + 1 + EMBED_CONTEXT_TURNS])
        if not (before or behind):
            continue
        fields = embedded_fields([m], [{"text": k.content} for k in kept[:j]])[m.id]
        fields.pop("after", None)
        if behind:
            fields["after"] = after[j]
        out[m.id] = fields
    return out


def repair_range(seqs: set[int]) -> tuple[int, int]:
    """The ``seq`` range ``[lo, hi)`` to read before deleting messages at ``seqs``: the
    deleted messages, the turns before the first (their context) and after the last."""
    return max(0, min(seqs) - EMBED_CONTEXT_TURNS), max(seqs) + EMBED_CONTEXT_TURNS + 1


def repair_ops(
    namespace: tuple[str, ...], found: Sequence[Sequence[Item] | Item | None],
    deleted: set[str], *, span: tuple[int, int], profile: str,
) -> list[PutOp]:
    """Puts giving the messages read in ``found`` (the results of
    :func:`~.compaction.history_ops` over ``span``, the :func:`repair_range`) whose ``embed_text``
    carried a deleted message's text their new embedded fields; messages written before
    embedded fields (no ``embed_text``) are left as they are."""
    items = {it.key: it for r in found for it in ((r,) if isinstance(r, Item) else r or ())}
    session = in_range(found, *span, profile=profile)
    ops: list[PutOp] = []
    for mid, fields in context_repairs(session, deleted).items():
        old = items[mid].value
        if "embed_text" in old:
            kept = {k: v for k, v in old.items()
                    if k not in EMBEDDED_FIELDS or (k == "after" and k not in fields)}
            if not fields.get("after", True):
                del fields["after"]
            ops.append(PutOp(namespace, mid, kept | fields, index=MESSAGE_INDEX_FIELDS))
    return ops
