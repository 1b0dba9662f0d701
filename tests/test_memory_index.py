"""The per-process profile index stays exact across processes (change log in the store).

Two ``AgentMemory`` objects over one store stand for two processes: each keeps its own index,
and every write of one must be visible to the next read of the other.
"""

# ruff: noqa: F811 - pytest fixtures imported from test_memory_support are redefined as parameters

from __future__ import annotations

import time
from typing import Any

import pytest
from langgraph.store.base import PutOp, SearchOp
from langgraph.store.memory import InMemoryStore
from test_memory_support import embed, make_store, texts  # noqa: F401 - fixtures

from langmem_edge.memory import AgentMemory
from langmem_edge.memory.core.plans import run_sync
from langmem_edge.memory.index.changes import plan_prune


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


def _writer_searches(store, call) -> int:
    """Searches of the markers' namespace (``(*R, "writers")``) ``store``'s class saw during
    ``call`` (the class's ``batch`` wrapped while it runs: nothing else runs then)."""
    seen: list[Any] = []
    cls = type(store)
    inner = cls.batch

    def recording(self, ops):
        ops = list(ops)
        seen.extend(ops)
        return inner(self, ops)

    cls.batch = recording
    try:
        call()
    finally:
        cls.batch = inner
    return sum(1 for op in seen if isinstance(op, SearchOp) and op.namespace_prefix[-1:]
               == ("writers",))


def test_a_sync_reads_known_markers_by_key_and_searches_when_a_writer_is_new(make_store
                                                                            ) -> None:
    a, reader, store = two(make_store)
    b = AgentMemory(make_store(path="shared"))
    pa, pr, pb = a.profile("p"), reader.profile("p"), b.profile("p")
    pa.remember("Keeps bees in the garden")
    assert _writer_searches(reader.store, lambda: pr.recall("bees")) == 1  # first: a full load
    pr.recall("bees")  # learns the roster stamp
    assert _writer_searches(reader.store, lambda: pr.recall("bees")) == 0  # nothing new
    gamma = pa.remember("Grows tomatoes on the balcony")  # a known writer: its marker by key
    found: list[Any] = []
    assert _writer_searches(reader.store, lambda: found.extend(
        texts(pr.recall("tomatoes balcony", fill=False)))) == 0
    assert found == [gamma.text]
    kites = pb.remember("Flies kites on the beach")  # a new writer: the stamp changes
    found.clear()
    assert _writer_searches(reader.store, lambda: found.extend(
        texts(pr.recall("kites beach", fill=False)))) == 1
    assert found == [kites.text]
    assert _writer_searches(reader.store, lambda: pr.recall("kites")) == 0


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


def test_a_stale_index_reloads(make_store) -> None:
    a, _, store = two(make_store)
    p = a.profile("p")
    p.remember("Plays chess")
    index = a._index("p")
    synced = index.synced_at
    assert synced is not None
    # a record written behind the memory's back (no change entry, no vector) is only
    # found by the keyword channel once the index reloads
    value = dict(index.values[next(iter(index.values))])
    value.update(id="f" * 32, text="Collects old maps", embedding_status="skipped")
    store.put(index.layout.memories, value["id"], value, index=False)
    assert p.recall("old maps", fill=False).count == 0
    index.synced_at = synced - 10 * 3600  # older than the retention
    assert texts(p.recall("old maps", fill=False)) == ["Collects old maps"]


def test_change_log_is_pruned(make_store) -> None:
    config = {
        "index": {
            "retention_seconds": 5,
            "reload_after_seconds": 2,
            "prune_interval_seconds": 0.01,
        }
    }
    a, _, store = two(make_store, config=config)
    p = a.profile("p")
    p.remember("First note")
    index = a._index("p")
    changes = index.layout.changes
    assert store.search(changes, limit=100)
    run_sync(plan_prune(store, index, time.time() + 60))
    assert store.search(changes, limit=100) == []
    p.remember("Second note")
    assert len(store.search(changes, limit=100)) == 1
    assert [m.text for m in p.list().memories] == ["First note", "Second note"]


def test_access_counts_are_written_behind(make_store) -> None:
    a, b, store = two(make_store)
    pa = a.profile("p")
    rec = pa.remember("Restores old clocks")
    pa.recall("old clocks")
    pa.recall("clocks")
    assert pa.get(rec.id).access_count == 2  # this process sees its pending bumps
    raw = store.get(a._index("p").layout.memories, rec.id)
    assert raw.value["access_count"] == 0  # not written yet: recalls only read
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


# -- the index image (index/image.py) ---------------------------------------------------------

IMAGE_CONFIG = {"index": {"image_min_records": 5}}


class SearchLog:
    """Wraps a store; records the namespaces its searches read."""

    def __init__(self, inner):
        from langgraph.store.base import BaseStore

        class Logged(BaseStore):
            def __init__(self) -> None:
                self.index_config = getattr(inner, "index_config", None)
                self.searched: list[tuple[str, ...]] = []

            def batch(self, ops):
                from langgraph.store.base import SearchOp
                ops = list(ops)
                self.searched += [op.namespace_prefix for op in ops if isinstance(op, SearchOp)]
                return inner.batch(ops)

            async def abatch(self, ops):
                return self.batch(ops)

        self.store = Logged()

    def reads_records(self) -> bool:
        return any(ns[-1] == "memories" for ns in self.store.searched)


def _listing(p) -> list[tuple[str, str]]:
    return [(m.text, m.status) for m in p.list(status="all").memories]


def test_a_new_process_loads_a_large_profile_from_its_image(make_store) -> None:
    a = AgentMemory(make_store(path="shared"), config=IMAGE_CONFIG)
    pa = a.profile("p")
    pa.remember_many([f"Imported note number {i}" for i in range(7)])
    log = SearchLog(make_store(path="shared"))
    fresh = AgentMemory(log.store, config=IMAGE_CONFIG).profile("p")
    assert _listing(fresh) == _listing(pa)
    assert not log.reads_records()  # the image, not every record
    assert "Imported note number 3" in texts(fresh.recall("note number 3"))


def test_writes_after_the_image_are_seen_through_it(make_store) -> None:
    a = AgentMemory(make_store(path="shared"), config=IMAGE_CONFIG)
    b = AgentMemory(make_store(path="shared"), config=IMAGE_CONFIG)
    got = a.profile("p").remember_many(
        [{"text": "Lives in Paris", "key": "home.city"}, *(f"note {i}" for i in range(6))])
    pb = b.profile("p")
    pb.remember("Lives in Lyon", key="home.city")  # supersedes a record of the image
    pb.forget(got[1].id)
    pb.delete(got[2].id)
    pb.remember("Keeps bees")
    log = SearchLog(make_store(path="shared"))
    fresh = AgentMemory(log.store, config=IMAGE_CONFIG).profile("p")
    assert _listing(fresh) == _listing(pb)
    assert not log.reads_records()
    assert [m.text for m in fresh.history("home.city")] == ["Lives in Paris", "Lives in Lyon"]
    assert fresh.get(got[2].id) is None


def _shifted_clock(monkeypatch) -> dict[str, float]:
    """``time.time`` plus ``clock["skew"]`` seconds (every process's wall clock here)."""
    clock = {"skew": 0.0}
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + clock["skew"])
    return clock


IMAGE_HEAD = ("langmem_edge", "profiles", "p", "image")


def test_an_image_older_than_the_retention_still_finds_the_writes_after_it(
        make_store, monkeypatch) -> None:
    clock = _shifted_clock(monkeypatch)
    a = AgentMemory(make_store(path="shared"), config=IMAGE_CONFIG)
    a.profile("p").remember_many([f"note {i}" for i in range(6)])  # the image, at T0
    AgentMemory(make_store(path="shared"), config=IMAGE_CONFIG).profile("p").remember(
        "Keeps bees")  # an entry at T0
    clock["skew"] = 2 * 3600.0  # that entry is now an hour past the change log's retention
    no_refresh = {"index": {**IMAGE_CONFIG["index"], "image_refresh_seconds": 10 * 3600.0}}
    c = AgentMemory(make_store(path="shared"), config=no_refresh).profile("p")
    c.remember("Plays chess")  # this write prunes; the two-hour-old image is still the anchor
    log = SearchLog(make_store(path="shared"))
    fresh = AgentMemory(log.store, config=IMAGE_CONFIG).profile("p")
    assert not log.reads_records()  # the old image, then the writes since
    assert _listing(fresh) == _listing(c)
    assert {"Keeps bees", "Plays chess"} <= {m.text for m in fresh.list().memories}


def test_a_writer_that_prunes_rewrites_an_old_image(make_store, monkeypatch) -> None:
    clock = _shifted_clock(monkeypatch)
    store = make_store(path="shared")
    AgentMemory(store, config=IMAGE_CONFIG).profile("p").remember_many(
        [f"note {i}" for i in range(6)])
    first = store.get(IMAGE_HEAD, "head").value
    clock["skew"] = 20 * 60.0  # older than image_refresh_seconds (15 min)
    b = AgentMemory(make_store(path="shared"), config=IMAGE_CONFIG).profile("p")
    b.remember("Keeps bees")
    head = make_store(path="shared").get(IMAGE_HEAD, "head").value
    assert head["image"] != first["image"] and head["at"] >= first["at"] + 20 * 60.0
    assert head["records"] == 7
    log = SearchLog(make_store(path="shared"))
    fresh = AgentMemory(log.store, config=IMAGE_CONFIG).profile("p")
    assert not log.reads_records()
    assert _listing(fresh) == _listing(b)


def test_a_fresh_image_is_not_rewritten_by_pruning(make_store) -> None:
    store = make_store(path="shared")
    AgentMemory(store, config=IMAGE_CONFIG).profile("p").remember_many(
        [f"note {i}" for i in range(6)])
    first = store.get(IMAGE_HEAD, "head").value
    AgentMemory(make_store(path="shared"), config=IMAGE_CONFIG).profile("p").remember("Bees")
    assert make_store(path="shared").get(IMAGE_HEAD, "head").value["image"] == first["image"]


def test_a_full_load_of_a_large_profile_writes_an_image(make_store) -> None:
    a = AgentMemory(make_store(path="shared"))  # default threshold: no image from a
    for i in range(6):
        a.profile("p").remember(f"note {i}")
    first = SearchLog(make_store(path="shared"))
    assert len(AgentMemory(first.store, config=IMAGE_CONFIG).profile("p").list().memories) == 6
    assert first.reads_records()
    second = SearchLog(make_store(path="shared"))
    p2 = AgentMemory(second.store, config=IMAGE_CONFIG).profile("p")
    assert [m.text for m in p2.list().memories] == [f"note {i}" for i in range(6)]
    assert not second.reads_records()


def test_a_deleted_and_remade_profile_ignores_the_old_image(make_store) -> None:
    a = AgentMemory(make_store(path="shared"), config=IMAGE_CONFIG)
    a.profile("p").remember_many([f"note {i}" for i in range(6)])
    a.delete_profile("p")
    a.profile("p").remember("A new start")
    fresh = AgentMemory(make_store(path="shared"), config=IMAGE_CONFIG).profile("p")
    assert [m.text for m in fresh.list(status="all").memories] == ["A new start"]


def test_an_image_of_another_analyser_is_analysed_again(make_store, monkeypatch) -> None:
    from langmem_edge.memory.index import image

    a = AgentMemory(make_store(path="shared"), config=IMAGE_CONFIG)
    a.profile("p").remember_many([f"Beekeeping note {i}" for i in range(6)])
    monkeypatch.setattr(image, "_analyser", lambda: "Analyzer(language='dutch')")
    log = SearchLog(make_store(path="shared"))
    fresh = AgentMemory(log.store, config=IMAGE_CONFIG).profile("p")
    assert len(fresh.list().memories) == 6
    assert not log.reads_records()
    assert "Beekeeping note 4" in texts(fresh.recall("beekeeping note 4"))


def test_packed_values_give_their_records_back_equal() -> None:
    import numpy as np

    from langmem_edge.memory.index.values import RecordValues, pack_chunks

    values = [{"id": "a", "text": "Lives in Porto", "metadata": {"x": [1, 2]}, "key": None},
              {"id": "b", "text": "Café ☕", "metadata": {}, "key": "k"},
              {"text": "keys in another order", "id": "c"},  # kept as the record itself
              {"id": "d", "text": "fewer keys"}, {"id": "e", "text": "", "metadata": {},
                                                  "key": "z"}]
    fields = list(values[0])
    ids = [v["id"] for v in values]
    chunks, ends = pack_chunks(values, fields, size=2)
    assert len(chunks) == 3 and len(ends) == 5

    def fresh() -> RecordValues:
        return RecordValues.from_chunks(ids, chunks, ends, fields, 2)

    got = fresh()
    assert len(got) == 5 and "c" in got and "x" not in got and got.packed == 5
    assert got["d"] == values[3] and got.get("b") == values[1] and got.packed == 3
    assert got.get("x") is None and got.get("x", 1) == 1
    assert list(got) == ids and list(got.values()) == values and got.packed == 0
    other = fresh()
    other["c"] = {"id": "c", "text": "rewritten"}
    del other["a"]
    assert other.pop("e") == values[4] and other.packed == 2  # b and d
    assert dict(other.items()) == {"b": values[1], "c": {"id": "c", "text": "rewritten"},
                                   "d": values[3]}
    import random
    import threading

    many = [{"id": f"m{i:04d}", "text": f"note {i}", "n": i} for i in range(3000)]
    chunks_m, ends_m = pack_chunks(many, list(many[0]), size=64)
    shared = RecordValues.from_chunks([v["id"] for v in many], chunks_m, ends_m,
                                      list(many[0]), 64)
    seen: list[bool] = []

    def read(seed: int) -> None:
        order = [v["id"] for v in many]
        random.Random(seed).shuffle(order)
        seen.append(all(shared[m]["id"] == m for m in order))

    threads = [threading.Thread(target=read, args=(s,)) for s in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == [True] * 6 and shared.packed == 0 and list(shared.values()) == many
    with pytest.raises(ValueError, match="do not fit"):
        RecordValues.from_chunks(ids[:4], chunks, ends, fields, 2)
    with pytest.raises(ValueError, match="do not fit"):
        RecordValues.from_chunks(ids, chunks, np.zeros(4, dtype=np.int64), fields, 2)


def _damage(store, key: str, change) -> None:
    page = store.get(IMAGE_HEAD, key).value
    store.put(IMAGE_HEAD, key, change(page), index=False)


@pytest.mark.parametrize("damage", ["truncated", "a byte changed", "page missing"])
def test_a_damaged_image_page_means_a_full_load(make_store, monkeypatch, damage) -> None:
    import base64

    from langmem_edge.memory.index import image

    monkeypatch.setattr(image, "PAGE_BYTES", 512)  # a few pages
    store = make_store(path="shared")
    AgentMemory(store, config=IMAGE_CONFIG).profile("p").remember_many(
        [f"note {i}" for i in range(6)])
    assert store.get(IMAGE_HEAD, "head").value["pages"] > 2
    if damage == "truncated":
        _damage(store, "p000001", lambda page: {**page, "data": page["data"][:-12]})
    elif damage == "a byte changed":
        def flip(page):
            raw = bytearray(base64.b64decode(page["data"]))
            raw[len(raw) // 2] ^= 1
            return {**page, "data": base64.b64encode(bytes(raw)).decode()}
        _damage(store, "p000001", flip)
    else:
        store.delete(IMAGE_HEAD, "p000002")
    log = SearchLog(make_store(path="shared"))
    fresh = AgentMemory(log.store, config=IMAGE_CONFIG).profile("p")
    assert sorted(m.text for m in fresh.list().memories) == [f"note {i}" for i in range(6)]
    assert log.reads_records()
    again = SearchLog(make_store(path="shared"))  # the full load wrote a sound image
    assert len(AgentMemory(again.store, config=IMAGE_CONFIG).profile("p").list().memories) == 6
    assert not again.reads_records()


def test_an_image_of_the_old_format_means_a_full_load_and_a_new_image(make_store) -> None:
    store = make_store(path="shared")
    AgentMemory(store, config=IMAGE_CONFIG).profile("p").remember_many(
        [f"note {i}" for i in range(6)])
    _damage(store, "head", lambda head: {**head, "format": 2})
    log = SearchLog(make_store(path="shared"))
    assert len(AgentMemory(log.store, config=IMAGE_CONFIG).profile("p").list().memories) == 6
    assert log.reads_records()
    from langmem_edge.memory.index.image import FORMAT

    assert make_store(path="shared").get(IMAGE_HEAD, "head").value["format"] == FORMAT


class _DeletingStore(InMemoryStore):
    """Runs ``hook`` once, just before the batch that puts the record whose text is
    ``trigger``."""

    trigger = ""
    hook = None

    def batch(self, ops):
        ops = list(ops)
        if self.hook is not None and any(
                isinstance(op, PutOp) and op.value and op.value.get("text") == self.trigger
                for op in ops):
            hook, self.hook = self.hook, None
            hook()
        return super().batch(ops)


def test_a_write_racing_delete_profile_leaves_nothing_behind() -> None:
    """Regression: delete_profile removed the records, then the generation; a write whose
    records were put in between (its sync was before the deletion) survived it, and a fresh
    process recalled a memory of a deleted profile."""
    store = _DeletingStore()
    a = AgentMemory(store, namespace=("race",)).profile("p")
    a.remember("Old fact")
    store.trigger = "Lives in Porto"
    store.hook = lambda: AgentMemory(store, namespace=("race",)).delete_profile("p")
    a.remember("Lives in Porto")
    assert store.hook is None  # the deletion ran between the write's sync and its records
    assert AgentMemory(store, namespace=("race",)).profile("p").list(status="all").memories == []
    assert store.search(("race",), limit=100) == []  # no marker, entry or generation either
    assert AgentMemory(store, namespace=("race",)).list_profiles() == []
    a.remember("A new start")  # the same object writes on, under a new generation
    assert [m.text for m in AgentMemory(store, namespace=("race",)).profile("p").list().memories
            ] == ["A new start"]


def test_gc_paused_restores_the_collector_as_it_was() -> None:
    import gc

    from langmem_edge.memory.index.changes import gc_paused

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("a load that fails")
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # disabled by its owner: left so
    finally:
        gc.enable()


def _same_index(a, b, queries) -> None:
    """Every answer recall takes from a profile index is the same in ``a`` and ``b``."""
    assert list(a.values) == list(b.values) and dict(a.values.items()) == dict(b.values.items())
    assert a.sorted_ids() == b.sorted_ids() and a.by_key == b.by_key
    now = time.time()
    for kwargs in ({"scopes": ["agent"], "kinds": None, "writer": None},
                   {"scopes": ["agent", "contact:ana"], "kinds": ["fact"], "writer": None},
                   {"scopes": ["contact:ana"], "kinds": None, "writer": "w1"}):
        for t, as_of in ((now, False), (now - 3600.0, True)):
            ma, mb = (i.admissible(t=t, as_of=as_of, min_confidence=0.1, **kwargs)
                      for i in (a, b))
            assert [ma(m) for m in a.values] == [mb(m) for m in a.values]
            assert a.rank_fill(ma, t=t, exclude=[], limit=7) == b.rank_fill(
                mb, t=t, exclude=[], limit=7)
            for q in queries:
                assert a.keyword(q, limit=5, admissible=ma) == b.keyword(
                    q, limit=5, admissible=mb)
                assert sorted(a.match_keys(q)) == sorted(b.match_keys(q))
    assert a.valid_from_between(0.0, now + 1) == b.valid_from_between(0.0, now + 1)


def test_an_index_restored_from_its_image_answers_as_the_index_it_was_taken_from() -> None:
    from langmem_edge.memory.index.image import decode_image, encode_image
    from langmem_edge.memory.index.profile_index import ProfileIndex

    store = InMemoryStore()
    memory = AgentMemory(store)
    p = memory.profile("p")
    words = ["bees", "garden", "chess", "porto", "lyon", "tea", "rain", "violin"]
    made = []
    for i in range(40):
        made.append(p.remember(
            f"{words[i % 8]} {words[(3 * i) % 8]} note {i}", key=f"topic.{words[i % 5]}"
            if i % 3 == 0 else None, kind=["fact", "event", "instruction", "task"][i % 4],
            contact="ana" if i % 5 == 0 else None, writer="w1" if i % 2 else None,
            confidence=0.3 + (i % 7) / 10))
    p.forget(made[4].id)
    p.delete(made[7].id)
    p.update(made[9].id, text="violin lessons on tuesdays")
    p.recall("bees garden")  # access counts, pending then flushed
    memory.flush()
    p.recall("porto tea")  # pending only
    a = memory._indexes["p"]
    snapshot, values = a.snapshot()
    payload, table = encode_image(snapshot, values)
    restored_snapshot, packed = decode_image(payload, table, same_analyser=True)
    b = ProfileIndex(a.layout, a.cache, a.recall_config)
    counts = store.search(a.layout.access, limit=10_000)
    b.restore(a.generation, restored_snapshot, packed, counts, synced_at=a.synced_at)
    counted = {it.value["id"] for it in counts} & set(b.values)
    # the restore decoded only the records with count items (their own counts are added)
    assert 0 < len(counted) and b.values.packed == len(b.values) - len(counted)
    from langmem_edge.memory.index.columns import own_access

    pending = {m: a.access_writer.pending(m) for m in a.access_writer.pending_ids()}
    only_pending = set(pending) - counted
    assert only_pending  # their columns in the image are the records' own, not a's bumps
    assert all((b.columns.access[b.columns.row_of[m]], b.columns.touched[b.columns.row_of[m]])
               == own_access(b.values[m]) for m in only_pending)
    b.access_writer.restore_pending(pending, 0.0)  # what a flush would have written
    for mid in pending:
        b._set_access(b.values[mid], b.columns.row_of[mid])
    queries = ["bees garden", "violin", "topic.bees", "chess porto note 12", "nothing here"]
    _same_index(a, b, queries)
    # the same writes to both: removals of restored documents, rewrites, new records
    fresh = {**a.values[made[10].id], "text": "rain in lyon", "key": "topic.rain"}
    new = {**a.values[made[11].id], "id": "01zz", "text": "tea with ana"}
    for index in (a, b):
        index.remove(made[12].id)
        index.apply(fresh)
        index.apply(new)
    _same_index(a, b, [*queries, "rain lyon", "tea ana"])


def test_a_profile_reloaded_after_eviction_keeps_its_writers(make_store) -> None:
    """An index dropped from the cache and loaded again writes with the process's writers of
    that log, not new ones: the log keeps one marker per writer, not one more per load."""
    store = make_store()
    memory = AgentMemory(store, config={"index": {"cached_profiles": 1}})
    for n in range(6):
        for name in ("p", "q"):  # each profile's index evicts the other's
            memory.profile(name).remember(f"Fact number {n} of {name}", key=f"k.{n}")
    for name in ("p", "q"):
        layout = memory._index(name).layout
        markers = store.search(layout.writers, limit=100)
        assert [m.key for m in markers] == [memory._index(name).writer_ids().pop()]
        assert markers[0].value["seq"] == 6
        assert len(memory.profile(name).list().memories) == 6
    other = AgentMemory(store)  # another process's view: every write is there
    assert sorted(m.text for m in other.profile("p").list().memories) == [
        f"Fact number {n} of p" for n in range(6)]
    assert len(memory.writer_pools) == 2


def test_a_profile_reloaded_after_eviction_keeps_its_count_writer(make_store) -> None:
    """Access counts of an index dropped from the cache and loaded again go to the process's
    one count item per memory, going on from its count: not one more item per load (which
    every later load would read)."""
    store = make_store()
    memory = AgentMemory(store, config={"index": {"cached_profiles": 1},
                                        "recall": {"access_flush_seconds": 0}})
    made = {name: memory.profile(name).remember(f"Plays the cello in {name}")
            for name in ("lyon", "porto")}
    for _ in range(5):
        for name in ("lyon", "porto"):  # each profile's index evicts the other's
            found = memory.profile(name).recall("cello").candidates
            assert [c.id for c in found] == [made[name].id]
    for name in ("lyon", "porto"):
        items = store.search(memory._index(name).layout.access, limit=100)
        assert [(it.key, it.value["count"]) for it in items] == [
            (memory._index(name).count_writer, 5)]
        assert AgentMemory(store).profile(name).get(made[name].id).access_count == 5
    assert len(memory.access_writers) == 2


def test_the_count_writer_starts_over_when_the_profile_is_deleted(make_store) -> None:
    """A profile deleted (here or by another process) and written again has a new
    generation: the process counts under a new writer id from zero, so no count of the old
    profile comes back."""
    store = make_store()
    memory = AgentMemory(store, config={"recall": {"access_flush_seconds": 0}})
    other = AgentMemory(store)
    first = memory.profile("p").remember("Keeps bees")
    memory.profile("p").recall("bees")
    old = memory._index("p").count_writer
    other.delete_profile("p")
    again = memory.profile("p").remember("Keeps bees again")
    assert [c.id for c in memory.profile("p").recall("bees").candidates] == [again.id]
    assert memory._index("p").count_writer != old and first.id != again.id
    items = store.search(memory._index("p").layout.access, limit=100)
    assert [(it.value["id"], it.value["count"]) for it in items] == [(again.id, 1)]


def test_access_writer_reserves_disjoint_totals_and_gives_back_a_failed_flush() -> None:
    from langmem_edge.memory.index.access import AccessWriter

    writer = AccessWriter()
    first = writer.reserve({"m": (2, "t1")})
    second = writer.reserve({"m": (1, "t2"), "n": (1, "t2")})  # a flush beside the first
    assert first == [("m", 2, "t1")] and second == [("m", 3, "t2"), ("n", 1, "t2")]
    writer.release({"m": (2, "t1")}, 4.0)  # the first failed: its bumps go back to pending
    assert writer.total("m") == 1 and writer.pending("m") == (2, "t1")
    assert writer.pending_since == 4.0 and writer.own("m", None) == (3, "t2")
    assert writer.start_flush() == (writer.writer_id, {"m": (2, "t1")}, [("m", 3, "t1")])
    assert writer.own("m", (2, "t1")) == (3, "t2") and writer.own("m", (5, "t9")) == (5, "t9")
    writer.forget("m")
    assert writer.total("m") == 0
    writer.bump(["n", "n"], 5.0, "t4")
    assert writer.pending("n") == (2, "t4") and writer.pending_since == 5.0
    old = writer.writer_id
    writer.bind("g1")
    assert writer.writer_id == old and writer.total("n") == 1 and writer.pending_count() == 1
    writer.bind("g2")  # the profile was deleted: nothing of it carried over
    assert writer.writer_id != old and writer.total("n") == 0 and writer.pending_count() == 0


def test_bumps_of_an_index_dropped_from_the_cache_are_kept_and_flushed(make_store) -> None:
    """Bumps wait in the process's access writer, not in the index: a profile whose index
    left the cache before they were written still counts them, and ``flush`` writes them."""
    store = make_store()
    memory = AgentMemory(store, config={"index": {"cached_profiles": 1}})
    rec = memory.profile("p").remember("Plays the oboe")
    memory.profile("p").recall("oboe")  # pending: written behind
    memory.profile("q").remember("Plays the harp")  # evicts p's index
    assert "p" not in memory._indexes
    assert AgentMemory(store).profile("p").get(rec.id).access_count == 0  # not written yet
    assert memory.flush() == 1  # p's bump, though p's index is no longer cached
    assert "p" not in memory._indexes and memory.flush() == 0
    assert AgentMemory(store).profile("p").get(rec.id).access_count == 1
    memory.profile("p").recall("oboe")  # p loaded again: counts on from the written item
    assert memory.profile("p").get(rec.id).access_count == 2
    memory.flush()
    assert AgentMemory(store).profile("p").get(rec.id).access_count == 2


def test_a_reload_read_before_a_flush_lands_still_counts_it(make_store) -> None:
    """The flush of a dropped index's bumps reserves their counts before it writes: a reload
    that reads the count items between the two still counts them (from the process's access
    writer), and so does every load after the write."""
    from langmem_edge.memory.semantic.access import plan_write_access

    store = make_store()
    memory = AgentMemory(store, config={"index": {"cached_profiles": 1}})
    rec = memory.profile("p").remember("Plays the oboe")
    memory.profile("p").recall("oboe")  # pending: written behind
    layout = memory._index("p").layout
    memory.profile("q").remember("Plays the harp")  # evicts p's index
    assert "p" not in memory._indexes
    flush = plan_write_access(store, layout, memory.access_writers.get(("p",)))
    step = next(flush)  # the counts reserved, the count item not written yet
    assert memory.profile("p").get(rec.id).access_count == 1  # p loaded again meanwhile
    assert store.search(layout.access, limit=10) == []  # ... before the item was written
    with pytest.raises(StopIteration) as done:
        flush.send(store.batch(list(step.ops)))
    assert done.value.value == 1
    assert memory.profile("p").get(rec.id).access_count == 1
    assert AgentMemory(store).profile("p").get(rec.id).access_count == 1
    memory.profile("p").recall("oboe")
    memory.flush()
    assert memory.profile("p").get(rec.id).access_count == 2
    assert AgentMemory(store).profile("p").get(rec.id).access_count == 2
