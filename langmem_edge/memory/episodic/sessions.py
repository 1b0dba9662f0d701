"""The session record, ``(*R, "sessions")`` / session id, as ingest and deletion move it.

One item per session (docs/episodic.md has every field). Ingest writes it in the batch that
appends the messages; a deletion in the batch that removes them. Both keep its lists of
messages in step: ``recent`` and ``first`` (the ids of the newest pages and of the first, so
history pages are read by key: :mod:`.pages`) and ``tail`` (the last messages' ids and
text, the context of the next ingest's first message: :mod:`.embedded`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from langmem_edge.memory.episodic.embedded import TAIL_FIELD, embedded_fields, session_tail
from langmem_edge.memory.episodic.extraction import StoredMessage
from langmem_edge.memory.episodic.pages import (
    first_after_append,
    first_after_delete,
    recent_after_append,
    recent_after_delete,
)

__all__ = ["mark_after", "record_after_append", "record_after_delete"]


def mark_after(mark: int, start: int, end: int, extract: bool, confirm_later: bool) -> int:
    """A session's extraction mark once an ingest has stored messages ``start..end``: left
    for the caller to move (``confirm_later``), past everything extracted now, or, for
    messages stored without extraction, past them unless earlier ones still wait."""
    if extract:
        return mark if confirm_later else end
    return end if mark == start else mark


def record_after_append(
    old: Mapping[str, Any] | None, new: Sequence[StoredMessage], *, profile: str,
    session_id: str, page_size: int, start: int, now: datetime, extracted_to: int,
    contact: str | None,
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The session record after ``new`` (non-empty) was appended at seq ``start`` onwards,
    and each new message's embedded fields (id -> fields, from :mod:`.embedded`)."""
    value: dict[str, Any] = dict(old) if old is not None else {
        "kind": "session", "profile": profile, "session_id": session_id, "count": 0,
        "page_size": page_size, "first_ts": new[0].ts.isoformat()}
    value.setdefault("epoch", uuid.uuid4().hex)  # sessions from before it get one now
    end = start + len(new)
    value.update(next_seq=end, count=int(value["count"]) + len(new),
                 last_ts=new[-1].ts.isoformat(), updated_at=now.isoformat(),
                 extracted_to=extracted_to,
                 recent=recent_after_append(value, start, [m.id for m in new], page_size))
    first = first_after_append(old, start, [m.id for m in new], page_size)
    if first is not None:
        value["first"] = first
    if contact is not None:
        value.setdefault("contact", contact)
    tail = value.get(TAIL_FIELD) or []
    embedded = embedded_fields(new, tail)
    value[TAIL_FIELD] = session_tail(tail, new)
    return value, embedded


def record_after_delete(old: Mapping[str, Any], seqs: set[int], gone: set[str]
                        ) -> dict[str, Any]:
    """The session record after the messages ``gone`` (ids) at ``seqs`` were deleted."""
    value = dict(old)
    value["count"] = max(0, int(value.get("count", 0)) - len(gone))
    recent = recent_after_delete(value, seqs)
    if recent is not None:
        value["recent"] = recent
    first = first_after_delete(value, seqs)
    if first is not None:
        value["first"] = first
    if TAIL_FIELD in value:
        value[TAIL_FIELD] = [t for t in value[TAIL_FIELD] if t.get("id") not in gone]
    return value
