"""Validators of the edge: bad arguments become errors that name what is allowed.

Each turns a bad argument into :class:`~langmem_edge.errors.InvalidInputError` /
``LimitExceededError`` naming what was wrong and what is allowed, before anything is written.
Namespace labels (profile names, session ids) are checked by :mod:`.labels`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from langmem_edge.errors import InvalidInputError, LimitExceededError
from langmem_edge.memory.core.labels import check_label

__all__ = [
    "check_metadata",
    "check_optional_name",
    "check_profile_name",
    "check_tags",
    "check_text",
    "to_utc",
]


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


def check_metadata(value: Any, max_bytes: int, name: str = "metadata") -> dict[str, Any]:
    """A JSON-serialisable dict of at most ``max_bytes`` bytes (``None``: ``{}``)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInputError(f"{name} must be a dict, got {type(value).__name__}")
    try:
        size = len(json.dumps(value, allow_nan=False).encode("utf-8"))
    except (TypeError, ValueError) as e:
        raise InvalidInputError(f"{name} is not JSON-serialisable: {e}") from e
    if size > max_bytes:
        raise LimitExceededError(f"{name} is {size:,} bytes as JSON; at most {max_bytes:,}")
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
