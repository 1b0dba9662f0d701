"""How many Chroma calls a memory write makes (issue 34: a ``remember`` is its verification
read, its record and a keyed supersession), and what the calls saved may not cost: a
supersession applied to the record as stored, never to a stale copy, and only while it is
still active."""

from __future__ import annotations

from typing import Any

import pytest
from chroma_calls import Calls

from langmem_edge import ChromaStore
from langmem_edge.memory import AgentMemory
from langmem_edge.testing import FakeEmbeddings


@pytest.fixture()
def store(tmp_path: Any) -> Any:
    s = ChromaStore.from_path(str(tmp_path / "s"), index={
        "dims": 32, "embed": FakeEmbeddings(32), "fields": ["text"]})
    yield s
    s.close()


def test_access_counts_ride_in_the_remembers_write(store: ChromaStore) -> None:
    memory = AgentMemory(store)
    p = memory.profile("p")
    roses, *_ = p.remember_many(["Grows roses", "Keeps bees", "Rides a tandem"])
    assert roses.id in {c.id for c in p.recall("roses", fill=False).candidates}
    assert memory.access_writers  # a bump pending, written behind
    calls = Calls(store)
    p.remember("Bakes rye bread")
    assert calls.names == ["get", "upsert"]  # the read, then the record with the counts
    assert AgentMemory(store).profile("p").get(roses.id).access_count == 1  # another process


def test_a_keyed_supersession_is_the_stores_rewrite_of_the_record_as_stored(
        store: ChromaStore) -> None:
    memory = AgentMemory(store)
    p = memory.profile("p")
    old = p.remember("Lives in Oslo", key="home.city")
    calls = Calls(store)
    new = p.remember("Lives in Bergen", key="home.city")
    # read, record, the key's settling: its active records read and the old one's row
    # updated by the store (Chroma's update: a record deleted meanwhile stays deleted)
    assert calls.names == ["get", "upsert", "get", "update"]
    assert new.supersedes == [old.id]
    got = p.get(old.id)
    assert (got.status, got.superseded_by) == ("superseded", new.id)
    assert [m.id for m in p.list().memories] == [new.id]


def test_a_record_forgotten_meanwhile_is_not_superseded_nor_named(store: ChromaStore) -> None:
    """Another process forgets the old record between this remember's read and its write:
    it stays forgotten, and the new record does not claim to supersede it."""
    a, b = AgentMemory(store), AgentMemory(store)
    old = a.profile("p").remember("Lives in Oslo", key="home.city")
    calls = Calls(store)
    calls.before("upsert", lambda: b.profile("p").forget(old.id))
    new = a.profile("p").remember("Lives in Bergen", key="home.city")
    assert new.supersedes == []
    assert a.profile("p").get(new.id).supersedes == []  # rewritten without it
    got = b.profile("p").get(old.id)
    assert (got.status, got.superseded_by) == ("forgotten", None)


def test_a_record_deleted_meanwhile_stays_deleted(store: ChromaStore) -> None:
    a, b = AgentMemory(store), AgentMemory(store)
    old = a.profile("p").remember("Lives in Oslo", key="home.city")
    calls = Calls(store)
    calls.before("upsert", lambda: b.profile("p").delete(old.id))
    new = a.profile("p").remember("Lives in Bergen", key="home.city")
    assert b.profile("p").get(old.id) is None
    assert a.profile("p").get(new.id).supersedes == []
    assert [m.id for m in a.profile("p").list(status="all").memories] == [new.id]


def test_an_ingests_keyed_memory_rides_in_its_messages_write(store: ChromaStore) -> None:
    """A memory that supersedes a stored one by key rides in the messages' write; the old
    one is then marked by the key's settling in the store: 5 calls, not remember's path
    after it."""
    memory = AgentMemory(store)
    p = memory.profile("p")
    first = p.ingest([{"role": "user", "content": "My name is Ana."}], session_id="s1")
    if not any(m.key for m in first.memories_written):
        pytest.skip("the rules extracted no keyed memory from this message")
    calls = Calls(store)
    second = p.ingest([{"role": "user", "content": "My name is Bea."}], session_id="s2")
    keyed = [m for m in second.memories_written if m.key]
    assert keyed and keyed[0].supersedes == [m.id for m in first.memories_written if m.key]
    # session, profile, the batch's write (no read: its keys were read absent), the key's
    # settling (its active records read, the old one updated)
    assert calls.names == ["get", "get", "upsert", "get", "update"]
    assert p.get(first.memories_written[0].id).status == "superseded"
    assert [m.text for m in p.list().memories if m.key] == [keyed[0].text]


def test_put_existing_merges_changes_into_the_value_stored(store: ChromaStore) -> None:
    store.put(("m",), "a", {"text": "likes tea", "status": "active", "n": 1})
    store.put(("m",), "b", {"text": "likes jam", "status": "retired", "n": 1})
    done = store.put_existing([(("m",), "a", {"status": "old"}), (("m",), "b", {"status": "old"}),
                               (("m",), "c", {"status": "old"})],
                              merge=True, when={"status": "active"})
    assert done == [True, False, False]
    assert store.get(("m",), "a").value == {"text": "likes tea", "status": "old", "n": 1}
    assert store.get(("m",), "b").value["status"] == "retired"
    assert store.get(("m",), "c") is None
    assert [r.key for r in store.search(("m",), query="tea")][:1] == ["a"]  # vectors kept
    with pytest.raises(Exception, match="when must be a mapping"):
        store.put_existing([(("m",), "a", {"n": 2})], when=["status"])  # type: ignore[arg-type]


def test_access_counts_are_one_row_per_process_and_older_items_still_count(
        store: ChromaStore) -> None:
    from langmem_edge.memory.core.layout import ProfileLayout

    memory = AgentMemory(store)
    p = memory.profile("p")
    notes = p.remember_many(["Grows roses", "Keeps bees", "Rides a tandem", "Bakes rye"])
    for q in ["roses", "bees", "tandem", "rye bread", "roses and bees"]:
        p.recall(q, fill=False)
    memory.flush()
    layout = ProfileLayout(("langmem_edge",), "p")
    rows = store.search(layout.access, limit=100)
    assert [(r.namespace, r.key) for r in rows] == [(layout.access_by_writer,
                                                     memory.access_writers.get(("p",)).writer_id)]
    counted = rows[0].value["counts"]
    assert set(counted) <= {n.id for n in notes} and counted
    # another process's row counts too
    roses = notes[0]
    before = AgentMemory(store).profile("p").get(roses.id).access_count
    store.put(layout.access_by_writer, "another-process",
              {"profile": "p", "counts": {roses.id: [5, "2026-01-01T00:00:00+00:00"]}},
              index=False)
    fresh = AgentMemory(store).profile("p")
    assert fresh.get(roses.id).access_count == before + 5
    assert {c.id: c for c in fresh.list().memories}[roses.id].access_count == before + 5


def test_a_two_message_ingest_is_three_calls(store: ChromaStore) -> None:
    """The session's read (with the messages' ids), the profile's read, and one write of the
    messages, the session record, the extracted memory, the log's entry and marker and the
    pending access counts."""
    memory = AgentMemory(store)
    p = memory.profile("p")
    p.remember_many(["Grows roses", "Keeps bees"])
    assert p.recall("roses", fill=False).count  # an access count pending
    calls = Calls(store)
    done = p.ingest([{"role": "user", "content": "I love sailing on the fjord."},
                     {"role": "assistant", "content": "Noted."}], session_id="s1")
    assert done.messages_added == 2 and done.memories_written
    assert calls.names == ["get", "get", "upsert"]
    other = AgentMemory(store).profile("p")  # another process sees every row
    assert [m.content for m in other.episodic.messages("s1")] == [
        "I love sailing on the fjord.", "Noted."]
    assert {m.id for m in done.memories_written} <= {m.id for m in other.list().memories}
    assert other.episodic.search("sailing fjord", limit=1)[0].content.startswith("I love sail")


async def test_the_async_twins_take_the_same_calls(store: ChromaStore) -> None:
    memory = AgentMemory(store)
    p = memory.profile("p")
    old = await p.aremember("Lives in Oslo", key="home.city")
    assert (await p.arecall("Oslo", fill=False)).count
    calls = Calls(store)
    new = await p.aremember("Lives in Bergen", key="home.city")
    assert calls.names == ["get", "upsert", "get", "update"]
    assert new.supersedes == [old.id]
    assert (await p.aget(old.id)).status == "superseded"
    assert (await p.aget(old.id)).access_count == 1  # the recall's count rode in the write


def test_rewrite_matching_reads_decides_and_updates_in_two_calls(store: ChromaStore) -> None:
    store.put(("m",), "a", {"text": "likes tea", "k": "drink", "status": "active"})
    store.put(("m",), "b", {"text": "likes coffee", "k": "drink", "status": "active"})
    store.put(("m",), "c", {"text": "likes jam", "k": "food", "status": "active"})
    store.put(("m", "deeper"), "d", {"text": "a deeper note", "k": "drink", "status": "active"})
    seen: list[str] = []

    def keep_newest(items: list[Any]) -> dict[str, dict[str, Any]]:
        seen.extend(sorted(it.key for it in items))
        newest = max((it.key for it in items), default=None)
        return {it.key: {"status": "old", "by": newest} for it in items if it.key != newest}

    calls = Calls(store)
    done = store.rewrite_matching(("m",), {"k": "drink", "status": "active"}, keep_newest)
    assert calls.names == ["get", "update"]
    assert seen == ["a", "b"]  # the namespace itself, the filter applied
    assert done == {"a": {"text": "likes tea", "k": "drink", "status": "old", "by": "b"}}
    assert store.get(("m",), "a").value["status"] == "old"
    assert [r.key for r in store.search(("m",), query="tea", limit=1)] == ["a"]  # vectors kept
    assert store.get(("m", "deeper"), "d").value["status"] == "active"
    calls.names.clear()
    assert store.rewrite_matching(("m",), {"k": "none"}, keep_newest) == {}
    assert calls.names == ["get"]  # nothing matched: no write
    with pytest.raises(Exception, match="changes"):
        store.rewrite_matching(("m",), {"k": "food"}, lambda items: {"zz": {"status": "x"}})


def test_a_count_of_a_memory_superseded_before_its_flush_is_kept(store: ChromaStore) -> None:
    """A write reads active records only: a recalled memory that another process superseded
    before this one flushed its bump is absent from that read, not deleted; its count is
    written all the same."""
    memory = AgentMemory(store)
    p = memory.profile("p")
    old = p.remember("Lives in Oslo", key="home.city")
    assert p.recall("Oslo", fill=False).candidates[0].id == old.id  # a bump, pending
    AgentMemory(store).profile("p").remember("Lives in Bergen", key="home.city")
    p.remember("Keeps bees")  # its write flushes the bump
    got = AgentMemory(store).profile("p").get(old.id)
    assert (got.status, got.access_count) == ("superseded", 1)


def test_replacing_working_notes_reads_only_the_appended_lines(store: ChromaStore) -> None:
    """A replace folds the appended lines away: it reads them (one search), not the notes it
    replaces, then writes the notes and deletes the lines."""
    w = AgentMemory(store).profile("p").working
    w.set_context("t", "first")
    w.set_context("t", "second", mode="append")
    calls = Calls(store)
    assert w.set_context("t", "fresh") == "fresh"
    assert calls.names == ["get", "get", "delete", "upsert"]  # lines; put: read, delete, write
    calls.stop()
    assert AgentMemory(store).profile("p").working.get_context("t") == "fresh"
    calls = Calls(store)
    w.set_context("t", "again")
    assert calls.names == ["get", "get", "upsert"]  # no lines: nothing deleted
