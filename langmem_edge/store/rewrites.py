"""Writes of ``ChromaStore`` that a caller makes knowing what is stored: rewrites of items
only where they exist (:meth:`RewriteMixin.put_existing`, :meth:`RewriteMixin.rewrite_matching`)
and puts of items known to be new (:meth:`RewriteMixin.put_new`), each one read and one write
or less, through the put path of :mod:`.writes` (docs/store.md, "Crash safety")."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langgraph.store.base import Item, PutOp, SearchOp

from langmem_edge import _chroma
from langmem_edge._twins import threaded
from langmem_edge.errors import InvalidInputError
from langmem_edge.store import filters, layout

__all__ = ["MAX_REWRITE_MATCHES", "RewriteMixin"]

MAX_REWRITE_MATCHES = 1000
"""Most items :meth:`RewriteMixin.rewrite_matching` reads (its ``limit`` default)."""


class RewriteMixin:
    """Rewrites and known-new puts of ``ChromaStore`` (needs its collections, caller, writer
    and put path)."""

    max_value_bytes: int
    _call: _chroma.ChromaCaller
    _items: Any
    _write_lock: threading.RLock
    _clock: Callable[[], float]
    _get_rows: Callable[..., layout.Rows]
    _read_rows: Callable[..., list[dict[str, Any] | None]]
    _row_dims: int
    _run_puts: Callable[..., None]

    def put_existing(
        self, items: Sequence[tuple[tuple[str, ...], str, dict[str, Any]]], /, *,
        merge: bool = False, when: Mapping[str, Any] | None = None, confirm: bool = True,
    ) -> list[bool]:
        """Rewrite each ``(namespace, key, value)`` whose item exists; never create one.

        A fourth element is the put's ``index`` (``False``: no vector rows, as for an item
        stored without them; default: the store's ``fields``).

        For side-effect rewrites (a count, a flag, a link) that must not bring back an item
        another writer deleted. Each present item gets ``value`` as a put would write it
        (filter mirror rebuilt, fields the old value had and the new one lacks removed,
        ``updated_at`` moved, ``created_at`` kept; its own TTL restarted; an item whose TTL
        ran out counts as gone, as every read treats it); its vector rows
        are kept when its indexed texts are unchanged, and replaced when they changed (new
        rows first, as a put does). The item rows are written with Chroma's ``update``,
        which skips ids that are gone, so a delete that lands at any moment wins.

        ``merge``: ``value`` holds changes, applied to the value stored (read in the same
        call: a field another writer changed meanwhile is kept). ``when``: a rewrite only of
        the items whose stored value has these top-level fields equal (``{"status":
        "active"}``), as read before the write. Both spare a caller the read of its own.

        Returns, for each item in order, True if it was rewritten: its row was read before
        the write (and matched ``when``) and, with ``confirm``, is still there after it (a
        second read by id; ``confirm=False`` spares that read and reports True for an item
        deleted between the first read and the write, which stays deleted). The race, stated: an
        item deleted between the first read and the write stays deleted (False); one deleted
        after the write but before the second read was rewritten and then deleted (False:
        either way it is gone); one deleted and put again by another writer between the
        first read and the write is rewritten (True), and a filter field that writer's value
        added and ``value`` lacks survives (the stale fields removed are those of the row
        read). A key given twice: the last value wins, both entries report alike.

        Raises:
            InvalidInputError: A value that is not a dict (a rewrite never deletes), a bad
                key, a ``when`` that is not a mapping, a merged value too large; nothing is
                written then.
            InvalidNamespaceError: A bad namespace.
        """
        ops = self._value_puts(items, "put_existing", (3, 4))
        if when is not None and not isinstance(when, Mapping):
            raise InvalidInputError(f"when must be a mapping of fields, got {when!r}")
        if not ops:
            return []
        ids = [layout.item_id(op.namespace, op.key) for op in ops]
        with self._write_lock:
            now = self._clock()
            read = self._get_rows(list(dict.fromkeys(ids)), now=now,  # expired: gone
                                  documents=True, vectors=self._row_dims > 0)
            old = read.metas
            stored = {iid: json.loads(meta["v"]) for iid, meta in old.items()}
            present = {
                iid: op._replace(ttl=float(old[iid].get("ttl") or 0.0) or None,
                                 value={**stored[iid], **op.value} if merge else op.value)
                for iid, op in zip(ids, ops, strict=True)
                if iid in old and all(stored[iid].get(k) == v for k, v in (when or {}).items())
            }
            if present:
                self._run_puts(list(present.values()), now, read, existing=True)
                alive = (set(self._call(self._items.get, ids=list(present), include=[])["ids"])
                         if confirm else set(present))
            else:
                alive = set()
        return [iid in alive for iid in ids]

    aput_existing = threaded(put_existing)

    def put_new(
        self, items: Sequence[tuple[tuple[str, ...], str, dict[str, Any], Any]], /
    ) -> None:
        """Put ``(namespace, key, value, index)`` items the caller knows are not stored
        (keys it has just made, such as a new memory's random id), without the read a put
        makes first to find an item's old rows: one write of the vector rows, one of the
        item rows.

        If an item did exist after all, it is replaced as a put would, except that its
        ``created_at`` restarts and its old vector rows stay behind unused (every search
        ignores vector rows of a generation their item does not name). Validation is a
        put's, before anything is written.

        Raises:
            InvalidInputError: A value that is not a dict, a bad key or index; nothing is
                written then.
            InvalidNamespaceError: A bad namespace.
        """
        ops = self._value_puts(items, "put_new", (4,))
        if ops:
            with self._write_lock:
                self._run_puts(ops, self._clock(), layout.NO_ROWS)

    aput_new = threaded(put_new)

    def _value_puts(self, items: Sequence[Any], method: str, sizes: tuple[int, ...]
                    ) -> list[PutOp]:
        """``items`` of ``put_existing`` / ``put_new`` (``(namespace, key, value[, index])``
        tuples of the ``sizes`` allowed) as validated puts of dict values, all checked before
        anything is read or written."""
        ops = []
        for entry in items:
            if not isinstance(entry, (tuple, list)) or len(entry) not in sizes:
                shapes = " or ".join({3: "(namespace, key, value) triples",
                                      4: "(namespace, key, value, index) quadruples"}[n]
                                     for n in sizes)
                raise InvalidInputError(f"{method} takes {shapes}, got {entry!r}")
            namespace, key, value = entry[:3]
            index = entry[3] if len(entry) == 4 else None
            if not isinstance(value, dict):
                raise InvalidInputError(
                    f"value for key {key!r} must be a dict ({method} never deletes), "
                    f"got {type(value).__name__}")
            op = layout.checked_op(PutOp(namespace, key, value, index=index))
            assert isinstance(op, PutOp)
            if not isinstance(op.key, str):
                raise InvalidInputError(f"key must be a string, got {op.key!r}")
            layout.encode_value(op.namespace, op.key, value, self.max_value_bytes)
            ops.append(op)
        return ops

    def rewrite_matching(
        self,
        namespace: tuple[str, ...],
        /,
        filter: dict[str, Any],
        rewrite: Callable[[list[Item]], Mapping[str, dict[str, Any]]],
        *,
        limit: int = MAX_REWRITE_MATCHES,
    ) -> dict[str, dict[str, Any]]:
        """Read the items of ``namespace`` (exactly) whose values match ``filter`` (as
        ``search`` filters), hand them to ``rewrite``, which returns ``{key: changes}`` for
        those to change, and merge each set of changes into the value as read, written with
        Chroma's ``update`` (an item deleted meanwhile stays deleted; its vectors are kept
        when its indexed texts are unchanged, as :meth:`put_existing`). Returns the values
        written, by key.

        One read and at most one write, for a caller that decides from what is stored now
        what to change (the memory layer's settling of a key: read the key's active records
        after its own write, keep the newest, supersede the rest). At most ``limit`` items
        are read (best-effort beyond: the rest are not seen).

        Raises:
            InvalidInputError: A bad filter or limit, a change set that is not a dict or
                names a key ``rewrite`` was not given, a merged value too large; nothing is
                written then.
            InvalidNamespaceError: A bad namespace.
        """
        ns = tuple(namespace)
        layout.checked_op(SearchOp(ns, filter))
        filters.validate_filter(filter)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInputError(f"limit must be an integer >= 1, got {limit!r}")
        # the namespace's own items are told from deeper ones here: ``nd``, an equality every
        # item of that depth shares, would cost Chroma a read of all of them
        # (``benchmarks/filter_selectivity.py``)
        where = filters.and_where([layout.prefix_where(ns), filters.pushdown_where(filter)])
        include = ["documents", "embeddings"] if self._row_dims else ["documents"]
        with self._write_lock:
            now = self._clock()
            res = self._call(self._items.get, where=where, include=include, limit=limit)
            docs = res["documents"] or [None] * len(res["ids"])
            rows = self._read_rows(res["ids"], docs)
            embs = res.get("embeddings") if self._row_dims else None
            metas: dict[str, dict[str, Any]] = {}
            read_docs: dict[str, str | None] = {}
            vectors: dict[str, list[float]] = {}
            found: dict[str, Item] = {}
            for i, (iid, meta) in enumerate(zip(res["ids"], rows, strict=True)):
                if meta is None:
                    continue
                item = layout.row_to_item(meta)
                read_docs[iid] = docs[i]
                if (tuple(item.namespace) != ns or meta["exp"] <= now
                        or not filters.matches_filter(item.value, filter)):
                    continue
                metas[iid], found[item.key] = meta, item
                if embs is not None:
                    vectors[iid] = [float(x) for x in embs[i]]
            changes = rewrite(list(found.values()))
            ops = []
            for key, change in changes.items():
                if key not in found or not isinstance(change, dict):
                    raise InvalidInputError(
                        f"rewrite returned {change!r} for {key!r}: changes (a dict) of an "
                        "item it was given")
                meta = metas[layout.item_id(ns, key)]
                ops.append(PutOp(ns, key, {**found[key].value, **change},
                                 index=None if int(meta.get("nv") or 0) else False,
                                 ttl=float(meta.get("ttl") or 0.0) or None))
            if ops:
                self._run_puts(ops, now, layout.Rows(metas, read_docs, vectors),
                               existing=True)
        return {op.key: op.value for op in ops}

    arewrite_matching = threaded(rewrite_matching)
