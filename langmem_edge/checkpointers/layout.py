"""How checkpoints, pending writes and heads are laid out as Chroma records (pure functions).

Everything here is I/O-free: keys, field names, blob encoding, and turning Chroma rows back
into :class:`~langgraph.checkpoint.base.CheckpointTuple`. The rows ``put``/``put_writes`` write
are built in :mod:`~langmem_edge.checkpointers.writes`, the latest-checkpoint read is planned in
:mod:`~langmem_edge.checkpointers.reads`; ``ChromaSaver`` only calls out to Chroma.

One collection, ``{prefix}-checkpoints``, holds four kinds of records. Every record carries the
constant 1-d vector :data:`DUMMY_VECTOR` (Chroma needs one; nothing searches it)::

    kind  id                               what
    c     c:{tk}:{checkpoint_id}           one checkpoint: serialized checkpoint + metadata
    w     w:{tk}:{checkpoint_id}:{task}:{idx}  one pending write
    m     m:{tk}:{checkpoint_id}           "this checkpoint has pending writes" (no payload)
    h     h:{tk}                           the head of (thread, ns): a hint of the latest id,
                                           and the last put time (TTL)

``tk`` is :func:`thread_key` (a hash of ``thread_id`` and ``checkpoint_ns``). The *group* key
``g = {tk}:{checkpoint_id}`` is set on a checkpoint, on each of its writes and its marker, and
on the head while that checkpoint is the latest. Every record of a ``tk`` also carries ``tn``
(= ``tk``) and ``o`` = :func:`order_key` of its checkpoint id (an int64 that never decreases
as the id grows), so one ``get(where={"$and": [{"tn": tk}, {"o": {"$gte": ...}}]})`` returns
every checkpoint from a given id on, with its writes: the latest read checks its head hint
against what is stored in the same call.

Serialized bytes (from the saver's ``serde``, possibly encrypted) are base64 in metadata
strings: a metadata string costs ~30 ms per MB to write, a document ~300 ms.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from langmem_edge.errors import BackendError, DecryptionError, InvalidInputError

SCHEMA_VERSION = 2
"""Layout version recorded in the collection's metadata (see ``open_collection``).

2 added ``tn``/``o`` on every record and the write markers (``m``); a collection of schema 1
(a development version before 0.1.0) is refused.
"""

DEFAULT_COLLECTION_PREFIX = "langmem_edge"
"""Default prefix of the checkpoint collection's name: ``langmem_edge-checkpoints``."""

COLLECTION_SUFFIX = "-checkpoints"
"""Suffix appended to the prefix to name the collection."""

DEFAULT_MAX_PAYLOAD_BYTES = 16 * 1024 * 1024
"""Largest serialized payload (bytes, before base64) one ``put``/``put_writes`` may store.

16 MiB serialized is ~21.4 MiB base64, well under a Chroma server's default request limit
(``max_payload_size_bytes`` = 40 MiB). Raise it only for embedded use.
"""

DEFAULT_LIST_PAGE_SIZE = 50
"""Checkpoints fetched per Chroma call while ``list`` iterates."""

INDEXED_STR_MAX_CHARS = 512
"""Metadata strings longer than this are not indexed for ``list(filter=...)`` push-down."""

DUMMY_VECTOR: list[float] = [1.0]
"""The constant embedding every record carries."""

MAX_IN_OPERANDS = 500
"""Largest ``$in``/``$nin`` list sent in one ``where`` (longer lists are split)."""

METADATA_PREFIX = "m."
"""Prefix of the flattened, filterable checkpoint-metadata fields on checkpoint records."""

ALWAYS_INDEXED = frozenset({"run_id", "source", "step"})
"""Metadata keys always indexed (``delete_for_runs`` needs ``run_id``)."""

KIND_CHECKPOINT, KIND_WRITE, KIND_HEAD, KIND_MARK = "c", "w", "h", "m"

# Field names. Some are duplicated per kind on purpose: a single-key ``where`` is ~3x faster
# than an ``$and`` in Chroma, so each lookup gets a field only the wanted kind carries.
F_KIND = "k"  # every record
F_THREAD = "t"  # every record: delete_thread is one delete(where={"t": ...})
F_GROUP = "g"  # c, w, m, h (head: the latest checkpoint's group)
F_TK = "tn"  # c, w, m, h: the thread key, for the latest read's range query
F_ORDER = "o"  # c, w, m, h: order_key of the record's checkpoint id
F_CP_THREAD = "ct"  # c only: list(thread)
F_CP_TK = "ctn"  # c only: list(thread, ns)
F_BLOB = "p"  # c: serialized [checkpoint, metadata]; w: serialized value (base64)
F_HEAD_THREAD = "ht"  # h only
F_TOUCHED = "ts"  # h: epoch seconds of the last put (TTL)
F_SWEPT = "sw"  # h: already pruned by the TTL sweeper since the last put
F_EXTRA = "x"  # JSON object of the fields below, never filtered on (fewer keys, faster writes)

F_NS = "ns"  # c, h
F_CID = "cid"  # c, h
F_PARENT = "pid"  # c: parent checkpoint id, "" for none
F_VALUE_KEYS = "vk"  # c: channels with a stored value (delta-aware prune)
F_TYPE = "pt"  # c, w: serde type of the blob
F_TASK, F_PATH, F_IDX, F_CHANNEL = "task", "path", "idx", "ch"  # w
EXTRA_FIELDS = frozenset(
    {F_NS, F_CID, F_PARENT, F_VALUE_KEYS, F_TYPE, F_TASK, F_PATH, F_IDX, F_CHANNEL}
)

Row = tuple[str, dict[str, Any]]


@dataclass
class RowBatch:
    """Records for one Chroma write, plus what the caller needs afterwards."""

    ids: list[str] = field(default_factory=list)
    metadatas: list[dict[str, Any]] = field(default_factory=list)
    payload_bytes: int = 0
    """Serialized bytes (before base64) carried by the batch."""

    def add(self, rid: str, metadata: dict[str, Any], payload_bytes: int = 0) -> None:
        """Append one record."""
        self.ids.append(rid)
        self.metadatas.append(metadata)
        self.payload_bytes += payload_bytes

    def embeddings(self) -> list[list[float]]:
        """One dummy vector per record."""
        return [DUMMY_VECTOR] * len(self.ids)


# --------------------------------------------------------------------------- keys


def thread_key(thread_id: str, checkpoint_ns: str) -> str:
    """Stable 128-bit hex key of a (thread, namespace) pair."""
    raw = json.dumps([thread_id, checkpoint_ns], ensure_ascii=False).encode()
    return hashlib.sha256(raw).hexdigest()[:32]


def group_key(tk: str, checkpoint_id: str) -> str:
    """Key shared by a checkpoint, its writes and (while latest) its head."""
    return f"{tk}:{checkpoint_id}"


def checkpoint_row_id(tk: str, checkpoint_id: str) -> str:
    """Record id of a checkpoint."""
    return f"c:{tk}:{checkpoint_id}"


def mark_row_id(tk: str, checkpoint_id: str) -> str:
    """Record id of the marker saying a checkpoint has pending writes."""
    return f"m:{tk}:{checkpoint_id}"


ORDER_KEY_CHARS = 14
"""Leading characters of a checkpoint id that :func:`order_key` encodes (21**14 < 2**63)."""

_ORDER_BASE = 21


def _order_rank(ch: str) -> tuple[int, bool]:
    """``(rank, exact)`` of one character: ``-``, digits and ``a-f`` get their own rank; every
    other character shares a rank with its neighbours (``exact`` False)."""
    o = ord(ch)
    if o < 0x2D:
        return 0, False
    if o == 0x2D:
        return 1, True
    if o < 0x30:
        return 2, False
    if o <= 0x39:
        return 3 + o - 0x30, True
    if o < 0x61:
        return 13, False
    if o <= 0x66:
        return 14 + o - 0x61, True
    return 20, False


def order_key(checkpoint_id: str) -> int:
    """An int64 that never decreases as ``checkpoint_id`` grows (string order).

    Chroma compares only numbers (``$gt``/``$gte``), and ids are strings (uuid6: hex digits
    and dashes, time first). The first :data:`ORDER_KEY_CHARS` characters are read as digits
    of base 21; a character outside ``-0-9a-f`` ends the number there (the rest count as 0),
    which keeps the map monotone for any string. For uuid6 ids that is 48 bits of timestamp
    (0.4 ms); ids that share a key are told apart by comparing the ids themselves.
    """
    key = 0
    for i in range(ORDER_KEY_CHARS):
        rank, exact = _order_rank(checkpoint_id[i]) if i < len(checkpoint_id) else (0, False)
        key = key * _ORDER_BASE + rank
        if not exact:
            return key * _ORDER_BASE ** (ORDER_KEY_CHARS - 1 - i)
    return key


def order_fields(tk: str, checkpoint_id: str) -> dict[str, Any]:
    """The ``tn``/``o`` fields every record of checkpoint ``checkpoint_id`` of ``tk`` carries."""
    return {F_TK: tk, F_ORDER: order_key(checkpoint_id)}


def head_row_id(tk: str) -> str:
    """Record id of the head of a (thread, namespace)."""
    return f"h:{tk}"


def parse_checkpoint_row_id(rid: str) -> tuple[str, str]:
    """``(tk, checkpoint_id)`` from a checkpoint record id."""
    _, tk, cid = rid.split(":", 2)
    return tk, cid


def parse_config(config: RunnableConfig) -> tuple[str, str, str | None]:
    """``(thread_id, checkpoint_ns, checkpoint_id)`` from a config; validates thread_id."""
    conf = config.get("configurable") or {}
    thread_id = conf.get("thread_id")
    if thread_id is None or thread_id == "":
        raise InvalidInputError(
            "config['configurable']['thread_id'] is required, e.g. "
            "{'configurable': {'thread_id': 'conversation-1'}}"
        )
    return str(thread_id), str(conf.get("checkpoint_ns") or ""), conf.get("checkpoint_id")


def make_config(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> RunnableConfig:
    """The config that addresses one stored checkpoint."""
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
        }
    }


# --------------------------------------------------------------------------- blobs


def encode_blob(typed: tuple[str, bytes]) -> tuple[str, str, int]:
    """``(type, base64 text, raw size)`` of a ``serde.dumps_typed`` result."""
    typ, data = typed
    return typ, base64.b64encode(data).decode("ascii"), len(data)


def decode_blob(serde: SerializerProtocol, typ: str, text: str, what: str) -> Any:
    """Load a value stored by :func:`encode_blob`; decryption failures become ours."""
    data = base64.b64decode(text)
    try:
        return serde.loads_typed((typ, data))
    except Exception as e:
        if "+" in typ:
            raise DecryptionError(
                f"Cannot decrypt the stored {what} (type {typ!r}): the key is wrong, or the "
                "saver was not given the EncryptedSerializer it was written with "
                f"({type(e).__name__}: {e})"
            ) from e
        raise BackendError(f"Cannot decode the stored {what} ({type(e).__name__}: {e})") from e


# --------------------------------------------------------------------------- metadata index


def index_value(value: Any) -> str | int | float | bool | None:
    """The value to index for a metadata field, or ``None`` when it cannot be indexed."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**63 else None
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return value if len(value) <= INDEXED_STR_MAX_CHARS else None
    return None


def is_indexed(key: str, index_metadata: bool | frozenset[str]) -> bool:
    """Whether the metadata ``key`` gets a filterable field."""
    if key in ALWAYS_INDEXED:
        return True
    if isinstance(index_metadata, bool):
        return index_metadata
    return key in index_metadata


def metadata_fields(
    metadata: Mapping[str, Any], index_metadata: bool | frozenset[str]
) -> dict[str, Any]:
    """Flattened ``m.<key>`` fields for the indexable scalar metadata values."""
    out: dict[str, Any] = {}
    for key, value in metadata.items():
        if not is_indexed(key, index_metadata):
            continue
        indexed = index_value(value)
        if indexed is not None:
            out[METADATA_PREFIX + key] = indexed
    return out


def matches_filter(metadata: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """``InMemorySaver``'s filter semantics: every ``filter`` item equals the metadata's."""
    return not filter or all(metadata.get(k) == v for k, v in filter.items())


# --------------------------------------------------------------------------- packing


def pack(md: dict[str, Any]) -> dict[str, Any]:
    """Move the :data:`EXTRA_FIELDS` of a record's metadata into one JSON field."""
    extra = {k: md.pop(k) for k in list(md) if k in EXTRA_FIELDS}
    if extra:
        md[F_EXTRA] = json.dumps(extra, ensure_ascii=False, separators=(",", ":"))
    return md


def unpack(md: dict[str, Any]) -> dict[str, Any]:
    """Inverse of :func:`pack`: the JSON field's entries back as plain keys."""
    extra = md.pop(F_EXTRA, None)
    if extra:
        md.update(json.loads(extra))
    return md


# --------------------------------------------------------------------------- reading


def rows_from_result(result: Mapping[str, Any]) -> list[Row]:
    """``(id, metadata)`` pairs from a Chroma ``get`` result, packed fields unpacked."""
    ids = result.get("ids") or []
    metas = result.get("metadatas") or [None] * len(ids)
    return [(rid, unpack(dict(md or {}))) for rid, md in zip(ids, metas, strict=True)]


def pending_writes(
    write_mds: Iterable[Mapping[str, Any]], serde: SerializerProtocol
) -> list[PendingWrite]:
    """Pending writes in ``writes_sort_key`` order: (task_path, task_id, idx)."""
    ordered = sorted(
        write_mds, key=lambda md: writes_sort_key(md[F_PATH], md[F_TASK], int(md[F_IDX]))
    )
    return [
        (md[F_TASK], md[F_CHANNEL], decode_blob(serde, md[F_TYPE], md[F_BLOB], "write"))
        for md in ordered
    ]


def tuple_from_rows(
    cp_md: Mapping[str, Any],
    write_mds: Iterable[Mapping[str, Any]],
    serde: SerializerProtocol,
) -> CheckpointTuple:
    """A checkpoint tuple from its checkpoint record and its write records."""
    thread_id, ns, cid = cp_md[F_THREAD], cp_md[F_NS], cp_md[F_CID]
    checkpoint, metadata = decode_checkpoint(cp_md, serde)
    parent = cp_md.get(F_PARENT) or None
    return CheckpointTuple(
        config=make_config(thread_id, ns, cid),
        checkpoint=checkpoint,
        metadata=metadata,
        parent_config=make_config(thread_id, ns, parent) if parent else None,
        pending_writes=pending_writes(write_mds, serde),
    )


def decode_checkpoint(
    cp_md: Mapping[str, Any], serde: SerializerProtocol
) -> tuple[Checkpoint, CheckpointMetadata]:
    """``(checkpoint, metadata)`` from a checkpoint record."""
    checkpoint, metadata = decode_blob(serde, cp_md[F_TYPE], cp_md[F_BLOB], "checkpoint")
    return checkpoint, metadata


def split_groups(rows: Iterable[Row]) -> dict[str, tuple[dict[str, Any] | None, list]]:
    """Group rows by group key: ``{g: (checkpoint metadata or None, [write metadata])}``."""
    groups: dict[str, tuple[dict[str, Any] | None, list]] = {}
    for _, md in rows:
        g = md.get(F_GROUP)
        if g is None:
            continue
        cp, ws = groups.get(g, (None, []))
        kind = md.get(F_KIND)
        if kind == KIND_CHECKPOINT:
            cp = md
        elif kind == KIND_WRITE:
            ws.append(md)
        groups[g] = (cp, ws)
    return groups


def tuple_from_group(
    rows: Iterable[Row], serde: SerializerProtocol, thread_id: str, ns: str, cid: str
) -> CheckpointTuple | None:
    """The tuple of checkpoint ``cid`` from a ``where g = ...`` result, or ``None``."""
    cp, ws = split_groups(rows).get(group_key(thread_key(thread_id, ns), cid), (None, []))
    if cp is None or cp.get(F_THREAD) != thread_id or cp.get(F_NS) != ns:
        return None
    return tuple_from_rows(cp, [w for w in ws if w.get(F_THREAD) == thread_id], serde)


# --------------------------------------------------------------------------- list


@dataclass
class ListPlan:
    """What ``list`` asks Chroma and what it checks itself."""

    where: dict[str, Any] | None
    """Selects checkpoint records (ids only); ``None`` when ``exact_group`` is set."""
    exact_group: str | None
    """The one group to fetch when the config names a checkpoint id."""
    before_id: str | None
    only_id: str | None
    """Keep only this checkpoint id (config names an id but no namespace)."""
    filter: dict[str, Any]
    limit: int | None


def _and(clauses: list[dict[str, Any]]) -> dict[str, Any]:
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def plan_list(
    config: RunnableConfig | None,
    *,
    filter: Mapping[str, Any] | None,
    before: RunnableConfig | None,
    limit: int | None,
    index_metadata: bool | frozenset[str],
) -> ListPlan:
    """Turn ``list`` arguments into a Chroma ``where`` plus the checks done in Python."""
    if limit is not None and limit < 0:
        raise InvalidInputError(f"limit must be >= 0 or None, got {limit!r}")
    flt = dict(filter or {})
    before_id = (before or {}).get("configurable", {}).get("checkpoint_id") if before else None
    clauses: list[dict[str, Any]] = []
    exact: str | None = None
    only_id: str | None = None
    if config is not None:
        conf = config.get("configurable") or {}
        thread_id = conf.get("thread_id")
        ns = conf.get("checkpoint_ns")
        cid = conf.get("checkpoint_id")
        if thread_id is not None and ns is not None and cid:
            exact = group_key(thread_key(str(thread_id), str(ns)), cid)
        elif thread_id is not None and ns is not None:
            clauses.append({F_CP_TK: thread_key(str(thread_id), str(ns))})
        elif thread_id is not None:
            clauses.append({F_CP_THREAD: str(thread_id)})
            only_id = cid or None
        elif cid:
            only_id = cid
    if not clauses:
        clauses.append({F_KIND: KIND_CHECKPOINT})
    for key, value in flt.items():
        indexed = index_value(value)
        if indexed is not None and is_indexed(key, index_metadata):
            clauses.append({METADATA_PREFIX + key: indexed})
    return ListPlan(
        where=None if exact else _and(clauses),
        exact_group=exact,
        before_id=before_id,
        only_id=only_id,
        filter=flt,
        limit=limit,
    )


def order_checkpoint_ids(
    ids: Iterable[str], before_id: str | None, only_id: str | None = None
) -> list[tuple[str, str]]:
    """``(group, checkpoint_id)`` newest first, keeping ids strictly before ``before_id``."""
    out = []
    for rid in ids:
        tk, cid = parse_checkpoint_row_id(rid)
        if (before_id is None or cid < before_id) and (only_id is None or cid == only_id):
            out.append((group_key(tk, cid), cid))
    out.sort(key=lambda gc: (gc[1], gc[0]), reverse=True)
    return out


def group_where(groups: Sequence[str]) -> dict[str, Any]:
    """``where`` selecting every record of the given groups."""
    return {F_GROUP: groups[0]} if len(groups) == 1 else {F_GROUP: {"$in": list(groups)}}


def chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    """Consecutive slices of at most ``size`` items."""
    for i in range(0, len(items), size):
        yield items[i : i + size]


def page_tuples(
    rows: Iterable[Row],
    page: Sequence[str],
    serde: SerializerProtocol,
    flt: Mapping[str, Any],
) -> list[CheckpointTuple]:
    """Tuples of one page of groups, in the page's order, that pass the filter."""
    groups = split_groups(rows)
    out = []
    for g in page:
        cp, ws = groups.get(g, (None, []))
        if cp is None:
            continue  # deleted between the id listing and this fetch
        tup = tuple_from_rows(cp, ws, serde)
        if matches_filter(tup.metadata, flt):
            out.append(tup)
    return out
