"""How ChromaStore lays items out in Chroma: pure functions, no I/O.

Two collections per store (names ``<prefix>-rows<D>`` and ``<prefix>-vectors``), both carrying
``SCHEMA_VERSION`` in their collection metadata, so code that knows another layout refuses
them instead of misreading them:

``rows<D>``: one row per item. ``D`` is the dimension of its vectors: the index's ``dims``,
or 0 for a store opened without an index (its rows hold the 1-d :data:`ITEM_VECTOR`); see
:func:`rows_collection`.
    id        ``item_id(namespace, key)``: 32 hex of sha256 over the JSON of (namespace, key)
    embedding the item's first indexed text's vector, written with the row (so value, texts
              and first vector switch together), or, for an item without vectors
              (``nv == 0``) or in a ``rows0`` collection, a placeholder (:func:`row_vector`);
              one read of a namespace's rows returns its values and vectors together, and a
              vector search queries this collection (and ``vectors`` for later texts)
    document  JSON: ``"m"``, the row's fields that reads use (:data:`ROW_FIELDS`): ``ns``
              (labels joined by ``_chroma.join_labels``), ``nd`` (depth), ``k`` (key), ``v``
              (value as JSON), ``ca``/``ua`` (created/updated, epoch seconds), ``exp``
              (expiry, epoch seconds; ``EXP_NEVER`` when none; a TTL refresh rewrites the
              metadata's only), ``ttl`` (minutes, 0 when none), ``nv`` (number of vector
              rows), ``vg`` (their generation, see :func:`vector_id`), ``vt``
              (:func:`texts_signature` of the indexed texts) and ``fk`` (the filter keys
              of the metadata); then ``"f"`` and ``"k"``, the keyword channel's analysed
              token stream of each indexed field and the key's segments
              (:func:`~langmem_edge.retrieval.keywords.keyword_fields`). Reads ask for the
              document only: Chroma reads a row's scalar metadata whatever is asked, but
              its lists only when metadata is (``benchmarks/row_fields.py``).
    metadata  what a ``where`` names: ``nd``, ``p1``..``p{d}`` (each
              prefix, joined: Chroma has no prefix match, so a namespace prefix is one
              equality), ``exp``, ``ua``, ``nv``, ``fs`` (the short string leaves, a list of
              ``<path>`` U+001F ``<string>``) and ``g:<path>`` float copies of numeric
              (and bool) leaves, so equality and range filters run inside Chroma; ``fx``
              (1) when some leaf a filter could name was not mirrored (too many leaves, a
              non-finite number), so pushed-down filters let the item through to the
              Python check (:func:`pushdown_where`); ``kt`` (the distinct analysed terms,
              a list), ``ky`` (the key's segments, a list) and ``kl`` (the number of
              analysed terms), which a keyword search matches and counts
              (:mod:`langmem_edge.retrieval.keywords`).

``vectors``: one row per indexed text of an item after its first (``a[*].b`` yields one
text per element); the first text's vector is the item row's own.
    id        ``<item id>:<vg>:<j>``, j in ``range(1, nv)``
    metadata  ``ns``, ``nd`` and ``k`` (the item's name, so ids never seen are resolved from
              this small row), ``p`` (the JSON path, ``path.j`` for list elements as
              InMemoryStore names them), ``h`` (sha256 of the text: an unchanged text keeps
              its vector without calling the model), and the item's ``p*`` prefix fields, so
              a namespace prefix narrows the vector query itself. Nothing else: Chroma reads
              every field of each row it returns or filters.
"""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, NamedTuple

import numpy as np
from langgraph.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    SearchOp,
    validate_op_namespace,
)
from langgraph.store.base import InvalidNamespaceError as _LanggraphNamespaceError

from langmem_edge._chroma import join_labels, split_labels
from langmem_edge.errors import InvalidInputError, InvalidNamespaceError, LimitExceededError
from langmem_edge.store import filters
from langmem_edge.store.filters import and_where as and_where
from langmem_edge.store.filters import filter_fields

SCHEMA_VERSION = 8
"""Version of this layout, stored in each collection's metadata. Collections of another
version are refused (``_chroma.open_collection``; versions 1 to 7 were development layouts
before 0.1.0)."""

EXP_NEVER = 1.0e15
"""``exp`` of an item that never expires (about 31 million years from now)."""

ITEM_VECTOR = [1.0]
"""The embedding of every row of a ``rows0`` collection."""


class Rows(NamedTuple):
    """Item rows read by id: metadata, and (when asked for) documents and embeddings, each
    by item id."""

    metas: dict[str, dict[str, Any]]
    docs: dict[str, str | None]
    vectors: dict[str, list[float]]


NO_ROWS = Rows({}, {}, {})
"""What a write that read nothing first passes as the rows it replaces."""


def rows_collection(prefix: str, dims: int) -> str:
    """The name of the item rows collection whose vectors have ``dims`` dimensions (0: a
    store without an index, whose rows hold :data:`ITEM_VECTOR`). A collection's dimension
    is fixed by its first row, hence one name per dimension."""
    return f"{prefix}-rows{dims}"


def rows_dims(prefix: str, name: str) -> int | None:
    """The ``dims`` of a :func:`rows_collection` name, or None for any other name."""
    head = f"{prefix}-rows"
    tail = name[len(head):]
    return int(tail) if name.startswith(head) and tail.isdigit() else None


def row_vector(iid: str, dims: int, first: list[float] | None) -> list[float]:
    """An item row's embedding in a collection of ``dims``: ``first`` (the vector of its
    first indexed text) when it has one and ``dims`` > 0, else a placeholder: for ``dims`` 0
    :data:`ITEM_VECTOR`; otherwise a corner of the hypercube, every component
    ``+-1/sqrt(dims)`` with signs drawn from the item id: a unit vector, different for
    different items (HNSW handles a set of equal vectors badly), and recognisable
    (:func:`placeholders`): no embedding model gives all components one magnitude."""
    if dims <= 0:
        return list(ITEM_VECTOR)
    if first is not None:
        return first
    bits = int(hashlib.sha256(iid.encode("ascii")).hexdigest(), 16)
    step = 1.0 / math.sqrt(dims)
    return [step if (bits >> (j % 256)) & 1 else -step for j in range(dims)]


def placeholders(embeddings: Any) -> np.ndarray:
    """A mask of the rows of ``embeddings`` (one per row) that are :func:`row_vector`
    placeholders: vectors of an item without vectors, never to be ranked."""
    rows = np.abs(np.asarray(embeddings, dtype=np.float64))
    if rows.ndim != 2 or rows.shape[1] < 2:
        return np.ones(len(rows), dtype=bool)
    return np.all(np.abs(rows - 1.0 / math.sqrt(rows.shape[1])) < 1e-6, axis=1)


KEYWORD_ONLY = "keyword:"
"""A put's ``index`` path starting with this feeds the keyword channel alone
(``index=["text", "keyword:name"]``: ``text`` is embedded and analysed, ``name`` only
analysed, as the keyword field ``name``). Other stores find no such field and index nothing
for it."""

@contextmanager
def namespace_errors(*namespaces: object, optional: bool = False) -> Iterator[None]:
    """Re-raise langgraph's ``InvalidNamespaceError`` as ours (a subclass of both); first
    refuse ``namespaces`` that are not tuples (or lists) at all, which langgraph's checks
    would fail on with a ``TypeError`` (``None`` passes when ``optional``)."""
    for namespace in namespaces:
        if not isinstance(namespace, (tuple, list)) and not (optional and namespace is None):
            raise InvalidNamespaceError(
                f"Invalid namespace {namespace!r}: a namespace is a tuple of strings, "
                f"got {type(namespace).__name__}"
            )
    try:
        yield
    except _LanggraphNamespaceError as e:
        if isinstance(e, InvalidNamespaceError):
            raise
        raise InvalidNamespaceError(str(e)) from e


def checked_op(op: Op) -> Op:
    """``op`` with a list namespace made a tuple, after langgraph's label rules (a label may
    hold any other character: paths are escaped by :func:`~langmem_edge._chroma.join_labels`).

    A namespace may be given as a list (``put(["users", "alice"], ...)``), as ``SqliteStore``
    and ``PostgresStore`` take it; it is stored and returned as the tuple.
    """
    if not isinstance(op, (GetOp, PutOp, SearchOp, ListNamespacesOp)):
        raise InvalidInputError(f"Unknown operation type: {type(op).__name__}")
    if isinstance(op, (GetOp, PutOp)) and isinstance(op.namespace, list):
        op = op._replace(namespace=tuple(op.namespace))
    elif isinstance(op, SearchOp) and isinstance(op.namespace_prefix, list):
        op = op._replace(namespace_prefix=tuple(op.namespace_prefix))
    elif isinstance(op, ListNamespacesOp) and op.match_conditions:
        op = op._replace(match_conditions=tuple(
            c._replace(path=tuple(c.path)) if isinstance(c.path, list) else c
            for c in op.match_conditions))
    with namespace_errors(*_namespaces(op)):
        validate_op_namespace(op)
    return op


def _namespaces(op: Op) -> tuple[object, ...]:
    if isinstance(op, (GetOp, PutOp)):
        return (op.namespace,)
    if isinstance(op, SearchOp):
        return (op.namespace_prefix,)
    return ()


def item_id(namespace: tuple[str, ...], key: str) -> str:
    """The Chroma id of an item: 32 hex chars of sha256 over JSON ``[namespace, key]``."""
    raw = json.dumps([list(namespace), key], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]


ROW_GEN = "*"
"""The generation a vector hit on an item row's own vector (its first text's) is reported
under (:func:`parse_vector_id`): current whenever the item has vectors at all, since the row
and its vector are one write."""

NO_VECTORS = "-"
"""What stands for an item's current generation when it has no vectors (``nv == 0``): a hit
on its row is on a placeholder, never current."""


def vector_id(iid: str, gen: str, j: int) -> str:
    """The Chroma id of the ``j``-th vector row of generation ``gen`` of an item (``j >= 1``:
    the first vector is in the item row).

    A generation names one set of vector rows: a put that changes an item's indexed texts
    writes a new generation beside the old one, then switches the item row's ``vg`` to it,
    then deletes the old rows, so a crash between the calls never lets an item rank by texts
    it does not hold (:func:`parse_vector_id`, docs/store.md "Crash safety").
    """
    return f"{iid}:{gen}:{j}"


def parse_vector_id(vid: str) -> tuple[str, str, int]:
    """``(item id, generation, j)`` of a vector row id (the inverse of :func:`vector_id`); an
    item row's id is its own first vector: ``(id, ROW_GEN, 0)``."""
    if ":" not in vid:
        return vid, ROW_GEN, 0
    iid, gen, j = vid.split(":")
    return iid, gen, int(j)


def new_generation() -> str:
    """A fresh vector generation: 8 random hex, never reused, so rows of a generation that
    is not an item's current one can never become current again."""
    return uuid.uuid4().hex[:8]


def texts_signature(triples: Iterable[tuple[str, str, str]]) -> str:
    """A hash of an item's indexed texts (path and text, in order): equal signatures mean the
    vector rows already written are still right, and a put keeps them as they are."""
    h = hashlib.sha256()
    for _, path, text in triples:
        h.update(path.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
        h.update(text.encode("utf-8", "surrogatepass"))
        h.update(b"\x01")
    return h.hexdigest()[:16]


def vector_ids(iid: str, meta: Mapping[str, Any]) -> list[str]:
    """The ids of an item's vector rows in ``<prefix>-vectors`` (its texts after the first),
    from its item row."""
    gen = str(meta.get("vg", ""))
    return [vector_id(iid, gen, j) for j in range(1, int(meta["nv"]))]


def current_generation(meta: Mapping[str, Any]) -> str:
    """The generation whose vector rows score an item: its row's ``vg``, or
    :data:`NO_VECTORS` when it has none."""
    return str(meta.get("vg", "")) if int(meta.get("nv") or 0) else NO_VECTORS


def namespace_fields(namespace: tuple[str, ...]) -> dict[str, Any]:
    """``p1``..``p{d}`` (each prefix, joined) and ``nd``."""
    fields: dict[str, Any] = {}
    for depth in range(1, len(namespace) + 1):
        fields[f"p{depth}"] = join_labels(namespace[:depth])
    fields["nd"] = len(namespace)
    return fields


def prefix_where(prefix: tuple[str, ...]) -> dict[str, Any] | None:
    """A Chroma ``where`` matching every namespace that starts with ``prefix``.

    One equality on the joined prefix (``p{d}``): Chroma evaluates an ``$and`` of one clause
    per level several times slower than a single clause.
    """
    if not prefix:
        return None
    return {f"p{len(prefix)}": join_labels(prefix)}


def encode_value(
    namespace: tuple[str, ...], key: str, value: Mapping[str, Any], max_bytes: int
) -> str:
    """The value as JSON, or a clear error naming the key when it cannot be stored."""
    if not isinstance(value, Mapping):
        raise InvalidInputError(
            f"value for key {key!r} in namespace {namespace} must be a dict, "
            f"got {type(value).__name__}"
        )
    where = _non_string_key(value)
    if where is not None:
        raise InvalidInputError(
            f"value for key {key!r} in namespace {namespace} has a non-string dict key at "
            f"{where}: JSON would turn it into a string, so the value would not round-trip"
        )
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as e:
        raise InvalidInputError(
            f"value for key {key!r} in namespace {namespace} holds a lone surrogate "
            f"({e.object[e.start:e.end]!r}), which is not valid Unicode and Chroma cannot store"
        ) from e
    except (TypeError, ValueError) as e:
        raise InvalidInputError(
            f"value for key {key!r} in namespace {namespace} is not JSON-serialisable: {e}"
        ) from e
    if size > max_bytes:
        raise LimitExceededError(
            f"value for key {key!r} in namespace {namespace} is {size:,} bytes as JSON; "
            f"the limit is {max_bytes:,} (ChromaStore max_value_bytes)"
        )
    return text


def _non_string_key(node: Any, path: str = "$") -> str | None:
    """The JSON path of the first dict key that is not a string, or None."""
    if isinstance(node, Mapping):
        for k, v in node.items():
            if not isinstance(k, str):
                return f"{path}[{k!r}]"
            found = _non_string_key(v, f"{path}.{k}")
            if found is not None:
                return found
    elif isinstance(node, (list, tuple)):
        for i, v in enumerate(node):
            found = _non_string_key(v, f"{path}[{i}]")
            if found is not None:
                return found
    return None


def to_datetime(ts: float) -> datetime:
    """Epoch seconds to an aware UTC datetime."""
    return datetime.fromtimestamp(ts, tz=UTC)


DECODED_VALUE = "_value"
"""Key under which a read row keeps its value once decoded (a filter check decodes it, the
item takes it: :func:`row_to_item` removes it, so no two items share one value); never
stored."""


def row_to_item(meta: dict[str, Any]) -> Item:
    """An ``Item`` from an items-collection metadata row."""
    ns = split_labels(meta["ns"]) if meta["nd"] else ()
    value = meta.pop(DECODED_VALUE, None)
    return Item(
        value=json.loads(meta["v"]) if value is None else value,
        key=meta["k"],
        namespace=ns,
        created_at=to_datetime(meta["ca"]),
        updated_at=to_datetime(meta["ua"]),
    )


def expiry(now: float, ttl_minutes: float | None) -> float:
    """``exp`` for an item written at ``now`` with a TTL in minutes (None: never)."""
    if ttl_minutes is None:
        return EXP_NEVER
    if not math.isfinite(ttl_minutes) or ttl_minutes <= 0:
        raise InvalidInputError(f"ttl must be a positive number of minutes, got {ttl_minutes!r}")
    return now + ttl_minutes * 60.0


def item_metadata(
    namespace: tuple[str, ...],
    key: str,
    value_json: str,
    value: Mapping[str, Any],
    *,
    created_at: float,
    updated_at: float,
    exp: float,
    ttl_minutes: float | None,
    n_vectors: int,
    generation: str,
    signature: str,
    keyword: Mapping[str, Any],
) -> dict[str, Any]:
    """The metadata of an item row (``keyword``: its ``kt``/``ky``/``kl`` fields)."""
    meta: dict[str, Any] = {
        "ns": join_labels(namespace),
        **namespace_fields(namespace),
        "k": key,
        "v": value_json,
        "ca": created_at,
        "ua": updated_at,
        "exp": exp,
        "ttl": float(ttl_minutes or 0.0),
        "nv": n_vectors,
        "vg": generation,
        "vt": signature,
        **keyword,
    }
    meta.update(filter_fields(value))
    return meta


ROW_FIELDS = ("ns", "nd", "k", "v", "ca", "ua", "exp", "ttl", "nv", "vg", "vt")
"""The fields of an item row that reads use, kept in its document under ``"m"``:
a read asks Chroma for documents only, so the row's lists (``kt``, ``ky``) are not read."""

DOCUMENT_ONLY = ("ns", "k", "v", "ca", "ttl", "vg", "vt")
"""Of :data:`ROW_FIELDS`, those no ``where`` names: not in the metadata (Chroma reads every
scalar field of a row it returns, whatever ``include`` asks for). ``nd``, ``exp``, ``ua`` and
``nv`` are in both (prefixes, the TTL sweep, listing by recency and items without vectors
name them)."""

FILTER_KEYS = "fk"
"""In a row's ``"m"``: the metadata keys its filter mirror holds (``fs``/``g:``/``fx``), so
the next write of the item removes those its new value no longer has (Chroma's ``upsert`` and
``update`` merge metadata)."""


def split_row(meta: Mapping[str, Any], keyword_document: str) -> tuple[dict[str, Any], str]:
    """An item row as Chroma stores it: ``(metadata, document)`` from the row's fields
    (:func:`item_metadata`, with ``None`` for keys a write removes) and its keyword document
    (:func:`~langmem_edge.retrieval.keywords.encode_keyword_document`). The document is the
    keyword document with ``"m"``: the :data:`ROW_FIELDS` and :data:`FILTER_KEYS`."""
    metadata = {k: v for k, v in meta.items() if k not in DOCUMENT_ONLY}
    row = {k: meta[k] for k in ROW_FIELDS if k in meta}
    row[FILTER_KEYS] = sorted(k for k, v in meta.items() if v is not None and (
        k.startswith(filters.NUMBER_FIELD_PREFIX)
        or k in (filters.INCOMPLETE_FIELD, filters.STRINGS_FIELD)))
    head = json.dumps({"m": row}, ensure_ascii=False, separators=(",", ":"))
    body = keyword_document.strip()
    if body.startswith("{") and body != "{}":
        return metadata, head[:-1] + "," + body[1:]
    return metadata, head


def read_row(document: str | None) -> dict[str, Any] | None:
    """The fields of an item row (:data:`ROW_FIELDS` and :data:`FILTER_KEYS`) from its
    document; None for a document without them."""
    if not document or not document.startswith(_ROW_HEAD):
        return None
    try:  # "m" comes first (split_row): the keyword stream after it is not parsed
        row, _ = _DECODER.raw_decode(document, len(_ROW_HEAD))
    except ValueError:
        return None
    return row if isinstance(row, dict) else None


_ROW_HEAD = '{"m":'
_DECODER = json.JSONDecoder()


def removed_keys(prev: Mapping[str, Any], metadata: Mapping[str, Any]) -> dict[str, None]:
    """The metadata keys of an item's stored row (``prev``, as reads return it) that its new
    ``metadata`` lacks, mapped to None (a Chroma write then removes them): the filter keys
    its ``"m"`` lists (every field it had, for a row without that list)."""
    if FILTER_KEYS in prev:
        return {k: None for k in (*prev[FILTER_KEYS], "kt", "ky", filters.STRINGS_FIELD)
                if k not in metadata}
    return {k: None for k in prev if k not in metadata}


def vector_metadata(
    namespace: tuple[str, ...], key: str, path: str, text_sha: str
) -> dict[str, Any]:
    """The metadata of a vector row: few fields, since Chroma reads every field of a row it
    returns or filters (~4 us each)."""
    return {
        "ns": join_labels(namespace),
        "nd": len(namespace),
        "k": key,
        "p": path,
        "h": text_sha,
        **{f"p{d}": join_labels(namespace[:d]) for d in range(1, len(namespace) + 1)},
    }
