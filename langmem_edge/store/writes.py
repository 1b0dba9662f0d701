"""The write path of ``ChromaStore``: puts, deletes, the TTL sweep's deletes and
``delete_prefix``, each ordered so that every prefix of its Chroma calls is a state reads
answer right (docs/store.md, "Crash safety")."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.runnables.config import run_in_executor
from langgraph.store.base import IndexConfig, PutOp, SearchOp, get_text_at_path, tokenize_path

from langmem_edge import _chroma
from langmem_edge._sqlite_stats import PlannerStatistics
from langmem_edge.embeddings import text_hash
from langmem_edge.errors import EmbeddingError, InvalidInputError, InvalidNamespaceError
from langmem_edge.retrieval import KeywordIndex, SyncWriter, encode_document
from langmem_edge.store import layout
from langmem_edge.store.names import Generations, ItemNames

logger = logging.getLogger(__name__)

__all__ = ["WriteMixin"]

SETTLE_DELAY = 0.5
"""Seconds a writer stays idle before it settles its last change marker."""

ATOMIC_PUT_LIMIT = 2_000
"""Most puts of a batch ``ChromaStore`` promises to apply whole (:attr:`WriteMixin.
atomic_put_limit`): its item rows go in one Chroma ``upsert`` (or ``update``), the write's last
call but the removal of orphaned vectors. Measured on chromadb 1.5.9, embedded and on a
server: readers on other threads never saw part of one upsert or update of 200 or 2,000 rows
(about 5,900 reads during 646 writes), and a process killed at random during upserts of
3,000 rows left each one whole or absent (12 kills). Larger batches are split into several
calls (the client's maximum batch size) and promise nothing."""

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
    _sync: Any
    _fields: list[tuple[str, Any]]
    _keywords: KeywordIndex
    _writer: SyncWriter
    _write_lock: threading.RLock
    _settle_timer: threading.Timer | None
    _max_batch: int
    _write_epoch: int
    _written_floor: int
    _last_written: dict[str, int]
    _names: ItemNames
    _gens: Generations
    _get_rows: Callable[..., tuple[dict[str, dict[str, Any]], dict[str, str | None]]]
    _ttl_minutes: Callable[[Any], float | None]
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

    async def adelete_prefix(self, namespace_prefix: tuple[str, ...], /) -> int:
        """``delete_prefix`` on a worker thread."""
        return await run_in_executor(None, self.delete_prefix, tuple(namespace_prefix))

    def _run_puts(
        self,
        puts: list[PutOp],
        now: float,
        read: tuple[dict[str, dict[str, Any]], dict[str, str | None]] | None = None,
    ) -> None:
        """Write ``puts`` (validated first); ``read``: their rows and documents, read already
        (with the batch's gets)."""
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
        old, old_docs = read if read is not None else self._get_rows(ids, documents=True)
        texts = {
            iid: self._texts(op)
            for iid, (op, vj, _) in zip(ids, plans, strict=True)
            if vj is not None
        }
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
        stale: list[str] = []
        deletes: list[str] = []
        quiet = True  # no keyword row changes: every put rewrites an item with its document
        for iid, (op, value_json, ttl_exp) in zip(ids, plans, strict=True):
            prev = old.get(iid)
            if value_json is None:
                if prev:
                    deletes.append(iid)
                    stale.extend(layout.vector_ids(iid, prev))
                continue
            triples = texts[iid]
            document = _keyword_document(triples)
            if iid in keep or iid in unchanged:
                assert prev is not None
                n_vectors, gen = int(prev["nv"]), str(prev.get("vg", ""))
                signature = str(prev.get("vt", ""))
                if iid in keep:
                    document = old_docs.get(iid) or document
            else:
                n_vectors, gen = len(triples), layout.new_generation()
                signature = layout.texts_signature(triples)
                for j, (_, path, text) in enumerate(triples):
                    vec_ids.append(layout.vector_id(iid, gen, j))
                    vec_embs.append(vectors[(iid, j)])
                    vec_metas.append(
                        layout.vector_metadata(op.namespace, op.key, path, text_hash(text))
                    )
                if prev:
                    stale.extend(layout.vector_ids(iid, prev))
            ttl, exp = ttl_exp  # type: ignore[misc]
            item_ids.append(iid)
            item_metas.append(
                layout.item_metadata(
                    op.namespace,
                    op.key,
                    value_json,
                    op.value,  # type: ignore[arg-type]
                    created_at=float(prev["ca"]) if prev else now,
                    updated_at=now,
                    exp=exp,
                    ttl_minutes=ttl,
                    n_vectors=n_vectors,
                    generation=gen,
                    signature=signature,
                )
            )
            item_docs.append(document)
            quiet = quiet and prev is not None and document == old_docs.get(iid)
        self._write(
            vectors=(vec_ids, vec_embs, vec_metas),
            items=(item_ids, item_metas, item_docs),
            deletes=deletes,
            stale=stale,
            quiet=quiet and not deletes,
        )
        self._statistics.wrote(len(item_ids) + len(vec_ids))

    def _write(
        self,
        *,
        vectors: tuple[list[str], list[list[float]], list[dict[str, Any]]] = ([], [], []),
        items: tuple[list[str], list[dict[str, Any]], list[str]] = ([], [], []),
        deletes: Sequence[str] = (),
        stale: Sequence[str] = (),
        delete_where: dict[str, Any] | None = None,
        quiet: bool = False,
    ) -> int:
        """Apply one write; every prefix of its calls is a state reads answer right.

        Returns how many of ``deletes`` it deleted.

        ``delete_where`` makes the deletes conditional (the TTL sweep deletes only rows still
        expired, so a put racing the sweep keeps its item); vector rows of an item that
        survived it are kept.

        1. the keyword change marker, unsettled, with the tombstones of ``deletes``
           (:mod:`langmem_edge.retrieval.chroma_sync`): readers fetch this write's rows at
           every sync until a later marker confirms it, so a crash anywhere below loses
           nothing for the keyword index;
        2. new vector rows, under a fresh generation: nothing reads them until step 4 names
           their generation in the item row (search admits a vector only of the item's
           current generation);
        3. deleted item rows;
        4. item rows, stamped with this write's number: each item switches value, texts and
           vector generation in one row write;
        5. the vector rows no item names any more (old generations, deleted items): until
           then they are orphans that no read admits.

        The settled marker follows when the writer falls idle (:meth:`_settle`). Each step
        is split into calls of at most the client's maximum batch size; a crash between two
        of them leaves the write's first items written and the rest not (each item whole).

        A ``quiet`` write changes no row of the keyword index: it only rewrites items that
        exist with the documents they have (a new value, TTL or ``index=False``; the same
        indexed texts). It is step 4 alone, as a Chroma ``update`` of the metadata: each row
        keeps its document and the stamp it had (a reader that fetches it by that stamp
        indexes what it indexed before), so no number, marker or settle is needed; and an
        item another process deleted since the put read it stays deleted (``update`` skips
        ids that are gone: the put, concurrent with the delete, took effect before it), so
        no row comes back that the keyword index was told is gone. The write markers of
        ``AgentMemory``'s change protocol are such puts.
        """
        if not (vectors[0] or items[0] or deletes or stale):
            return 0
        with self._write_lock:
            if quiet:
                assert not (deletes or stale or vectors[0])
                item_ids, item_metas, _ = items
                self._chunked(self._items.update, ids=item_ids, metadatas=item_metas)
                self._names.learn(item_ids, item_metas)
                self._gens.learn(item_ids, item_metas)
                self._written(item_ids, ())
                return 0
            seq = self._writer.next_seq()
            stamp = self._writer.stamp(seq)
            begin = self._writer.marker(seq, settled=False)
            if deletes:
                tombs = self._writer.tombstones(deletes, seq)
                begin = {k: begin[k] + tombs[k] for k in begin}
            self._chunked(self._sync.upsert, **begin)
            vec_ids, vec_embs, vec_metas = vectors
            if vec_ids:
                self._chunked(
                    self._vectors.upsert, ids=vec_ids, embeddings=vec_embs, metadatas=vec_metas
                )
            if deletes:
                self._chunked(self._items.delete, ids=list(deletes), where=delete_where)
                kept: set[str] = set()
                if delete_where is not None:
                    kept = set(self._call(self._items.get, ids=list(deletes), include=[])["ids"])
                    stale = [v for v in stale if layout.parse_vector_id(v)[0] not in kept]
            item_ids, item_metas, item_docs = items
            if item_ids:
                self._chunked(
                    self._items.upsert,
                    ids=item_ids,
                    embeddings=[layout.ITEM_VECTOR] * len(item_ids),
                    metadatas=[{**m, **stamp} for m in item_metas],
                    documents=item_docs,
                )
                self._names.learn(item_ids, item_metas)
                self._gens.learn(item_ids, item_metas)
            self._gens.forget(deletes)
            self._written(item_ids, deletes)
            if stale:
                self._chunked(self._vectors.delete, ids=list(stale))
            self._schedule_settle(seq)
            return len(deletes) - len(kept) if deletes else 0

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

    def _schedule_settle(self, seq: int) -> None:
        """Settle write ``seq``'s marker once no other write follows for ``SETTLE_DELAY``
        seconds (a following write's marker confirms it anyway). Call under the lock."""
        if self._settle_timer is not None:
            self._settle_timer.cancel()
        timer = threading.Timer(SETTLE_DELAY, self._settle, args=(seq,))
        timer.daemon = True
        self._settle_timer = timer
        timer.start()

    def _settle(self, seq: int) -> None:
        with self._write_lock:
            if self._writer.seq != seq:
                return  # a later write's marker confirms this one
            self._settle_timer = None
            try:
                self._call(self._sync.upsert, **self._writer.marker(seq))
            except Exception:  # readers keep fetching the write: nothing is lost
                logger.warning("settling the change marker failed", exc_info=True)

    def _written(self, item_ids: Sequence[str], deletes: Sequence[str]) -> None:
        """Note which items this process just wrote (the TTL refresh skips them)."""
        self._write_epoch += 1
        if len(self._last_written) > MAX_WRITTEN_KEPT:
            self._last_written.clear()
            self._written_floor = self._write_epoch
        for iid in (*item_ids, *deletes):
            self._last_written[iid] = self._write_epoch

    def _texts(self, op: PutOp) -> list[tuple[str, str, str]]:
        """(field, path, text) for each text to index: the configured field, the vector path
        as InMemoryStore names it (``field.i`` for the i-th of several), the text."""
        if not self.embeddings or op.index is False or op.value is None:
            return []
        if op.index is None:
            fields = self._fields
        else:
            if not isinstance(op.index, list) or not all(isinstance(p, str) for p in op.index):
                raise InvalidInputError(
                    f"index must be False, None or a list of JSON paths, got {op.index!r}"
                )
            fields = [(p, tokenize_path(p) if p != "$" else p) for p in op.index]
        triples: list[tuple[str, str, str]] = []
        for path, tokens in fields:
            found = get_text_at_path(op.value, tokens)
            if len(found) > 1:
                triples.extend((path, f"{path}.{i}", t) for i, t in enumerate(found))
            elif found:
                triples.append((path, path, found[0]))
        return triples

    def _vectors_for(
        self, texts: dict[str, list[tuple[str, str, str]]], old: dict[str, dict[str, Any]]
    ) -> dict[tuple[str, int], list[float]]:
        """A vector for every (item id, j): reused when the text is unchanged, else embedded."""
        if not any(texts.values()):
            return {}
        reuse: dict[str, list[float]] = {}
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


def _keyword_document(triples: list[tuple[str, str, str]]) -> str:
    """The item row's document: its indexed texts by configured field (several values of one
    field, as ``a[*].b`` gives, joined by newlines), for the keyword channel."""
    fields: dict[str, list[str]] = {}
    for field, _, text in triples:
        fields.setdefault(field, []).append(text)
    return encode_document({f: "\n".join(texts) for f, texts in fields.items()})
