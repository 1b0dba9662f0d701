"""The write path of ``ChromaStore``: puts, deletes, the TTL sweep's deletes and ``delete_prefix``,
each ordered so that every prefix of its Chroma calls is a state reads answer right
(docs/store.md, "Crash safety").

A put is its rows: one ``get`` of the rows it replaces (metadata and embeddings: an existing
item keeps its ``created_at``, its vectors when its indexed texts are unchanged, and has its
stale vector rows deleted) and the item upsert (value, filter mirror, keyword fields and first
vector in one row); an item with several indexed texts also upserts the vector rows of the
later ones first, and a changed one deletes its stale ones last."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    IndexConfig,
    PutOp,
    SearchOp,
    get_text_at_path,
    tokenize_path,
)

from langmem_edge import _chroma
from langmem_edge._sqlite_stats import PlannerStatistics
from langmem_edge._twins import threaded
from langmem_edge.embeddings import text_hash
from langmem_edge.errors import EmbeddingError, InvalidInputError, InvalidNamespaceError
from langmem_edge.retrieval.keywords import (
    decode_keyword_document,
    encode_keyword_document,
    keyword_fields,
    keyword_metadata,
)
from langmem_edge.retrieval.text import Analyzer
from langmem_edge.store import layout
from langmem_edge.store.names import Generations, ItemNames

logger = logging.getLogger(__name__)

__all__ = ["WriteMixin"]

ATOMIC_PUT_LIMIT = 2_000
"""Most puts of a batch ``ChromaStore`` promises to apply whole (:attr:`WriteMixin.
atomic_put_limit`): its item rows go in one Chroma ``upsert`` (or ``update``), the write's last
call but the removal of orphaned vectors. Measured on chromadb 1.5.9, embedded and on a
server: readers on other threads never saw part of one upsert or update of 200 or 2,000 rows
(about 5,900 reads during 646 writes), and a process killed at random during upserts of
3,000 rows left each one whole or absent (12 kills). Larger batches are split into several
calls (the client's maximum batch size) and promise nothing."""

STAMP_STEP = 1
"""Microseconds between the update times of two items this store writes: each item a process
writes gets its own, on the microsecond (as ``datetime`` keeps it), later than every one it
gave before (the items of one batch in the batch's order), so a listing's window of recent
rows (``store/listing.py``) holds about the rows it returns, not every row of a batch that
shares one time (``benchmarks/listing_routes.py``)."""

MAX_WRITTEN_KEPT = 100_000
"""Item ids whose last write this process remembers for the TTL refresh (then it forgets
them all and skips refreshing rows read before that moment)."""



class WriteMixin:
    """Writes of ``ChromaStore`` (needs its collections, caller, writer and caches)."""

    embeddings: Embeddings | None
    index_config: IndexConfig | None
    max_value_bytes: int
    _call: _chroma.ChromaCaller
    _items: Any
    _vectors: Any
    _fields: list[tuple[str, Any]]
    _analyzer: Analyzer
    _write_lock: threading.RLock
    _clock: Callable[[], float]
    _max_batch: int
    _write_epoch: int
    _written_floor: int
    _last_written: dict[str, int]
    _names: ItemNames
    _gens: Generations
    _get_rows: Callable[..., layout.Rows]
    _row_dims: int
    _ttl_minutes: Callable[[Any], float | None]
    _stamp_lock: threading.Lock
    _last_stamp: int
    _statistics: PlannerStatistics

    @property
    def atomic_put_limit(self) -> int:
        """A batch of at most this many puts, each with a value, is applied whole: every
        reader sees none of its items or all of them, and a crash leaves none or all (see
        :data:`ATOMIC_PUT_LIMIT`). ``AgentMemory``'s change protocol then writes a record
        write as one batch instead of three."""
        return min(self._max_batch, ATOMIC_PUT_LIMIT)

    def delete_prefix(self, namespace_prefix: tuple[str, ...], /) -> int:
        """Delete every item whose namespace starts with ``namespace_prefix``; returns how many.

        Labels are compared exactly: ``"*"`` is a label here, never a wildcard, so
        ``delete_prefix(("users", "*"))`` deletes the namespace ``("users", "*")`` and what
        lies under it, nothing else. No value is read: the ids of the prefix's item and vector
        rows are listed (ids only), then deleted in the order of any delete (see
        :meth:`_write`); rows another writer adds meanwhile are not touched.

        Raises:
            InvalidNamespaceError: An empty prefix (use a new ``collection_prefix`` to start
                over) or a bad label.
        """
        prefix = tuple(namespace_prefix)
        if not prefix:
            raise InvalidNamespaceError("delete_prefix needs a non-empty namespace prefix")
        layout.checked_op(SearchOp(prefix))
        where = layout.prefix_where(prefix)
        ids = self._call(self._items.get, where=where, include=[])["ids"]
        vec_ids = self._call(self._vectors.get, where=where, include=[])["ids"]
        return self._write(deletes=list(ids), stale=list(vec_ids))

    adelete_prefix = threaded(delete_prefix)

    def _stamps(self, now: float, n: int) -> list[float]:
        """``n`` update times (epoch seconds, whole microseconds) from ``now`` on, each later
        than every one given before (:data:`STAMP_STEP` apart)."""
        with self._stamp_lock:
            first = max(round(now * 1_000_000), self._last_stamp + STAMP_STEP)
            stamps = [first + i * STAMP_STEP for i in range(n)]
            if stamps:
                self._last_stamp = stamps[-1]
        return [us / 1_000_000 for us in stamps]

    def _run_puts(
        self,
        puts: list[PutOp],
        now: float,
        read: layout.Rows | None = None,
        *,
        existing: bool = False,
    ) -> None:
        """Write ``puts`` (validated first); ``read``: their rows, read already (with the
        batch's gets; documents are needed only for ``index=False`` puts, embeddings for items
        whose vectors are kept).
        ``existing``: :meth:`put_existing`'s write (every put has a value and a row in
        ``read``; item rows are updated, never created)."""
        plans: list[tuple[PutOp, str | None, tuple[float | None, float] | None]] = []
        for op in puts:  # validate everything before writing anything
            if not isinstance(op.key, str):
                raise InvalidInputError(f"key must be a string, got {op.key!r}")
            if not op.namespace:
                raise InvalidInputError("Namespace cannot be empty.")
            if op.value is None:
                plans.append((op, None, None))
                continue
            encoded = layout.encode_value(op.namespace, op.key, op.value, self.max_value_bytes)
            ttl = self._ttl_minutes(op.ttl)
            plans.append((op, encoded, (ttl, layout.expiry(now, ttl))))

        ids = [layout.item_id(op.namespace, op.key) for op, _, _ in plans]
        if read is None:
            read = self._get_rows(ids, documents=True, vectors=self._row_dims > 0)
        old, old_docs, old_vecs = read
        texts: dict[str, list[tuple[str, str, str]]] = {}
        keyword_texts: dict[str, dict[str, str]] = {}
        for iid, (op, vj, _) in zip(ids, plans, strict=True):
            if vj is not None:
                texts[iid], keyword_texts[iid] = self._texts(op)
        # index=False on an existing item keeps its vectors and keyword text, as InMemoryStore
        # and SqliteStore keep theirs: the put changes the value, not what it was indexed as.
        keep = {
            iid
            for iid, (op, vj, _) in zip(ids, plans, strict=True)
            if vj is not None and op.index is False and iid in old
        }
        # an unchanged text keeps its generation: its vector rows are already right
        unchanged = {
            iid
            for iid, triples in texts.items()
            if iid in old
            and iid not in keep
            and "vg" in old[iid]
            and old[iid].get("vt") == layout.texts_signature(triples)
        }
        vectors = self._vectors_for(
            {i: t for i, t in texts.items() if i not in keep and i not in unchanged}, old
        )

        vec_ids, vec_embs, vec_metas = [], [], []
        item_ids, item_metas, item_docs = [], [], []
        chroma_metas: list[dict[str, Any]] = []
        firsts: dict[str, list[float] | None] = {}  # item id -> its first vector, if any
        stale: list[str] = []
        deletes: list[str] = []
        stamps = self._stamps(now, len(plans))
        for iid, (op, value_json, ttl_exp), stamp in zip(ids, plans, stamps, strict=True):
            prev = old.get(iid)
            if value_json is None:
                if prev:
                    deletes.append(iid)
                    stale.extend(layout.vector_ids(iid, prev))
                continue
            triples = texts[iid]
            if iid in keep and old_docs.get(iid) is not None:
                kept_doc = decode_keyword_document(old_docs[iid])
                document = encode_keyword_document(kept_doc.fields, kept_doc.segments)
                keyword = keyword_metadata(kept_doc.fields, kept_doc.segments)
            else:
                document, keyword = keyword_fields(
                    _field_texts(triples) | keyword_texts[iid], op.key, self._analyzer)
            if iid in keep or iid in unchanged:
                assert prev is not None
                n_vectors, gen = int(prev["nv"]), str(prev.get("vg", ""))
                signature = str(prev.get("vt", ""))
                firsts[iid] = old_vecs.get(iid) if n_vectors else None
            else:
                n_vectors, gen = len(triples), layout.new_generation()
                signature = layout.texts_signature(triples)
                firsts[iid] = vectors[(iid, 0)] if triples else None
                for j, (_, path, text) in enumerate(triples):
                    if j == 0:
                        continue  # the item row's own vector
                    vec_ids.append(layout.vector_id(iid, gen, j))
                    vec_embs.append(vectors[(iid, j)])
                    vec_metas.append(
                        layout.vector_metadata(op.namespace, op.key, path, text_hash(text))
                    )
                if prev:
                    stale.extend(layout.vector_ids(iid, prev))
            ttl, exp = ttl_exp  # type: ignore[misc]
            meta = layout.item_metadata(
                op.namespace,
                op.key,
                value_json,
                op.value,  # type: ignore[arg-type]
                created_at=float(prev["ca"]) if prev else stamp,
                updated_at=stamp,
                exp=exp,
                ttl_minutes=ttl,
                n_vectors=n_vectors,
                generation=gen,
                signature=signature,
                keyword=keyword,
            )
            metadata, row_document = layout.split_row(meta, document)
            if prev:  # upsert and update merge: drop the fields the old row had
                metadata.update(layout.removed_keys(prev, metadata))
            item_ids.append(iid)
            item_metas.append(meta)
            chroma_metas.append(metadata)
            item_docs.append(row_document)
        item_embs = self._row_vectors(item_ids, item_metas, firsts)
        self._write(
            vectors=(vec_ids, vec_embs, vec_metas),
            items=(item_ids, chroma_metas, item_docs, item_embs),
            rows=item_metas,
            deletes=deletes,
            stale=stale,
            existing=existing,
        )
        self._statistics.wrote(len(item_ids) + len(vec_ids))

    def _write(
        self,
        *,
        vectors: tuple[list[str], list[list[float]], list[dict[str, Any]]] = ([], [], []),
        items: tuple[list[str], list[dict[str, Any]], list[str], list[list[float]]] = (
            [], [], [], []),
        rows: Sequence[dict[str, Any]] = (),
        deletes: Sequence[str] = (),
        stale: Sequence[str] = (),
        delete_where: dict[str, Any] | None = None,
        existing: bool = False,
    ) -> int:
        """Apply one write; every prefix of its calls is a state reads answer right.

        Returns how many of ``deletes`` it deleted. ``items``: the item rows as Chroma stores
        them (:func:`layout.split_row`); ``rows``: their fields, as reads return them.

        ``delete_where`` makes the deletes conditional (the TTL sweep deletes only rows still
        expired, so a put racing the sweep keeps its item); vector rows of an item that
        survived it are kept.

        1. new vector rows, under a fresh generation: nothing reads them until step 3 names
           their generation in the item row (search admits a vector only of the item's
           current generation);
        2. deleted item rows;
        3. item rows (value, filter mirror, keyword fields, document and first vector): each
           item switches value, texts and vector generation in one row write; with
           ``existing``, a Chroma
           ``update``, which skips items that are gone (their new vector rows are then
           removed with the stale ones);
        4. the vector rows no item names any more (old generations, deleted items): until
           then they are orphans that no read admits.

        Each step is split into calls of at most the client's maximum batch size; a crash
        between two of them leaves the write's first items written and the rest not (each
        item whole).
        """
        if not (vectors[0] or items[0] or deletes or stale):
            return 0
        with self._write_lock:
            vec_ids, vec_embs, vec_metas = vectors
            if vec_ids:
                self._chunked(
                    self._vectors.upsert, ids=vec_ids, embeddings=vec_embs, metadatas=vec_metas
                )
            kept: set[str] = set()
            if deletes:
                self._chunked(self._items.delete, ids=list(deletes), where=delete_where)
                if delete_where is not None:
                    kept = set(self._call(self._items.get, ids=list(deletes), include=[])["ids"])
                    stale = [v for v in stale if layout.parse_vector_id(v)[0] not in kept]
            item_ids, item_metas, item_docs, item_embs = items
            if item_ids and existing:
                # embeddings given: Chroma would embed a document with its default function
                self._chunked(self._items.update, ids=item_ids, metadatas=item_metas,
                              documents=item_docs, embeddings=item_embs)
                if vec_ids:  # new vector rows of items that vanished meanwhile: orphans
                    alive = set(self._call(self._items.get, ids=item_ids, include=[])["ids"])
                    stale = [*stale, *(v for v in vec_ids
                                       if layout.parse_vector_id(v)[0] not in alive)]
            elif item_ids:
                self._chunked(
                    self._items.upsert,
                    ids=item_ids,
                    embeddings=item_embs,
                    metadatas=item_metas,
                    documents=item_docs,
                )
            if item_ids:
                self._names.learn(item_ids, rows)
                self._gens.learn(item_ids, rows)
            self._gens.forget(deletes)
            self._written(item_ids, deletes)
            if stale:
                self._chunked(self._vectors.delete, ids=list(stale))
            return len(deletes) - len(kept) if deletes else 0

    def _row_vectors(self, ids: list[str], metas: list[dict[str, Any]],
                     firsts: dict[str, list[float] | None]) -> list[list[float]]:
        """Each item row's embedding (:func:`layout.row_vector`): its first vector, known from
        the write or the rows read with their embeddings; one they lack (never expected:
        every write's read takes the embeddings) is read from the row."""
        if self._row_dims > 0:
            missing = [iid for iid, meta in zip(ids, metas, strict=True)
                       if int(meta.get("nv") or 0) and firsts.get(iid) is None]
            if missing:
                got = self._call(self._items.get, ids=missing, include=["embeddings"])
                for iid, emb in zip(got["ids"], got["embeddings"], strict=True):
                    firsts[iid] = [float(x) for x in emb]
        return [layout.row_vector(iid, self._row_dims, firsts.get(iid)) for iid in ids]

    def _chunked(
        self, method: Callable[..., Any], *, where: dict[str, Any] | None = None, **columns: Any
    ) -> None:
        """``method(**columns)`` in slices of at most the client's maximum batch size (list
        columns are sliced; ``where`` goes with every slice)."""
        size = self._max_batch
        n = len(columns["ids"])
        extra = {"where": where} if where is not None else {}
        for start in range(0, max(n, 1), size):
            part = {k: v[start : start + size] for k, v in columns.items()}
            self._call(method, **part, **extra)

    def _written(self, item_ids: Sequence[str], deletes: Sequence[str]) -> None:
        """Note which items this process just wrote (the TTL refresh skips them)."""
        self._write_epoch += 1
        if len(self._last_written) > MAX_WRITTEN_KEPT:
            self._last_written.clear()
            self._written_floor = self._write_epoch
        for iid in (*item_ids, *deletes):
            self._last_written[iid] = self._write_epoch

    def _texts(self, op: PutOp) -> tuple[list[tuple[str, str, str]], dict[str, str]]:
        """What ``op`` indexes: (field, path, text) for each text to embed (the configured
        field, the vector path as InMemoryStore names it, ``field.i`` for the i-th of
        several, the text), and the texts of its keyword-only paths by field
        (``index=["keyword:name"]``: :data:`~langmem_edge.store.layout.KEYWORD_ONLY`)."""
        if op.index is False or op.value is None:
            return [], {}
        if op.index is None:
            fields = self._fields if self.embeddings else []
            keyword_only: list[str] = []
        else:
            if not isinstance(op.index, list) or not all(isinstance(p, str) for p in op.index):
                raise InvalidInputError(
                    f"index must be False, None or a list of JSON paths, got {op.index!r}"
                )
            keyword_only = [p[len(layout.KEYWORD_ONLY):] for p in op.index
                            if p.startswith(layout.KEYWORD_ONLY)]
            fields = [(p, tokenize_path(p) if p != "$" else p) for p in op.index
                      if not p.startswith(layout.KEYWORD_ONLY)] if self.embeddings else []
        triples: list[tuple[str, str, str]] = []
        for path, tokens in fields:
            found = get_text_at_path(op.value, tokens)
            if len(found) > 1:
                triples.extend((path, f"{path}.{i}", t) for i, t in enumerate(found))
            elif found:
                triples.append((path, path, found[0]))
        keyword: dict[str, str] = {}
        for path in keyword_only:
            found = get_text_at_path(op.value, tokenize_path(path) if path != "$" else path)
            if found:
                keyword[path] = "\n".join(found)
        return triples, keyword

    def _vectors_for(
        self, texts: dict[str, list[tuple[str, str, str]]], old: dict[str, dict[str, Any]]
    ) -> dict[tuple[str, int], list[float]]:
        """A vector for every (item id, j): reused when the text is unchanged, else embedded."""
        if not any(texts.values()):
            return {}
        reuse: dict[str, list[float]] = {}  # by text hash: texts after the first only (the
        # item row keeps no hash of its first text, which a changed item embeds again)
        old_vec_ids = [
            vid for iid in texts if iid in old for vid in layout.vector_ids(iid, old[iid])
        ]
        if old_vec_ids:
            res = self._call(
                self._vectors.get, ids=old_vec_ids, include=["metadatas", "embeddings"]
            )
            for meta, emb in zip(res["metadatas"], res["embeddings"], strict=True):
                reuse[meta["h"]] = [float(x) for x in emb]
        missing = list(
            dict.fromkeys(
                t for pairs in texts.values() for _, _, t in pairs if text_hash(t) not in reuse
            )
        )
        fresh: dict[str, list[float]] = {}
        if missing:
            assert self.embeddings is not None
            try:
                embedded = self.embeddings.embed_documents(missing)
            except Exception as e:
                raise EmbeddingError(f"embedding {len(missing)} text(s) failed: {e}") from e
            dims = self.index_config["dims"] if self.index_config else None
            for text, vec in zip(missing, embedded, strict=True):
                if dims and len(vec) != dims:
                    raise EmbeddingError(
                        f"the embedding model returned {len(vec)} dimensions; index.dims is {dims}"
                    )
                fresh[text] = [float(x) for x in vec]
        out: dict[tuple[str, int], list[float]] = {}
        for iid, pairs in texts.items():
            for j, (_, _, text) in enumerate(pairs):
                out[(iid, j)] = reuse.get(text_hash(text)) or fresh[text]
        return out


def _field_texts(triples: list[tuple[str, str, str]]) -> dict[str, str]:
    """An item's indexed texts by configured field (several values of one field, as
    ``a[*].b`` gives, joined by newlines), for the keyword channel."""
    fields: dict[str, list[str]] = {}
    for field, _, text in triples:
        fields.setdefault(field, []).append(text)
    return {f: "\n".join(texts) for f, texts in fields.items()}
