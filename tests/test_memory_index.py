"""Every operation reads the profile from the store: another process's write is in the next
read, and nothing is kept between operations (``memory/index/store_io.py``).

Two ``AgentMemory`` objects over one store stand for two processes: every write of one must
be visible to the next read of the other.
"""

# ruff: noqa: F811 - pytest fixtures imported from test_memory_support are redefined as parameters

from __future__ import annotations

from typing import Any

import pytest
from chroma_calls import Calls
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore
from test_memory_support import embed, make_store, texts  # noqa: F401 - fixtures

from langmem_edge.memory import AgentMemory
from langmem_edge.memory.core.layout import ProfileLayout


def two(make_store, **kw):
    store = make_store(path="shared")
    other = make_store(path="shared")
    return AgentMemory(store, **kw), AgentMemory(other, **kw), store


def test_writes_of_one_process_are_seen_by_the_next_read_of_another(make_store) -> None:
    a, b, _ = two(make_store)
    pa, pb = a.profile("p"), b.profile("p")
    pb.recall("warm up the index")
    rec = pa.remember("Keeps bees in the garden", key="hobby.bees")
    assert texts(pb.recall("bees garden", fill=False)) == [rec.text]  # keyword + vector
    assert texts(pb.recall("hobby.bees", fill=False)) == [rec.text]  # key channel
    assert [m.id for m in pb.list().memories] == [rec.id]
    new = pa.update(rec.id, text="Keeps bees and hens")
    assert [m.id for m in pb.history("hobby.bees")] == [rec.id, new.id]
    pa.forget(new.id)
    assert pb.recall("bees hens").count == 0
    assert pb.list().memories == []
    other = pa.remember("Grows tomatoes")
    pb.recall("tomatoes")
    assert pa.delete(other.id)
    assert pb.recall("tomatoes").count == 0 and pb.get(other.id) is None
    assert pb.list(status="all").memories[-1].id == new.id


def test_delete_profile_is_seen_by_other_processes(make_store) -> None:
    a, b, _ = two(make_store)
    a.profile("p").remember("Speaks Finnish")
    assert b.profile("p").recall("Finnish").count == 1
    a.delete_profile("p")
    assert b.profile("p").recall("Finnish").count == 0
    assert b.profile("p").list(status="all").memories == []
    b.profile("p").remember("Speaks Swedish")
    assert texts(a.profile("p").recall("Swedish", fill=False)) == ["Speaks Swedish"]


def test_relevance_fill_sees_other_processes_writes(make_store) -> None:
    a, b, _ = two(make_store)
    pb = b.profile("p")
    pb.remember("Anchor memory about violins")
    extra = a.profile("p").remember("Some other note")
    res = pb.recall("violins", limit=5)
    assert extra.id in {c.id for c in res.candidates if not c.matched}


def test_a_record_written_behind_the_memorys_back_is_in_the_next_read(make_store) -> None:
    a, _, store = two(make_store)
    p = a.profile("p")
    first = p.remember("Plays chess")
    layout = ProfileLayout(a.namespace, "p")
    value = dict(store.get(layout.memories, first.id).value)
    value.update(id="f" * 32, text="Collects old maps", embedding_status="skipped")
    store.put(layout.memories, value["id"], value, index=False)  # no vector: keyword only
    assert texts(p.recall("old maps", fill=False)) == ["Collects old maps"]


class Recorded(InMemoryStore):
    """Keeps the ops of every batch."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[Any]] = []

    def batch(self, ops: Any) -> Any:
        self.batches.append(list(ops))
        return super().batch(self.batches[-1])


def test_a_recall_reads_the_profile_and_searches_in_one_batch() -> None:
    store = Recorded()
    memory = AgentMemory(store)
    p = memory.profile("p")
    p.remember("Keeps bees in the garden")
    store.batches.clear()
    assert texts(p.recall("bees garden", fill=False)) == ["Keeps bees in the garden"]
    assert len(store.batches) == 1  # records and access counts (no vectors here)
    layout = ProfileLayout(memory.namespace, "p")
    prefixes = [op.namespace_prefix for op in store.batches[0]]
    assert prefixes == [layout.memories, layout.access]
    assert not any(isinstance(op, PutOp) for op in store.batches[0])
    assert not hasattr(memory, "_indexes")  # nothing of the profile kept between calls


def test_bumps_of_a_memory_deleted_meanwhile_are_dropped(make_store) -> None:
    a, b, store = two(make_store)
    rec = a.profile("p").remember("Plays the oboe")
    a.profile("p").recall("oboe")  # pending: written behind
    b.profile("p").delete(rec.id)
    assert a.flush() == 0  # nothing written under the deleted memory
    assert store.search(ProfileLayout(a.namespace, "p").access, limit=10) == []


def test_a_deleted_profile_gets_no_count_items_back(make_store) -> None:
    a, b, store = two(make_store)
    a.profile("p").remember("Plays the harp")
    a.profile("p").recall("harp")
    b.delete_profile("p")
    left = store.search(("langmem_edge",), limit=10)
    assert a.flush() == 0 and left == []
    assert a.list_profiles() == []


def test_counts_of_several_processes_add_up(make_store) -> None:
    a, b, _ = two(make_store)
    rec = a.profile("p").remember("Restores old clocks")
    a.profile("p").recall("clocks")
    b.profile("p").recall("clocks")
    b.profile("p").recall("old clocks")
    a.flush()
    b.flush()
    assert AgentMemory(a.store).profile("p").get(rec.id).access_count == 3
    assert a.profile("p").get(rec.id).access_count == 3


def test_access_counts_are_written_behind(make_store) -> None:
    a, b, store = two(make_store)
    pa = a.profile("p")
    rec = pa.remember("Restores old clocks")
    pa.recall("old clocks")
    pa.recall("clocks")
    assert pa.get(rec.id).access_count == 2  # this process sees its pending bumps
    raw = store.get(ProfileLayout(a.namespace, "p").memories, rec.id)
    assert raw.value.get("access_count", 0) == 0  # not written yet: recalls only read
    assert b.profile("p").get(rec.id).access_count == 0
    assert a.flush() == 1
    assert b.profile("p").get(rec.id).access_count == 2
    assert pa.get(rec.id).access_count == 2 and a.flush() == 0
    pa.recall("clocks")
    pa.remember("Unrelated write")  # a write of the profile flushes too
    assert b.profile("p").get(rec.id).access_count == 3


def test_access_flush_seconds_zero_writes_on_every_recall(make_store) -> None:
    a, b, _ = two(make_store, config={"recall": {"access_flush_seconds": 0}})
    rec = a.profile("p").remember("Repairs bicycles")
    a.profile("p").recall("bicycles")
    assert b.profile("p").get(rec.id).access_count == 1


def test_text_terms_are_the_analysers_terms() -> None:
    from langmem_edge.memory.index.profile_index import text_terms
    from langmem_edge.retrieval.text import default_analyzer

    samples = [
        "The user's cat, Miso, prefers the 2nd shelf in Sept.",
        "Ｆｕｌｌ-width ＴＥＸＴ and ligatures ﬁne ﬂow",
        "東京に住んでいます and 北京 too",
        "naïve café\u00a0résumé — O\u2019Brien's 007 agents",
        "  leading/trailing\twhitespace\nand new-lines  ",
        "e\u0301clair vs \u00e9clair; x\u00b4y; 1st 22nd 0003",
        "",
    ]
    for text in samples:
        assert text_terms(text) == default_analyzer().terms(text), text


def test_access_writer_reserves_disjoint_totals_and_gives_back_a_failed_flush() -> None:
    from langmem_edge.memory.index.access import AccessWriter

    writer = AccessWriter()
    writer.bump(["m", "m"], 1.0, "t1")
    first = writer.start_flush(None, 0.0)[2]
    writer.bump(["m", "n"], 2.0, "t2")
    second = writer.start_flush(None, 0.0)[2]  # a flush beside the first
    assert first == [("m", 2, "t1")] and second == [("m", 3, "t2"), ("n", 1, "t2")]
    writer.release({"m": (2, "t1")}, 4.0)  # the first failed: its bumps go back to pending
    assert writer.total("m") == 1 and writer.pending("m") == (2, "t1")
    assert writer.pending_since == 4.0 and writer.own("m", None) == (3, "t2")
    assert writer.start_flush({"m"}, 0.0) == (writer.writer_id, {"m": (2, "t1")}, [("m", 3, "t1")])
    assert writer.own("m", (2, "t1")) == (3, "t2") and writer.own("m", (5, "t9")) == (5, "t9")
    writer.forget("m")
    assert writer.total("m") == 0
    writer.bump(["n", "n"], 5.0, "t4")
    assert writer.pending("n") == (2, "t4") and writer.pending_since == 5.0




def test_a_flush_after_an_older_read_keeps_the_bumps_it_cannot_judge() -> None:
    """Threads share a profile's access writer: a flush whose read began before another
    thread's recall counted a new memory keeps that bump pending; a read begun after the
    bump that does not find the memory means it was deleted, and drops it."""
    import time

    from langmem_edge.memory.index.access import AccessWriter

    writer = AccessWriter()
    older = time.monotonic()
    writer.bump(["new"], 1.0, "t1")
    assert writer.start_flush(set(), older)[1] == {} and writer.pending("new") == (1, "t1")
    assert writer.start_flush({"new"}, older)[1] == {"new": (1, "t1")}
    writer.bump(["gone"], 2.0, "t2")
    assert writer.start_flush(set(), time.monotonic())[1] == {}
    assert writer.pending("gone") is None and writer.pending_since is None


def test_a_large_profile_is_recalled_from_the_stores_candidates(tmp_path, monkeypatch) -> None:
    """Past ``WHOLE_READ_MAX`` records a recall asks ChromaStore to rank (vector, BM25) and
    reads the candidates: it finds what a whole read finds; a remember under a key reads
    only that key's records and still supersedes."""
    from langmem_edge import ChromaStore
    from langmem_edge.memory.semantic import recall as recall_module
    from langmem_edge.testing import FakeEmbeddings

    store = ChromaStore.from_path(str(tmp_path / "s"), index={
        "dims": 32, "embed": FakeEmbeddings(32), "fields": ["text"]})
    memory = AgentMemory(store)
    p = memory.profile("p")
    p.remember_many([f"Note {i} about gardening and tools" for i in range(12)])
    bees = p.remember("Keeps bees on the roof", key="hobby.bees")
    queries = ["bees roof", "hobby.bees", "gardening tools", "Note 7"]
    whole = {q: [c.id for c in p.recall(q, fill=False).candidates] for q in queries}
    assert memory.size_hints.big("p", 5) is True and whole["bees roof"][0] == bees.id
    monkeypatch.setattr(recall_module, "WHOLE_READ_MAX", 5)
    big = {q: [c.id for c in p.recall(q, fill=False).candidates] for q in queries}
    assert memory.size_hints.big("p", recall_module.WHOLE_READ_MAX) is True
    # the same memories, the best first (ties may order otherwise: BM25 is the store's)
    assert {q: sorted(ids) for q, ids in big.items()} == {q: sorted(ids) for q, ids in
                                                          whole.items()}
    # "gardening tools" matches the twelve notes alike: ties, left out of the best-first check
    assert {q: big[q][0] for q in queries[:2] + queries[3:]} == {
        q: whole[q][0] for q in queries[:2] + queries[3:]}
    filled = p.recall("bees roof", limit=20)
    assert filled.candidates[0].id == bees.id and len(filled.candidates) == 13
    from langmem_edge.memory.semantic import context as context_module

    monkeypatch.setattr(context_module, "WRITE_WHOLE_MAX", 5)
    calls = Calls(store)
    hens = p.remember("Keeps hens now", key="hobby.bees")  # big: reads the key's records
    # no profile read: the key's records, the store's nearest (none close enough to read),
    # the record, the key settled
    assert calls.names == ["get", "get", "upsert", "get", "update"]
    calls.stop()
    assert hens.supersedes == [bees.id] and p.get(bees.id).status == "superseded"
    assert p.recall("hens roof", fill=False).candidates[0].id == hens.id
    assert bees.id not in [c.id for c in p.recall("bees roof", fill=False).candidates]
    store.close()


def test_a_write_without_a_key_past_its_bound_reads_only_close_candidates(
        tmp_path, monkeypatch) -> None:
    """Past ``UNKEYED_WRITE_WHOLE_MAX`` records a remember without a key reads no profile:
    the store's nearest records, and of those only the ones close enough to be judged
    (``min_cosine``): a new topic is two Chroma calls, a restatement still replaces."""
    from langmem_edge import ChromaStore
    from langmem_edge.memory.semantic import context as context_module
    from langmem_edge.testing import FakeEmbeddings

    store = ChromaStore.from_path(str(tmp_path / "s"), index={
        "dims": 64, "embed": FakeEmbeddings(64), "fields": ["text"]})
    memory = AgentMemory(store)
    p = memory.profile("p")
    notes = p.remember_many([f"Note {i} about gardening and tools" for i in range(12)])
    p.recall("gardening")  # a whole read: the hints learn the profile's size
    assert memory.size_hints.big("p", 5) is True
    monkeypatch.setattr(context_module, "UNKEYED_WRITE_WHOLE_MAX", 5)
    calls = Calls(store, keep_kwargs=True)
    bike = p.remember("Bought a red bicycle yesterday")
    # the store's nearest (the profile's vectors alone, ranked in process), the record: no
    # value is read, of the profile or of a far memory
    assert calls.names == ["get", "upsert"]
    assert calls.kwargs[0]["include"] == ["embeddings"]
    calls.stop()
    again = p.remember("Note 3 about gardening and tools")  # a restatement: replaced
    assert again.supersedes == [notes[3].id] and p.get(notes[3].id).status == "superseded"
    assert p.get(bike.id).status == "active"
    # a process that has not read the profile takes the same route without a key
    fresh = AgentMemory(store, config={"verification": {"search_limit": 1}})
    calls = Calls(store, keep_kwargs=True)
    fresh.profile("p").remember("Sold the old lawnmower")
    # the store's nearest and the record
    assert calls.names == ["get", "upsert"]
    assert calls.kwargs[0]["include"] == ["embeddings"]
    calls.stop()
    store.close()


def test_a_fact_restated_many_times_keeps_one_active_record(tmp_path, monkeypatch) -> None:
    """Without the profile read, verification's candidates come from the store's nearest
    records, superseded versions too: after many restatements of one fact those fill the
    nearest; the search widens until it reaches the active one, so the next restatement
    still replaces it."""
    from langmem_edge import ChromaStore
    from langmem_edge.memory.semantic import context as context_module
    from langmem_edge.testing import FakeEmbeddings

    store = ChromaStore.from_path(str(tmp_path / "s"), index={
        "dims": 64, "embed": FakeEmbeddings(64), "fields": ["text"]})
    memory = AgentMemory(store, config={"verification": {"search_limit": 1}})
    p = memory.profile("p")
    p.remember_many([f"Note {i} about gardening and tools" for i in range(12)])
    p.recall("gardening")  # the hints learn the profile's size
    monkeypatch.setattr(context_module, "UNKEYED_WRITE_WHOLE_MAX", 5)
    asked = memory.config.verification.search_limit * 4 + 5  # nearest records asked first
    for _ in range(3 * asked):
        p.remember("The user lives in Berlin.")
    active = [r for r in p.list(limit=200) if r.text == "The user lives in Berlin."
              and r.status == "active"]
    assert len(active) == 1
    store.close()


def test_a_recall_ranks_the_vectors_read_with_the_profile_as_the_store_does(
        tmp_path, monkeypatch) -> None:
    """On ChromaStore a profile's read brings its records' vectors (``batch_vectors``): a
    recall is one Chroma call and a remember three (the read and the record's row, then the
    key's settling read only under a key), and both rank exactly as the store's own vector
    ranking (``nearest_keys``) does: same memories, same order, same scores."""
    from langmem_edge import ChromaStore
    from langmem_edge.memory.index import store_io
    from langmem_edge.testing import FakeEmbeddings

    store = ChromaStore.from_path(str(tmp_path / "s"), index={
        "dims": 32, "embed": FakeEmbeddings(32), "fields": ["text"]})
    memory = AgentMemory(store)
    p = memory.profile("p")
    p.remember_many([f"Note {i} about gardening, tools and {w}" for i, w in
                     enumerate(["bees", "roses", "soil", "rain", "sheds", "hens"] * 3)])
    calls = Calls(store)
    queries = ["bees on the roof", "garden soil after rain", "tools in the shed"]
    def vector_ranking(q: str) -> list[tuple[str, float | None]]:
        out = []
        for c in p.recall(q, fill=False).candidates:
            channel = c.breakdown.channels.get("vector")
            out.append((c.id, channel.raw if channel else None))
        return out

    read = {q: vector_ranking(q) for q in queries}
    # one read a recall: the active records with their vectors and the access counts
    assert calls.names == ["get"] * len(queries)
    calls.stop()
    with monkeypatch.context() as m:
        m.setattr(store_io, "reads_vectors", lambda store: False)
        by_store = {q: vector_ranking(q) for q in queries}
    for q in queries:
        assert [i for i, _ in read[q]] == [i for i, _ in by_store[q]]
        assert [s or 0.0 for _, s in read[q]] == pytest.approx(
            [s or 0.0 for _, s in by_store[q]], abs=1e-6)
    calls = Calls(store)
    p.remember("Planted tulips by the gate")
    assert calls.names == ["get", "upsert"]  # the read, then the record with the counts
    store.close()


def test_batch_vectors_returns_each_listed_items_first_vector(tmp_path) -> None:
    from langgraph.store.base import GetOp, SearchOp

    from langmem_edge import ChromaStore
    from langmem_edge.testing import FakeEmbeddings

    model = FakeEmbeddings(16)
    store = ChromaStore.from_path(str(tmp_path / "s"), index={
        "dims": 16, "embed": model, "fields": ["text"]})
    store.put(("a",), "x", {"text": "red apples"})
    store.put(("a",), "y", {"note": "no text"})
    store.put(("a",), "z", {"text": "green pears", "more": "ripe"}, index=["text", "more"])
    results, vectors = store.batch_vectors(
        [SearchOp(("a",), limit=10), GetOp(("a",), "x"), SearchOp(("a",), query="red")])
    assert set(vectors) == {0}
    by_key = {it.key: v for it, v in zip(results[0], vectors[0], strict=True)}
    assert by_key["y"] is None
    assert by_key["x"] == pytest.approx(model.embed_documents(["red apples"])[0], abs=1e-6)
    assert by_key["z"] == pytest.approx(model.embed_documents(["green pears"])[0], abs=1e-6)
    assert results[1].value == {"text": "red apples"} and results[2][0].key == "x"
    store.close()
    plain = ChromaStore.from_path(str(tmp_path / "p"))
    plain.put(("a",), "x", {"text": "red apples"})
    assert plain.batch_vectors([SearchOp(("a",))])[1] == {0: [None]}
    plain.close()
