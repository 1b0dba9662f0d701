"""``ChromaStore``, a LangGraph ``BaseStore`` on Chroma (embedded folder or server)."""

from langmem_edge.store.base import ChromaStore

__all__ = ["ChromaStore"]
