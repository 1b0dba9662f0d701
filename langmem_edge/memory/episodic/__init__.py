"""The episodic tier (L2): every message of every session, never rewritten.

- :mod:`.api`: :class:`~.api.ProfileEpisodic`, ``profile.episodic`` (search, messages,
  overlays, window).
- :mod:`.tier`: :class:`~.tier.EpisodicTier` (ingest, conversation recall, windows, deletion).
- :mod:`.messages`: validation, normalisation and ids of incoming messages.
- :mod:`.extraction`: memory extraction with a chat model, and the types it shares.
- :mod:`.rules`: the model-free fallbacks (rule-based extraction, extractive summaries).
- :mod:`.compaction`: the context window and its overlays, with the pre-compaction flush.
- :mod:`.pages`: the ids of a session's newest messages in its record, so a window reads
  its history pages by key.
- :mod:`.recall`: hybrid recall's fields and fusion; :mod:`.search`: its keyword side
  ranked by the store.
- :mod:`.embedded`: what the store embeds for a message (its day, speaker and text, and the
  turns before it) and its keyword fields (the turns after it too), beside the ``text``
  users read back.
- :mod:`.writes`, :mod:`.sessions`, :mod:`.deletion`: the rows an ingest or a deletion
  writes, the session record.

It never imports another tier: the memories it extracts are handed to ``memory/profile.py``,
which writes them through the semantic tier. See ``docs/episodic.md``.
"""

from __future__ import annotations

from langmem_edge.memory.config import EpisodicConfig
from langmem_edge.memory.episodic.api import ProfileEpisodic
from langmem_edge.memory.episodic.compaction import ContextWindow, Overlay
from langmem_edge.memory.episodic.extraction import ExtractedMemory, StoredMessage
from langmem_edge.memory.episodic.tier import EpisodicTier, IngestOutcome

__all__ = [
    "ContextWindow",
    "EpisodicConfig",
    "EpisodicTier",
    "ExtractedMemory",
    "IngestOutcome",
    "Overlay",
    "ProfileEpisodic",
    "StoredMessage",
]
