"""Opening ``ChromaStore``'s item rows, and filling them once when a store gets an index.

The item rows live in ``<prefix>-rows<D>`` (:func:`layout.rows_collection`): ``D`` is the
dimension of their vectors, fixed by Chroma at a collection's first row. Which one a store
opens:

- with an index of ``dims`` D: ``rows<D>``. If it does not exist yet, it is created and,
  when the store was used without an index until now, filled by copying ``rows0`` once; a
  ``rows<E>`` of another dimension E > 0 is refused
  (:class:`~langmem_edge.errors.ConfigurationError`: the store was built with E).
- without an index: the indexed ``rows<D>`` if there is one, else ``rows0``.

**The copy** (:meth:`UpgradeMixin._copy_rows`) lists ``rows0``'s ids, reads its rows by id a
page at a time and upserts each page into the new collection, each row with a placeholder
vector (:func:`layout.row_vector`: items written without an index have no vectors until they
are written again); past :data:`UPGRADE_PROGRESS_ROWS` rows it prints a progress line a page
on stderr. Then ``rows0`` is deleted. The new collection carries ``langmem_edge:copying``
(the source's name) until then; a crash in between leaves the marker, and the next open
copies again from the start (upserts of the same rows: idempotent).

Collections of the layouts before this one (schema < :data:`layout.SCHEMA_VERSION`, or a
``<prefix>-items`` collection: development versions before 0.1.0) are refused, untouched,
with a :class:`~langmem_edge.errors.ConfigurationError` naming the way out (:data:`MOVE_DATA`).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from chromadb.api import ClientAPI

from langmem_edge import _chroma
from langmem_edge.errors import ConfigurationError
from langmem_edge.store import layout

logger = logging.getLogger(__name__)

__all__ = ["COPYING_KEY", "GET_PAGE", "UPGRADE_PROGRESS_ROWS", "UpgradeMixin"]

GET_PAGE = 5000
"""Rows read per call when scanning items (filters, listing, sweeping, the copy)."""

UPGRADE_PROGRESS_ROWS = 20_000
"""Rows past which the copy reports its progress on stderr, one line a page."""

MOVE_DATA = ("Move the data with the version that wrote it: memory profiles by langmem-edge "
             "export, then import here; other items by reading them there and putting them "
             "here (or use a new collection_prefix).")
"""How to bring a store of a refused layout over, for the errors that refuse it."""

COPYING_KEY = "langmem_edge:copying"
"""Metadata of a rows collection being filled by :meth:`UpgradeMixin._copy_rows`: the name
of the collection it copies from."""


class UpgradeMixin:
    """Opens the item rows collection of ``ChromaStore`` (needs its client and caller)."""

    _client: ClientAPI
    _call: _chroma.ChromaCaller
    collection_prefix: str
    _row_dims: int

    def _open_rows(self, dims: int | None, ef_search: int) -> Any:
        """The item rows collection for an index of ``dims`` (None: no index), created and
        filled from ``rows0`` when needed (module docstring)."""
        prefix = self.collection_prefix
        names = [c.name for c in self._call(self._client.list_collections)]
        if f"{prefix}-items" in names:
            raise ConfigurationError(
                f"{prefix}-items was written by a development version of langmem_edge before "
                f"0.1.0, whose layout this version does not read. {MOVE_DATA}")
        existing = {d: n for n in names if (d := layout.rows_dims(prefix, n)) is not None}
        indexed = sorted(d for d in existing if d > 0)
        if dims is not None:
            other = [d for d in indexed if d != dims]
            if other:
                raise ConfigurationError(
                    f"this store's rows have {other[0]}-dimensional vectors "
                    f"({layout.rows_collection(prefix, other[0])}); index['dims'] is {dims}. "
                    "Open it with the index it was built with, or use a new "
                    "collection_prefix (langmem-edge export / import moves the data).")
            target = dims
        elif len(indexed) > 1:
            raise ConfigurationError(
                f"this store has rows of several dimensions ({indexed}); open it with an "
                "index config naming its dims")
        else:
            target = indexed[0] if indexed else 0
        self._row_dims = target
        name = layout.rows_collection(prefix, target)
        source: str | None = None
        if name in existing:
            rows = self._open(name, ef_search)
            source = (rows.metadata or {}).get(COPYING_KEY)
            if source is not None and source not in names:
                source = None  # copied, but the marker's removal was lost: done
        else:
            if target > 0 and 0 in existing:
                source = existing[0]
            rows = self._open(name, ef_search, copying=source)
        if source is not None:
            self._copy_rows(source, rows)
        return rows

    def _open(self, name: str, ef_search: int, *, copying: str | None = None) -> Any:
        meta = {COPYING_KEY: copying} if copying else None
        return _chroma.open_collection(
            self._client, name, schema_version=layout.SCHEMA_VERSION, call=self._call,
            metadata=meta, ef_search=ef_search if self._row_dims > 0 else None,
            way_out=MOVE_DATA)

    def _copy_rows(self, source_name: str, rows: Any) -> None:
        """Fill ``rows`` from ``source_name`` (``rows0``), then delete the source and the
        copying marker (module docstring)."""
        source = _chroma.open_collection(self._client, source_name, call=self._call,
                                         schema_version=layout.SCHEMA_VERSION,
                                         way_out=MOVE_DATA)
        # every id first (one id-only read), then the rows by id: a row deleted meanwhile
        # shifts no page, as an offset would (the store's scans read the same way)
        listed = self._call(source.get, include=[])["ids"]
        total = len(listed)
        size = max(1, int(self._call(self._client.get_max_batch_size)))
        done = 0
        for first in range(0, total, GET_PAGE):
            page = self._call(source.get, ids=listed[first:first + GET_PAGE],
                              include=["metadatas", "documents"])
            ids, metas = page["ids"], page["metadatas"]
            docs = page["documents"] or [""] * len(ids)
            embs = [layout.row_vector(i, self._row_dims, None) for i in ids]
            for start in range(0, len(ids), size):
                end = start + size
                self._call(rows.upsert, ids=ids[start:end], metadatas=metas[start:end],
                           documents=docs[start:end], embeddings=embs[start:end])
            done += len(ids)
            if total > UPGRADE_PROGRESS_ROWS:
                print(f"langmem_edge: copying {source_name} into {rows.name}: "
                      f"{done:,} of {total:,} rows", file=sys.stderr, flush=True)
        self._call(self._client.delete_collection, source_name)
        kept = {k: v for k, v in (rows.metadata or {}).items()
                if not k.startswith("hnsw:") and k != COPYING_KEY}
        self._call(rows.modify, metadata=kept)
        logger.info("copied %d item row(s) from %s into %s", done, source_name, rows.name)
