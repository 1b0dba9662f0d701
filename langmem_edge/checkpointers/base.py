"""``ChromaSaver``: a LangGraph checkpointer stored in Chroma (embedded folder or server).

Sync methods hold the logic and talk to Chroma through :class:`~langmem_edge._chroma.ChromaCaller`
(bounded retries, chromadb errors turned into ``BackendError``); record layout and decoding are
the pure functions of :mod:`langmem_edge.checkpointers.layout` and
:mod:`~langmem_edge.checkpointers.maintenance`. Each ``a*`` twin runs its sync method in a worker
thread (``asyncio.to_thread``), so it never blocks the event loop and no body is written twice.

Costs, in Chroma calls: ``put`` and ``put_writes`` are one batched write each; ``get_tuple``
with a checkpoint id is one ``get`` by ids (two when the checkpoint has pending writes); the
latest checkpoint is one ranged ``get`` when this process holds a hint, otherwise two (the
head, then the range), and it is always the max id stored, whatever the hint or head says
(:mod:`~langmem_edge.checkpointers.reads`); ``list`` is one ids-only ``get`` plus one ``get``
per page of ``list_page_size`` checkpoints. Every write made of several calls is ordered so
that a crash between any two of them leaves a state reads answer right ("Crash safety" in
docs/checkpointer.md).
"""

from __future__ import annotations

import asyncio
import builtins
import concurrent.futures
import logging
import random
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from types import TracebackType
from typing import Any, Unpack

from chromadb.api import ClientAPI
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from langmem_edge._chroma import (
    ChromaCaller,
    RetryConfig,
    open_collection,
    open_http_client,
    open_persistent_client,
    validate_collection_prefix,
)
from langmem_edge._lru import LRU
from langmem_edge._sqlite_stats import PlannerStatistics
from langmem_edge._twins import threaded
from langmem_edge.checkpointers import layout as L
from langmem_edge.checkpointers import maintenance as M
from langmem_edge.checkpointers import reads as R
from langmem_edge.checkpointers import writes as W
from langmem_edge.checkpointers.options import ChromaSaverOptions
from langmem_edge.checkpointers.ttl import CheckpointTTLConfig, TTLSweeper, validate_ttl
from langmem_edge.errors import ConfigurationError, InvalidInputError, LimitExceededError

logger = logging.getLogger(__name__)

HEAD_HINT_CAPACITY = 4096
"""(thread, namespace) heads remembered per process to read the latest in one call."""

PRUNE_STRATEGIES = ("keep_latest", "delete")


class ChromaSaver(BaseCheckpointSaver[str]):
    """LangGraph checkpointer on Chroma, with pruning, copying, deletion by run and TTL.

    Args:
        client: A chromadb client (``PersistentClient`` or ``HttpClient``). Not closed by
            :meth:`close` (use :meth:`from_path` / :meth:`from_url` for an owned client).
        serde: Serializer (default ``JsonPlusSerializer``); pass an ``EncryptedSerializer``
            to encrypt checkpoints and writes at rest.
        ttl: Checkpoint TTL (:class:`CheckpointTTLConfig`); ``None`` keeps threads forever.
        collection_prefix: The collection is ``{prefix}-checkpoints``. Default
            ``"langmem_edge"``.
        retry: Retries of transient Chroma failures (see ``langmem_edge._chroma``).
        max_payload_bytes: Largest serialized checkpoint (or batch of writes) one call stores;
            larger raises ``LimitExceededError``. Default 16 MiB.
        list_page_size: Checkpoints fetched per Chroma call by ``list``. Default 50.
        index_metadata: Checkpoint-metadata keys indexed for ``list(filter=...)``: ``True``
            (default) every scalar key, ``False`` none, or a collection of key names.
            ``run_id``, ``source`` and ``step`` are always indexed. Filters on other keys still
            work, checked in Python after decoding.
    """

    def __init__(
        self,
        client: ClientAPI,
        *,
        serde: SerializerProtocol | None = None,
        ttl: CheckpointTTLConfig | None = None,
        collection_prefix: str = L.DEFAULT_COLLECTION_PREFIX,
        retry: RetryConfig | None = None,
        max_payload_bytes: int = L.DEFAULT_MAX_PAYLOAD_BYTES,
        list_page_size: int = L.DEFAULT_LIST_PAGE_SIZE,
        index_metadata: bool | Sequence[str] = True,
    ) -> None:
        super().__init__(serde=serde)
        if not isinstance(max_payload_bytes, int) or max_payload_bytes < 1:
            raise ConfigurationError(
                f"max_payload_bytes must be a positive int, got {max_payload_bytes!r}"
            )
        if not isinstance(list_page_size, int) or list_page_size < 1:
            raise ConfigurationError(
                f"list_page_size must be a positive int, got {list_page_size!r}"
            )
        self.client = client
        self.ttl_config = validate_ttl(ttl)
        self.collection_name = validate_collection_prefix(collection_prefix) + L.COLLECTION_SUFFIX
        self.max_payload_bytes = max_payload_bytes
        self.list_page_size = list_page_size
        self.index_metadata: bool | frozenset[str] = (
            index_metadata if isinstance(index_metadata, bool) else frozenset(index_metadata)
        )
        self._call = ChromaCaller(retry)
        self.collection = open_collection(
            client,
            self.collection_name,
            schema_version=L.SCHEMA_VERSION,
            call=self._call,
            way_out="Finish its threads with the version that wrote it, or use a new "
                    "collection_prefix.",
        )
        self._max_batch = int(self._call(client.get_max_batch_size))
        self._hints: LRU[str, str] = LRU(HEAD_HINT_CAPACITY)  # the latest id seen per thread key
        self._sweeper = TTLSweeper(self.sweep_ttl)
        self._owns_client = False
        self._statistics = PlannerStatistics.for_client(
            client, lambda: self._call(self.collection.count))

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_path(cls, path: str, **options: Unpack[ChromaSaverOptions]) -> ChromaSaver:
        """A saver on an embedded Chroma folder (created if missing); closes its client.
        ``options`` are the constructor's."""
        saver = cls(open_persistent_client(path), **options)
        saver._owns_client = True
        return saver

    @classmethod
    def from_url(
        cls, url: str, *, headers: dict[str, str] | None = None,
        **options: Unpack[ChromaSaverOptions],
    ) -> ChromaSaver:
        """A saver on a Chroma server (``http://host:port``); closes its client. ``options``
        are the constructor's."""
        client = open_http_client(url, headers=headers, retry=options.get("retry"))
        saver = cls(client, **options)
        saver._owns_client = True
        return saver

    def close(self) -> None:
        """Stop the TTL sweeper and close the client if this saver opened it."""
        self._sweeper.stop(timeout=5)
        self._statistics.wait(timeout=30)
        if self._owns_client:
            self._owns_client = False
            try:
                self.client.close()  # type: ignore[attr-defined]
            except Exception:  # pragma: no cover - closing is best effort
                logger.debug("closing the Chroma client failed", exc_info=True)

    def __enter__(self) -> ChromaSaver:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> ChromaSaver:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await asyncio.to_thread(self.close)

    # ------------------------------------------------------------------ Chroma calls

    def _get(self, **kwargs: Any) -> list[L.Row]:
        kwargs.setdefault("include", ["metadatas"])
        return L.rows_from_result(self._call(self.collection.get, **kwargs))

    def _ids(self, where: dict[str, Any]) -> list[str]:
        return list(self._call(self.collection.get, where=where, include=[])["ids"])

    def _ids_in(self, field: str, values: Sequence[str]) -> list[str]:
        out: list[str] = []
        for chunk in L.chunks(list(values), L.MAX_IN_OPERANDS):
            where = {field: chunk[0]} if len(chunk) == 1 else {field: {"$in": list(chunk)}}
            out.extend(self._ids(where))
        return out

    def _get_ids(self, ids: Sequence[str]) -> list[L.Row]:
        rows: list[L.Row] = []
        for chunk in L.chunks(list(ids), self.list_page_size):
            rows.extend(self._get(ids=list(chunk)))
        return rows

    def _write(self, batch: L.RowBatch, *, replace: bool = True) -> None:
        if not batch.ids:
            return
        fn = self.collection.upsert if replace else self.collection.add
        self._call(fn, ids=batch.ids, embeddings=batch.embeddings(), metadatas=batch.metadatas)
        self._statistics.wrote(len(batch.ids))

    # ------------------------------------------------------------------ core five

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint named by ``config`` (the thread's latest without a checkpoint id).

        By id: one ``get`` by record ids (two when the checkpoint has pending writes). Latest:
        one ranged ``get`` from the hint this process holds, else the head record first; the
        answer is the max id stored, whatever the head says (see ``reads``).
        """
        thread_id, ns, cid = L.parse_config(config)
        tk = L.thread_key(thread_id, ns)
        if cid:
            rows = self._get(ids=R.by_id_ids(tk, cid))
            if R.needs_group_read(rows):
                rows = self._get(where=R.group_of(tk, cid))
            return L.tuple_from_group(rows, self.serde, thread_id, ns, cid)
        start = self._hints.get(tk) or self._head_cid(tk)
        scanned = False
        while True:
            if start is None:
                start = M.latest_per_key(self._ids({L.F_CP_TK: tk})).get(tk)
                if start is None:
                    return None
                scanned = True
            rows = self._get(where=R.latest_where(tk, start))
            newest = R.newest_checkpoint(rows, thread_id, ns)
            if newest is None and scanned:
                # the max stored id is not in the range: deleted just now
                rows, newest = self._get(where=R.group_of(tk, start)), start
            if newest is not None:
                self._hints.put(tk, newest)
                return L.tuple_from_group(rows, self.serde, thread_id, ns, newest)
            start = None  # dangling hint or head: start from what is stored

    def _head_cid(self, tk: str) -> str | None:
        heads = self._get(ids=[L.head_row_id(tk)])
        return heads[0][1].get(L.F_CID) if heads else None

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first, by thread (and namespace), metadata filter, ``before``."""
        for page in self._list_pages(config, filter=filter, before=before, limit=limit):
            yield from page

    def _list_pages(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> Iterator[builtins.list[CheckpointTuple]]:
        plan = L.plan_list(
            config, filter=filter, before=before, limit=limit, index_metadata=self.index_metadata
        )
        if plan.limit == 0:
            return
        if plan.exact_group is not None:
            if plan.before_id is not None and plan.exact_group.split(":", 1)[1] >= plan.before_id:
                return
            rows = self._get(where={L.F_GROUP: plan.exact_group})
            yield L.page_tuples(rows, [plan.exact_group], self.serde, plan.filter)
            return
        assert plan.where is not None
        found = self._ids(plan.where)
        ordered = [g for g, _ in L.order_checkpoint_ids(found, plan.before_id, plan.only_id)]
        remaining = plan.limit
        start = 0
        while start < len(ordered) and (remaining is None or remaining > 0):
            size = self.list_page_size if remaining is None else min(
                self.list_page_size, remaining
            )
            page = ordered[start : start + size]
            start += size
            tuples = L.page_tuples(
                self._get(where=L.group_where(page)), page, self.serde, plan.filter
            )
            if remaining is not None:
                tuples = tuples[:remaining]
                remaining -= len(tuples)
            if tuples:
                yield tuples

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint (and move its thread's head) in one Chroma upsert."""
        thread_id, ns, _ = L.parse_config(config)
        tk = L.thread_key(thread_id, ns)
        batch, stored, moved = W.put_rows(
            config,
            checkpoint,
            metadata,
            self.serde,
            now=time.time(),
            index_metadata=self.index_metadata,
            known_head=self._hints.get(tk),
        )
        W.check_payload(batch, self.max_payload_bytes, f"Checkpoint {checkpoint['id']}")
        self._write(batch)
        if moved:
            self._hints.put(tk, checkpoint["id"])
        return stored

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes for a checkpoint in one Chroma write."""
        if not writes:
            return
        batch, replace = W.write_rows(config, writes, task_id, task_path, self.serde)
        W.check_payload(batch, self.max_payload_bytes, f"Writes of task {task_id}")
        if len(batch.ids) > self._max_batch:
            raise LimitExceededError(
                f"put_writes got {len(batch.ids)} writes; Chroma takes at most "
                f"{self._max_batch} records in one call. Nothing was written."
            )
        self._write(batch, replace=replace)

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, write and head of a thread (all namespaces)."""
        self._call(self.collection.delete, where={L.F_THREAD: str(thread_id)})
        self._hints.clear()

    # ------------------------------------------------------------------ optional three

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) created by the given runs.

        Heads of the affected namespaces move to the newest surviving checkpoint.
        """
        run_ids = [str(r) for r in run_ids]
        if not run_ids:
            return
        c_ids = self._ids_in(L.METADATA_PREFIX + "run_id", run_ids)
        if c_ids:
            self._delete_checkpoints(c_ids)

    def _delete_checkpoints(self, c_ids: Sequence[str]) -> None:
        """Heads first, then the groups: a head never points into a deleted group while a
        checkpoint of its namespace survives (see "Crash safety" in docs/checkpointer.md)."""
        groups = {rid[2:] for rid in c_ids}
        tks = sorted({L.parse_checkpoint_row_id(rid)[0] for rid in c_ids})
        heads = self._get_ids([L.head_row_id(tk) for tk in tks])
        affected = [rid.split(":", 1)[1] for rid, md in heads if md.get(L.F_GROUP) in groups]
        doomed = set(c_ids)
        remaining: dict[str, str] = {}
        for tk in affected:
            kept = [rid for rid in self._ids({L.F_CP_TK: tk}) if rid not in doomed]
            remaining.update(M.latest_per_key(kept))
        repairs = M.head_repairs(groups, heads, remaining)
        if repairs:
            batch = L.RowBatch()
            for rid, md in repairs:
                batch.add(rid, md)
            self._write(batch)
        for chunk in L.chunks(sorted(groups, reverse=True), L.MAX_IN_OPERANDS):
            self._call(self.collection.delete, where=L.group_where(chunk))
        self._hints.clear()

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of a thread, all namespaces, to another thread."""
        src, dst = str(source_thread_id), str(target_thread_id)
        if src == dst:
            return
        rows = self._get_ids(self._ids({L.F_THREAD: src}))
        if not rows:
            return
        namespaces = {md[L.F_NS] for _, md in rows if md.get(L.F_KIND) == L.KIND_CHECKPOINT}
        head_ids = [L.head_row_id(L.thread_key(dst, ns)) for ns in sorted(namespaces)]
        existing = {
            rid.split(":", 1)[1]: md[L.F_CID] for rid, md in self._get_ids(head_ids)
        }
        for batch in M.copy_batches(
            rows,
            dst,
            existing_heads=existing,
            now=time.time(),
            max_rows=self._max_batch,
            max_bytes=self.max_payload_bytes,
        ):
            self._write(batch)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Prune threads: ``"keep_latest"`` keeps the latest checkpoint per namespace (plus
        the ancestors its ``DeltaChannel`` state needs); ``"delete"`` removes everything."""
        if strategy not in PRUNE_STRATEGIES:
            raise InvalidInputError(
                f"prune strategy must be one of {PRUNE_STRATEGIES}, got {strategy!r}"
            )
        tids = sorted({str(t) for t in thread_ids})
        if not tids:
            return
        if strategy == "delete":
            for chunk in L.chunks(tids, L.MAX_IN_OPERANDS):
                where = {L.F_THREAD: chunk[0]} if len(chunk) == 1 else {
                    L.F_THREAD: {"$in": list(chunk)}
                }
                self._call(self.collection.delete, where=where)
            self._hints.clear()
            return
        self._keep_latest(tids, mark_swept=False)

    def _keep_latest(self, tids: Sequence[str], *, mark_swept: bool) -> None:
        latest = M.latest_per_key(self._ids_in(L.F_CP_THREAD, tids))
        latest_rows = self._get_ids([L.checkpoint_row_id(tk, c) for tk, c in latest.items()])
        keep: dict[str, set[str]] = {}
        for _, md in latest_rows:
            kept = keep.setdefault(md[L.F_THREAD], set())
            kept.add(md[L.F_GROUP])
            kept.update(self._delta_chain(md))
        for tid in tids:
            # heads are never deleted here: rewritten below, once the deletes are done, so a
            # cut leaves the thread un-marked and the next sweep prunes it again
            clauses: list[dict[str, Any]] = [{L.F_THREAD: tid}, {L.F_KIND: {"$ne": L.KIND_HEAD}}]
            keep_groups = sorted(keep.get(tid, ()))
            if keep_groups:
                clauses.append({L.F_GROUP: {"$nin": keep_groups}})
            self._call(self.collection.delete, where={"$and": clauses})
        heads = L.RowBatch()
        now = time.time()
        current = {
            rid.split(":", 1)[1]: md
            for rid, md in self._get_ids([L.head_row_id(tk) for tk in latest])
        }
        for _, md in latest_rows:
            tk = L.thread_key(md[L.F_THREAD], md[L.F_NS])
            head = current.get(tk)
            if head is None or head.get(L.F_CID) != md[L.F_CID] or mark_swept:
                touched = float(head.get(L.F_TOUCHED, now)) if head else now
                heads.add(
                    L.head_row_id(tk),
                    W.head_metadata(
                        md[L.F_THREAD], md[L.F_NS], md[L.F_CID], touched=touched,
                        swept=mark_swept,
                    ),
                )
        self._write(heads)
        self._hints.clear()

    def _delta_chain(self, cp_md: dict[str, Any]) -> set[str]:
        """Groups of the ancestors a checkpoint's delta channels need (walks parents)."""
        needed = M.delta_channels_to_rebuild(cp_md, self.serde)
        groups: set[str] = set()
        current = cp_md
        while needed:
            parent = M.parent_row_id(current)
            rows = self._get(ids=[parent]) if parent else []
            if not rows:
                break
            current = rows[0][1]
            groups.add(current[L.F_GROUP])
            needed -= M.stored_channels(current)
        return groups

    # ------------------------------------------------------------------ TTL

    def sweep_ttl(self, *, now: float | None = None) -> int:
        """Apply the TTL once: returns how many expired threads were deleted or pruned.

        Args:
            now: The time to sweep as of (epoch seconds); default ``time.time()``.
        """
        if not self.ttl_config:
            return 0
        now = time.time() if now is None else now
        cutoff = now - self.ttl_config["default_ttl"] * 60.0
        keep_latest = self.ttl_config["strategy"] == "keep_latest"
        where: dict[str, Any] = {L.F_TOUCHED: {"$lt": cutoff}}
        if keep_latest:
            where = {"$and": [where, {L.F_SWEPT: False}]}
        candidates = sorted({md[L.F_THREAD] for _, md in self._get(where=where)})
        if not candidates:
            return 0
        head_ids = self._ids_in(L.F_HEAD_THREAD, candidates)
        expired = M.expired_threads([md for _, md in self._get_ids(head_ids)], cutoff)
        if not expired:
            return 0
        if keep_latest:
            self._keep_latest(expired, mark_swept=True)
        else:
            self.prune(expired, strategy="delete")
        logger.debug("TTL sweep: %d thread(s) expired (%s)", len(expired), keep_latest)
        return len(expired)

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Run :meth:`sweep_ttl` every few minutes in a daemon thread (no-op without TTL)."""
        if not self.ttl_config:
            future: concurrent.futures.Future[None] = concurrent.futures.Future()
            future.set_result(None)
            return future
        interval = sweep_interval_minutes or self.ttl_config["sweep_interval_minutes"]
        return self._sweeper.start(interval)

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; ``True`` once it stopped (or was not running)."""
        return self._sweeper.stop(timeout)

    # ------------------------------------------------------------------ versions

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Monotonic string versions, as ``InMemorySaver``/``SqliteSaver`` produce."""
        if current is None:
            current_v = 0
        elif isinstance(current, int):
            current_v = current
        else:
            current_v = int(str(current).split(".")[0])
        return f"{current_v + 1:032}.{random.random():016}"

    # ------------------------------------------------------------------ async twins

    aget_tuple = threaded(get_tuple)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async :meth:`list`: each page is fetched in a worker thread."""
        pages = self._list_pages(config, filter=filter, before=before, limit=limit)
        while (page := await asyncio.to_thread(next, pages, None)) is not None:
            for item in page:
                yield item

    aput = threaded(put)
    aput_writes = threaded(put_writes)
    adelete_thread = threaded(delete_thread)
    adelete_for_runs = threaded(delete_for_runs)
    acopy_thread = threaded(copy_thread)
    aprune = threaded(prune)
    asweep_ttl = threaded(sweep_ttl)
