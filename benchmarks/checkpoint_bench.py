"""Checkpointer benchmark: ChromaSaver (embedded and server) vs PostgresSaver, SqliteSaver and
InMemorySaver.

Each of ``--n`` rounds puts one checkpoint of a ``--messages``-message chat state on one
thread (a parent chain), then reads it back with ``get_tuple`` (latest, and by id) and lists
the thread with ``list(limit=--list-limit)``. The savers run round-robin inside each round, so
load from other processes hits them alike, and each round starts at the next saver: with a
fixed order the embedded saver's put came right after the server's and Postgres's work
(processes that keep working after they answer) and measured 1.53x the raw replay of its
rows later in the round; 1.08x with no server or Postgres in the run, 0.94x rotated
(``docs/benchmarks.md``). For each Chroma backend the round also times one raw
``collection.upsert`` of the same serialized checkpoint (one record, base64 in a metadata
string, the dummy vector) into a sibling collection that saves its index as often as the
saver's (``SYNC_THRESHOLD``): the floor for any Chroma-backed saver.

Prints a Markdown table of medians (p50) and p90s in milliseconds, and the ratios the targets
are about: ``put p50 / raw upsert p50`` (target <= 1.2), ``get_tuple p50 / SqliteSaver's``
(target <= 2), and a second table: ``get_tuple`` by id against one raw ``get`` by id (target
<= 1.5) and ``put`` against one raw upsert of the very rows ``put`` writes (target <= 1.2).
The server is a ``chroma run`` on 127.0.0.1 and a free port, started here and stopped by its
PID. ``PostgresSaver`` (LangGraph's own, what its server keeps checkpoints in) runs on a
throwaway Postgres cluster this script starts on 127.0.0.1 the way ``store_peers.py`` does
(``initdb`` from PATH or Debian's ``/usr/lib/postgresql/*/bin``, or ``--pg-bin``), stopped by
its PID; ``--no-postgres`` skips it. The last table gives each saver's p50 against
PostgresSaver's (issue 33).

Usage::

    python benchmarks/checkpoint_bench.py            # 1,000 rounds
    python benchmarks/checkpoint_bench.py --n 100    # quick run
    python benchmarks/checkpoint_bench.py --no-server --no-postgres
"""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from contextlib import ExitStack, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver, Checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import chroma_server  # noqa: E402
from store_peers import find_pg_bin, postgres_cluster  # noqa: E402

from langmem_edge._chroma import SYNC_THRESHOLD  # noqa: E402
from langmem_edge.checkpointers import ChromaSaver  # noqa: E402
from langmem_edge.checkpointers.layout import DUMMY_VECTOR  # noqa: E402
from langmem_edge.checkpointers.writes import put_rows  # noqa: E402

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

MESSAGE_CHARS = 240
"""Characters of each message's text in the benchmark state."""


def chat_state(n_messages: int) -> list[Any]:
    """A chat history of ``n_messages`` alternating human/AI messages."""
    words = "the quick brown fox jumps over the lazy dog and keeps running far away "
    text = (words * (MESSAGE_CHARS // len(words) + 1))[:MESSAGE_CHARS]
    return [
        (HumanMessage if i % 2 == 0 else AIMessage)(content=f"{i}: {text}", id=str(uuid.uuid4()))
        for i in range(n_messages)
    ]


def make_checkpoint(messages: list[Any], step: int) -> Checkpoint:
    return Checkpoint(
        v=4,
        id=str(uuid6(clock_seq=step)),
        ts=datetime.now(UTC).isoformat(),
        channel_values={"messages": messages, "step": step},
        channel_versions={"messages": step + 1, "step": step + 1},
        versions_seen={"agent": {"messages": step}},
        updated_channels=["messages", "step"],
    )


class Subject:
    """One saver under test, with its thread and (for Chroma) a raw-upsert baseline."""

    def __init__(self, name: str, saver: BaseCheckpointSaver, raw: tuple | None) -> None:
        self.name = name
        self.saver = saver
        self.raw = raw
        self.parent: dict[str, Any] | None = None
        self.thread = f"bench-{uuid.uuid4().hex[:8]}"
        self.times: dict[str, list[float]] = defaultdict(list)

    def timed(self, op: str, fn: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        out = fn()
        self.times[op].append((time.perf_counter() - start) * 1000)
        return out

    def round(self, step: int, messages: list[Any], list_limit: int) -> None:
        """One round: ``put``, the reads, and (Chroma) the floors. The raw replay of the
        put's rows runs right before the put on odd rounds and right after it on even ones,
        so neither is always the first write after the other savers' work."""
        config: dict[str, Any] = {"configurable": {"thread_id": self.thread, "checkpoint_ns": ""}}
        if self.parent:
            config["configurable"]["checkpoint_id"] = self.parent["configurable"]["checkpoint_id"]
        cp = make_checkpoint(messages, step)
        metadata = {"source": "loop", "step": step, "parents": {}}
        versions = {"messages": step + 1, "step": step + 1}
        replay_first = self.raw is not None and step % 2 == 1
        if replay_first:
            self.replay(config, cp, metadata)
        self.parent = self.timed("put", lambda: self.saver.put(config, cp, metadata, versions))
        if self.raw is not None and not replay_first:
            self.replay(config, cp, metadata)
        latest = {"configurable": {"thread_id": self.thread, "checkpoint_ns": ""}}
        got = self.timed("get_tuple latest", lambda: self.saver.get_tuple(latest))
        assert got is not None and got.checkpoint["id"] == cp["id"]
        self.timed("get_tuple by id", lambda: self.saver.get_tuple(self.parent))
        n = self.timed("list", lambda: sum(1 for _ in self.saver.list(latest, limit=list_limit)))
        assert n == min(step + 1, list_limit)
        if self.raw is not None:
            upsert, get = self.raw
            self.timed("raw upsert", lambda: upsert(cp, step))
            self.timed("raw get", lambda: get(step))

    def replay(self, config: dict[str, Any], cp: Checkpoint, metadata: dict[str, Any]) -> None:
        """One raw upsert of the two records ``put`` writes (checkpoint + head) into the raw
        sibling, under the same ids each round: a new checkpoint row, the head row updated."""
        saver = self.saver
        assert isinstance(saver, ChromaSaver)
        batch, _, _ = self.timed("rows built", lambda: put_rows(
            config, cp, metadata, saver.serde, now=time.time(),
            index_metadata=saver.index_metadata, known_head=None,
        ))
        batch.ids = [f"raw-{i}" for i in batch.ids]
        self.timed("raw upsert rows", lambda: upsert_rows(saver, batch))


def raw_ops(saver: ChromaSaver) -> tuple[Callable[[Checkpoint, int], None], Callable]:
    """The floors: one raw upsert of the serialized checkpoint (one record, base64 in a
    metadata string, the dummy vector) into a sibling collection, and one get of it by id."""
    collection = raw_collection(saver)

    def upsert(cp: Checkpoint, step: int) -> None:
        typ, data = saver.serde.dumps_typed(cp)
        collection.upsert(
            ids=[f"raw-{step}"],
            embeddings=[DUMMY_VECTOR],
            metadatas=[{"p": base64.b64encode(data).decode("ascii")}],
        )

    def get(step: int) -> None:
        got = collection.get(ids=[f"raw-{step}"], include=["metadatas"])
        saver.serde.loads_typed(("msgpack", base64.b64decode(got["metadatas"][0]["p"])))

    return upsert, get


def raw_collection(saver: ChromaSaver) -> Any:
    """The raw sibling of the saver's collection, with the same index saves (Chroma's log is
    reread on each write until a save: a floor with Chroma's default would be no floor)."""
    return saver.client.get_or_create_collection(
        saver.collection_name + "-raw", embedding_function=None,
        metadata={"hnsw:sync_threshold": SYNC_THRESHOLD, "hnsw:batch_size": SYNC_THRESHOLD},
    )


def upsert_rows(saver: ChromaSaver, batch: Any) -> None:
    """One raw upsert of ``batch`` (the records ``put`` writes) into the raw sibling."""
    collection = raw_collection(saver)
    collection.upsert(ids=batch.ids, embeddings=batch.embeddings(), metadatas=batch.metadatas)


def summary(subjects: list[Subject]) -> str:
    """The two targets: get_tuple by id vs one raw get by id (<= 1.5x), put vs one raw
    upsert of the same rows (<= 1.2x); and what building those rows (serializing the
    checkpoint, in Python) costs of the put."""
    lines = ["", "| saver | get_tuple by id p50 | raw get p50 | ratio (target <= 1.5x) "
             "| put p50 | raw upsert of the same rows p50 | ratio (target <= 1.2x) "
             "| building the rows p50 |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for s in subjects:
        t = s.times
        if not t.get("raw get"):
            continue
        get_id, raw_get = statistics.median(t["get_tuple by id"]), statistics.median(t["raw get"])
        put, raw_rows = statistics.median(t["put"]), statistics.median(t["raw upsert rows"])
        lines.append(
            f"| {s.name} | {get_id:.2f} | {raw_get:.2f} | {get_id / raw_get:.2f}x "
            f"| {put:.2f} | {raw_rows:.2f} | {put / raw_rows:.2f}x "
            f"| {statistics.median(t['rows built']):.2f} |"
        )
    return "\n".join(lines)


def against(subjects: list[Subject], peer_name: str) -> str:
    """Each saver's p50s over the peer's (``put``, ``get_tuple`` latest and by id, ``list``)."""
    peer = next((s for s in subjects if s.name == peer_name), None)
    if peer is None:
        return ""
    ops = ("put", "get_tuple latest", "get_tuple by id", "list")
    lines = ["", f"| saver | {' | '.join(f'{op} / {peer_name}' for op in ops)} |",
             "| --- |" + " ---: |" * len(ops)]
    for s in subjects:
        cells = [f"{statistics.median(s.times[op]) / statistics.median(peer.times[op]):.2f}x"
                 for op in ops]
        lines.append(f"| {s.name} | {' | '.join(cells)} |")
    return "\n".join(lines)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def table(subjects: list[Subject], n: int, state_bytes: int, list_limit: int) -> str:
    sqlite = next(s for s in subjects if s.name.startswith("SqliteSaver"))
    sqlite_get = statistics.median(sqlite.times["get_tuple latest"])
    sqlite_get_id = statistics.median(sqlite.times["get_tuple by id"])
    head = (
        f"{n} rounds, state {state_bytes:,} bytes serialized; times in ms, p50 (p90).\n\n"
        "| saver | put | raw upsert | put / raw upsert | get_tuple latest | get_tuple by id "
        "| raw get | get_tuple / Sqlite's (latest, by id) | get_tuple / raw get (latest, by id) "
        f"| list(limit={list_limit}) |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    )
    rows = [head]
    for s in subjects:
        t = s.times

        def cell(op: str, t: dict[str, list[float]] = t) -> str:
            if not t.get(op):
                return "-"
            return f"{statistics.median(t[op]):.2f} ({pct(t[op], 0.9):.2f})"

        def ratio(a: str, b: str, t: dict[str, list[float]] = t) -> str:
            if not t.get(a) or not t.get(b):
                return "-"
            return f"{statistics.median(t[a]) / statistics.median(t[b]):.2f}x"

        get = statistics.median(t["get_tuple latest"])
        get_id = statistics.median(t["get_tuple by id"])
        vs_sqlite = f"{get / sqlite_get:.2f}x, {get_id / sqlite_get_id:.2f}x"
        vs_raw = (
            f"{ratio('get_tuple latest', 'raw get')}, {ratio('get_tuple by id', 'raw get')}"
            if t.get("raw get")
            else "-"
        )
        rows.append(
            f"| {s.name} | {cell('put')} | {cell('raw upsert')} | {ratio('put', 'raw upsert')} "
            f"| {cell('get_tuple latest')} | {cell('get_tuple by id')} | {cell('raw get')} "
            f"| {vs_sqlite} | {vs_raw} | {cell('list')} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="rounds (default 1000)")
    parser.add_argument("--messages", type=int, default=20, help="messages in the state")
    parser.add_argument("--list-limit", type=int, default=100, help="list(limit=...)")
    parser.add_argument("--no-server", action="store_true", help="skip ChromaSaver on a server")
    parser.add_argument("--no-postgres", action="store_true", help="skip PostgresSaver")
    parser.add_argument("--pg-bin", help="the folder with initdb and pg_ctl")
    args = parser.parse_args(argv)
    print(f"load average before: {os.getloadavg()}", file=sys.stderr)

    messages = chat_state(args.messages)
    folder = tempfile.mkdtemp(prefix="checkpoint-bench-")
    subjects: list[Subject] = []
    try:
        with nullcontext() if args.no_server else chroma_server() as url:
            embedded = ChromaSaver.from_path(str(Path(folder) / "chroma"))
            subjects.append(Subject("ChromaSaver embedded", embedded, raw_ops(embedded)))
            if url:
                server = ChromaSaver.from_url(url)
                subjects.append(Subject("ChromaSaver server", server, raw_ops(server)))
            conn = sqlite3.connect(str(Path(folder) / "bench.sqlite"), check_same_thread=False)
            sqlite = SqliteSaver(conn)
            sqlite.setup()
            subjects.append(Subject("SqliteSaver (file)", sqlite, None))
            subjects.append(Subject("InMemorySaver", InMemorySaver(), None))
            with ExitStack() as pg:  # the Postgres cluster stops on any way out
                pg_bin = None if args.no_postgres else find_pg_bin(args.pg_bin)
                if pg_bin:
                    from langgraph.checkpoint.postgres import PostgresSaver

                    url_pg = pg.enter_context(postgres_cluster(pg_bin, tempfile.gettempdir()))
                    postgres = pg.enter_context(PostgresSaver.from_conn_string(url_pg))
                    postgres.setup()
                    subjects.append(Subject("PostgresSaver", postgres, None))
                elif not args.no_postgres:
                    print("no Postgres found (initdb, pg_ctl): PostgresSaver skipped",
                          file=sys.stderr)
                state_bytes = len(embedded.serde.dumps_typed(make_checkpoint(messages, 0))[1])
                started = time.monotonic()
                for step in range(args.n):
                    # each round starts at the next saver: none always follows the same one
                    turn = step % len(subjects)
                    for subject in subjects[turn:] + subjects[:turn]:
                        subject.round(step, messages, args.list_limit)
                    if (step + 1) % 100 == 0:
                        elapsed = time.monotonic() - started
                        print(f"  {step + 1}/{args.n} rounds, {elapsed:.0f} s", file=sys.stderr)
                print(table(subjects, args.n, state_bytes, args.list_limit))
                print(summary(subjects))
                print(against(subjects, "PostgresSaver"))
                print(f"\nload average after: {os.getloadavg()}")
            conn.close()
            for s in subjects:
                if isinstance(s.saver, ChromaSaver):
                    s.saver.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
