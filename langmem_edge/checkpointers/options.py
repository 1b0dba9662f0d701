"""``ChromaSaverOptions``: the saver's keyword options, as ``ChromaSaver.from_path`` and
``from_url`` pass them on to the constructor (typed with ``Unpack``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

from langgraph.checkpoint.serde.base import SerializerProtocol

from langmem_edge._chroma import RetryConfig
from langmem_edge.checkpointers.ttl import CheckpointTTLConfig

__all__ = ["ChromaSaverOptions"]


class ChromaSaverOptions(TypedDict, total=False):
    """``ChromaSaver``'s keyword options, as ``from_path`` and ``from_url`` pass them on (see
    the constructor for each; ``tests/test_store_options.py`` holds the two lists equal)."""

    serde: SerializerProtocol | None
    ttl: CheckpointTTLConfig | None
    collection_prefix: str
    retry: RetryConfig | None
    max_payload_bytes: int
    list_page_size: int
    index_metadata: bool | Sequence[str]
