"""Chroma side of the keyword index's change protocol (see :mod:`.index`).

Two collections take part:

- the store's **items** collection (one row per item). For the keyword channels a row
  carries: document = :func:`~langmem_edge.retrieval.index.encode_document` of its indexed
  texts (or no document), metadata ``k`` (key), the namespace (``ns`` joined by U+001F with
  ``nd`` depth, or ``n0``..``n{nd-1}``), and the change stamp ``kw`` (writer id, str) +
  ``ks`` (that writer's sequence number, int) from :class:`SyncWriter`;
- a small **sync** collection (1-d dummy embeddings) holding one *marker* row per writer
  (``id = "m:<writer>"``, metadata ``t="m"``, ``kw``, ``ks``, ``ok`` (settled), ``at``)
  and one *tombstone*
  row per deleted item (``id = "d:<item id>"``, metadata ``t="d"``, ``kw``, ``ks``, ``i``,
  ``at``).

Write order for one store write (under the writer's lock, so a writer's numbers only go
up): ``s = writer.next_seq()``; upsert ``writer.marker(s, settled=False)`` and, for deletes,
``writer.tombstones(ids, s)`` into sync (one call); upsert item rows with
``writer.stamp(s)`` in their metadata and delete the deleted item rows; when the writer
falls idle, upsert ``writer.marker(s)`` (settled). Markers and tombstones older than a day
may be purged (:func:`purge_sync_rows`): readers idle that long reload fully.

:class:`ChromaKeywordSource` is the reader: it implements
:class:`~langmem_edge.retrieval.index.KeywordSource` with at most three ``get`` calls.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langmem_edge._chroma import split_labels
from langmem_edge.retrieval.index import ChangeSet, KeywordRow, Marker, Tombstone

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "DEFAULT_PURGE_AGE",
    "DEFAULT_SETTLE_AFTER",
    "SYNC_VECTOR",
    "ChromaKeywordSource",
    "SyncWriter",
    "namespace_from_metadata",
    "purge_sync_rows",
]

SYNC_VECTOR = [1.0]
"""Embedding of every sync-collection row (Chroma requires one)."""

DEFAULT_PAGE_SIZE = 5000
"""Rows per ``get`` when loading a whole collection."""

DEFAULT_PURGE_AGE = 86_400.0
"""Age in seconds after which markers and tombstones may be purged (one day)."""

DEFAULT_SETTLE_AFTER = 600.0
"""Age in seconds after which a marker still unsettled is taken as a writer that died
mid-write and settled by :func:`purge_sync_rows` (ten minutes: far beyond any write's
retries)."""

Caller = Callable[..., Any]


def _direct(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return fn(*args, **kwargs)


def namespace_from_metadata(meta: Mapping[str, Any]) -> tuple[str, ...]:
    """The namespace tuple of an item row (``ns``/``nd`` fields, or ``n0``.. fields)."""
    depth = int(meta.get("nd", 0))
    if "ns" in meta:
        return split_labels(str(meta["ns"])) if depth else ()
    return tuple(str(meta[f"n{i}"]) for i in range(depth))


class SyncWriter:
    """A writer's identity and counter; builds the stamps, tombstones and marker it writes.

    Args:
        writer_id: Defaults to a random 16-hex id (one per store object).
        clock: Wall clock for the ``at`` fields (purging only; never used for ordering).

    Call :meth:`next_seq` while holding the store's write lock, and write the marker after
    the rows of that write.
    """

    def __init__(
        self, writer_id: str | None = None, *, clock: Callable[[], float] = time.time
    ) -> None:
        self.writer_id = writer_id or uuid.uuid4().hex[:16]
        self._seq = 0
        self._clock = clock

    @property
    def seq(self) -> int:
        """The last number handed out (0 before the first write)."""
        return self._seq

    def next_seq(self) -> int:
        """The number of the next write."""
        self._seq += 1
        return self._seq

    def stamp(self, seq: int) -> dict[str, Any]:
        """Metadata fields to add to every item row written by write ``seq``."""
        return {"kw": self.writer_id, "ks": seq}

    def marker(self, seq: int, *, settled: bool = True) -> dict[str, Any]:
        """The marker row (``ids``, ``metadatas``, ``embeddings``) to upsert into sync:
        unsettled before write ``seq``'s rows, settled once the writer is idle after it."""
        meta = {"t": "m", "kw": self.writer_id, "ks": seq, "ok": settled, "at": self._clock()}
        return {"ids": [f"m:{self.writer_id}"], "metadatas": [meta], "embeddings": [SYNC_VECTOR]}

    def tombstones(self, item_ids: Sequence[str], seq: int) -> dict[str, Any]:
        """Tombstone rows (``ids``, ``metadatas``, ``embeddings``) for deleted items."""
        now = self._clock()
        ids = list(dict.fromkeys(item_ids))
        return {
            "ids": [f"d:{i}" for i in ids],
            "metadatas": [
                {"t": "d", "kw": self.writer_id, "ks": seq, "i": i, "at": now} for i in ids
            ],
            "embeddings": [SYNC_VECTOR for _ in ids],
        }


def _since_clause(since: Mapping[str, int]) -> dict[str, Any]:
    clauses = [{"$and": [{"kw": w}, {"ks": {"$gt": int(a)}}]} for w, a in sorted(since.items())]
    return clauses[0] if len(clauses) == 1 else {"$or": clauses}


class ChromaKeywordSource:
    """Reads keyword rows, tombstones and markers from Chroma collections.

    Args:
        items: The items collection. sync: The sync collection.
        call: How to call Chroma (the store's ``ChromaCaller``); default: directly.
        page_size: Rows per ``get`` in a full load. Default :data:`DEFAULT_PAGE_SIZE`.
    """

    def __init__(
        self,
        items: Any,
        sync: Any,
        *,
        call: Caller | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> None:
        self.items = items
        self.sync = sync
        self.call: Caller = call or _direct
        self.page_size = page_size

    def markers(self) -> dict[str, Marker]:
        got = self.call(self.sync.get, where={"t": "m"}, include=["metadatas"])
        return {
            str(m["kw"]): Marker(int(m["ks"]), bool(m.get("ok", True)))
            for m in got["metadatas"] or []
        }

    @staticmethod
    def _rows(got: Mapping[str, Any]) -> list[KeywordRow]:
        docs = got.get("documents") or [None] * len(got["ids"])
        return [
            KeywordRow(i, namespace_from_metadata(m), str(m.get("k", "")), d)
            for i, m, d in zip(got["ids"], got["metadatas"], docs, strict=True)
        ]

    def _full(self) -> list[KeywordRow]:
        """Every row: one page; past it, every id (an id-only read from offset 0) and the
        rows not read yet by id. Never pages by offset: a row of an earlier page deleted in
        between shifts the later ones back, and the row that moves across the page boundary
        was in neither page, for good (a delta sync only fetches rows that changed). Rows
        written after :meth:`markers` was read are the next delta's."""
        fields = ["documents", "metadatas"]
        got = self.call(self.items.get, include=fields, limit=self.page_size)
        rows = self._rows(got)
        if len(got["ids"]) < self.page_size:
            return rows
        seen = set(got["ids"])
        rest = [i for i in self.call(self.items.get, include=[])["ids"] if i not in seen]
        for start in range(0, len(rest), self.page_size):
            got = self.call(self.items.get, ids=rest[start:start + self.page_size],
                            include=fields)
            rows.extend(self._rows(got))
        return rows

    def changes(self, since: Mapping[str, int] | None) -> ChangeSet:
        if since is None:
            return ChangeSet(rows=self._full())
        if not since:
            return ChangeSet()
        where = _since_clause(since)
        got = self.call(self.items.get, where=where, include=["documents", "metadatas"])
        dead = self.call(
            self.sync.get, where={"$and": [{"t": "d"}, where]}, include=["metadatas"]
        )
        return ChangeSet(
            rows=self._rows(got),
            tombstones=[Tombstone(str(m["i"])) for m in dead["metadatas"] or []],
        )

    def existing(self, ids: Sequence[str]) -> set[str]:
        if not ids:
            return set()
        got = self.call(self.items.get, ids=list(ids), include=[])
        return set(got["ids"])


def purge_sync_rows(
    sync: Any,
    *,
    older_than: float = DEFAULT_PURGE_AGE,
    keep_writer: str | None = None,
    settle_after: float = DEFAULT_SETTLE_AFTER,
    call: Caller | None = None,
    clock: Callable[[], float] = time.time,
) -> int:
    """Delete markers and tombstones whose ``at`` is older than ``older_than`` seconds, and
    settle markers left unsettled for ``settle_after`` seconds (their writer died mid-write:
    readers have fetched its rows at every sync since, so nothing is lost by settling).

    ``keep_writer`` (the caller's own writer id) keeps its marker whatever its age. Returns
    the number of rows deleted. Wall clocks decide only this housekeeping, never the order
    of changes.
    """
    run = call or _direct
    now = clock()
    stuck = run(
        sync.get,
        where={"$and": [{"ok": False}, {"at": {"$lt": now - settle_after}}]},
        include=["metadatas"],
    )
    settle = [
        (i, m) for i, m in zip(stuck["ids"], stuck["metadatas"], strict=True)
        if m.get("kw") != keep_writer
    ]
    if settle:
        run(
            sync.upsert,
            ids=[i for i, _ in settle],
            metadatas=[{**m, "ok": True} for _, m in settle],
            embeddings=[SYNC_VECTOR for _ in settle],
        )
    cutoff = now - older_than
    got = run(sync.get, where={"at": {"$lt": cutoff}}, include=["metadatas"])
    ids = [
        i for i, m in zip(got["ids"], got["metadatas"], strict=True)
        if not (m.get("t") == "m" and m.get("kw") == keep_writer)
    ]
    if ids:
        run(sync.delete, ids=ids)
    return len(ids)
