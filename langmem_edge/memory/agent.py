"""``AgentMemory``: the memory tiers over any langgraph ``BaseStore``.

::

    memory = AgentMemory(store, model=None)        # model=None: model-free mode
    alice = memory.profile("user:alice")
    alice.remember("Prefers dark mode", key="preference.ui_theme")
    alice.recall("what theme does alice like?")

It talks to the store only through its public API (``batch``/``abatch`` with ``GetOp``,
``PutOp``, ``SearchOp``, ``ListNamespacesOp``), plus ``delete_prefix`` on stores that have it
(:class:`~langmem_edge.memory.core.labels.PrefixDeleter`), so ``InMemoryStore``,
``ChromaStore`` and any other ``BaseStore`` work. Names that become namespace labels (the
namespace, profile names, session ids) are checked by :mod:`langmem_edge.memory.core.labels`,
and none ever enters a ``list_namespaces`` match condition, where ``*`` is a wildcard.

Vector search and write-time verification need a store with an index config
(``index={"dims": ..., "embed": ..., "fields": ["text"]}``); without one, memories are found
by the keyword, key and temporal channels and marked ``embedding_status="skipped"``.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from datetime import datetime
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langgraph.store.base import BaseStore, GetOp, SearchOp

from langmem_edge._lru import LRU
from langmem_edge.errors import ConfigurationError
from langmem_edge.memory.config import MemoryConfig, load_config
from langmem_edge.memory.consolidation import ConsolidationReport, plan_consolidate
from langmem_edge.memory.core.crypto import MemoryCipher
from langmem_edge.memory.core.labels import (
    check_namespace,
    plan_child_labels,
    plan_delete_prefix,
    under,
)
from langmem_edge.memory.core.layout import ProfileLayout
from langmem_edge.memory.core.plans import Plan, batch, planned, run_async, run_sync
from langmem_edge.memory.core.stores import KeywordSearch, ranks_keys
from langmem_edge.memory.core.validate import check_profile_name, to_utc
from langmem_edge.memory.documents import DocumentWorker
from langmem_edge.memory.index.access import MAX_KEPT, AccessWriter
from langmem_edge.memory.index.profile_index import ProfileIndex
from langmem_edge.memory.index.store_io import LOAD_LIMIT, SizeHints, plan_write_records
from langmem_edge.memory.profile import Profile
from langmem_edge.memory.records import MemoryStats, ProfileStats, utcnow
from langmem_edge.memory.reflection import ReflectionResult, plan_reflect
from langmem_edge.memory.semantic.context import ProfileContext, plan_read
from langmem_edge.memory.semantic.write import plan_flush_access

__all__ = ["AgentMemory"]

MAX_NAMESPACE_LABEL = 200
"""Longest label of the application namespace."""

MAX_NAMESPACES = 100_000
"""Namespaces listed by one ``list_namespaces`` call (a page of :meth:`list_profiles`)."""


class AgentMemory:
    """Agent memory over a langgraph ``BaseStore``.

    Args:
        store: Any ``BaseStore`` (``ChromaStore``, ``InMemoryStore``, ...).
        namespace: The application's namespace prefix (default ``("langmem_edge",)``).
        model: Decision model for verification, HyDE and answers; ``None`` is model-free.
        config: ``MemoryConfig`` or a dict of overrides.
        embeddings: Optional embeddings used where the store gives no cosine (composite
            scorer on non-vector hits). The store embeds memories itself.
        encryption_key: 32-byte AES-256 key (or its URL-safe base64) for ``encrypted=True``
            memories; reading one without the right key raises ``DecryptionError``.
    """

    def __init__(
        self,
        store: BaseStore,
        *,
        namespace: tuple[str, ...] = ("langmem_edge",),
        model: BaseChatModel | None = None,
        config: MemoryConfig | dict[str, Any] | None = None,
        embeddings: Embeddings | None = None,
        encryption_key: bytes | str | None = None,
    ) -> None:
        if not isinstance(store, BaseStore):
            raise ConfigurationError(
                f"store must be a langgraph BaseStore, got {type(store).__name__}"
            )
        check_namespace(namespace, "namespace", MAX_NAMESPACE_LABEL)
        if namespace[0] == "langgraph":
            raise ConfigurationError('namespace may not start with "langgraph" (reserved)')
        ranking = getattr(store, "ranking", "vector")
        if ranking != "vector":
            raise ConfigurationError(
                "AgentMemory reads cosine scores from store.search(query=...): open the store "
                f"with ranking='vector' (the default), not {ranking!r}; "
                "recall runs its own keyword and key channels and fuses them"
            )
        if model is not None and not isinstance(model, BaseChatModel):
            raise ConfigurationError(f"model must be a BaseChatModel or None, got "
                                     f"{type(model).__name__}")
        self.store = store
        self.namespace = tuple(namespace)
        self.model = model
        self.config = load_config(config)
        self.embeddings = embeddings
        self.cipher = MemoryCipher(encryption_key) if encryption_key is not None else None
        self.has_vectors = bool(getattr(store, "index_config", None))
        self.nearest = ranks_keys(store)
        self.keywords = isinstance(store, KeywordSearch)
        self.size_hints = SizeHints()
        """Which profiles were last seen too large to read whole (a routing hint)."""
        self.access_writers: LRU[tuple[str], AccessWriter] = LRU(MAX_KEPT)
        """This memory's writers of its profiles' access counts and their bumps not written
        yet, by ``(profile name,)`` (the least recently used dropped past a bound)."""
        self._lock = threading.Lock()
        self.documents = DocumentWorker()
        """Processes documents added without ``wait`` (``docs/documents.md``)."""

    def __repr__(self) -> str:
        return f"AgentMemory({type(self.store).__name__}, namespace={self.namespace!r})"

    # -- profiles ----------------------------------------------------------------------------

    def _context(self, name: str) -> ProfileContext:
        name = check_profile_name(name, self.config.limits.max_profile_chars)
        layout = ProfileLayout(self.namespace, name)
        writer = self.access_writers.get_or_make((name,), AccessWriter)
        index = ProfileIndex(layout, self.config.recall, writer)
        return ProfileContext(store=self.store, layout=layout, index=index,
                              config=self.config, model=self.model, cipher=self.cipher,
                              embeddings=self.embeddings, has_vectors=self.has_vectors,
                              nearest=self.nearest, keywords=self.keywords,
                              hints=self.size_hints)

    def profile(self, name: str) -> Profile:
        """The profile ``name`` (1-100 characters, no '.' or control characters; ``*`` is a
        plain name); created on first write."""
        return Profile(self._context(name), self.config.episodic, documents=self.documents)

    def _profiles_plan(self) -> Plan[list[str]]:
        prefix = (*self.namespace, "profiles")
        names = yield from plan_child_labels(self.store, prefix, page=MAX_NAMESPACES)
        if not names:
            return []
        # some stores (InMemoryStore) keep listing namespaces whose items were all deleted
        roots = [(*prefix, n) for n in names]
        found = yield batch(self.store, [SearchOp(root, limit=1) for root in roots])
        return [n for n, root, items in zip(names, roots, found, strict=True)
                if any(under(it.namespace, root) for it in items)]

    @planned
    def list_profiles(self) -> Plan[list[str]]:
        """Names of the profiles that hold anything, exactly as written, sorted."""
        return self._profiles_plan()

    alist_profiles = list_profiles.twin

    @planned
    def delete_profile(self, name: str) -> Plan[int]:
        """Delete everything of a profile (memories, messages, overlays, logs); returns the
        number of store items removed."""
        name = check_profile_name(name, self.config.limits.max_profile_chars)
        layout = ProfileLayout(self.namespace, name)
        page = self.config.index.page_size
        # by exact prefix, never a match condition (a name may be "*")
        deleted = yield from plan_delete_prefix(self.store, layout.root, page=page)
        self.access_writers.pop((name,))  # its counts were deleted with it
        return deleted

    adelete_profile = delete_profile.twin

    # -- maintenance -------------------------------------------------------------------------

    @planned
    def reembed(self, *, profile: str | None = None, limit: int | None = None) -> Plan[int]:
        """Embed memories stored ``pending`` (their embedding failed at write time); returns
        how many now have a vector. A memory failing ``reembed_max_attempts`` (3) times is
        marked ``failed``."""
        if not self.has_vectors:
            return 0
        names = [profile] if profile is not None else (yield from self._profiles_plan())
        done = 0
        max_attempts = self.config.limits.reembed_max_attempts
        for name in names:
            ctx = yield from plan_read(self._context(name), counts=False)
            pending = [mid for mid, v in ctx.index.values.items()
                       if v.get("embedding_status") == "pending"]
            if limit is not None:
                pending = pending[: max(0, limit - done)]
            if not pending:
                continue
            got = yield batch(self.store, [GetOp(ctx.layout.memories, m) for m in pending])
            stamp = utcnow().isoformat()
            values = [{**it.value, "embedding_status": "complete", "updated_at": stamp}
                      for it in got if it is not None and it.value.get("profile") == name
                      and it.value.get("embedding_status") == "pending"]
            try:
                yield from plan_write_records(self.store, ctx.index,
                                              rewrites=[(v, ["text"]) for v in values],
                                              reindex=True)
                done += len(values)
                continue
            except Exception:
                pass
            for v in values:  # isolate the failures
                try:
                    yield from plan_write_records(self.store, ctx.index,
                                                  rewrites=[(v, ["text"])], reindex=True)
                    done += 1
                except Exception:
                    attempts = int(v.get("embedding_attempts") or 0) + 1
                    status = "failed" if attempts >= max_attempts else "pending"
                    failed = {**v, "embedding_status": status, "embedding_attempts": attempts}
                    yield from plan_write_records(self.store, ctx.index,
                                                  rewrites=[(failed, False)])
        return done

    areembed = reembed.twin

    def _flush_plan(self) -> Plan[int]:
        done = 0
        for (name,), counter in self.access_writers.items():
            if counter.pending_count():
                ctx = yield from plan_read(self._context(name), counts=False)
                done += yield from plan_flush_access(ctx)
        return done

    def flush(self) -> int:
        """Write pending access-count bumps of every profile this object counted (recalls
        write them behind, at most ``access_flush_seconds`` later), after the documents
        processing in the background are done; returns records updated. Call it before a
        process exits to keep the last counts."""
        self.documents.wait()
        return run_sync(self._flush_plan())

    async def aflush(self) -> int:
        """Async :meth:`flush`."""
        await asyncio.to_thread(self.documents.wait)
        return await run_async(self._flush_plan())

    @planned
    def stats(self) -> Plan[MemoryStats]:
        """Memory counts by kind, status, embedding status and profile."""
        names = yield from self._profiles_plan()
        stats = MemoryStats()
        kinds: Counter[str] = Counter()
        statuses: Counter[str] = Counter()
        embeds: Counter[str] = Counter()
        for name in names:
            ns = ProfileLayout(self.namespace, name).memories
            pk: Counter[str] = Counter()
            ps: Counter[str] = Counter()
            pe: Counter[str] = Counter()
            (items,) = yield batch(self.store, [SearchOp(ns, limit=LOAD_LIMIT)])  # one read
            for v in (it.value for it in items if it.value.get("profile") == name):
                pk[v.get("kind", "?")] += 1
                ps[v.get("status", "?")] += 1
                pe[v.get("embedding_status", "?")] += 1
            total = sum(pk.values())
            if total:
                stats.profiles[name] = ProfileStats(total=total, by_kind=dict(pk),
                                                    by_status=dict(ps),
                                                    by_embedding_status=dict(pe))
            kinds += pk
            statuses += ps
            embeds += pe
        stats.total = sum(kinds.values())
        stats.by_kind, stats.by_status = dict(kinds), dict(statuses)
        stats.by_embedding_status = dict(embeds)
        return stats

    astats = stats.twin

    # -- consolidation and reflection --------------------------------------------------------

    @planned
    def consolidate(self, profile: str | None = None, *, model: BaseChatModel | None = None,
                    now: datetime | str | float | None = None) -> Plan[ConsolidationReport]:
        """One consolidation pass (``memory/consolidation.py``) over ``profile``, or every
        profile: decay unused memories, merge near-duplicates, supersede the members.

        Args:
            profile: One profile; ``None``: every profile.
            model: Writes canonical statements; default this memory's model (without any,
                the most complete, most recent member is kept).
            now: The clock the 30-day decay period is counted on (default now).

        Returns a :class:`ConsolidationReport`; a second pass at once changes nothing.
        """
        at = to_utc(now, "now")
        names = [profile] if profile is not None else (yield from self._profiles_plan())
        report = ConsolidationReport()
        for name in names:
            ctx = self._context(name)
            report.profiles.append((yield from plan_consolidate(
                ctx, model or self.model, now=at)))
        return report

    aconsolidate = consolidate.twin

    @planned
    def reflect(self, profile: str | None = None, *, model: BaseChatModel | None = None,
                now: datetime | str | float | None = None) -> Plan[list[ReflectionResult]]:
        """Reflect on ``profile`` (or every profile) since its last reflection
        (:meth:`Profile.reflect`); one :class:`ReflectionResult` per profile."""
        at = to_utc(now, "now")
        names = [profile] if profile is not None else (yield from self._profiles_plan())
        out = []
        for name in names:
            out.append((yield from plan_reflect(self._context(name), self.config.episodic,
                                                model or self.model, now=at)))
        return out

    areflect = reflect.twin
