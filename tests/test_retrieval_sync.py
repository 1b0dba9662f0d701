"""The keyword index's change protocol: exact after any client's write, on Chroma too."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from langmem_edge.retrieval.chroma_sync import (
    ChromaKeywordSource,
    SyncWriter,
    namespace_from_metadata,
    purge_sync_rows,
)
from langmem_edge.retrieval.index import (
    ChangeSet,
    KeywordIndex,
    KeywordRow,
    Marker,
    Tombstone,
    decode_document,
    encode_document,
)

# ----------------------------------------------------------------- a fake source


class FakeSource:
    """An in-memory KeywordSource that follows the protocol and counts calls."""

    def __init__(self) -> None:
        self.rows: dict[str, tuple[KeywordRow, str, int]] = {}
        self.tombs: dict[str, tuple[str, int]] = {}
        self.marks: dict[str, Marker] = {}
        self.calls: list[str] = []

    def put(self, writer: str, seq: int, row: KeywordRow, *, settle: bool = True) -> None:
        self.marks[writer] = Marker(seq, settled=False)  # the marker goes first
        self.rows[row.id] = (row, writer, seq)
        if settle:
            self.marks[writer] = Marker(seq)

    def delete(self, writer: str, seq: int, doc_id: str) -> None:
        self.marks[writer] = Marker(seq, settled=False)
        self.tombs[doc_id] = (writer, seq)
        self.rows.pop(doc_id, None)
        self.marks[writer] = Marker(seq)

    def markers(self) -> dict[str, Marker]:
        self.calls.append("markers")
        return dict(self.marks)

    def changes(self, since: Mapping[str, int] | None) -> ChangeSet:
        self.calls.append("full" if since is None else "delta")
        if since is None:
            return ChangeSet(rows=[r for r, _, _ in self.rows.values()])
        rows = [r for r, w, s in self.rows.values() if w in since and s > since[w]]
        tombs = [Tombstone(i) for i, (w, s) in self.tombs.items() if w in since and s > since[w]]
        return ChangeSet(rows, tombs)

    def existing(self, ids: Sequence[str]) -> set[str]:
        self.calls.append("existing")
        return {i for i in ids if i in self.rows}


def row(doc_id: str, text: str, ns: tuple[str, ...] = ("u",), key: str | None = None) -> KeywordRow:
    return KeywordRow(doc_id, ns, key or doc_id, encode_document({"text": text}))


def ids(hits: list[tuple[str, float]]) -> list[str]:
    return [h[0] for h in hits]


def test_a_writer_that_died_mid_write_is_fetched_until_settled() -> None:
    """Issue 10: a writer killed after its rows and before its marker used to leave rows no
    running reader ever fetched. The marker now goes first, unsettled, and readers keep
    fetching that writer's unconfirmed write at every sync."""
    src = FakeSource()
    src.put("w1", 1, row("a", "apples"))
    index = KeywordIndex(src)
    index.sync()
    # w2 announces write 1, then "dies" before its row lands
    src.marks["w2"] = Marker(1, settled=False)
    index.sync()
    assert ids(index.search_keyword("pears")) == []
    src.rows["b"] = (row("b", "pears"), "w2", 1)  # the row lands later (or was half-written)
    index.sync()
    assert ids(index.search_keyword("pears")) == ["b"]
    src.calls.clear()
    index.sync()  # still unsettled: fetched again (cheap), never given up
    assert src.calls == ["markers", "delta"]
    src.marks["w2"] = Marker(1)  # settled (by purge_sync_rows for a dead writer)
    index.sync()
    src.calls.clear()
    index.sync()
    assert src.calls == ["markers"]


def test_unchanged_markers_cost_one_read() -> None:
    src = FakeSource()
    src.put("w1", 1, row("a", "apples"))
    index = KeywordIndex(src)
    assert index.sync().kind == "full"
    src.calls.clear()
    assert index.sync().kind == "unchanged"
    assert src.calls == ["markers"]
    assert ids(index.search_keyword("apple")) == ["a"]


def test_delta_fetches_only_what_changed_and_sees_every_writer() -> None:
    src = FakeSource()
    src.put("w1", 1, row("a", "apples"))
    index = KeywordIndex(src)
    index.sync()
    src.put("w2", 1, row("b", "apples and pears"))  # a writer the reader never saw
    src.put("w1", 2, row("a", "bananas"))  # an update
    src.calls.clear()
    stats = index.sync()
    assert (stats.kind, stats.rows) == ("delta", 2)
    assert src.calls == ["markers", "delta"]
    assert ids(index.search_keyword("apple")) == ["b"]
    assert ids(index.search_keyword("banana")) == ["a"]


def test_tombstones_remove_only_items_that_are_really_gone() -> None:
    src = FakeSource()
    src.put("w1", 1, row("a", "apples"))
    src.put("w1", 2, row("b", "apples"))
    index = KeywordIndex(src)
    index.sync()
    src.delete("w1", 3, "a")
    src.delete("w1", 4, "b")
    src.put("w2", 1, row("b", "apples again"))  # re-put by another process after the delete
    stats = index.sync()
    assert stats.removed == 1
    assert ids(index.search_keyword("apple")) == ["b"]
    assert ids(index.search_key("a")) == []


def test_stale_index_reloads_fully() -> None:
    now = [0.0]
    src = FakeSource()
    src.put("w1", 1, row("a", "apples"))
    index = KeywordIndex(src, full_reload_after=100, clock=lambda: now[0] + 1000)
    index.sync()
    now[0] += 50
    assert index.sync().kind == "unchanged"
    now[0] += 500
    src.calls.clear()
    assert index.sync().kind == "full"
    assert "delta" not in src.calls


def test_documents_round_trip_and_rows_without_text_are_key_only() -> None:
    doc = encode_document({"text": "héllo", "context": "x"})
    assert decode_document(doc) == {"text": "héllo", "context": "x"}
    assert decode_document("plain words") == {"$": "plain words"}
    assert decode_document("{not json") == {"$": "{not json"}
    assert decode_document(None) == {} and decode_document("") == {}
    index = KeywordIndex()
    index.apply([KeywordRow("k1", ("u",), "profile.favorite_color", None)])
    assert index.search_keyword("favorite color") == []
    assert ids(index.search_key("favorite color")) == ["k1"]
    index.apply(removed=["k1"])
    assert index.search_key("color") == []


def test_prefix_applies_inside_both_channels() -> None:
    index = KeywordIndex()
    index.apply(
        [
            row("a", "apples", ("u", "alice"), "fruit.apple"),
            row("b", "apples", ("u", "bob"), "fruit.apple"),
        ]
    )
    assert ids(index.search_keyword("apple", namespace_prefix=("u", "alice"))) == ["a"]
    assert ids(index.search_key("apple", namespace_prefix=("u", "bob"))) == ["b"]
    assert ids(index.search_keyword("apple", namespace_prefix=("u", "carol"))) == []


def test_namespace_from_metadata_layouts() -> None:
    assert namespace_from_metadata({"ns": "a\x1fb", "nd": 2}) == ("a", "b")
    assert namespace_from_metadata({"ns": "", "nd": 0}) == ()
    assert namespace_from_metadata({"n0": "a", "n1": "b", "nd": 2}) == ("a", "b")


# ----------------------------------------------------------------- raw Chroma


def put_items(
    items: Any, sync: Any, writer: SyncWriter, rows: list[tuple[str, tuple[str, ...], str, str]]
) -> None:
    """What the store does on put: stamped item rows, then the writer's marker."""
    seq = writer.next_seq()
    items.upsert(
        ids=[r[0] for r in rows],
        embeddings=[[1.0] for _ in rows],
        documents=[encode_document({"text": r[3]}) for r in rows],
        metadatas=[
            {"ns": "\x1f".join(r[1]), "nd": len(r[1]), "k": r[2], **writer.stamp(seq)} for r in rows
        ],
    )
    sync.upsert(**writer.marker(seq))


def delete_items(items: Any, sync: Any, writer: SyncWriter, doc_ids: list[str]) -> None:
    """What the store does on delete: tombstones, the delete, then the marker."""
    seq = writer.next_seq()
    sync.upsert(**writer.tombstones(doc_ids, seq))
    items.delete(ids=doc_ids)
    sync.upsert(**writer.marker(seq))


def collections(client: Any) -> tuple[Any, Any, str]:
    tag = uuid.uuid4().hex[:8]
    items = client.create_collection(f"items-{tag}", embedding_function=None)
    sync = client.create_collection(f"sync-{tag}", embedding_function=None)
    return items, sync, tag


def exercise(reader_items: Any, reader_sync: Any, writer_items: Any, writer_sync: Any) -> None:
    """A reader's index must reflect each write of another client on its next sync."""
    index = KeywordIndex(ChromaKeywordSource(reader_items, reader_sync))
    other = SyncWriter()
    put_items(
        writer_items,
        writer_sync,
        other,
        [
            ("a", ("u", "alice"), "note.garden", "Alice planted tulips"),
            ("b", ("u", "bob"), "note.garden", "Bob planted tulips"),
        ],
    )
    index.sync()
    assert ids(index.search_keyword("tulip", namespace_prefix=("u", "alice"))) == ["a"]
    assert ids(index.search_key("garden", namespace_prefix=("u",))) == ["a", "b"]
    # an update by the other client is visible to the very next search
    put_items(
        writer_items,
        writer_sync,
        other,
        [("a", ("u", "alice"), "note.garden", "Alice sowed roses")],
    )
    assert index.sync().kind == "delta"
    assert ids(index.search_keyword("tulips", namespace_prefix=("u", "alice"))) == []
    assert ids(index.search_keyword("roses", namespace_prefix=("u", "alice"))) == ["a"]
    # a delete too
    delete_items(writer_items, writer_sync, other, ["b"])
    stats = index.sync()
    assert stats.removed == 1
    assert ids(index.search_keyword("tulips")) == []
    assert ids(index.search_key("garden")) == ["a"]
    # a second writer (another process) interleaving
    third = SyncWriter()
    put_items(writer_items, writer_sync, third, [("c", ("u", "carol"), "k", "Carol likes roses")])
    put_items(writer_items, writer_sync, other, [("d", ("u", "dave"), "k", "Dave likes roses")])
    index.sync()
    assert ids(index.search_keyword("roses")) == ["a", "c", "d"]  # equal scores: id order
    assert index.sync().kind == "unchanged"
    # a fresh reader (a process starting now) loads the same state
    fresh = KeywordIndex(ChromaKeywordSource(reader_items, reader_sync))
    fresh.sync()
    assert ids(fresh.search_keyword("roses")) == ids(index.search_keyword("roses"))


def test_embedded_second_client_writes_are_seen(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False)
    reader = chromadb.PersistentClient(path=str(tmp_path), settings=settings)
    writer = chromadb.PersistentClient(path=str(tmp_path), settings=settings)
    items, sync, tag = collections(reader)
    exercise(
        items, sync, writer.get_collection(f"items-{tag}"), writer.get_collection(f"sync-{tag}")
    )


def test_full_load_pages_through_large_collections(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(
        path=str(tmp_path), settings=Settings(anonymized_telemetry=False)
    )
    items, sync, _ = collections(client)
    writer = SyncWriter()
    put_items(
        items,
        sync,
        writer,
        [(f"r{i}", ("u",), f"k{i}", f"row number {i} apple") for i in range(25)],
    )
    index = KeywordIndex(ChromaKeywordSource(items, sync, page_size=10))
    assert index.sync().rows == 25
    assert len(index.search_keyword("apple")) == 25
    assert purge_sync_rows(sync, older_than=-1, keep_writer=writer.writer_id) == 0
    delete_items(items, sync, writer, ["r0"])
    assert purge_sync_rows(sync, older_than=-1, keep_writer=writer.writer_id) == 1
    assert purge_sync_rows(sync, older_than=-1) == 1  # now the marker too


def test_a_delete_during_a_full_load_skips_no_other_row(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Regression: the full load paged by offset (retried when markers moved, at most 3
    times); a row of the first page deleted in between shifted the rest back, and the row
    that crossed the page boundary was in neither page, never fetched by a later delta."""
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(
        path=str(tmp_path), settings=Settings(anonymized_telemetry=False)
    )
    items, sync, _ = collections(client)
    writer = SyncWriter()
    put_items(items, sync, writer,
              [(f"r{i}", ("u",), f"k{i}", f"row number {i} apple") for i in range(25)])
    deleted: list[str] = []

    def call(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
        got = fn(*args, **kwargs)
        if kwargs.get("limit") == 10 and kwargs.get("offset", 0) == 0 and len(deleted) < 3:
            deleted.append(got["ids"][0])  # each first page read: one of it deleted
            delete_items(items, sync, writer, deleted[-1:])
        return got

    index = KeywordIndex(ChromaKeywordSource(items, sync, call=call, page_size=10))
    index.sync()
    index.sync()  # the delta after the deletes
    assert {i for i, _ in index.search_keyword("apple", limit=100)} == {
        f"r{i}" for i in range(25)} - set(deleted)


@pytest.mark.server
def test_server_other_clients_and_processes_are_seen(chroma_server_url: str) -> None:
    from langmem_edge._chroma import open_http_client

    reader = open_http_client(chroma_server_url)
    writer = open_http_client(chroma_server_url)
    items, sync, tag = collections(reader)
    exercise(
        items, sync, writer.get_collection(f"items-{tag}"), writer.get_collection(f"sync-{tag}")
    )
    # a write from a separate OS process
    index = KeywordIndex(ChromaKeywordSource(items, sync))
    index.sync()
    host, port = chroma_server_url.rsplit(":", 1)
    script = textwrap.dedent(f"""
        import chromadb
        from chromadb.config import Settings
        from langmem_edge.retrieval.chroma_sync import SyncWriter
        from langmem_edge.retrieval.index import encode_document
        c = chromadb.HttpClient(host={host.split("//")[1]!r}, port={int(port)},
                                settings=Settings(anonymized_telemetry=False))
        items = c.get_collection("items-{tag}")
        sync = c.get_collection("sync-{tag}")
        w = SyncWriter()
        s = w.next_seq()
        items.upsert(ids=["p"], embeddings=[[1.0]],
                     documents=[encode_document({{"text": "written by a subprocess"}})],
                     metadatas=[{{"ns": "u\\x1fzed", "nd": 2, "k": "proc.note", **w.stamp(s)}}])
        sync.upsert(**w.marker(s))
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    assert index.sync().kind == "delta"
    assert ids(index.search_keyword("subprocess", namespace_prefix=("u", "zed"))) == ["p"]
