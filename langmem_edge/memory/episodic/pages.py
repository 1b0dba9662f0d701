"""History pages by key: the session record lists its newest messages' ids.

A window reads a session's newest pages at every call; on a store whose filtered search costs
about the size of the namespace (ChromaStore: ~0.1 s a page at 10,000 messages), reading them
by filter is where the time would go. So the session record lists the ids of its newest
messages (``recent``: ``{"from": seq, "ids": [...]}``, one id per ``seq`` from ``from`` to
``next_seq - 1``, ``None`` where a message was deleted), covering at least the newest
:data:`RECENT_PAGES` pages, as many as a window reads (``max_rows_scanned``, 200 rows, and
the newest page, partly filled), and the ids of its first page (``first``: the head of every
window). Ingest extends both in the batch that writes the messages and moves ``next_seq``; a
deletion blanks the ids it removes in the batch that lowers ``count``. A history page inside
a listed span is read by key (:func:`recent_keys`; one ``get`` of the pages' ids, whatever
the session's size); pages before it, and sessions whose record lists nothing yet (written
before it existed: the next ingest starts the lists), are searched by their ``page`` field.
Nothing is kept between calls: every window reads the record, and the pages by key.

A writer that does not keep the lists (an older release) appends without moving them: a
span that does not end at ``next_seq`` is not trusted, and pages are searched until the next
ingest starts a new span.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "RECENT_PAGES",
    "first_after_append",
    "first_after_delete",
    "recent_after_append",
    "recent_after_delete",
    "recent_keys",
]

RECENT_PAGES = 21
"""Newest history pages whose message ids the session record lists (``recent``): as many as a
window reads at most (``max_rows_scanned``, 200 rows, and the newest page, partly filled), so
every page of a window is read by key. About 7 KB of ids in the record."""


def first_after_append(record: Mapping[str, Any] | None, start: int, ids: list[str],
                       page_size: int) -> list[str | None] | None:
    """The ``first`` field of a session record (the ids of its first page's messages) after
    ``ids`` were appended at seq ``start`` onwards; None when the record cannot list them (a
    session whose first page was written before the field existed)."""
    old = (record or {}).get("first")
    if start >= page_size:
        return old if isinstance(old, list) else None
    if start == 0:
        listed: list[str | None] = []
    elif isinstance(old, list) and len(old) == start:
        listed = list(old)
    else:
        return None
    return [*listed, *ids][:page_size]


def first_after_delete(record: Mapping[str, Any], seqs: set[int]) -> list[str | None] | None:
    """The ``first`` field of ``record`` with the ids of deleted ``seqs`` blanked (None when the
    record has none)."""
    old = record.get("first")
    if not isinstance(old, list):
        return None
    return [None if i in seqs else mid for i, mid in enumerate(old)]


def recent_after_append(record: Mapping[str, Any] | None, start: int, ids: list[str],
                        page_size: int) -> dict[str, Any]:
    """The ``recent`` field of a session record after messages ``ids`` were appended at seq
    ``start`` onwards: the old span extended when it reaches ``start`` (else a new one), then
    cut to the newest :data:`RECENT_PAGES` pages."""
    old = (record or {}).get("recent")
    if isinstance(old, dict) and int(old["from"]) + len(old["ids"]) == start:
        first, listed = int(old["from"]), [*old["ids"], *ids]
    else:
        first, listed = start, list(ids)
    end = start + len(ids)
    keep_from = max(first, ((end - 1) // page_size - RECENT_PAGES + 1) * page_size)
    return {"from": keep_from, "ids": listed[keep_from - first:]}


def recent_after_delete(record: Mapping[str, Any], seqs: set[int]) -> dict[str, Any] | None:
    """The ``recent`` field of ``record`` with the ids of deleted ``seqs`` blanked (None when
    the record has none)."""
    old = record.get("recent")
    if not isinstance(old, dict):
        return None
    first = int(old["from"])
    return {"from": first,
            "ids": [None if first + i in seqs else mid for i, mid in enumerate(old["ids"])]}


def recent_keys(record: Mapping[str, Any] | None, lo: int, hi: int) -> list[str] | None:
    """The ids of the messages with ``lo <= seq < hi`` when the session record lists them all
    (``first``, complete, or ``recent``), skipping deleted ones; None when the range is in
    neither, or the ``recent`` span does not end at the record's ``next_seq`` (a writer that
    does not keep it appended since): read it with a search."""
    if record is None:
        return None
    n = int(record["next_seq"])
    head = record.get("first")
    if (isinstance(head, list) and hi <= len(head)
            and len(head) == min(n, int(record.get("page_size", 0)) or n)):
        return [mid for mid in head[lo:hi] if mid is not None]
    old = record.get("recent")
    if not isinstance(old, dict):
        return None
    first, ids = int(old["from"]), old["ids"]
    if lo < first or first + len(ids) != n:
        return None
    return [mid for mid in ids[lo - first:hi - first] if mid is not None]
