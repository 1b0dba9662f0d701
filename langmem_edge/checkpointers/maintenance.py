"""Pure helpers behind ``copy_thread``, ``prune``, ``delete_for_runs`` and the TTL sweep.

They decide *what* to write or keep from records already read; ``ChromaSaver`` does the reads
and writes.

``DeltaChannel`` awareness: a ``DeltaChannel`` stores its value only every
``snapshot_frequency`` steps and is rebuilt by replaying the pending writes of the ancestors
back to the nearest one holding a value. LangGraph records, in each checkpoint's metadata
(``counters_since_delta_snapshot``), the delta channels that have changed since their last
snapshot. ``prune(strategy="keep_latest")`` therefore keeps, besides the latest checkpoint,
every ancestor (with its writes) up to the nearest one whose stored values hold each of those
channels, exactly the records ``get_delta_channel_history`` walks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol

from langmem_edge.checkpointers.layout import (
    F_BLOB,
    F_CID,
    F_CP_THREAD,
    F_CP_TK,
    F_GROUP,
    F_IDX,
    F_KIND,
    F_NS,
    F_TASK,
    F_THREAD,
    F_TOUCHED,
    F_VALUE_KEYS,
    KIND_CHECKPOINT,
    KIND_HEAD,
    KIND_WRITE,
    Row,
    RowBatch,
    checkpoint_row_id,
    decode_checkpoint,
    group_key,
    head_row_id,
    mark_row_id,
    order_fields,
    pack,
    parse_checkpoint_row_id,
    thread_key,
)
from langmem_edge.checkpointers.writes import head_metadata, mark_metadata

DELTA_COUNTERS_KEY = "counters_since_delta_snapshot"
"""Checkpoint-metadata key where LangGraph lists delta channels changed since a snapshot."""

BLOB_FIELDS = (F_BLOB,)
"""Metadata fields holding base64 payloads (used to size copy batches)."""


def latest_per_key(checkpoint_ids: Iterable[str]) -> dict[str, str]:
    """``{tk: newest checkpoint id}`` from checkpoint record ids."""
    latest: dict[str, str] = {}
    for rid in checkpoint_ids:
        tk, cid = parse_checkpoint_row_id(rid)
        if cid > latest.get(tk, ""):
            latest[tk] = cid
    return latest


def stored_channels(cp_md: Mapping[str, Any]) -> set[str]:
    """Channels whose value is stored in a checkpoint record."""
    return set(cp_md.get(F_VALUE_KEYS) or ())


def delta_channels_to_rebuild(cp_md: Mapping[str, Any], serde: SerializerProtocol) -> set[str]:
    """Delta channels of a checkpoint that need ancestors to be rebuilt."""
    _, metadata = decode_checkpoint(cp_md, serde)
    counters: Any = dict(metadata or {}).get(DELTA_COUNTERS_KEY) or {}
    return set(counters) - stored_channels(cp_md)


def parent_row_id(cp_md: Mapping[str, Any]) -> str | None:
    """Record id of a checkpoint record's parent, or ``None`` at the root."""
    parent = cp_md.get("pid") or ""
    if not parent:
        return None
    return checkpoint_row_id(thread_key(cp_md[F_THREAD], cp_md[F_NS]), parent)


def _payload_size(md: Mapping[str, Any]) -> int:
    return sum(len(md[f]) * 3 // 4 for f in BLOB_FIELDS if isinstance(md.get(f), str))


def copy_batches(
    rows: Sequence[Row],
    target_thread: str,
    *,
    existing_heads: Mapping[str, str],
    now: float,
    max_rows: int,
    max_bytes: int,
) -> list[RowBatch]:
    """Batches that copy a thread's checkpoints and writes to ``target_thread``, in order.

    Payloads are copied as stored (encrypted ones stay encrypted). Checkpoints go oldest
    first, each as its writes, then its write marker, then the checkpoint record; heads come
    last. So after any prefix of the batches the target holds the oldest k checkpoints of
    each source namespace, each whole (a checkpoint record is visible only once its writes
    are there), and reads of the target, which find the max stored id, answer one of them.
    A target namespace whose head (``existing_heads``: ``{tk: checkpoint id}``) is newer
    than the copied latest keeps it.
    """
    writes_of: dict[str, list[dict[str, Any]]] = {}
    for _, md in rows:
        if md.get(F_KIND) == KIND_WRITE:
            writes_of.setdefault(md[F_GROUP], []).append(md)
    checkpoints = sorted(
        (md for _, md in rows if md.get(F_KIND) == KIND_CHECKPOINT),
        key=lambda md: (md[F_CID], md[F_NS]),
    )
    records: list[tuple[str, dict[str, Any], int]] = []
    latest: dict[str, tuple[str, str]] = {}
    for md in checkpoints:
        ns, cid = md[F_NS], md[F_CID]
        tk = thread_key(target_thread, ns)
        g = group_key(tk, cid)
        moved = {F_THREAD: target_thread, F_GROUP: g, **order_fields(tk, cid)}
        writes = writes_of.get(md[F_GROUP], [])
        for w in writes:
            records.append(
                (f"w:{g}:{w[F_TASK]}:{w[F_IDX]}", pack({**w, **moved}), _payload_size(w))
            )
        if writes:
            records.append((mark_row_id(tk, cid), mark_metadata(target_thread, tk, cid), 0))
        new = pack({**md, **moved, F_CP_THREAD: target_thread, F_CP_TK: tk})
        records.append((checkpoint_row_id(tk, cid), new, _payload_size(md)))
        if cid > latest.get(tk, ("", ""))[1]:
            latest[tk] = (ns, cid)
    heads = [
        (head_row_id(tk), head_metadata(target_thread, ns, cid, touched=now), 0)
        for tk, (ns, cid) in sorted(latest.items())
        if cid >= existing_heads.get(tk, "")
    ]
    batches: list[RowBatch] = []
    current = RowBatch()
    for rid, md, size in records:
        if current.ids and (
            len(current.ids) >= max_rows or current.payload_bytes + size > max_bytes
        ):
            batches.append(current)
            current = RowBatch()
        current.add(rid, md, size)
    if current.ids:
        batches.append(current)
    if heads:
        head_batch = RowBatch()
        for rid, md, size in heads:
            head_batch.add(rid, md, size)
        batches.append(head_batch)
    return batches


def expired_threads(heads: Iterable[Mapping[str, Any]], cutoff: float) -> list[str]:
    """Threads all of whose heads were last touched before ``cutoff`` (epoch seconds)."""
    newest: dict[str, float] = {}
    for md in heads:
        if md.get(F_KIND) != KIND_HEAD:
            continue
        t = md[F_THREAD]
        newest[t] = max(newest.get(t, 0.0), float(md.get(F_TOUCHED, 0.0)))
    return sorted(t for t, ts in newest.items() if ts < cutoff)


def head_repairs(
    deleted_groups: set[str],
    heads: Iterable[Row],
    remaining_latest: Mapping[str, str],
) -> list[tuple[str, dict[str, Any]]]:
    """New head records for heads whose checkpoint was deleted.

    ``heads`` are the head records read before deleting; ``remaining_latest`` maps each
    affected ``tk`` to its newest surviving checkpoint id (absent: none survive).
    """
    out = []
    for rid, md in heads:
        if md.get(F_GROUP) not in deleted_groups:
            continue
        tk = rid.split(":", 1)[1]
        cid = remaining_latest.get(tk)
        if cid:
            out.append(
                (
                    rid,
                    head_metadata(
                        md[F_THREAD], md[F_NS], cid, touched=float(md.get(F_TOUCHED, 0.0))
                    ),
                )
            )
    return out

