"""Opening ``ChromaStore``'s item rows, and bringing older layouts up to date.

The item rows live in ``<prefix>-rows<D>`` (:func:`layout.rows_collection`): ``D`` is the
dimension of their vectors, fixed by Chroma at a collection's first row. Which one a store
opens:

- with an index of ``dims`` D: ``rows<D>``. If it does not exist yet, it is created and
  filled by copying, once, from ``rows0`` (a store used without an index until now) or from
  the schema 4 ``<prefix>-items`` collection; a ``rows<E>`` of another dimension E > 0 is
  refused (:class:`~langmem_edge.errors.ConfigurationError`: the store was built with E).
- without an index: the indexed ``rows<D>`` if there is one, else ``rows0`` (copied from
  ``<prefix>-items`` when that exists).

**The copy** (:meth:`UpgradeMixin._copy_rows`) reads the source a page at a time (metadata,
documents, and for an indexed target each item's first vector, by id from
``<prefix>-vectors``) and upserts each page into the new collection with each row's vector
(:func:`layout.row_vector`); past :data:`UPGRADE_PROGRESS_ROWS` rows it prints a progress line
a page on stderr. Then the first vectors' rows are deleted from ``<prefix>-vectors`` (the
rows hold them now) and the source collection is deleted. The new collection carries
``langmem_edge:copying`` (the source's name) until then. A crash in between leaves the
marker, and the next open copies again from the start (upserts of the same rows: idempotent;
a first vector already moved is taken from the row it was copied into).
Every process of a store must run the same version: a process of an older version still
writing ``<prefix>-items`` during the copy would lose its writes.

Before copying, a schema 1-3 ``<prefix>-items`` is brought to schema 4 in place (keyword
fields, incomplete-mirror flags), as earlier versions did.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from typing import Any

from chromadb.api import ClientAPI

from langmem_edge import _chroma
from langmem_edge.errors import ConfigurationError
from langmem_edge.retrieval.keywords import LENGTH_FIELD, decode_text_document, keyword_fields
from langmem_edge.retrieval.text import Analyzer
from langmem_edge.store import filters, layout

logger = logging.getLogger(__name__)

__all__ = ["COPYING_KEY", "GET_PAGE", "UPGRADE_PROGRESS_ROWS", "UpgradeMixin"]

GET_PAGE = 5000
"""Rows read per call when scanning items (filters, listing, sweeping, upgrades)."""

UPGRADE_PROGRESS_ROWS = 20_000
"""Rows past which an upgrade reports its progress on stderr, one line a page."""

COPYING_KEY = "langmem_edge:copying"
"""Metadata of a rows collection being filled by :meth:`UpgradeMixin._copy_rows`: the name
of the collection it copies from."""


class UpgradeMixin:
    """Opens the item rows collection of ``ChromaStore`` (needs its client and caller)."""

    _client: ClientAPI
    _call: _chroma.ChromaCaller
    _analyzer: Analyzer
    collection_prefix: str
    _row_dims: int

    def _open_rows(self, dims: int | None, ef_search: int) -> Any:
        """The item rows collection for an index of ``dims`` (None: no index), created and
        filled from an older layout when needed (module docstring)."""
        prefix = self.collection_prefix
        names = [c.name for c in self._call(self._client.list_collections)]
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
        legacy = f"{prefix}-items"
        source: str | None = None
        if name in existing:
            rows = self._open(name, ef_search)
            source = (rows.metadata or {}).get(COPYING_KEY)
            if source is not None and source not in names:
                source = None  # copied, but the marker's removal was lost: done
        else:
            if target > 0 and 0 in existing:
                source = existing[0]
            elif legacy in names:
                source = legacy
            rows = self._open(name, ef_search, copying=source)
        if source is not None:
            self._copy_rows(source, rows)
        return rows

    def _open(self, name: str, ef_search: int, *, copying: str | None = None) -> Any:
        meta = {COPYING_KEY: copying} if copying else None
        return _chroma.open_collection(
            self._client, name, schema_version=layout.SCHEMA_VERSION,
            reads_from=5, call=self._call, metadata=meta, upgrade=self._upgrade_rows,
            ef_search=ef_search if self._row_dims > 0 else None)

    def _upgrade_rows(self, rows: Any, found: int) -> None:
        """Bring a rows collection of schema ``found`` (5 to 7) to :data:`layout.SCHEMA_VERSION`:
        values into documents (from 5), the incomplete-mirror flags retyped (from 6), the
        string mirrors listed (from 7)."""
        if found < 6:
            self._values_to_documents(rows, found)
        if found < 7:
            self._retype_incomplete_flags(rows)
        if found < 8:
            self._list_strings(rows, found)

    def _list_strings(self, rows: Any, found: int) -> None:
        """Schema 8: each row's ``f:<path>`` string mirrors become one list
        (:func:`layout.listed_strings`), by ``update`` of the metadata only (it merges: the
        old fields are set to None). Rows already moved (by an upgrade that crashed) have
        none left."""

        def listed(page: dict[str, Any]) -> tuple[list[str], dict[str, list[Any]]]:
            ids, metas = [], []
            for iid, meta in zip(page["ids"], page["metadatas"], strict=True):
                if (changes := layout.listed_strings(meta or {})) is not None:
                    ids.append(iid)
                    metas.append(changes)
            return ids, {"metadatas": metas}

        moved = self._update_pages(rows, found, ["metadatas"], listed)
        logger.info("schema 8: listed the string mirrors of %d row(s) of %s", moved, rows.name)

    def _update_pages(self, rows: Any, found: int, include: list[str],
                      rewrite: Callable[[dict[str, Any]], tuple[list[str],
                                                                 dict[str, list[Any]]]]) -> int:
        """An in-place upgrade of ``rows`` (of schema ``found``), a page at a time:
        ``rewrite(page)`` (the page read with ``include``) gives the ids to ``update`` and
        the ``update`` arguments, one list each, in the ids' order; past
        :data:`UPGRADE_PROGRESS_ROWS` rows a progress line a page goes to stderr. Returns
        the rows updated."""
        size = max(1, int(self._call(self._client.get_max_batch_size)))
        total, done, updated = int(self._call(rows.count)), 0, 0
        for page in _pages(self._call, rows, include):
            ids, fields = rewrite(page)
            for start in range(0, len(ids), size):
                end = start + size
                self._call(rows.update, ids=ids[start:end],
                           **{name: values[start:end] for name, values in fields.items()})
            updated += len(ids)
            done += len(page["ids"])
            if total > UPGRADE_PROGRESS_ROWS:
                print(f"langmem_edge: {rows.name} from schema {found} to "
                      f"{layout.SCHEMA_VERSION}: {done:,} of {total:,} rows",
                      file=sys.stderr, flush=True)
        return updated

    def _retype_incomplete_flags(self, rows: Any) -> None:
        """Schema 7: the rows whose ``fx`` is ``True`` get :data:`filters.INCOMPLETE_FLAG` (one
        read of the collection's metadata, now, instead of one per pushed-down filter; then
        only those rows are written: ``update`` merges metadata). Idempotent."""
        ids = self._call(rows.get, where={filters.INCOMPLETE_FIELD: True}, include=[])["ids"]
        for start in range(0, len(ids), GET_PAGE):
            chunk = ids[start:start + GET_PAGE]
            self._call(rows.update, ids=chunk,
                       metadatas=[{filters.INCOMPLETE_FIELD: filters.INCOMPLETE_FLAG}] * len(chunk))
        if ids:
            logger.info("schema 7: retyped the incomplete-mirror flag of %d row(s) of %s",
                        len(ids), rows.name)

    def _values_to_documents(self, rows: Any, found: int) -> None:
        """Upgrade a rows collection from schema 5: move each row's value and bookkeeping into
        its document (:func:`layout.upgraded_row`), by ``update`` with the row's own vector
        (Chroma embeds a document given without one). Rows already moved (by an upgrade
        that crashed) are skipped."""

        def moved_rows(page: dict[str, Any]) -> tuple[list[str], dict[str, list[Any]]]:
            ids: list[str] = []
            fields: dict[str, list[Any]] = {"metadatas": [], "documents": [], "embeddings": []}
            for iid, meta, doc, emb in zip(page["ids"], page["metadatas"],
                                           page["documents"] or [None] * len(page["ids"]),
                                           page["embeddings"], strict=True):
                moved = layout.upgraded_row(meta, doc)
                if moved is not None:
                    ids.append(iid)
                    fields["metadatas"].append(moved[0])
                    fields["documents"].append(moved[1])
                    fields["embeddings"].append(emb)
            return ids, fields

        done = self._update_pages(rows, found, ["metadatas", "documents", "embeddings"],
                                  moved_rows)
        logger.info("schema %d -> 6: %d row(s) of %s", found, done, rows.name)

    def _copy_rows(self, source_name: str, rows: Any) -> None:
        """Fill ``rows`` from ``source_name`` (``rows0`` or schema <= 4 ``<prefix>-items``),
        then delete the source and the copying marker (module docstring)."""
        if source_name.endswith("-items"):
            source = _chroma.open_collection(
                self._client, source_name, schema_version=layout.LEGACY_SCHEMA,
                reads_from=layout.READS_FROM, call=self._call, upgrade=self._upgrade_items)
        else:
            source = self._call(self._client.get_collection, source_name)
        vectors = self._call(self._client.get_or_create_collection,
                             name=f"{self.collection_prefix}-vectors",
                             embedding_function=None) if self._row_dims > 0 else None
        total = int(self._call(source.count))
        size = max(1, int(self._call(self._client.get_max_batch_size)))
        done = offset = 0
        while True:
            page = self._call(source.get, include=["metadatas", "documents"],
                              limit=GET_PAGE, offset=offset)
            ids, metas = page["ids"], page["metadatas"]
            docs = page["documents"] or [""] * len(ids)
            firsts: dict[str, list[float]] = {}
            if vectors is not None:
                wanted = {layout.vector_id(i, str(m.get("vg", "")), 0): i
                          for i, m in zip(ids, metas, strict=True) if int(m.get("nv", 0)) > 0}
                for start in range(0, len(wanted), size):
                    chunk = list(wanted)[start:start + size]
                    got = self._call(vectors.get, ids=chunk, include=["embeddings"])
                    for vid, emb in zip(got["ids"], got["embeddings"], strict=True):
                        firsts[wanted[vid]] = [float(x) for x in emb]
                # a copy that ran before moved them already (and then deleted them)
                moved = [i for i in wanted.values() if i not in firsts]
                if moved:
                    got = self._call(rows.get, ids=moved, include=["embeddings"])
                    for iid, emb in zip(got["ids"], got["embeddings"], strict=True):
                        firsts[iid] = [float(x) for x in emb]
            embs = [layout.row_vector(i, self._row_dims, firsts.get(i)) for i in ids]
            for j, (meta, doc) in enumerate(zip(metas, docs, strict=True)):
                moved = layout.upgraded_row(meta, doc)  # schema 6 rows from any source
                if moved is not None:
                    metas[j], docs[j] = moved
                if metas[j].get(filters.INCOMPLETE_FIELD) is True:  # schema 7's flag
                    metas[j] = {**metas[j], filters.INCOMPLETE_FIELD: filters.INCOMPLETE_FLAG}
                if (listed := layout.listed_strings(metas[j])) is not None:  # schema 8's
                    metas[j] = {k: v for k, v in {**metas[j], **listed}.items()
                                if v is not None}
            for start in range(0, len(ids), size):
                end = start + size
                self._call(rows.upsert, ids=ids[start:end], metadatas=metas[start:end],
                           documents=docs[start:end], embeddings=embs[start:end])
            done += len(ids)
            if total > UPGRADE_PROGRESS_ROWS:
                print(f"langmem_edge: copying {source_name} into {rows.name} (schema "
                      f"{layout.SCHEMA_VERSION}): {done:,} of {total:,} rows",
                      file=sys.stderr, flush=True)
            if len(ids) < GET_PAGE:
                break
            offset += GET_PAGE
        if vectors is not None:  # first vectors now live in the rows
            listed = self._call(vectors.get, include=[])["ids"]
            firsts_left = [v for v in listed if ":" in v and v.rsplit(":", 1)[1] == "0"]
            for start in range(0, len(firsts_left), size):
                self._call(vectors.delete, ids=firsts_left[start:start + size])
        self._call(self._client.delete_collection, source_name)
        kept = {k: v for k, v in (rows.metadata or {}).items()
                if not k.startswith("hnsw:") and k != COPYING_KEY}
        self._call(rows.modify, metadata=kept)
        logger.info("copied %d item row(s) from %s into %s", done, source_name, rows.name)

    # -- schema <= 3 of <prefix>-items, upgraded in place before the copy --------------------

    def _upgrade_items(self, items: Any, found: int) -> None:
        """Bring an items collection of schema ``found`` to :data:`layout.LEGACY_SCHEMA`
        (each step idempotent: a crash before the version is raised runs it again)."""
        if found < 3:
            self._flag_incomplete_mirrors(items, found)
        if found < 4:
            self._add_keyword_fields(items, found)

    def _add_keyword_fields(self, items: Any, found: int) -> None:
        """Upgrade from schema < 4: give every item row its keyword fields and document
        (:mod:`langmem_edge.retrieval.keywords`), analysed from the indexed texts its old
        document held, and drop the old change stamps (``kw``, ``ks``); then delete the old
        ``<prefix>-sync`` collection of the change protocol. Rows that already carry
        ``kl`` (rewritten by an upgrade that crashed) are skipped."""
        size = max(1, int(self._call(self._client.get_max_batch_size)))
        rewritten = 0
        for page in _pages(self._call, items, ["metadatas", "documents"]):
            ids, metas, docs = [], [], []
            for iid, meta, doc in zip(page["ids"], page["metadatas"],
                                      page["documents"] or [None] * len(page["ids"]),
                                      strict=True):
                if LENGTH_FIELD in meta or "k" not in meta:
                    continue
                document, fields = keyword_fields(
                    decode_text_document(doc), str(meta["k"]), self._analyzer)
                ids.append(iid)
                metas.append({**fields, "kw": None, "ks": None})
                docs.append(document)
            for start in range(0, len(ids), size):
                end = start + size
                self._call(items.update, ids=ids[start:end], metadatas=metas[start:end],
                           documents=docs[start:end],
                           embeddings=[layout.ITEM_VECTOR] * len(ids[start:end]))
            rewritten += len(ids)
        sync_name = items.name[: -len("items")] + "sync"
        try:
            self._call(self._client.delete_collection, sync_name)
        except Exception:  # absent (never created, or deleted by an earlier run)
            logger.debug("no %s collection to delete", sync_name, exc_info=True)
        logger.info("schema %d -> 4: keyword fields on %d item row(s)", found, rewritten)

    def _flag_incomplete_mirrors(self, items: Any, found: int) -> None:
        """Upgrade from schema < 3: set ``fx`` on item rows whose filter mirror is incomplete
        (more than ``MAX_FILTER_FIELDS`` leaves, non-finite numeric strings), which older
        layouts truncated silently, so pushed-down filters let them through. Only the rows
        concerned are written (``update`` merges fields)."""
        ids, metas = [], []
        for page in _pages(self._call, items, ["metadatas"]):
            for iid, meta in zip(page["ids"], page["metadatas"], strict=True):
                if "v" in meta and filters.INCOMPLETE_FIELD not in meta:
                    value = json.loads(meta["v"])
                    if isinstance(value, dict) and filters.filter_fields(value).get(
                        filters.INCOMPLETE_FIELD
                    ):
                        ids.append(iid)
                        metas.append({filters.INCOMPLETE_FIELD: True})
        for start in range(0, len(ids), GET_PAGE):
            end = start + GET_PAGE
            self._call(items.update, ids=ids[start:end], metadatas=metas[start:end])
        if ids:
            logger.info("schema %d -> 3: flagged %d item(s), mirrors incomplete", found, len(ids))


def _pages(call: Callable[..., Any], collection: Any, include: list[str]) -> Any:
    """Every row of ``collection``, a page of :data:`GET_PAGE` at a time."""
    offset = 0
    while True:
        page = call(collection.get, include=include, limit=GET_PAGE, offset=offset)
        yield page
        if len(page["ids"]) < GET_PAGE:
            return
        offset += GET_PAGE
