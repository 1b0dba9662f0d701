"""LangGraph checkpointers stored in Chroma.

``ChromaSaver`` keeps graph state in the same Chroma as the memory (an embedded folder or a
``chroma run`` server) and adds what the SQLite and Postgres savers lack: pruning, copying
threads, deleting by run, and checkpoint TTL. See ``docs/checkpointer.md``.
"""

from __future__ import annotations

from langmem_edge.checkpointers.base import ChromaSaver
from langmem_edge.checkpointers.ttl import CheckpointTTLConfig

__all__ = ["CheckpointTTLConfig", "ChromaSaver"]
