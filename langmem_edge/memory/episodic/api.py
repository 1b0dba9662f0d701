"""``profile.episodic``: one profile's raw conversations (the episodic tier, L2).

::

    alice.episodic.search("refund policy", scope="all")   # raw messages, hybrid ranked
    alice.episodic.messages("conv-8891", limit=50)         # a session's messages in order
    alice.episodic.overlays("conv-8891")                   # its compaction summaries
    alice.episodic.window("conv-8891", 4000)               # head + overlays + tail

Each method is written once as the plan it runs (sync, and ``a*`` twins), over the profile's
:class:`~langmem_edge.memory.episodic.tier.EpisodicTier`. Storing messages
(``profile.ingest``) and deleting a session (``profile.delete_session``) stay on ``Profile``:
they also write and delete memories.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import TYPE_CHECKING

from langmem_edge.memory.core.plans import Call, Plan, planned

if TYPE_CHECKING:  # the tier is imported when first used (Profile.episodic)
    from langmem_edge.memory.episodic.compaction import ContextWindow, Overlay
    from langmem_edge.memory.episodic.extraction import StoredMessage
    from langmem_edge.memory.episodic.tier import EpisodicTier, Mode, Scope

__all__ = ["ProfileEpisodic"]

WindowPlan = Callable[[str, int, bool, "str | None"], "Plan[ContextWindow]"]
"""The profile's window plan, ``(session_id, budget_tokens, compact, contact)``: the tier's
window, then the memories flushed before compaction written through the semantic write path
(which this tier does not import)."""


class ProfileEpisodic:
    """The episodic tier of one profile (get it with ``profile.episodic``)."""

    def __init__(self, tier: EpisodicTier, window_plan: WindowPlan) -> None:
        self._tier = tier
        self._window_plan = window_plan

    def __repr__(self) -> str:
        return f"ProfileEpisodic({self._tier.profile!r})"

    @planned
    def search(self, query: str, *, mode: Mode | None = None, limit: int | None = None,
               role: str | None = None, scope: Scope = "contact", session_id: str | None = None,
               contact: str | None = None) -> Plan[builtins.list[StoredMessage]]:
        """Search this profile's raw messages, best first, each with its ``score``.

        ``mode``: ``"hybrid"`` (the default: the vector channel fused with BM25 over each
        message and its neighbours), ``"semantic"`` or ``"keyword"``. ``scope``:
        ``"contact"`` (``contact``'s messages; without one, those of no contact),
        ``"conversation"`` (``session_id``'s) or ``"all"``. ``role``: only that role's.
        """
        tier = self._tier
        found: builtins.list[StoredMessage] = yield Call(
            tier.recall_conversation, tier.arecall_conversation, (query,),
            {"mode": mode, "limit": limit, "role": role, "scope": scope,
             "session_id": session_id, "contact": contact})
        return found

    asearch = search.twin

    @planned
    def messages(self, session_id: str, *, start: int = 0, limit: int = 100
                 ) -> Plan[builtins.list[StoredMessage]]:
        """A session's raw messages in order, from position ``start``, at most ``limit``;
        ``[]`` for a session this profile does not have."""
        tier = self._tier
        found: builtins.list[StoredMessage] = yield Call(
            tier.list_messages, tier.alist_messages, (session_id,),
            {"start": start, "limit": limit})
        return found

    amessages = messages.twin

    @planned
    def overlays(self, session_id: str) -> Plan[builtins.list[Overlay]]:
        """A session's overlays (compaction summaries of message ranges), in range order."""
        tier = self._tier
        found: builtins.list[Overlay] = yield Call(tier.overlays, tier.aoverlays, (session_id,))
        return found

    aoverlays = overlays.twin

    @planned
    def window(self, session_id: str, budget_tokens: int, *, compact: bool = True,
               contact: str | None = None) -> Plan[ContextWindow]:
        """The session's context window for a token budget: its first messages, the overlays
        that summarise what follows, the newest messages verbatim (``docs/episodic.md``).
        With ``compact`` (the default) the oldest uncovered range is summarised into a new
        overlay first, and the memories flushed before it are written (source
        ``pre-compaction``, scoped to ``contact``)."""
        return self._window_plan(session_id, budget_tokens, compact, contact)

    awindow = window.twin
