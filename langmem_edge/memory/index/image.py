"""An image of a profile's index in the store: what a new process loads instead of every record.

A full load reads every record of the profile, one store row each, and builds the index
from them (analysing every text, a dict per posting). A profile of at least
``image_min_records`` (2,000) records therefore keeps, in the store itself (no side file), an
image of its index: the index's state as arrays, restored without a Python object per record,
in pages of at most :data:`PAGE_BYTES`, and a head naming them::

    (*R, "image")   "head"          {"image": id, "format": 3, "generation",
                                     "applied": {writer: seq}, "unsettled": [writer],
                                     "pages": n, "records", "analyser", "bytes", "crc32",
                                     "sections": {name: [offset, length, kind]}, "at"}
    (*R, "image")   "p000000" ...   {"image": id, "data": base64 of the payload's bytes}

**The payload** (:func:`encode_image`) is sections one after another, each zlib-compressed:
``meta`` (JSON: scope and writer codes, keyed records, kinds, the BM25 namespaces, free
slots and statistics), ``ids`` (JSON, the records in index order), the profile index's
numeric columns (``col:<name>``, one array each), the BM25 postings in CSR form
(``bm25_terms`` JSON, ``bm25_offsets``, ``bm25_slot_deltas``: each term's slots sorted, as
gaps, and ``bm25_tfs``) with per-slot ``bm25_lengths`` and ``bm25_nsno`` (the slot ids,
``bm25_ids``, are null when the slot column gives them), and the records' values in chunks of 64
records (``chunks``, ``chunk_ends``, ``value_ends``; ``index/values.py``), decoded only when
a record is read. Restoring it (:meth:`ProfileIndex.restore`, :meth:`BM25Index.restore`) is a
few array copies and a dict of ids, not a dict per record: a first recall reads the head and
pages, restores, and decodes the few records it returns. The head's ``bytes`` and
``crc32`` cover the payload: a damaged or missing page means a full load.

**Why loading an image is exact.** An image is the state of an index (after a full load, a
bulk write, or a write that prunes; its last sync at most ``reload_after_seconds`` before):
every write its ``applied`` numbers confirm is in it (it may hold more: writes applied but
not yet confirmed, re-read anyway). Loading it is being a reader whose last sync was when
the image was made; the sync that follows (the protocol's own, from ``applied``) reads every
entry written since. Those entries are still there however old the image is: pruning
(``changes.plan_prune``) never removes an entry, marker or tombstone younger than the current
image's ``at`` minus the retention (the margin covers the image's own sync age and the clock
skew the protocol tolerates), and a process that prunes writes a new image when the current
one is older than ``image_refresh_seconds`` (15 min), which keeps the catch-up short and lets
pruning move on. So an image is used whenever its head names the profile's current
generation and :data:`FORMAT`, all its pages carry the head's id (pages are written before
the head; a concurrent image shows as a mismatch), and every writer it saw unsettled still
has a marker (else that writer's entries may be pruned). Otherwise the process loads every
record, as without an image, and writes a new image. An image of an older format (2: packed
values and terms) is not read: the first process of this version loads every record and
replaces it.

The postings and the kind column depend on the analyser and on ``KINDS``: when the head
names another analyser (``repr(default_analyzer())``) or the image other kinds, its values
are decoded and the index is built from them (the texts analysed again), still without
reading the records. Access counts are not in the image (its access columns are the
records' own): a load reads them fresh, as a full load does.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import time
import uuid
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
from langgraph.store.base import BaseStore, GetOp, Item, PutOp, SearchOp

from langmem_edge.memory.core.plans import Plan, batch
from langmem_edge.memory.index.columns import COLUMN_DTYPES
from langmem_edge.memory.index.profile_index import IndexSnapshot, ProfileIndex
from langmem_edge.memory.index.values import CHUNK_RECORDS, RecordValues, pack_chunks
from langmem_edge.memory.records import KINDS
from langmem_edge.retrieval.bm25 import BM25Snapshot
from langmem_edge.retrieval.text import default_analyzer

__all__ = [
    "FORMAT",
    "HEAD_KEY",
    "IMAGE",
    "PAGE_BYTES",
    "LoadedImage",
    "decode_image",
    "encode_image",
    "image_head",
    "image_namespace",
    "plan_write_image",
    "read_image",
]

logger = logging.getLogger(__name__)

IMAGE = "image"
"""Label of the image's namespace under the profile root."""

HEAD_KEY = "head"
"""Key of the image's head item."""

MAX_PAGES = 100_000
"""``limit`` of the search that reads an image (its head and every page)."""

FORMAT = 3
"""The payload format heads name (:func:`encode_image`); an image of another format is not
used (the process loads every record and writes an image of this one)."""

PACK_LEVEL = 6
"""zlib level of the payload's sections (decompressing costs about the same at any level)."""

PAGE_BYTES = 768 * 1024
"""Payload bytes per page item (1 MiB of base64, under ``ChromaStore``'s 4 MiB value limit)."""

_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode

def image_namespace(index: ProfileIndex) -> tuple[str, ...]:
    """``(*R, "image")``."""
    return (*index.layout.root, IMAGE)


def image_read_op(index: ProfileIndex) -> SearchOp:
    """The one read of an image: its head and all its pages."""
    return SearchOp(image_namespace(index), limit=MAX_PAGES)


def image_head(index: ProfileIndex, item: Item | None) -> dict[str, Any] | None:
    """The value of the image head ``item`` when it is this profile's and names its current
    generation (``index.generation``), else ``None``."""
    if item is None or item.key != HEAD_KEY:
        return None
    head = item.value
    if head.get("profile") != index.profile or index.generation is None:
        return None
    return head if head.get("generation") == index.generation else None


def image_head_op(index: ProfileIndex) -> GetOp:
    """The read of the image's head alone (what pruning needs)."""
    return GetOp(image_namespace(index), HEAD_KEY)


def _page_key(i: int) -> str:
    return f"p{i:06d}"


def _analyser() -> str:
    return repr(default_analyzer())


def _slot_ids(ids: list[str], slot_of_row: np.ndarray, slots: int) -> list[str | None]:
    """The BM25 id of each slot from the records' ids and their slot column."""
    out: list[str | None] = [None] * slots
    for mid, slot in zip(ids, slot_of_row.tolist(), strict=True):
        if 0 <= slot < slots:
            out[slot] = mid
    return out


def _sorted_deltas(offsets: np.ndarray, slots: np.ndarray, tfs: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Each term's postings sorted by slot, as the first slot then the gaps (small numbers
    compress far better than slots), with their frequencies in the same order. The order
    of a term's postings changes no score (each slot is summed once per term)."""
    counts = np.diff(offsets)
    term_of = np.repeat(np.arange(len(counts), dtype=np.intp), counts)
    order = np.lexsort((slots, term_of))
    ordered = np.asarray(slots, dtype=np.int64)[order]
    deltas = np.diff(ordered, prepend=0)
    starts = offsets[:-1][counts > 0]
    deltas[starts] = ordered[starts]
    return deltas, np.asarray(tfs)[order]


def _undelta(offsets: np.ndarray, deltas: np.ndarray) -> np.ndarray:
    """The slots :func:`_sorted_deltas` encoded."""
    counts = np.diff(offsets)
    if len(deltas) != (int(offsets[-1]) if len(offsets) else 0):
        raise ValueError("index image postings do not fit their offsets")
    summed = np.cumsum(deltas, dtype=np.int64)
    starts = offsets[:-1][counts > 0]
    before = summed[starts] - deltas[starts]
    return summed - np.repeat(before, counts[counts > 0])


def encode_image(snapshot: IndexSnapshot, values: list[dict[str, Any]]
                 ) -> tuple[bytes, dict[str, list[Any]]]:
    """The payload of an image of ``snapshot`` with its ``values`` (see the module
    docstring), and its section table ``{name: [offset, length, kind]}``; ``kind`` is
    ``"json"``, ``"raw"`` or a numpy dtype. :func:`decode_image` gives them back."""
    bm = snapshot.bm25
    fields = list(values[0]) if values else []
    chunks, value_ends = pack_chunks(values, fields, CHUNK_RECORDS)
    slots_dtype = "<i4" if len(bm.ids) < 2**31 else "<i8"
    deltas, tfs = _sorted_deltas(bm.offsets, bm.posting_slots, bm.posting_tfs)
    # the slot ids are the records' ids through the slot column (null: derive them)
    bm25_ids = None if _slot_ids(snapshot.ids, snapshot.columns["slot"], len(bm.ids)
                                 ) == bm.ids else bm.ids
    meta = {"codes": snapshot.codes, "keyed": snapshot.keyed, "kinds": list(KINDS),
            "fields": fields, "chunk_records": CHUNK_RECORDS,
            "field_weights": bm.field_weights, "default_field_weight": bm.default_field_weight,
            "free": bm.free, "namespaces": bm.namespaces, "free_numbers": bm.free_numbers,
            "namespace_stats": bm.namespace_stats}
    parts: list[tuple[str, str, Any]] = [
        ("meta", "json", meta), ("ids", "json", snapshot.ids), ("bm25_ids", "json", bm25_ids),
        ("bm25_terms", "json", bm.terms),
        *((f"col:{name}", dtype, snapshot.columns[name])
          for name, dtype in COLUMN_DTYPES.items()),
        ("bm25_lengths", "<f8", bm.lengths), ("bm25_nsno", "<i8", bm.namespace_numbers),
        ("bm25_offsets", "<i8", bm.offsets), ("bm25_slot_deltas", slots_dtype, deltas),
        ("bm25_tfs", "<f8", tfs), ("value_ends", "<i8", value_ends),
        ("chunk_ends", "<i8", np.cumsum([len(c) for c in chunks], dtype=np.int64)),
    ]
    blobs: list[bytes] = []
    table: dict[str, list[Any]] = {}
    at = 0
    for name, kind, data in parts:
        raw = _JSON(data).encode() if kind == "json" else np.asarray(data, dtype=kind).tobytes()
        blob = zlib.compress(raw, PACK_LEVEL)
        table[name] = [at, len(blob), kind]
        blobs.append(blob)
        at += len(blob)
    table["chunks"] = [at, sum(len(c) for c in chunks), "raw"]
    return b"".join([*blobs, *chunks]), table


def decode_image(payload: bytes, table: dict[str, list[Any]], *, same_analyser: bool
                 ) -> tuple[IndexSnapshot | None, RecordValues]:
    """The index snapshot and the (packed) values of a payload :func:`encode_image` made;
    the snapshot is ``None`` when it may not be restored here (another analyser, other
    kinds: build from the values). Raises ``ValueError`` on a payload that does not decode."""
    view = memoryview(payload)
    try:
        def section(name: str) -> Any:
            at, length, kind = table[name]
            if at < 0 or at + length > len(payload):
                raise ValueError(f"section {name!r} lies outside the payload")
            if kind == "raw":
                return view[at:at + length]
            raw = zlib.decompress(view[at:at + length])
            return json.loads(raw) if kind == "json" else np.frombuffer(raw, dtype=kind)

        meta, ids, chunk_ends = section("meta"), section("ids"), section("chunk_ends")
        chunks_at = section("chunks")
        bounds = [0, *chunk_ends.tolist()]
        chunks = [chunks_at[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
        values = RecordValues.from_chunks(ids, chunks, section("value_ends"),
                                          list(meta["fields"]), int(meta["chunk_records"]))
        if not same_analyser or meta["kinds"] != list(KINDS):
            return None, values

        def ns(x: Any) -> tuple[str, ...]:
            return tuple(x)
        columns = {name: section(f"col:{name}") for name in COLUMN_DTYPES}
        lengths, offsets = section("bm25_lengths"), section("bm25_offsets")
        slot_ids = section("bm25_ids")
        if slot_ids is None:
            slot_ids = _slot_ids(ids, columns["slot"], len(lengths))
        bm25 = BM25Snapshot(
            field_weights=dict(meta["field_weights"]),
            default_field_weight=float(meta["default_field_weight"]),
            ids=slot_ids, free=list(meta["free"]),
            lengths=lengths, namespace_numbers=section("bm25_nsno"),
            namespaces=[None if n is None else ns(n) for n in meta["namespaces"]],
            free_numbers=list(meta["free_numbers"]),
            namespace_stats=[(ns(n), int(c), float(t)) for n, c, t in meta["namespace_stats"]],
            terms=section("bm25_terms"), offsets=offsets,
            posting_slots=_undelta(offsets, section("bm25_slot_deltas")),
            posting_tfs=section("bm25_tfs"))
        snapshot = IndexSnapshot(
            ids=ids, columns=columns,
            codes=list(meta["codes"]), keyed=[(int(r), str(s), str(k)) for r, s, k in
                                              meta["keyed"]], bm25=bm25)
    except (KeyError, TypeError, zlib.error, json.JSONDecodeError) as e:
        raise ValueError(f"not an index image payload: {e!r}") from e
    return snapshot, values


@dataclass(frozen=True)
class LoadedImage:
    """An image read from the store (:func:`read_image`): ``snapshot`` to restore (``None``:
    build the index from ``values``), the values, and the applied numbers it was taken at."""

    snapshot: IndexSnapshot | None
    values: RecordValues
    applied: dict[str, int]


def read_image(index: ProfileIndex, items: list[Item], *, generation: str | None,
               writers: set[str]) -> LoadedImage | None:
    """The image in ``items`` (the result of :func:`image_read_op`), or ``None`` when it
    may not be used (see the module docstring). ``generation`` and ``writers`` (the writers
    with a marker) come from the sync probe."""
    head = next((it.value for it in items if it.key == HEAD_KEY), None)
    if (head is None or head.get("profile") != index.profile or generation is None
            or head.get("generation") != generation or head.get("format") != FORMAT):
        return None
    if not set(head.get("unsettled") or ()) <= writers:
        return None
    pages = {it.key: it.value for it in items if it.key != HEAD_KEY}
    try:
        parts = []
        for i in range(int(head.get("pages", -1))):
            page = pages.get(_page_key(i))
            if page is None or page.get("image") != head.get("image"):
                return None
            parts.append(base64.b64decode(page.get("data"), validate=True))
        payload = b"".join(parts)
        if len(payload) != head.get("bytes") or zlib.crc32(payload) != head.get("crc32"):
            raise ValueError("its pages do not add up to the payload the head names")
        snapshot, values = decode_image(payload, head["sections"],
                                        same_analyser=head.get("analyser") == _analyser())
        if len(values) != head.get("records"):
            raise ValueError("it holds another number of records than its head says")
    except (ValueError, TypeError, KeyError, binascii.Error) as e:
        logger.warning("index image of %r not used: %s", index.profile, e)
        return None
    applied = head.get("applied") or {}
    return LoadedImage(snapshot, values, {str(w): int(n) for w, n in applied.items()})


def plan_write_image(store: BaseStore, index: ProfileIndex, unsettled: set[str],
                     old_pages: int = 0) -> Plan[int | None]:
    """Write the image of ``index`` (just synced): its pages, then its head; returns how many
    pages it has (``None``: the index has no generation, nothing was written).
    ``unsettled`` are the writers whose markers the sync read unsettled; pages of an older
    image beyond the new count (``old_pages``) are removed."""
    ns = image_namespace(index)
    with index.lock:
        if index.generation is None:
            return None
        snapshot, values = index.snapshot()
        applied = dict(index.applied)
        generation = index.generation
    payload, table = encode_image(snapshot, values)
    image_id = uuid.uuid4().hex
    starts = range(0, max(len(payload), 1), PAGE_BYTES)
    yield batch(store, [PutOp(ns, _page_key(i), {
        "profile": index.profile, "image": image_id,
        "data": base64.b64encode(payload[at:at + PAGE_BYTES]).decode("ascii")},
        index=False) for i, at in enumerate(starts)])
    ops: list[PutOp] = [PutOp(ns, HEAD_KEY, {
        "profile": index.profile, "image": image_id, "format": FORMAT,
        "generation": generation,
        "applied": applied, "unsettled": sorted(unsettled & set(applied)),
        "pages": len(starts), "records": len(values), "analyser": _analyser(),
        "bytes": len(payload), "crc32": zlib.crc32(payload), "sections": table,
        "at": time.time()}, index=False)]
    ops += [PutOp(ns, _page_key(i), None) for i in range(len(starts), old_pages)]
    yield batch(store, ops)
    return len(starts)
