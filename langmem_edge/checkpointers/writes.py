"""The records ``put`` and ``put_writes`` write, and the heads and markers (pure functions).

Each of ``put`` and ``put_writes`` is **one** batched Chroma write of what these functions
return, so each is atomic: a crash leaves all of it or none of it.

- ``put``: the checkpoint record and (unless this process knows a newer head) the head. The
  head is a hint, last-writer-wins under concurrent puts; reads never trust it alone (see
  :mod:`~langmem_edge.checkpointers.reads`).
- ``put_writes``: one record per write plus the group's write marker (``m``), in the same
  call, so "a marker exists" implies "the group's writes are stored" and "no marker" means
  "no writes": ``get_tuple`` by id reads a checkpoint and its marker by id (one fast call)
  and fetches the writes only when the marker is there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    Checkpoint,
    CheckpointMetadata,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from langmem_edge.checkpointers.layout import (
    F_BLOB,
    F_CHANNEL,
    F_CID,
    F_CP_THREAD,
    F_CP_TK,
    F_GROUP,
    F_HEAD_THREAD,
    F_IDX,
    F_KIND,
    F_NS,
    F_PARENT,
    F_PATH,
    F_SWEPT,
    F_TASK,
    F_THREAD,
    F_TOUCHED,
    F_TYPE,
    F_VALUE_KEYS,
    KIND_CHECKPOINT,
    KIND_HEAD,
    KIND_MARK,
    KIND_WRITE,
    RowBatch,
    checkpoint_row_id,
    encode_blob,
    group_key,
    head_row_id,
    make_config,
    mark_row_id,
    metadata_fields,
    order_fields,
    pack,
    parse_config,
    thread_key,
)
from langmem_edge.errors import InvalidInputError, LimitExceededError


def put_rows(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    serde: SerializerProtocol,
    *,
    now: float,
    index_metadata: bool | frozenset[str],
    known_head: str | None,
) -> tuple[RowBatch, RunnableConfig, bool]:
    """Records for ``put``: the checkpoint and (usually) its head.

    The head moves to this checkpoint unless ``known_head`` (the head this process last saw)
    is a newer id. Returns ``(batch, config of the stored checkpoint, head moved)``.
    """
    thread_id, ns, parent_id = parse_config(config)
    cid = checkpoint["id"]
    tk = thread_key(thread_id, ns)
    g = group_key(tk, cid)
    md = get_serializable_checkpoint_metadata(config, metadata)
    pt, p, p_size = encode_blob(serde.dumps_typed([checkpoint, md]))
    row = pack(
        {
            F_KIND: KIND_CHECKPOINT,
            F_THREAD: thread_id,
            F_GROUP: g,
            **order_fields(tk, cid),
            F_CP_THREAD: thread_id,
            F_CP_TK: tk,
            F_BLOB: p,
            **metadata_fields(md, index_metadata),
            F_NS: ns,
            F_CID: cid,
            F_PARENT: parent_id or "",
            F_VALUE_KEYS: sorted(checkpoint.get("channel_values") or {}),
            F_TYPE: pt,
        }
    )
    batch = RowBatch()
    batch.add(checkpoint_row_id(tk, cid), row, p_size)
    move_head = known_head is None or cid >= known_head
    if move_head:
        batch.add(head_row_id(tk), head_metadata(thread_id, ns, cid, touched=now))
    return batch, make_config(thread_id, ns, cid), move_head


def head_metadata(
    thread_id: str, ns: str, cid: str, *, touched: float, swept: bool = False
) -> dict[str, Any]:
    """Metadata of a head record."""
    tk = thread_key(thread_id, ns)
    return pack(
        {
            F_KIND: KIND_HEAD,
            F_THREAD: thread_id,
            F_GROUP: group_key(tk, cid),
            **order_fields(tk, cid),
            F_HEAD_THREAD: thread_id,
            F_TOUCHED: float(touched),
            F_SWEPT: swept,
            F_NS: ns,
            F_CID: cid,
        }
    )


def mark_metadata(thread_id: str, tk: str, cid: str) -> dict[str, Any]:
    """Metadata of the marker saying checkpoint ``cid`` of ``tk`` has pending writes."""
    return {
        F_KIND: KIND_MARK,
        F_THREAD: thread_id,
        F_GROUP: group_key(tk, cid),
        **order_fields(tk, cid),
    }


def write_rows(
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
    serde: SerializerProtocol,
) -> tuple[RowBatch, bool]:
    """Records for ``put_writes`` (the writes, then the group's marker) and whether
    existing ones are replaced.

    Indexes follow ``WRITES_IDX_MAP``: special channels (error, interrupt, ...) get fixed
    negative indexes, regular writes their position. Like ``SqliteSaver``, a call made only of
    special writes replaces what is stored; any other call keeps existing ``(task, idx)``
    records (``add`` ignores existing ids), so re-running ``put_writes`` is idempotent. Within
    one call, a later write to the same special channel replaces an earlier one. The
    marker is the same record whoever writes it, so either way is right for it.
    """
    thread_id, ns, cid = parse_config(config)
    if not cid:
        raise InvalidInputError(
            "put_writes needs config['configurable']['checkpoint_id'] (the config put returned)"
        )
    tk = thread_key(thread_id, ns)
    g = group_key(tk, cid)
    order = order_fields(tk, cid)
    rows: dict[str, tuple[dict[str, Any], int]] = {}
    for i, (channel, value) in enumerate(writes):
        idx = WRITES_IDX_MAP.get(channel, i)
        vt, v, size = encode_blob(serde.dumps_typed(value))
        # Two writes to one special channel in one call (a node with several interrupts
        # writes ``__resume__`` twice) share an id: the last one wins, as in InMemorySaver.
        rows[f"w:{g}:{task_id}:{idx}"] = (
            pack(
                {
                    F_KIND: KIND_WRITE,
                    F_THREAD: thread_id,
                    F_GROUP: g,
                    **order,
                    F_BLOB: v,
                    F_TASK: str(task_id),
                    F_PATH: task_path or "",
                    F_IDX: idx,
                    F_CHANNEL: channel,
                    F_TYPE: vt,
                }
            ),
            size,
        )
    batch = RowBatch()
    for rid, (metadata, size) in rows.items():
        batch.add(rid, metadata, size)
    batch.add(mark_row_id(tk, cid), mark_metadata(thread_id, tk, cid))
    replace = all(channel in WRITES_IDX_MAP for channel, _ in writes)
    return batch, replace


def check_payload(batch: RowBatch, max_payload_bytes: int, what: str) -> None:
    """Refuse a batch whose serialized payload is over the limit (nothing is written)."""
    if batch.payload_bytes > max_payload_bytes:
        raise LimitExceededError(
            f"{what} serializes to {batch.payload_bytes:,} bytes, over the limit of "
            f"{max_payload_bytes:,} bytes (ChromaSaver(max_payload_bytes=...)); nothing was "
            "written. Keep large blobs out of graph state (store a reference instead)."
        )
