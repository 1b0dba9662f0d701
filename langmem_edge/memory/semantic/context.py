"""What every plan of the semantic tier needs about one profile.

``ProfileContext`` bundles the store, the profile's layout and index, the config, the decision
model and the cipher. The index is the operation's own: :func:`plan_read` reads the profile
into a fresh one and returns a context holding it; the context ``AgentMemory`` hands out holds
an empty index and the profile's access writer.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langgraph.store.base import BaseStore, SearchOp

from langmem_edge.errors import DecryptionError, InvalidInputError
from langmem_edge.memory.config import MemoryConfig
from langmem_edge.memory.core.crypto import MemoryCipher
from langmem_edge.memory.core.layout import ProfileLayout
from langmem_edge.memory.core.plans import Plan, batch
from langmem_edge.memory.index.profile_index import ProfileIndex
from langmem_edge.memory.index.store_io import (
    LOAD_LIMIT,
    UNKEYED_WRITE_WHOLE_MAX,
    WRITE_WHOLE_MAX,
    SizeHints,
    plan_load,
)
from langmem_edge.memory.records import MemoryRecord

__all__ = [
    "ProfileContext",
    "aad",
    "plan_read",
    "plan_read_keyed",
]


@dataclass
class ProfileContext:
    """One profile's view of an ``AgentMemory``."""

    store: BaseStore
    layout: ProfileLayout
    index: ProfileIndex
    config: MemoryConfig
    model: BaseChatModel | None
    cipher: MemoryCipher | None
    embeddings: Embeddings | None
    has_vectors: bool
    """The store embeds ``text`` (it has an index config): vector search and verification."""
    nearest: bool = False
    """The store is a :class:`NearestKeys`: recall's vector channels ask it for keys only."""
    keywords: bool = False
    """The store ranks keys by BM25 (``keyword_search``): a large profile's recall asks it."""
    hints: SizeHints | None = None
    """Which profiles were last seen large (``AgentMemory``'s, shared by its contexts)."""

    def fresh(self) -> ProfileContext:
        """This context with an empty index of its own (for one operation)."""
        index = ProfileIndex(self.layout, self.config.recall, self.index.access_writer)
        return replace(self, index=index)

    @property
    def profile(self) -> str:
        """The profile name."""
        return self.layout.profile

    def record(self, value: dict[str, Any]) -> MemoryRecord:
        """A stored value as a record, its text decrypted (``DecryptionError`` without key)."""
        if value.get("profile") != self.profile:  # the second guard of profile isolation
            raise InvalidInputError(f"record {value.get('id')!r} is not in this profile")
        record = MemoryRecord.from_value(value)
        extra, last = self.index.access(record.id)  # count items and pending bumps
        if extra:
            when = datetime.fromisoformat(last) if last else None
            if record.last_accessed_at is not None and (when is None
                                                        or record.last_accessed_at > when):
                when = record.last_accessed_at
            record = record.model_copy(update={"access_count": record.access_count + extra,
                                               "last_accessed_at": when})
        if record.encrypted:
            if self.cipher is None:
                raise DecryptionError(
                    f"memory {record.id} is encrypted and this AgentMemory has no "
                    "encryption_key"
                )
            text = self.cipher.open(record.ciphertext or "", associated=aad(record),
                                    key_id=record.key_id, memory_id=record.id)
            record = record.model_copy(update={"text": text})
        return record


def plan_read(ctx: ProfileContext, *, counts: bool = True, active: bool = False
              ) -> Plan[ProfileContext]:
    """``ctx`` with the whole profile read into an index of its own (one batch: records,
    with ``active`` only the active ones, and with ``counts`` access counts:
    :func:`~langmem_edge.memory.index.store_io.plan_load`). An operation that needs the
    profile starts here and uses the context it returns; nothing read outlives it."""
    fresh = ctx.fresh()
    yield from plan_load(ctx.store, fresh.index, counts=counts, active=active)
    return fresh


def plan_read_keyed(ctx: ProfileContext, record: MemoryRecord) -> Plan[ProfileContext]:
    """What a write needs of the profile: all of it (one search), unless the store ranks by
    vector and by keyword (``NearestKeys`` and ``KeywordSearch``: ``ChromaStore``) and the
    profile was last seen holding more than ``WRITE_WHOLE_MAX`` records (a write under a
    key) or ``UNKEYED_WRITE_WHOLE_MAX`` (without one; ``ctx.hints``), or, without a key, was
    not seen at all; then only the records under ``record``'s key, if it has one
    (verification asks the store for the vector candidates it needs). A write reads only
    active records (what it supersedes and is verified against); its whole read tells the
    hints the profile's size."""
    ranks = ctx.nearest and ctx.keywords and ctx.hints is not None
    most = WRITE_WHOLE_MAX if record.key else UNKEYED_WRITE_WHOLE_MAX
    big = ctx.hints.big(ctx.profile, most) if ranks else False
    if big is None:  # a profile this process has not read: without a key, read nothing whole
        big = not record.key
    if not big:
        ctx = yield from plan_read(ctx, counts=False, active=True)
        if ranks:
            ctx.hints.saw(ctx.profile, len(ctx.index.values))
        return ctx
    ctx = ctx.fresh()
    if record.key:
        (items,) = yield batch(ctx.store, [SearchOp(
            ctx.layout.memories, filter={"key": record.key}, limit=LOAD_LIMIT)])
        ctx.index.reset([it.value for it in items if it.value.get("id") == it.key
                         and it.value.get("profile") == ctx.profile], (), complete=False)
    return ctx


def aad(record: MemoryRecord) -> str:
    """Associated data sealing a ciphertext to its memory and profile."""
    return f"{record.profile}\x1f{record.id}"
