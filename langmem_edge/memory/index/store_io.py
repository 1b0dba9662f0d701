"""A profile's records in the store: one read per operation, writes that are their rows.

Under the profile root ``R = (*namespace, "profiles", profile)``::

    (*R, "memories")          key = memory id      the records (the only copy)
    (*R, "access", "by-writer") key = writer id    a process's access counts (one row)

**Reading** (:func:`plan_load`): one batch of two searches, every record and every count
item, into a fresh :class:`~.profile_index.ProfileIndex` for the operation. A write that
returned before the read began is in it, whichever process made it; nothing is cached, so
nothing can be stale. On a store that returns each item's vector with its row
(``ChromaStore``: one Chroma ``get``), the records' vectors come with them, and the
operation ranks them by vector in process (:meth:`~.profile_index.ProfileIndex.nearest`).

**Writing** (:func:`plan_write_records`): new records and deletions are plain puts, in one
batch. A rewrite of a record the operation read (supersession, ``forget``, ``end_session``)
must never bring back a record another process deleted after the read. On a store that can
rewrite only what still exists (:func:`rewrites_existing`: ``ChromaStore.put_existing``,
Chroma's ``update`` skips missing rows) rewrites go that way: one call, nothing else kept.
Any other ``BaseStore`` (``InMemoryStore``, the SQL stores) has no conditional put, so there
a deletion puts a tombstone ``(*R, "deleted") / id`` before it deletes (same batch), and a
rewrite reads the tombstones of what it rewrote after its put and deletes again any it
finds. If it finds none, the deleter's tombstone, and so its deletion, came after the put;
either way the record ends deleted. Tombstones are small, never reused (ids are unique) and
removed with the profile.

Racing writers under one key are settled by the writers themselves after their write
(``semantic/write.py``, ``plan_settle_keys``): each reads the key again and keeps the
greatest id.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from langgraph.store.base import BaseStore, GetOp, Op, PutOp, SearchOp

from langmem_edge._lru import LRU
from langmem_edge.memory.core.plans import Call, Plan, batch
from langmem_edge.memory.core.stores import (
    ListsVectors,
    PutExisting,
    PutNew,
    existing_item,
    reads_vectors,
)
from langmem_edge.memory.index.profile_index import ProfileIndex
from langmem_edge.memory.records import LIVE

__all__ = ["DELETED", "LOAD_LIMIT", "UNKEYED_WRITE_WHOLE_MAX", "WHOLE_READ_MAX", "WRITE_WHOLE_MAX",
           "SizeHints", "fill",
           "load_ops", "plan_load", "plan_query_vector", "plan_read_batch", "plan_write_records",
           "rewrites_existing"]

logger = logging.getLogger(__name__)

DELETED = "deleted"
"""Label of the tombstones' namespace under the profile root (stores without
``put_existing``)."""

WHOLE_READ_MAX = 1_000
"""Records a recall reads whole, on a store that can rank keys by vector and by keyword
(``nearest_keys`` and ``keyword_search``: ``ChromaStore``). A larger profile is recalled from
the store's candidates instead (``semantic/recall.py``). Reading a profile costs ~0.15 ms a
record on Chroma, and the candidates' route is still the dearer up to here
(``benchmarks/recall_routes.py``: 16 against 50 ms at 100 records, 152 against 200 at
1,000; 5-10 Chroma calls)."""

WRITE_WHOLE_MAX = 200
"""Records a write under a key reads whole on such a store when the profile was last seen
this small (:class:`SizeHints`); past it, only the records under the write's key, the store
finding verification's candidates (``semantic/context.py`` ``plan_read_keyed``). Measured
(``benchmarks/recall_routes.py``, p50 key's records / whole, one run): 1.49x at 25 records,
1.17x at 50, 0.86x at 100, 0.77x at 200, but ~6 Chroma calls against ~3.4
(docs/benchmarks.md, twenty-ninth session)."""

UNKEYED_WRITE_WHOLE_MAX = 50
"""The same for a write without a key, which also reads nothing whole on a profile this
process has not read: the store finds verification's candidates, and only those close
enough to be judged are read. Measured (``benchmarks/recall_routes.py``, remember p50 store
/ whole route, the same run): 1.19x at 25 records, 0.87x at 50, 0.69x at 100, 0.50x at 200,
~3.2 Chroma calls."""

LOAD_LIMIT = 100_000_000
"""``limit`` of the searches that read a whole profile (one search each: offset pages are
not stable on a store that orders by update time while others write)."""


def load_ops(index: ProfileIndex, *, counts: bool = True, limit: int = LOAD_LIMIT,
             active: bool = False) -> list[SearchOp]:
    """The searches :func:`plan_load` makes: the records (at most ``limit``; with
    ``active``, only the active ones: superseded and forgotten records are history that a
    profile keeps growing), and (``counts``) the access-count items. A caller may batch them
    with its own reads and hand the results to :func:`fill`."""
    layout = index.layout
    ops = [SearchOp(layout.memories, filter={LIVE: index.profile} if active else None,
                    limit=limit)]
    if counts:
        # (*R, "access"), not its one child "by-writer": a listing of the records' depth,
        # which a store may answer with them in one read (ChromaStore does)
        ops.append(SearchOp(layout.access, limit=LOAD_LIMIT))
    return ops


def fill(index: ProfileIndex, records: Sequence[Any], counts: Sequence[Any] = (), *,
         complete: bool = True, vectors: Sequence[Any] | None = None,
         active: bool = False) -> None:
    """Fill ``index`` with what :func:`load_ops` read (items of another profile skipped);
    ``complete=False`` when the records are only some of the profile's; ``vectors``: the
    records' vectors in the same order, when the store returned them (:func:`plan_load`);
    ``active``: the read asked for active records only."""
    values = []
    by_id: dict[str, Any] | None = {} if vectors is not None else None
    for i, item in enumerate(records):
        if item.value.get("profile") == index.profile and item.value.get("id") == item.key:
            values.append(item.value)
            if by_id is not None and vectors is not None and vectors[i] is not None:
                by_id[item.key] = vectors[i]
        else:
            logger.warning("skipped foreign record %r in profile %r", item.key, index.profile)
    index.reset(values, counts, complete=complete, vectors=by_id)
    index.history = not active


def plan_read_batch(store: BaseStore, ops: Sequence[Op]) -> Plan[tuple[list[Any], Any]]:
    """``ops`` in one batch whose first is :func:`load_ops`' records search: the results, and
    the records' vectors read with them on a store that returns them (:func:`reads_vectors`;
    None elsewhere), for :func:`fill`'s ``vectors``."""
    if reads_vectors(store):
        lists = cast(ListsVectors, store)
        got, vectors = yield Call(lists.batch_vectors, lists.abatch_vectors, (list(ops),))
        return list(got), vectors.get(0)
    return list((yield batch(store, list(ops)))), None


def plan_load(store: BaseStore, index: ProfileIndex, *, counts: bool = True,
              active: bool = False) -> Plan[None]:
    """Read the whole profile into ``index`` (empty, made for this operation): one batch,
    the records (with their vectors on a store that returns them; ``active``: only the
    active ones) and (``counts``: what recall and reads that show counts need; writes do
    not) the access-count items."""
    found, vectors = yield from plan_read_batch(store, load_ops(index, counts=counts,
                                                                active=active))
    fill(index, *found, vectors=vectors, active=active)


def plan_query_vector(store: BaseStore, text: str) -> Plan[list[float]]:
    """``text`` embedded as ``store`` embeds its queries (a :class:`ListsVectors` store), to
    rank an index's :attr:`~ProfileIndex.vectors` by (:meth:`ProfileIndex.nearest`)."""
    embeddings = cast(ListsVectors, store).embeddings
    vector = yield Call(embeddings.embed_query, embeddings.aembed_query, (text,))
    return [float(x) for x in vector]


class SizeHints(LRU[str, int]):
    """How many records each profile held when last read whole (bounded, least recently used
    dropped; a recall's read stops past :data:`WHOLE_READ_MAX`). A routing hint, not data: a
    wrong one costs time, never a wrong answer (a small profile recalled from candidates
    finds what a whole read does, but for the relevance fill's choice among memories no
    channel matched; a write reads its key's records instead of the profile)."""

    def __init__(self, capacity: int = 4096) -> None:
        super().__init__(capacity)

    def big(self, profile: str, most: int) -> bool | None:
        """Whether ``profile`` was last seen holding more than ``most`` records; ``None``
        when not seen."""
        seen = self.get(profile)
        return None if seen is None else seen > most

    saw = LRU.put
    """Record the number of records a read of a profile found."""


def rewrites_existing(store: BaseStore) -> bool:
    """Whether ``store`` rewrites items only where they still exist (:class:`PutExisting`:
    ``ChromaStore``)."""
    return isinstance(store, PutExisting)


def plan_write_records(
    store: BaseStore,
    index: ProfileIndex,
    new: Iterable[tuple[dict[str, Any], Any]] = (),
    rewrites: Iterable[tuple[dict[str, Any], Any]] = (),
    deletes: Iterable[str] = (),
    *,
    reindex: bool = False,
    fresh: bool = False,
    patches: Mapping[str, dict[str, Any]] | None = None,
    patch_when: Mapping[str, Any] | None = None,
    blind: Sequence[PutOp] = (),
) -> Plan[list[str]]:
    """Write ``new`` records and ``rewrites`` of stored ones (``(value, index)`` pairs: the
    ``index`` argument of the put; ``False`` keeps the vectors of an unchanged text)
    and delete ids; returns the ids of rewrites that found their record gone (deleted since
    their caller read it: not written).

    New records and deletions are one batch of puts. With :func:`rewrites_existing`, a
    rewrite is applied only where the record still exists, keeping its vectors (its text is
    unchanged); ``reindex=True`` (``reembed``: the text gets its first vector) writes it as a
    plain put, as every rewrite is on other stores. ``index`` takes in what was written, for
    the rest of the operation. ``fresh``: the ``new`` records' ids were just made (random):
    on a :class:`~langmem_edge.memory.core.stores.PutNew` store they are written without the
    read a put makes first.

    ``patches`` (``{id: changes}``, on a :func:`rewrites_existing` store only): changes
    applied by the store to the stored value of each record that is still active (judged on
    the store's own read: the caller reads nothing first); the ids not patched are returned
    with the gone (``patch_when``: the fields a record must hold instead, default active and
    this profile's). ``blind``: puts of items only this writer writes (access counts), in the
    same call as the new records.
    """
    new, rewrites = list(new), list(rewrites)
    deletes = list(dict.fromkeys(deletes))
    layout = index.layout
    guarded = rewrites_existing(store) and not reindex
    plain = new if guarded else [*new, *rewrites]
    graves = (*layout.root, DELETED)
    ops: list[Any] = []
    if not rewrites_existing(store):  # each deletion leaves its tombstone first
        ops += [PutOp(graves, mid, {"profile": index.profile, "id": mid, "at": time.time()},
                      index=False) for mid in deletes]
    if fresh and guarded and not ops and not deletes and isinstance(store, PutNew):
        if new or blind:
            yield Call(store.put_new, store.aput_new,
                       ([(layout.memories, v["id"], v, ix) for v, ix in new]
                        + [(op.namespace, op.key, op.value, op.index) for op in blind],))
    else:
        ops += [PutOp(layout.memories, v["id"], v, index=ix) for v, ix in plain]
        ops += [PutOp(layout.memories, mid, None) for mid in deletes]
        ops += blind
        if ops:
            yield batch(store, ops)
    gone: list[str] = []
    patched: dict[str, dict[str, Any]] = {}
    if patches:
        assert guarded, "patches need a store that rewrites only what exists"
        items = [existing_item(layout.memories, mid, changes, index.values.get(mid, {}))
                 for mid, changes in patches.items()]
        rewriting = cast(PutExisting, store)
        done = yield Call(rewriting.put_existing, rewriting.aput_existing, (items,),
                          {"merge": True, "confirm": False, "when": patch_when or {
                              "status": "active", "profile": index.profile}})
        patched = {mid: changes for (mid, changes), ok in zip(patches.items(), done, strict=True)
                   if ok}
        gone += [mid for mid in patches if mid not in patched]
    if guarded and rewrites:
        items = [existing_item(layout.memories, v["id"], v, v) for v, _ in rewrites]
        rewriting = cast(PutExisting, store)
        done = yield Call(rewriting.put_existing, rewriting.aput_existing, (items,))
        gone = [v["id"] for (v, _), ok in zip(rewrites, done, strict=True) if not ok]
    elif rewrites:  # a deletion whose tombstone we do not see now comes after our put
        ids = [v["id"] for v, _ in rewrites]
        found = yield batch(store, [GetOp(graves, mid) for mid in ids])
        gone = [mid for mid, it in zip(ids, found, strict=True)
                if it is not None and it.value.get("profile") == index.profile]
        if gone:
            yield batch(store, [PutOp(layout.memories, mid, None) for mid in gone])
    if gone:
        logger.info("records %s of %r were deleted or changed while being rewritten; left "
                    "as they were", gone, index.profile)
    for value, _ in [*new, *rewrites]:
        if value["id"] in gone:
            index.remove(value["id"])
        else:
            index.apply(value)
    for mid, changes in patched.items():
        if mid in index.values:
            index.apply({**index.values[mid], **changes})
    for mid in deletes:
        index.remove(mid)
    return gone
