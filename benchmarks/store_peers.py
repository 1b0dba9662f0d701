"""ChromaStore side by side with LangGraph's own stores (issue 33), measured in one run.

    python benchmarks/store_peers.py                              # 10,000 items, 3 rounds
    python benchmarks/store_peers.py --items 2000 --rounds 2      # quick
    python benchmarks/store_peers.py --server                     # also ChromaStore.from_url
    python benchmarks/store_peers.py --no-postgres                # ratios against SqliteStore

The peers: ``ChromaStore.from_path`` (a folder under ``--tmp``, tmpfs by default), Chroma's
floor (``raw Chroma (floor)``, :class:`RawChroma`: each figure as the one raw chromadb call it
needs, on one collection of every item; ``--no-floor`` skips it),
``ChromaStore.from_url`` with ``--server`` (a throwaway ``chroma run``; with it, the same
floor on that server, ``raw Chroma server (floor)``), ``PostgresStore`` with
pgvector (HNSW index, cosine, on a Postgres cluster this script creates with ``initdb`` in a
temp folder, starts on 127.0.0.1 and a free port, and stops by its PID at the end),
``SqliteStore`` with its sqlite-vec index (exact: ``vec_distance_cosine`` over the rows; run
with ``pysqlite3`` when this Python's ``sqlite3`` cannot load extensions, else without an index
and said so) and ``InMemoryStore`` with an index. Every store gets the same ``--items`` items in
``--namespaces`` namespaces ``("bench", "nsJ")``, values ``{"text", "kind", "flag", "n"}``,
and the same 384-d vectors: seeded random unit vectors keyed by the text (a lookup, so no model
is timed).

Measured, p50 over ``--rounds`` rounds of ``--queries`` calls each; in every round each figure
runs on every store in turn (the order rotated per round), so load from other processes hits
them alike:

- ``get`` of an existing key;
- vector search, k=10, in one namespace, and its recall@10 against exact brute-force cosine
  over that namespace's vectors;
- filtered search with a query (``filter={"kind": ...}``, one kind in four), k=10, and recall;
- listing (search without a query), first page and tenth page (``offset=90``) of 10;
- ``list_namespaces()``;
- a single ``put`` of a new item into a populated namespace (the exact answers follow it),
  and, in the ``ChromaStore`` columns, one raw ``upsert`` of the row that put wrote
  (its metadata, document and vector, copied under a new id into the same collection and
  deleted again, untimed): the floor issue 33 sets a put against;
- after the rounds, ``--threads`` threads (8) sharing each store in turn for
  ``--thread-seconds`` (20): 60 % ``get``, 30 % vector search, 10 % ``put``, as ops/s.

Ratios are time / PostgresStore's time in the same run (SqliteStore's with ``--no-postgres``).
The load average is printed before and after. PostgresStore's searches run with
``SET hnsw.ef_search = --pg-ef-search`` on its connection (default 1000, pgvector's maximum:
the namespace filter runs after the index scan, so pgvector's default 40 returns about 4 of the
true 10; at 10,000 items 400 gave recall 0.93, 1000 gave 1.00), and optionally
``hnsw.iterative_scan`` (pgvector >= 0.8; ``strict_order`` with 400 gave 0.89).

Postgres 15 and pgvector (Debian 12 has no pgvector package; build it from its source)::

    apt-get install -y postgresql-15 postgresql-server-dev-15 build-essential
    # pgvector source (github pgvector/pgvector, tag v0.8.1) unpacked in /tmp/pgvector:
    cd /tmp/pgvector && make PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config \
        && make install PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config

As root, the cluster runs as the ``postgres`` user (``runuser``), which Debian's package
creates. Nothing is written outside temp folders, which are deleted at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import itertools
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import chromadb
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import WORDS, chroma_server, median, table, timed  # noqa: E402
from langchain_core.embeddings import Embeddings  # noqa: E402
from langgraph.store.base import BaseStore, PutOp  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402

from langmem_edge import ChromaStore  # noqa: E402
from langmem_edge._chroma import SYNC_THRESHOLD  # noqa: E402

KINDS = ("note", "fact", "preference", "event")
K = 10

PG_INSTALL = """\
PostgresStore needs Postgres and pgvector; to install them on Debian 12:
    apt-get update && apt-get install -y postgresql-15 postgresql-server-dev-15 build-essential
    # pgvector's source (github pgvector/pgvector, e.g. tag v0.8.1) unpacked in /tmp/pgvector:
    cd /tmp/pgvector && make PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config \\
        && make install PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
or pass --pg-bin DIR (the folder with initdb and pg_ctl), or run with --no-postgres."""


class LookupEmbeddings(Embeddings):
    """Seeded random unit vectors keyed by the text: the same for every store, and computed
    once (``prepare``) before anything is timed."""

    def __init__(self, dims: int) -> None:
        self.dims = dims
        self.vectors: dict[str, np.ndarray] = {}

    def vector(self, text: str) -> np.ndarray:
        vec = self.vectors.get(text)
        if vec is None:
            rng = np.random.default_rng(zlib.crc32(text.encode()))
            vec = rng.standard_normal(self.dims).astype(np.float32)
            vec /= np.linalg.norm(vec)
            self.vectors[text] = vec
        return vec

    def prepare(self, texts: list[str]) -> None:
        for text in texts:
            self.vector(text)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vector(t).tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vector(text).tolist()


class RawChroma:
    """Chroma's floor: each figure as the one raw chromadb call it needs at the least, on one
    collection of every item (metadata ``ns``, ``key``, ``kind``; the vector passed, Chroma's
    embedding function never runs; cosine, ``ef_search`` as the store's). Answers the
    benchmark's calls as a store would (``.key`` on each hit) but keeps no store semantics:
    a listing is Chroma's row order (it cannot sort), ``list_namespaces`` reads every row's
    metadata, a put is one upsert. What ``ChromaStore`` adds on top is the difference."""

    def __init__(self, client: Any, embed: LookupEmbeddings, ef_search: int) -> None:
        self.client = client  # a PersistentClient, or an HttpClient for the server's floor
        self.col = self.client.create_collection(
            "raw", embedding_function=None,
            configuration={"hnsw": {"space": "cosine", "ef_search": ef_search,
                                    "sync_threshold": SYNC_THRESHOLD,
                                    "batch_size": SYNC_THRESHOLD}})
        self.embed = embed

    @staticmethod
    def _id(ns: tuple[str, ...], key: str) -> str:
        return f"{'/'.join(ns)}#{key}"

    def _upsert(self, rows: list[tuple[tuple[str, ...], str, dict[str, Any]]]) -> None:
        self.col.upsert(
            ids=[self._id(ns, key) for ns, key, _ in rows],
            embeddings=[self.embed.vector(v["text"]) for _, _, v in rows],
            metadatas=[{"ns": "/".join(ns), "key": key, "kind": v["kind"]} for ns, key, v in rows])

    def batch(self, ops: list[PutOp]) -> list[None]:
        self._upsert([(op.namespace, op.key, op.value) for op in ops])
        return [None] * len(ops)

    def put(self, ns: tuple[str, ...], key: str, value: dict[str, Any]) -> None:
        self._upsert([(ns, key, value)])

    def get(self, ns: tuple[str, ...], key: str) -> Any:
        found = self.col.get(ids=[self._id(ns, key)], include=["metadatas"])
        return found["metadatas"][0] if found["ids"] else None

    def search(self, ns: tuple[str, ...], *, query: str | None = None,
               filter: dict[str, Any] | None = None, limit: int = 10, offset: int = 0
               ) -> list[Any]:
        where: dict[str, Any] = {"ns": "/".join(ns)}
        if filter:
            where = {"$and": [where, {"kind": filter["kind"]}]}
        if query is None:
            found = self.col.get(where=where, limit=limit, offset=offset, include=["metadatas"])
            metas = found["metadatas"]
        else:
            res = self.col.query(query_embeddings=[self.embed.vector(query)], n_results=limit,
                                 where=where, include=["metadatas"])
            metas = res["metadatas"][0]
        return [argparse.Namespace(key=m["key"]) for m in metas]

    def list_namespaces(self) -> list[tuple[str, ...]]:
        # in pages: one get of 100,000 rows' metadata fails ("too many SQL variables")
        names: set[tuple[str, ...]] = set()
        for offset in itertools.count(0, 20_000):
            found = self.col.get(include=["metadatas"], limit=20_000, offset=offset)
            names.update(tuple(m["ns"].split("/")) for m in found["metadatas"])
            if len(found["ids"]) < 20_000:
                return sorted(names)
        raise AssertionError("unreachable")


# --- Postgres: a throwaway cluster ------------------------------------------------------


def find_pg_bin(explicit: str | None) -> str | None:
    """The folder with ``initdb`` and ``pg_ctl``: ``--pg-bin``, then PATH, then Debian's."""
    candidates = [explicit] if explicit else []
    if not explicit:
        on_path = shutil.which("initdb")
        if on_path:
            candidates.append(str(Path(on_path).parent))
        candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                             key=lambda p: int(Path(p).parent.name) if Path(p).parent.name
                             .isdigit() else 0, reverse=True)
    for folder in candidates:
        if folder and (Path(folder) / "initdb").exists() and (Path(folder) / "pg_ctl").exists():
            return folder
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def postgres_cluster(pg_bin: str, tmp_root: str) -> Iterator[str]:
    """``initdb`` a cluster in a temp folder, start it on 127.0.0.1 and a free port, make sure
    ``CREATE EXTENSION vector`` works; yield a connection string; stop it by its PID."""
    as_user: list[str] = []
    folder = tempfile.mkdtemp(prefix="pg-peers-", dir=tmp_root)
    if os.geteuid() == 0:  # postgres refuses to run as root
        import pwd

        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            raise RuntimeError("running as root needs a 'postgres' user to run the cluster as"
                               ) from None
        os.chown(folder, pw.pw_uid, pw.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    data = os.path.join(folder, "data")
    log = os.path.join(folder, "server.log")
    port = free_port()
    pid: int | None = None
    try:
        subprocess.run(
            [*as_user, f"{pg_bin}/initdb", "-D", data, "-U", "postgres", "-A", "trust",
             "-E", "UTF8", "--no-locale"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        subprocess.run(
            [*as_user, f"{pg_bin}/pg_ctl", "-D", data, "-l", log, "-w", "-t", "60", "start",
             "-o", f"-h 127.0.0.1 -p {port} -k {folder} -c shared_buffers=256MB"],
            check=True, stdout=subprocess.DEVNULL,
        )
        pid = int(Path(data, "postmaster.pid").read_text().split()[0])
        conn_string = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        import psycopg

        with psycopg.connect(conn_string, autocommit=True) as conn:
            try:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except psycopg.Error as exc:
                raise RuntimeError(f"pgvector is not installed ({exc}).\n{PG_INSTALL}"
                                   ) from None
            version = conn.execute(
                "SELECT current_setting('server_version'), extversion FROM pg_extension "
                "WHERE extname = 'vector'"
            ).fetchone()
        print(f"Postgres {version[0]} with pgvector {version[1]} on 127.0.0.1:{port} "
              f"(PID {pid}, data in {data})", flush=True)
        yield conn_string
    finally:
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGINT)  # "fast" shutdown
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
            else:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        shutil.rmtree(folder, ignore_errors=True)


# --- the stores ---------------------------------------------------------------------------


def sqlite_connect(path: str) -> tuple[Any, str]:
    """A connection SqliteStore can load sqlite-vec into, and which module made it."""
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        mod: Any = sqlite3
        name = "sqlite3"
    else:
        try:
            import pysqlite3.dbapi2 as mod  # type: ignore[import-not-found, no-redef]
        except ImportError:
            return None, ""
        name = "pysqlite3"
    return mod.connect(path, check_same_thread=False, isolation_level=None), name


@contextlib.contextmanager
def open_stores(args: argparse.Namespace, embed: LookupEmbeddings, tmp: str
                ) -> Iterator[dict[str, BaseStore]]:
    index: dict[str, Any] = {"dims": args.dims, "embed": embed, "fields": ["text"]}
    stores: dict[str, BaseStore] = {}
    with contextlib.ExitStack() as stack:
        chroma_dir = tempfile.mkdtemp(prefix="chroma-peers-", dir=tmp)
        stack.callback(shutil.rmtree, chroma_dir, True)
        stores["ChromaStore folder"] = stack.enter_context(
            ChromaStore.from_path(chroma_dir, index=index))
        if not args.no_floor:
            raw_dir = tempfile.mkdtemp(prefix="chroma-raw-", dir=tmp)
            stack.callback(shutil.rmtree, raw_dir, True)
            stores["raw Chroma (floor)"] = RawChroma(  # type: ignore[assignment]
                chromadb.PersistentClient(raw_dir), embed,
                stores["ChromaStore folder"].ef_search)
        if args.server:
            url = stack.enter_context(chroma_server())
            stores["ChromaStore server"] = stack.enter_context(
                ChromaStore.from_url(url, index=index))
            if not args.no_floor:
                parts = urllib.parse.urlsplit(url)
                stores["raw Chroma server (floor)"] = RawChroma(  # type: ignore[assignment]
                    chromadb.HttpClient(host=parts.hostname, port=parts.port), embed,
                    stores["ChromaStore server"].ef_search)
        if not args.no_postgres:
            from langgraph.store.postgres import PostgresStore

            pg_bin = find_pg_bin(args.pg_bin)
            if pg_bin is None:
                raise SystemExit(f"No Postgres found (initdb, pg_ctl).\n{PG_INSTALL}")
            conn_string = stack.enter_context(postgres_cluster(pg_bin, tmp))
            pg_index = {
                **index,
                "distance_type": "cosine",
                "ann_index_config": {"kind": "hnsw", "m": args.pg_m,
                                     "ef_construction": args.pg_ef_construction},
            }
            pg = stack.enter_context(PostgresStore.from_conn_string(conn_string, index=pg_index))
            pg.setup()
            # One connection, autocommit: a session SET holds for every later search.
            pg.conn.execute(f"SET hnsw.ef_search = {int(args.pg_ef_search)}")
            if args.pg_iterative_scan != "off":
                pg.conn.execute(f"SET hnsw.iterative_scan = {args.pg_iterative_scan}")
            stores["PostgresStore"] = pg
        from langgraph.store.sqlite import SqliteStore

        sqlite_file = os.path.join(tmp, os.path.basename(chroma_dir) + ".sqlite")
        conn, module = sqlite_connect(sqlite_file)
        if conn is not None:
            print(f"SqliteStore: sqlite-vec loaded through {module}", flush=True)
            stack.callback(lambda: Path(sqlite_file).unlink(missing_ok=True))
            stack.callback(conn.close)
            # SqliteStore (langgraph-checkpoint-sqlite 3.1) reads "text_fields", not "fields":
            # given "fields" alone it embeds the whole value's JSON.
            lite = SqliteStore(conn, index={**index, "text_fields": index["fields"]}
                               )  # type: ignore[arg-type]
            name = "SqliteStore"
        else:
            print("SqliteStore: this Python's sqlite3 cannot load extensions and pysqlite3 is "
                  "not installed (pip install pysqlite3-binary): SqliteStore runs WITHOUT its "
                  "vector index, its vector figures are '-'.", flush=True)
            conn = sqlite3.connect(sqlite_file, check_same_thread=False, isolation_level=None)
            stack.callback(lambda: Path(sqlite_file).unlink(missing_ok=True))
            stack.callback(conn.close)
            lite = SqliteStore(conn)
            name = "SqliteStore (no index)"
        lite.setup()
        stores[name] = lite
        stores["InMemoryStore"] = InMemoryStore(index=index)  # type: ignore[arg-type]
        yield stores


# --- data and exact answers ---------------------------------------------------------------


class Truth:
    """Every item's vector and kind by namespace: exact top-k by brute-force cosine."""

    def __init__(self, dims: int) -> None:
        self.keys: dict[tuple[str, ...], list[str]] = {}
        self.kinds: dict[tuple[str, ...], list[str]] = {}
        self.vecs: dict[tuple[str, ...], list[np.ndarray]] = {}
        self._mats: dict[tuple[str, ...], np.ndarray] = {}

    def add(self, ns: tuple[str, ...], key: str, kind: str, vec: np.ndarray) -> None:
        self.keys.setdefault(ns, []).append(key)
        self.kinds.setdefault(ns, []).append(kind)
        self.vecs.setdefault(ns, []).append(vec)
        self._mats.pop(ns, None)

    def top(self, ns: tuple[str, ...], query: np.ndarray, kind: str | None = None
            ) -> set[str]:
        mat = self._mats.get(ns)
        if mat is None:
            mat = self._mats[ns] = np.stack(self.vecs[ns])
        scores = mat @ query
        if kind is not None:
            mask = np.array([k == kind for k in self.kinds[ns]])
            scores = np.where(mask, scores, -np.inf)
        best = np.argsort(-scores)[:K]
        return {self.keys[ns][i] for i in best if np.isfinite(scores[i])}


def make_value(rng: random.Random, i: int, prefix: str = "") -> dict[str, Any]:
    return {
        "text": f"{prefix}{i} " + " ".join(rng.choices(WORDS, k=12)),
        "kind": rng.choice(KINDS),
        "flag": i % 3 == 0,
        "n": i,
    }


def load(stores: dict[str, BaseStore], items: list[tuple[tuple[str, ...], str, dict]],
         batch: int) -> dict[str, float]:
    """Put every item into every store (batches of ``batch`` puts); items/s by store."""
    rates = {}
    for name, store in stores.items():
        seconds = 0.0
        for start in range(0, len(items), batch):
            ops = [PutOp(ns, key, value) for ns, key, value in items[start:start + batch]]
            seconds += timed(lambda ops=ops, store=store: store.batch(ops))
        rates[name] = len(items) / seconds
        print(f"  loaded {name}: {len(items):,} items in {seconds:.1f} s", flush=True)
    return rates


def recall(got: list[Any], want: set[str]) -> float:
    """recall@k of ``got`` against the exact ``want`` (1.0 when both are empty)."""
    if not want:
        return 1.0 if not got else 0.0
    return len({r.key for r in got} & want) / len(want)


def measure(stores: dict[str, BaseStore], order: list[str], cases: list[tuple],
            figure: str, call: Callable[[BaseStore, tuple], Any],
            record: dict[str, dict[str, list[float]]] | None, *,
            skip: set[str] = frozenset(),  # type: ignore[assignment]
            check: Callable[[tuple, Any], float] | None = None) -> None:
    """Time ``call(store, case)`` for every case on every store, stores in ``order``; record
    seconds under ``figure`` (and ``check``'s score, outside the timing, under
    ``figure + "_recall"``) unless ``record`` is None (warm-up)."""
    for name in order:
        if name in skip:
            continue
        store = stores[name]
        for case in cases:
            start = time.perf_counter()
            result = call(store, case)
            seconds = time.perf_counter() - start
            if record is not None:
                record[name][figure].append(seconds)
                if check is not None:
                    record[name][figure + "_recall"].append(check(case, result))


def same_row_upserts(store: Any, cases: list[tuple], out: list[float]) -> None:
    """Issue 33's floor of a put: for each item ``cases`` just put, its row as the store wrote
    it (metadata, document, vector) upserted by one raw Chroma call into the same collection
    under a new id (deleted again, untimed); the seconds of each upsert go to ``out``."""
    from langmem_edge.store import layout

    for ns, key, _ in cases:
        got = store._items.get(ids=[layout.item_id(ns, key)],
                               include=["metadatas", "documents", "embeddings"])
        copy = "copy-" + got["ids"][0]
        start = time.perf_counter()
        store._items.upsert(ids=[copy], metadatas=got["metadatas"],
                            documents=got["documents"], embeddings=list(got["embeddings"]))
        out.append(time.perf_counter() - start)
        store._items.delete(ids=[copy])


def threaded(store: BaseStore, cases: list[tuple], puts: list[tuple], threads: int,
             seconds: float) -> tuple[float, int]:
    """ops/s of ``threads`` threads sharing ``store`` for ``seconds``: each op a ``get`` (60 %),
    a vector search k=10 (30 %) or a ``put`` of a new item (10 %), cases drawn at random;
    and the number of ops that raised (counted, not retried)."""
    start = time.perf_counter()
    stop = start + seconds
    done = [0] * threads
    failed = [0] * threads

    def work(t: int) -> None:
        rng = random.Random(t)
        mine = puts[t::threads]
        while time.perf_counter() < stop:
            ns, query, _, key = rng.choice(cases)
            draw = rng.random()
            try:
                if draw < 0.6:
                    store.get(ns, key)
                elif draw < 0.9 or not mine:
                    store.search(ns, query=query, limit=K)
                else:
                    store.put(*mine.pop())
            except Exception:
                failed[t] += 1
            done[t] += 1

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return sum(done) / (time.perf_counter() - start), sum(failed)


# --- the run ------------------------------------------------------------------------------

FIGURES = (
    ("get", "`get` p50"),
    ("search", "vector search k=10 in a namespace, p50"),
    ("search_recall", "vector search recall@10 against exact"),
    ("filtered", "filtered search with a query, p50"),
    ("filtered_recall", "filtered search recall@10 against exact"),
    ("list1", "listing, first page, p50"),
    ("list10", "listing, tenth page, p50"),
    ("list_namespaces", "`list_namespaces` p50"),
    ("put", "single `put` of a new item, p50"),
    ("same_row", "raw Chroma `upsert` of the row that `put` wrote, p50"),
)


def run(args: argparse.Namespace) -> None:
    tmp = args.tmp if os.path.isdir(args.tmp) else tempfile.gettempdir()
    rng = random.Random(args.seed)
    namespaces = [("bench", f"ns{j}") for j in range(args.namespaces)]
    items = [(namespaces[i % args.namespaces], f"item{i}", make_value(rng, i))
             for i in range(args.items)]
    rng.shuffle(items)
    queries_per_round = [[f"q{r}-{i} " + " ".join(rng.choices(WORDS, k=5))
                          for i in range(args.queries)] for r in range(args.rounds + 1)]
    new_items = [[(namespaces[rng.randrange(args.namespaces)], f"new{r}-{i}",
                   make_value(rng, r * args.queries + i, prefix=f"new{r}-"))
                  for i in range(args.queries)] for r in range(args.rounds + 1)]
    embed = LookupEmbeddings(args.dims)
    embed.prepare([v["text"] for _, _, v in items]
                  + [q for qs in queries_per_round for q in qs]
                  + [v["text"] for ns in new_items for _, _, v in ns])
    truth = Truth(args.dims)
    for ns, key, value in items:
        truth.add(ns, key, value["kind"], embed.vector(value["text"]))

    load_before = os.getloadavg()
    print(f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} "
          f"{load_before[2]:.2f} ({os.cpu_count()} cores)", flush=True)
    samples: dict[str, dict[str, list[float]]] = {}
    with open_stores(args, embed, tmp) as stores:
        print(f"loading {args.items:,} items into {len(stores)} stores ...", flush=True)
        rates = load(stores, items, args.batch)
        samples = {name: {f: [] for f, _ in FIGURES} for name in stores}
        names = list(stores)
        no_vector = {n for n in names if "no index" in n}
        # round 0 is a warm-up: every figure twice on every store, not recorded
        for rnd in range(args.rounds + 1):
            warm = rnd == 0
            order = names[rnd % len(names):] + names[:rnd % len(names)]
            queries = queries_per_round[rnd][: 2 if warm else None]
            qrng = random.Random(args.seed * 1000 + rnd)
            cases = [(namespaces[qrng.randrange(args.namespaces)], q,
                      KINDS[qrng.randrange(len(KINDS))], f"item{qrng.randrange(args.items)}")
                     for q in queries]
            new = new_items[rnd][: len(cases)]
            record = None if warm else samples
            measure(stores, order, cases, "get", lambda s, c: s.get(c[0], c[3]), record)
            measure(stores, order, cases, "search",
                    lambda s, c: s.search(c[0], query=c[1], limit=K), record, skip=no_vector,
                    check=lambda c, got: recall(got, truth.top(c[0], embed.vector(c[1]))))
            measure(stores, order, cases, "filtered",
                    lambda s, c: s.search(c[0], query=c[1], filter={"kind": c[2]}, limit=K),
                    record, skip=no_vector,
                    check=lambda c, got: recall(
                        got, truth.top(c[0], embed.vector(c[1]), kind=c[2])))
            measure(stores, order, cases, "list1", lambda s, c: s.search(c[0], limit=K), record)
            measure(stores, order, cases, "list10",
                    lambda s, c: s.search(c[0], limit=K, offset=9 * K), record)
            measure(stores, order, cases, "list_namespaces",
                    lambda s, c: s.list_namespaces(), record)
            measure(stores, order, new, "put", lambda s, c: s.put(*c), record)
            for form in ("ChromaStore folder", "ChromaStore server"):
                if form in stores and record is not None:
                    same_row_upserts(stores[form], new, record[form]["same_row"])
            for ns, key, value in new:  # the exact answers follow the new items
                truth.add(ns, key, value["kind"], embed.vector(value["text"]))
            if not warm:
                print(f"  round {rnd}/{args.rounds} done", flush=True)
        rates_threaded: dict[str, str] = {}
        if args.threads:
            qrng = random.Random(args.seed + 99)
            cases = [(namespaces[qrng.randrange(args.namespaces)], q, "",
                      f"item{qrng.randrange(args.items)}")
                     for q in queries_per_round[-1]]
            for name in names:
                puts = [(namespaces[qrng.randrange(args.namespaces)], f"thr-{name[:6]}-{i}",
                         make_value(qrng, i, prefix="thr-")) for i in range(4000)]
                embed.prepare([v["text"] for _, _, v in puts])
                ops, failed = threaded(stores[name], cases, puts, args.threads,
                                       args.thread_seconds)
                rates_threaded[name] = f"{ops:,.0f}" + (f" ({failed} failed)" if failed else "")
                print(f"  {args.threads} threads on {name}: {ops:,.0f} ops/s", flush=True)
    load_after = os.getloadavg()

    base = "PostgresStore" if "PostgresStore" in samples else next(
        n for n in samples if n.startswith("SqliteStore"))
    headers = ["figure", *samples]
    rows = []
    for figure, label in FIGURES:
        row: list[object] = [label]
        for name in samples:
            values = samples[name][figure]
            if not values:
                row.append("-")
            elif figure.endswith("recall"):
                row.append(f"{sum(values) / len(values):.3f}")
            else:
                ms = median(values) * 1000
                ref = samples[base][figure]
                if name == base or not ref:
                    row.append(f"{ms:.2f} ms")
                else:
                    row.append(f"{ms:.2f} ms ({ms / (median(ref) * 1000):.2f}x)")
        rows.append(row)
    rows.append(["load, items/s (batches of "f"{args.batch})",
                 *(f"{rates[n]:,.0f}" for n in samples)])
    if rates_threaded:
        rows.append([f"{args.threads} threads, mixed get/search/put, ops/s",
                     *(rates_threaded.get(n, "-") for n in samples)])
    pg_note = ""
    if "PostgresStore" in samples:
        pg_note = (f"; PostgresStore: HNSW m={args.pg_m}, ef_construction="
                   f"{args.pg_ef_construction}, hnsw.ef_search={args.pg_ef_search}, "
                   f"iterative_scan={args.pg_iterative_scan}")
    print()
    print(f"### {args.items:,} items in {args.namespaces} namespaces, {args.dims}-d "
          f"precomputed vectors, {args.rounds} rounds of {args.queries} calls a figure, "
          f"ratios = time / {base}'s{pg_note}\n")
    print(table(headers, rows))
    print()
    print(f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} "
          f"{load_before[2]:.2f}; after: {load_after[0]:.2f} {load_after[1]:.2f} "
          f"{load_after[2]:.2f} ({os.cpu_count()} cores)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=10_000, help="items (default 10,000)")
    parser.add_argument("--namespaces", type=int, default=10, help="namespaces (default 10)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--queries", type=int, default=30,
                        help="calls of each figure per store per round (default 30)")
    parser.add_argument("--dims", type=int, default=384, help="vector size (default 384)")
    parser.add_argument("--batch", type=int, default=500,
                        help="puts per batch when loading (default 500)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--threads", type=int, default=8,
                        help="threads of the mixed figure, after the rounds (0: skip; "
                             "default 8)")
    parser.add_argument("--thread-seconds", type=float, default=20.0,
                        help="how long the threads run on each store (default 20)")
    parser.add_argument("--server", action="store_true",
                        help="also ChromaStore.from_url on a throwaway `chroma run`")
    parser.add_argument("--no-floor", action="store_true",
                        help="skip the raw Chroma calls (each figure's floor)")
    parser.add_argument("--no-postgres", action="store_true",
                        help="skip PostgresStore; ratios against SqliteStore")
    parser.add_argument("--pg-bin", default=None,
                        help="folder with initdb and pg_ctl (default: PATH, then "
                             "/usr/lib/postgresql/*/bin)")
    parser.add_argument("--pg-ef-search", type=int, default=1000,
                        help="hnsw.ef_search for PostgresStore's searches (default 1000, "
                             "pgvector's maximum; its own default is 40)")
    parser.add_argument("--pg-iterative-scan", default="off",
                        choices=("off", "relaxed_order", "strict_order"),
                        help="hnsw.iterative_scan (pgvector >= 0.8; default off)")
    parser.add_argument("--pg-m", type=int, default=16, help="HNSW m (default 16)")
    parser.add_argument("--pg-ef-construction", type=int, default=64,
                        help="HNSW ef_construction (default 64)")
    parser.add_argument("--tmp", default="/dev/shm",
                        help="where the stores' folders go (default /dev/shm, a tmpfs)")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
