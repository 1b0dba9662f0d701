"""What every plan of one profile needs, and the checks made at the edge.

``ProfileContext`` bundles the store, the profile's layout and index, the config, the decision
model and the cipher. The validators here turn bad arguments into
:class:`~langmem_edge.errors.InvalidInputError` / ``LimitExceededError`` naming what was wrong
and what is allowed, before anything is written.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langgraph.store.base import BaseStore

from langmem_edge.errors import DecryptionError, InvalidInputError, LimitExceededError
from langmem_edge.memory.config import MemoryConfig
from langmem_edge.memory.crypto import MemoryCipher
from langmem_edge.memory.labels import check_label
from langmem_edge.memory.records import MemoryRecord
from langmem_edge.memory.snapshot import ProfileIndex, ProfileLayout

__all__ = [
    "NearestKeys",
    "ProfileContext",
    "check_label",
    "check_profile_name",
    "check_text",
    "to_utc",
]


@runtime_checkable
class NearestKeys(Protocol):
    """A store that ranks keys by vector without reading values (``ChromaStore``).

    Recall reads the values from the profile index it keeps anyway, so on such a store its
    vector channel asks for keys alone (:meth:`ChromaStore.nearest_keys`): on 100k memories
    that is a few milliseconds instead of the tens that reading 50 rows costs.
    """

    def nearest_keys(self, namespace_prefix: tuple[str, ...], /, query: str, *,
                     limit: int = 10) -> Sequence[Any]: ...

    async def anearest_keys(self, namespace_prefix: tuple[str, ...], /, query: str, *,
                            limit: int = 10) -> Sequence[Any]: ...


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
    rewrite_index: Any = False
    """``index`` argument of writes that change a stored record but not its text (access
    counts, supersession, forgetting). ``False`` (do not re-embed) keeps the vector on
    ``InMemoryStore`` and langgraph's SQL stores; ``ChromaStore`` drops vectors on
    ``index=False`` but reuses an unchanged text's vector without calling the model, so it
    gets ``["text"]``."""
    nearest: bool = False
    """The store is a :class:`NearestKeys`: recall's vector channels ask it for keys only."""

    def index_arg(self, value: dict[str, Any]) -> Any:
        """The ``index`` argument for rewriting ``value`` without changing its text."""
        if value.get("embedding_status") != "complete":
            return False
        return self.rewrite_index

    @property
    def profile(self) -> str:
        """The profile name."""
        return self.layout.profile

    def record(self, value: dict[str, Any]) -> MemoryRecord:
        """A stored value as a record, its text decrypted (``DecryptionError`` without key)."""
        if value.get("profile") != self.profile:  # the second guard of profile isolation
            raise InvalidInputError(f"record {value.get('id')!r} is not in this profile")
        record = MemoryRecord.from_value(value)
        pending = self.index.pending_access.get(record.id)
        if pending is not None:  # access bumps not yet written to the store
            record = record.model_copy(update={
                "access_count": record.access_count + pending[0],
                "last_accessed_at": datetime.fromisoformat(pending[1])})
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


def aad(record: MemoryRecord) -> str:
    """Associated data sealing a ciphertext to its memory and profile."""
    return f"{record.profile}\x1f{record.id}"


def to_utc(value: datetime | str | float | int | None, name: str) -> datetime | None:
    """A timezone-aware UTC datetime from a datetime (naive = UTC), ISO text or epoch seconds."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidInputError(f"{name} must be a datetime, ISO-8601 text or epoch seconds")
    if isinstance(value, int | float):
        return datetime.fromtimestamp(float(value), tz=UTC)
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError as e:
            raise InvalidInputError(f"{name} is not ISO-8601: {value!r}") from e
    if not isinstance(value, datetime):
        raise InvalidInputError(
            f"{name} must be a datetime, ISO-8601 text or epoch seconds, "
            f"got {type(value).__name__}"
        )
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def check_profile_name(name: Any, max_chars: int) -> str:
    """A valid profile name: 1-100 characters, no '.' or control characters (it becomes a
    namespace label: :func:`~langmem_edge.memory.labels.check_label`)."""
    return check_label(name, "profile name", max_chars)


def check_text(value: Any, name: str, max_chars: int, *, allow_empty: bool = False) -> str:
    """A string of at most ``max_chars`` characters (non-blank unless ``allow_empty``)."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise InvalidInputError(f"{name} must not be empty")
    if len(value) > max_chars:
        raise LimitExceededError(f"{name} is {len(value):,} characters; at most {max_chars:,}")
    return value


def check_optional_name(value: Any, name: str, max_chars: int) -> str | None:
    """``None`` or a non-blank string without control characters."""
    if value is None:
        return None
    check_text(value, name, max_chars)
    if any(ord(ch) < 32 for ch in value):
        raise InvalidInputError(f"{name} must not contain control characters: {value!r}")
    return str(value)


def check_metadata(value: Any, max_bytes: int) -> dict[str, Any]:
    """A JSON-serialisable dict of at most ``max_bytes`` bytes."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInputError(f"metadata must be a dict, got {type(value).__name__}")
    try:
        size = len(json.dumps(value, allow_nan=False).encode("utf-8"))
    except (TypeError, ValueError) as e:
        raise InvalidInputError(f"metadata is not JSON-serialisable: {e}") from e
    if size > max_bytes:
        raise LimitExceededError(f"metadata is {size:,} bytes as JSON; at most {max_bytes:,}")
    return dict(value)


def check_tags(value: Any, max_tags: int, max_chars: int) -> list[str]:
    """A list of distinct non-blank tags."""
    if value is None:
        return []
    if isinstance(value, str) or not hasattr(value, "__iter__"):
        raise InvalidInputError("tags must be a list of strings")
    tags = list(dict.fromkeys(value))
    if len(tags) > max_tags:
        raise LimitExceededError(f"{len(tags)} tags; at most {max_tags}")
    for tag in tags:
        check_text(tag, "tag", max_chars)
    return tags
