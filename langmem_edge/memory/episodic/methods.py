"""``Profile``'s read-only episodic methods: raw-message recall, a session's messages and its
overlays, each delegating to the profile's :class:`~langmem_edge.memory.episodic.tier.
EpisodicTier` (the methods that also write memories, ``ingest`` and ``window``, stay on
``Profile``)."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the tier is imported when first used (Profile._episodic)
    from langmem_edge.memory.episodic.compaction import Overlay
    from langmem_edge.memory.episodic.extraction import StoredMessage
    from langmem_edge.memory.episodic.tier import EpisodicTier, Mode, Scope

__all__ = ["EpisodicMethods"]


class EpisodicMethods:
    """The read-only episodic methods of ``Profile`` and their async twins."""

    def _episodic(self) -> EpisodicTier:
        raise NotImplementedError

    def recall_conversation(self, query: str, *, mode: Mode | None = None,
                            limit: int | None = None, role: str | None = None,
                            scope: Scope = "contact", session_id: str | None = None,
                            contact: str | None = None) -> builtins.list[StoredMessage]:
        """Search this profile's raw messages (``EpisodicTier.recall_conversation``: ``mode``
        hybrid (the default: vector fused with BM25 over each message and its neighbours),
        semantic or keyword; ``scope`` contact, conversation or all)."""
        return self._episodic().recall_conversation(
            query, mode=mode, limit=limit, role=role, scope=scope,
            session_id=session_id, contact=contact)

    async def arecall_conversation(self, query: str, *, mode: Mode | None = None,
                                   limit: int | None = None, role: str | None = None,
                                   scope: Scope = "contact", session_id: str | None = None,
                                   contact: str | None = None) -> builtins.list[StoredMessage]:
        """Async :meth:`recall_conversation`."""
        return await self._episodic().arecall_conversation(
            query, mode=mode, limit=limit, role=role, scope=scope,
            session_id=session_id, contact=contact)

    def messages(self, session_id: str, *, start: int = 0, limit: int = 100
                 ) -> builtins.list[StoredMessage]:
        """A session's raw messages in order, from position ``start``, at most ``limit``
        (``EpisodicTier.list_messages``); ``[]`` for a session this profile does not have."""
        return self._episodic().list_messages(session_id, start=start, limit=limit)

    async def amessages(self, session_id: str, *, start: int = 0, limit: int = 100
                        ) -> builtins.list[StoredMessage]:
        """Async :meth:`messages`."""
        return await self._episodic().alist_messages(session_id, start=start, limit=limit)

    def overlays(self, session_id: str) -> builtins.list[Overlay]:
        """A session's overlays (compaction summaries of message ranges), in range order."""
        return self._episodic().overlays(session_id)

    async def aoverlays(self, session_id: str) -> builtins.list[Overlay]:
        """Async :meth:`overlays`."""
        return await self._episodic().aoverlays(session_id)
