"""An image of a profile's index in the store: what a new process loads instead of every record.

A full load reads every record of the profile, one store row each; on ``ChromaStore`` most
of a new process's first recall goes there (10k records: about three quarters). A profile of
at least ``image_min_records`` (2,000) records therefore keeps, in the store itself (no side
file), an image of an index of it: its records' values in items of ``image_page_records``
(1,000) each, and a head naming them::

    (*R, "image")   "head"          {"image": id, "format": 2, "generation",
                                     "applied": {writer: seq}, "unsettled": [writer],
                                     "pages": n, "records", "analyser", "at"}
    (*R, "image")   "p000000" ...   {"image": id, "data": the page, packed}

A page is packed (:func:`pack_page`) as JSON ``{"fields", "rows", "terms"}`` (a record
whose keys are the page's ``fields`` in order is the list of its values, any other the
record itself; ``terms`` are each record's keyword terms, space-joined), compressed with
zlib and base64-encoded: one string a store reads and decodes at once, a fifth of the
records' JSON (10k records: 8.4 MB of JSON).

**Why loading an image is exact.** An image is the state of an index (after a full load, a
bulk write, or a write that prunes; its last sync at most ``reload_after_seconds`` before):
every write its ``applied`` numbers confirm is in its values (values may hold more: writes applied
but not yet confirmed, re-read anyway). Loading it is being a reader whose last sync was when
the image was made; the sync that follows (the protocol's own, from ``applied``) reads every
entry written since. Those entries are still there however old the image is: pruning
(``changes.plan_prune``) never removes an entry, marker or tombstone younger than the current
image's ``at`` minus the retention (the margin covers the image's own sync age and the clock
skew the protocol tolerates), and a process that prunes writes a new image when the current
one is older than ``image_refresh_seconds`` (15 min), which keeps the catch-up short and lets
pruning move on. So an image is used whenever its head names the profile's current
generation, all its pages carry the head's id (pages are written before the head; a
concurrent image shows as a mismatch), and every writer it saw unsettled still has a marker
(else that writer's entries may be pruned). Otherwise the process loads every record, as
without an image, and writes a new image.

The pages also hold each record's keyword terms (``text_terms``), so a load neither reads
every record nor analyses every text; they are used only when the head names the same
analyser (``repr(default_analyzer())``), else the texts are analysed again. Access counts
are not in the image: a load reads them fresh, as a full load does.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import time
import uuid
import zlib
from typing import Any

from langgraph.store.base import BaseStore, GetOp, Item, PutOp, SearchOp

from langmem_edge.memory.core.plans import Plan, batch
from langmem_edge.memory.index.profile_index import ProfileIndex
from langmem_edge.retrieval.text import default_analyzer

__all__ = [
    "FORMAT",
    "HEAD_KEY",
    "IMAGE",
    "image_head",
    "image_namespace",
    "image_values",
    "pack_page",
    "plan_write_image",
    "unpack_page",
]

logger = logging.getLogger(__name__)

IMAGE = "image"
"""Label of the image's namespace under the profile root."""

HEAD_KEY = "head"
"""Key of the image's head item."""

MAX_PAGES = 100_000
"""``limit`` of the search that reads an image (its head and every page)."""

FORMAT = 2
"""The page format heads name (:func:`pack_page`); an image of another format is not used."""

PACK_LEVEL = 1
"""zlib level of packed pages (the fastest: the pages are written whole, read whole)."""


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


def pack_page(values: list[dict[str, Any]], terms: list[str]) -> str:
    """``values`` and their joined ``terms`` as one packed string (see the module
    docstring); :func:`unpack_page` gives them back equal."""
    fields = list(values[0]) if values else []
    rows = [list(v.values()) if list(v) == fields else v for v in values]
    raw = json.dumps({"fields": fields, "rows": rows, "terms": terms},
                     separators=(",", ":"), ensure_ascii=False)
    return base64.b64encode(zlib.compress(raw.encode(), PACK_LEVEL)).decode("ascii")


def unpack_page(data: str) -> tuple[list[dict[str, Any]], list[Any]]:
    """The values and terms :func:`pack_page` packed; raises ``ValueError`` on anything
    else (a damaged or foreign page)."""
    try:
        page = json.loads(zlib.decompress(base64.b64decode(data, validate=True)))
        fields, rows, terms = page["fields"], page["rows"], page["terms"]
        values = [dict(zip(fields, r, strict=True)) if isinstance(r, list) else r
                  for r in rows]
    except (KeyError, TypeError, zlib.error, binascii.Error, json.JSONDecodeError) as e:
        raise ValueError(f"not a packed image page: {e}") from e
    if not isinstance(terms, list) or len(terms) != len(values) or not all(
            isinstance(v, dict) for v in values):
        raise ValueError("not a packed image page: rows and terms differ")
    return values, terms


def _analyser() -> str:
    return repr(default_analyzer())


def image_values(
    index: ProfileIndex,
    items: list[Item],
    *,
    generation: str | None,
    writers: set[str],
) -> tuple[list[dict[str, Any]], list[str | None] | None, dict[str, int]] | None:
    """The values, their keyword terms (``None`` when made by another analyser) and the
    applied numbers of the image in ``items`` (the result of :func:`image_read_op`), or
    ``None`` when it may not be used (see the module docstring).
    ``generation`` and ``writers`` (the writers with a marker) come from the sync probe."""
    head = next((it.value for it in items if it.key == HEAD_KEY), None)
    if (head is None or head.get("profile") != index.profile or generation is None
            or head.get("generation") != generation or head.get("format") != FORMAT):
        return None
    if not set(head.get("unsettled") or ()) <= writers:
        return None
    pages = {it.key: it.value for it in items if it.key != HEAD_KEY}
    values: list[dict[str, Any]] = []
    terms: list[str | None] = []
    for i in range(int(head.get("pages", -1))):
        page = pages.get(_page_key(i))
        if page is None or page.get("image") != head.get("image"):
            return None
        try:
            page_values, page_terms = unpack_page(page.get("data"))
        except ValueError as e:
            logger.warning("index image of %r not used: %s", index.profile, e)
            return None
        for v, t in zip(page_values, page_terms, strict=True):
            if v.get("profile") == index.profile:
                values.append(v)
                terms.append(t if isinstance(t, str) else None)
    if len(values) != head.get("records"):
        return None
    applied = head.get("applied") or {}
    same = head.get("analyser") == _analyser()
    return values, (terms if same else None), {str(w): int(n) for w, n in applied.items()}


def plan_write_image(store: BaseStore, index: ProfileIndex, unsettled: set[str],
                     old_pages: int = 0) -> Plan[int | None]:
    """Write the image of ``index`` (just synced): its pages, then its head; returns how many
    pages it has (``None``: the index has no generation, nothing was written).
    ``unsettled`` are the writers whose markers the sync read unsettled; pages of an older
    image beyond the new count (``old_pages``) are removed."""
    ns = image_namespace(index)
    with index.lock:
        values = list(index.values.values())
        terms = index.joined_terms()
        applied = dict(index.applied)
        generation = index.generation
    if generation is None:
        return None
    image_id = uuid.uuid4().hex
    size = index.cache.image_page_records
    chunks = range(0, len(values), size)
    yield batch(store, [PutOp(ns, _page_key(i), {
        "profile": index.profile, "image": image_id,
        "data": pack_page(values[start:start + size], terms[start:start + size])},
        index=False) for i, start in enumerate(chunks)])
    ops: list[PutOp] = [PutOp(ns, HEAD_KEY, {
        "profile": index.profile, "image": image_id, "format": FORMAT,
        "generation": generation,
        "applied": applied, "unsettled": sorted(unsettled & set(applied)),
        "pages": len(chunks), "records": len(values), "analyser": _analyser(),
        "at": time.time()}, index=False)]
    ops += [PutOp(ns, _page_key(i), None) for i in range(len(chunks), old_pages)]
    yield batch(store, ops)
    return len(chunks)
