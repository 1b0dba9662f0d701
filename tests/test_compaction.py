"""Compaction window: budget split, head cut, overlays, tail, overlay creation, flush."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from episodic_helpers import BACKENDS, scripted, store_fixture
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.store.base import BaseStore, GetOp, SearchOp
from langgraph.store.memory import InMemoryStore

from langmem_edge.errors import ExtractionError, InvalidInputError
from langmem_edge.memory.core.plans import run_sync
from langmem_edge.memory.core.tokens import estimate_tokens
from langmem_edge.memory.episodic.compaction import ContextWindow, uncovered_ranges, window_plan
from langmem_edge.memory.episodic.extraction import StoredMessage
from langmem_edge.memory.episodic.pages import (
    RECENT_PAGES,
    first_after_append,
    first_after_delete,
    recent_after_append,
    recent_after_delete,
    recent_keys,
)
from langmem_edge.memory.episodic.tier import EpisodicConfig, EpisodicTier
from langmem_edge.testing import FakeEmbeddings

ROOT = ("app", "profiles", "alice")
MSG_TOKENS = 14  # 35 prose chars -> 10 tokens, + 4 per message


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[BaseStore]:
    yield from store_fixture(request, tmp_path)


def text(i: int) -> str:
    body = f"message {i:05d} says "
    return body + "a" * (35 - len(body))


def fill(tier: EpisodicTier, n: int, session: str = "s") -> None:
    msgs = [{"role": "user" if i % 2 == 0 else "assistant", "content": text(i)} for i in range(n)]
    for start in range(0, n, 500):
        tier.add_messages(msgs[start : start + 500], session)


def check_invariants(w: ContextWindow) -> None:
    assert sum(m.tokens for m in w.head) <= w.head_budget
    assert sum(o.tokens for o in w.overlays) <= w.overlay_budget
    assert sum(m.tokens for m in w.tail) <= w.tail_budget
    assert w.tokens <= w.budget_tokens
    assert [o.from_seq for o in w.overlays] == sorted(o.from_seq for o in w.overlays)
    tail_seqs = {m.seq for m in w.tail}
    for ov in w.overlays:
        assert not any(ov.from_seq <= s <= ov.to_seq for s in tail_seqs)
        assert ov.from_seq >= len(w.head)
    for a, b in zip(w.overlays, w.overlays[1:], strict=False):
        assert a.to_seq < b.from_seq


def test_budget_split_and_tail_are_exact(store: BaseStore) -> None:
    tier = EpisodicTier(store, ROOT)
    fill(tier, 100)
    w = tier.window("s", 1000, compact=False)
    assert (w.head_budget, w.overlay_budget, w.tail_budget) == (100, 200, 700)
    assert [m.seq for m in w.head] == [0, 1] and not any(m.truncated for m in w.head)
    assert all(m.tokens == MSG_TOKENS for m in w.tail)
    assert [m.seq for m in w.tail] == list(range(50, 100))  # 700 // 14 newest, in order
    assert w.uncovered == [(2, 49)] and w.overlays == []
    assert w.rows_scanned == 60  # pages of 10 until the 51st newest did not fit
    check_invariants(w)


def test_head_message_that_does_not_fit_is_cut_not_dropped(store: BaseStore) -> None:
    tier = EpisodicTier(store, ROOT)
    tier.add_messages(
        [
            {"role": "system", "content": "long instructions " * 200},
            {"role": "user", "content": text(1)},
            {"role": "assistant", "content": text(2)},
        ],
        "s",
    )
    w = tier.window("s", 1000)
    assert [m.seq for m in w.head] == [0, 1]
    assert w.head[0].truncated and w.head[0].content.endswith("[...]")
    assert w.head[0].content.startswith("long instructions")
    assert not w.head[1].truncated and w.head[1].content == text(1)
    assert sum(m.tokens for m in w.head) <= 100
    check_invariants(w)


def test_two_long_head_messages_share_the_head_budget(store: BaseStore) -> None:
    tier = EpisodicTier(store, ROOT)
    tier.add_messages(
        [{"role": "system", "content": "alpha " * 300}, {"role": "user", "content": "beta " * 300}],
        "s",
    )
    w = tier.window("s", 1000)
    assert [m.truncated for m in w.head] == [True, True]
    assert all(0 < m.tokens <= 50 for m in w.head)
    assert w.tail == []


def test_newest_message_is_always_in_the_tail(store: BaseStore) -> None:
    tier = EpisodicTier(store, ROOT)
    fill(tier, 5)
    tier.add_messages([{"role": "user", "content": "huge question " * 500}], "s")
    w = tier.window("s", 200, compact=False)
    assert [m.seq for m in w.tail] == [5]
    assert w.tail[0].truncated and w.tail[0].tokens <= w.tail_budget


def test_uncovered_range_gets_exactly_one_overlay(store: BaseStore) -> None:
    tier = EpisodicTier(store, ROOT)
    fill(tier, 100)
    first = tier.window("s", 1000)
    assert first.new_overlay is not None
    assert (first.new_overlay.from_seq, first.new_overlay.to_seq) == (2, 49)
    assert first.new_overlay.message_count == 48
    assert first.uncovered == []
    for _ in range(3):
        again = tier.window("s", 1000)
        assert again.new_overlay is None and again.flushed == []
        check_invariants(again)
    assert [(o.from_seq, o.to_seq) for o in tier.overlays("s")] == [(2, 49)]
    ov = tier.overlays("s")[0]
    assert ov.method == "extractive" and ov.summary
    assert ov.from_ts <= ov.to_ts
    assert ov.tokens == estimate_tokens(ov.render()) + 4


def test_long_stretch_is_compacted_oldest_first_in_ranges_of_at_most_60(store: BaseStore) -> None:
    config = EpisodicConfig(overlay_summary_max_tokens=40)
    tier = EpisodicTier(store, ROOT, config=config)
    fill(tier, 200)
    made = []
    for _ in range(5):
        w = tier.window("s", 1000)
        check_invariants(w)
        if w.new_overlay:
            made.append((w.new_overlay.from_seq, w.new_overlay.to_seq))
    # tail = 150..199; stretch 2..149 -> 2..61, 62..121, 122..149
    assert made == [(2, 61), (62, 121), (122, 149)]
    final = tier.window("s", 1000)
    assert final.uncovered == []
    assert [(o.from_seq, o.to_seq) for o in final.overlays] == [(2, 61), (62, 121), (122, 149)]
    rendered = final.to_messages()
    assert isinstance(rendered[0], HumanMessage) and isinstance(rendered[1], AIMessage)
    systems = [m for m in rendered if isinstance(m, SystemMessage)]
    assert [s.content.split("]")[0] for s in systems] == [  # type: ignore[union-attr]
        f"[Summary of messages {a}-{b} ({b - a + 1} messages, "
        f"{final.overlays[i].from_ts:%Y-%m-%d %H:%M} to {final.overlays[i].to_ts:%Y-%m-%d %H:%M})"
        for i, (a, b) in enumerate(made)
    ]
    assert rendered[-1].content == text(199)


def test_overlays_over_budget_keep_the_newest(store: BaseStore) -> None:
    config = EpisodicConfig(overlay_summary_max_tokens=80)
    tier = EpisodicTier(store, ROOT, config=config)
    fill(tier, 200)
    for _ in range(3):
        tier.window("s", 1000)
    w = tier.window("s", 1000)
    check_invariants(w)
    assert 0 < len(w.overlays) < 3
    assert w.overlays[-1].to_seq == 149  # the newest is kept


def test_grown_budget_never_shows_a_message_twice(store: BaseStore) -> None:
    tier = EpisodicTier(store, ROOT)
    fill(tier, 100)
    tier.window("s", 1000)  # overlay 2..49
    wider = tier.window("s", 1200, compact=False)  # tail alone would start at 40
    assert [(o.from_seq, o.to_seq) for o in wider.overlays] == [(2, 49)]
    assert wider.tail[0].seq == 50
    check_invariants(wider)


def test_short_gap_waits(store: BaseStore) -> None:
    tier = EpisodicTier(store, ROOT)
    fill(tier, 54)  # tail 4..53, stretch 2..3
    w = tier.window("s", 1000)
    assert w.new_overlay is None and w.uncovered == [(2, 3)]
    fill(tier, 55)
    w = tier.window("s", 1000)  # stretch 2..4: three messages
    assert w.new_overlay is not None
    assert (w.new_overlay.from_seq, w.new_overlay.to_seq) == (2, 4)


def test_history_is_read_in_pages_of_10_up_to_200_rows() -> None:
    class CountingStore(InMemoryStore):
        searches: list[SearchOp] = []
        gets: list[GetOp] = []

        def batch(self, ops: Any) -> Any:
            ops = list(ops)
            self.searches.extend(op for op in ops if isinstance(op, SearchOp))
            self.gets.extend(op for op in ops if isinstance(op, GetOp))
            return super().batch(ops)

    store = CountingStore()
    tier = EpisodicTier(store, ROOT)
    fill(tier, 1000)
    store.searches.clear()
    store.gets.clear()
    w = tier.window("s", 1_000_000, compact=False)
    assert w.rows_scanned == 200
    assert [m.seq for m in w.tail] == list(range(800, 1000))
    # every page by key (the session record lists the ids of its first page and of its
    # newest RECENT_PAGES): the head's page and the 20 newest, no search of the messages
    assert not [op for op in store.searches if op.namespace_prefix[-2] == "messages"]
    by_key = [op for op in store.gets if op.namespace[-2] == "messages"]
    assert len(by_key) == 10 + 200 and RECENT_PAGES * 10 >= 200 + 10


def test_flush_lifts_at_most_10_durable_facts_at_0_6(store: BaseStore) -> None:
    tier = EpisodicTier(store, ROOT)
    msgs = [{"role": "user", "content": "Hello there."}, {"role": "assistant", "content": "Hi!"}]
    for i in range(30):
        msgs.append({"role": "user", "content": f"I love hobby{i} and I need to call person{i}."})
        msgs.append({"role": "assistant", "content": "Noted."})
    msgs += [{"role": "user", "content": text(i)} for i in range(60)]
    tier.add_messages(msgs, "s")
    w = tier.window("s", 1000)
    assert w.new_overlay is not None
    assert len(w.flushed) == 10
    in_range = {
        m.id
        for m in tier.list_messages(
            "s", start=w.new_overlay.from_seq, limit=w.new_overlay.message_count
        )
    }
    for mem in w.flushed:
        assert mem.confidence == 0.6 and mem.source == "pre-compaction"
        assert mem.kind != "task" and mem.session_id == "s"
        assert set(mem.source_message_ids) <= in_range
    assert tier.window("s", 1000).flushed == []  # a range is flushed once


def test_model_summary_and_flush(store: BaseStore) -> None:
    def extract(messages: Any) -> list[dict[str, Any]]:
        return [
            {"text": f"The user noted number {i}.", "fact_type": "identity",
             "message_numbers": [1]}
            for i in range(12)
        ] + [{"text": "Buy milk.", "fact_type": "task", "message_numbers": [2]}]

    model = scripted(extract, summary="The user and the assistant talked about a's.")
    tier = EpisodicTier(store, ROOT, model=model)
    fill(tier, 100)
    w = tier.window("s", 1000)
    assert w.new_overlay is not None and w.new_overlay.method == "model"
    assert w.new_overlay.summary == "The user and the assistant talked about a's."
    assert len(w.flushed) == 10
    assert all(m.kind == "fact" and m.confidence == 0.6 for m in w.flushed)


def test_failed_model_writes_no_overlay(store: BaseStore) -> None:
    def broken(messages: Any) -> list[dict[str, Any]]:
        raise ValueError("no")

    tier = EpisodicTier(store, ROOT, model=scripted(broken))
    fill(tier, 100)
    with pytest.raises(ExtractionError):
        tier.window("s", 1000)
    assert tier.overlays("s") == []


def test_unknown_session_and_bad_budget(store: BaseStore) -> None:
    tier = EpisodicTier(store, ROOT)
    w = tier.window("nothing", 500)
    assert (w.head, w.overlays, w.tail, w.new_overlay) == ([], [], [], None)
    assert w.tail_budget == 500 - math.floor(50) - math.floor(100)
    with pytest.raises(InvalidInputError, match="budget_tokens"):
        tier.window("nothing", 0)


def test_uncovered_ranges() -> None:
    from datetime import UTC, datetime

    from langmem_edge.memory.episodic.compaction import Overlay

    def ov(a: int, b: int) -> Overlay:
        now = datetime.now(UTC)
        return Overlay(
            id=f"{a}",
            session_id="s",
            from_seq=a,
            to_seq=b,
            from_ts=now,
            to_ts=now,
            message_count=b - a + 1,
            summary="",
            tokens=1,
            method="extractive",
            created_at=now,
        )

    assert uncovered_ranges([], 2, 10) == [(2, 9)]
    assert uncovered_ranges([ov(2, 4), ov(7, 8)], 2, 10) == [(5, 6), (9, 9)]
    assert uncovered_ranges([ov(0, 20)], 2, 10) == []
    assert uncovered_ranges([ov(5, 30)], 2, 10) == [(2, 4)]


# -- windows read every page by key, and see every change at once ---------------------------


def uncached(tier: EpisodicTier, session: str, budget: int) -> ContextWindow:
    """The window as its plan builds it, run on the tier's store directly."""
    plan = window_plan(
        messages_ns=tier.messages_namespace(session), overlays_ns=tier.overlays_namespace(session),
        sessions_ns=tier.sessions_namespace, profile=tier.profile, session_id=session,
        budget_tokens=budget, config=tier.config, model=None, compact=False)
    return run_sync(plan, store=tier.store)


class CountingStore(InMemoryStore):
    """InMemoryStore that records the namespaces its searches read."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.searched: list[tuple[str, ...]] = []

    def batch(self, ops: Any) -> list[Any]:
        ops = list(ops)
        self.searched += [op.namespace_prefix for op in ops if isinstance(op, SearchOp)]
        return super().batch(ops)


def test_a_window_searches_no_history_page() -> None:
    store = CountingStore()
    tier = EpisodicTier(store, ROOT)
    fill(tier, 1000)
    store.searched.clear()
    first = tier.window("s", 1000, compact=False)
    assert first.rows_scanned > 10
    assert store.searched == []  # pages by key, and the overlays by the ids their mark lists
    assert tier.window("s", 1000, compact=False) == first
    tier.add_messages([{"role": "user", "content": "one more turn"}], "s")
    grown = tier.window("s", 1000)  # compacts: writes an overlay, and its id in the mark
    assert grown.tail[-1].content == "one more turn" and grown.new_overlay is not None
    again = tier.window("s", 1000, compact=False)
    assert [o.id for o in again.overlays] == [grown.new_overlay.id]
    ov = grown.new_overlay  # the range summarised, outside the listed pages: searched
    assert store.searched.count(tier.messages_namespace("s")) == (
        ov.to_seq // 10 - ov.from_seq // 10 + 1)
    assert tier.overlays_namespace("s") not in store.searched


def test_overlays_unlisted_by_a_mark_are_listed_and_the_mark_written_again() -> None:
    store = CountingStore()
    tier = EpisodicTier(store, ROOT)
    fill(tier, 300)
    made = tier.window("s", 1000).new_overlay
    assert made is not None
    marks = tier.overlays_namespace("s")[:-1]
    store.put(marks, "s", {"kind": "overlays-mark", "profile": "alice", "session_id": "s",
                           "token": "from an earlier release"}, index=False)
    store.searched.clear()
    w = tier.window("s", 1000, compact=False)
    assert [o.id for o in w.overlays] == [made.id]
    assert store.searched == [tier.overlays_namespace("s")]  # no ids: listed
    tier.window("s", 1000)  # a compacting window writes the mark that lists them
    mark = store.get(marks, "s")
    assert mark is not None and made.id in mark.value["ids"]
    victim = tier.list_messages("s", start=made.from_seq, limit=1)[0]
    tier.delete_messages("s", [victim.id])  # its overlay goes, and the mark with it
    assert store.get(marks, "s") is None
    assert made.id not in [o.id for o in tier.window("s", 1000, compact=False).overlays]


@pytest.fixture(params=["memory", "chroma"])
def two_views(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[tuple[BaseStore, ...]]:
    """Two handles on the same data: one InMemoryStore twice, or two ChromaStores on one
    folder (each with its own page cache, as two processes have)."""
    if request.param == "memory":
        store = InMemoryStore(index={"dims": 64, "embed": FakeEmbeddings(64),
                                     "fields": ["text"]})
        yield store, store
        return
    from langmem_edge.store import ChromaStore

    index = {"dims": 64, "embed": FakeEmbeddings(64), "fields": ["text"]}
    stores = [ChromaStore.from_path(str(tmp_path / "db"), index=index) for _ in range(2)]
    yield tuple(stores)
    for s in stores:
        s.close()


def test_windows_see_every_change_another_writer_makes(two_views: tuple[BaseStore, ...]) -> None:
    reader, writer = (EpisodicTier(s, ROOT) for s in two_views)
    fill(writer, 200)
    budget = 1000
    assert reader.window("s", budget, compact=False) == uncached(reader, "s", budget)

    writer.add_messages([{"role": "user", "content": "a new turn from elsewhere"}], "s")
    w = reader.window("s", budget, compact=False)
    assert w.tail[-1].content == "a new turn from elsewhere"
    assert w == uncached(reader, "s", budget)

    made = writer.window("s", budget).new_overlay  # compaction elsewhere: a new overlay
    assert made is not None
    w = reader.window("s", budget, compact=False)
    assert [o.id for o in w.overlays] == [made.id]
    assert w == uncached(reader, "s", budget)

    victims = [w.tail[-5].id, w.head[1].id]
    writer.delete_messages("s", victims)
    w = reader.window("s", budget, compact=False)
    assert not {m.id for m in (*w.head, *w.tail)} & set(victims)
    assert w == uncached(reader, "s", budget)

    # a session deleted and created again with the same first timestamp and more messages:
    # only its epoch tells the two apart
    stamp = "2026-01-01T00:00:00+00:00"

    def life(label: str, n: int) -> list[dict[str, str]]:
        return [{"role": "user", "content": f"{label} {i:03d} " + "b" * 20, "timestamp": stamp}
                for i in range(n)]

    writer.add_messages(life("first life", 100), "t")
    assert reader.window("t", budget, compact=False) == uncached(reader, "t", budget)
    writer.delete_session("t")
    writer.add_messages(life("second life", 150), "t")
    w = reader.window("t", budget, compact=False)
    assert all(m.content.startswith("second life") for m in (*w.head, *w.tail))
    assert w == uncached(reader, "t", budget)


def test_a_session_from_before_the_id_lists_is_searched_until_its_next_ingest() -> None:
    store = CountingStore()
    tier = EpisodicTier(store, ROOT)
    fill(tier, 100)
    record = store.get(tier.sessions_namespace, "s")
    assert record is not None
    old = {k: v for k, v in record.value.items() if k not in ("epoch", "recent", "first")}
    store.put(tier.sessions_namespace, "s", old, index=False)
    store.searched.clear()
    w = tier.window("s", 1000, compact=False)
    searched = store.searched.count(tier.messages_namespace("s"))
    assert searched == w.rows_scanned // 10 + 1  # the tail's pages and the head's
    assert w == uncached(tier, "s", 1000)
    tier.add_messages([{"role": "user", "content": "a later turn"}], "s")
    again = store.get(tier.sessions_namespace, "s")
    assert again is not None and again.value["epoch"] and "first" not in again.value
    store.searched.clear()
    w = tier.window("s", 1000, compact=False)
    assert w.tail[-1].content == "a later turn"
    # the newest page (seq 100, the append) by key: its id starts the record's list
    assert store.searched.count(tier.messages_namespace("s")) == (w.rows_scanned - 1) // 10 + 1
    assert w == uncached(tier, "s", 1000)


# -- pages by key: the session record lists its newest messages' ids -----------------------


def test_recent_ids_cover_the_newest_pages_and_follow_appends_and_deletions() -> None:
    rec = recent_after_append(None, 0, [f"m{i}" for i in range(7)], 10)
    assert rec == {"from": 0, "ids": [f"m{i}" for i in range(7)]}
    record = {"next_seq": 7, "recent": rec}
    assert recent_keys(record, 0, 10) == [f"m{i}" for i in range(7)]
    end = RECENT_PAGES * 10 + 31
    rec = recent_after_append(record, 7, [f"m{i}" for i in range(7, end)], 10)
    assert rec["from"] == (end // 10 - RECENT_PAGES + 1) * 10  # the newest RECENT_PAGES
    record = {"next_seq": end, "recent": rec}
    assert recent_keys(record, end - 11, end - 1) == [f"m{i}" for i in range(end - 11, end - 1)]
    assert recent_keys(record, end - 1, end + 9) == [f"m{end - 1}"]
    assert recent_keys(record, 10, 20) is None  # before the span: searched
    assert recent_keys({"next_seq": end + 1, "recent": rec}, end - 1, end + 9) is None
    assert recent_keys({"next_seq": end}, end - 1, end + 9) is None  # a record from before it
    blanked = recent_after_delete(record, {end - 10, end - 1})
    assert blanked is not None
    assert recent_keys({"next_seq": end, "recent": blanked}, end - 11, end) == [
        f"m{i}" for i in range(end - 11, end) if i not in (end - 10, end - 1)]
    assert recent_after_delete({"next_seq": 31}, {1}) is None
    # a span that does not reach the append (another writer's gap) starts again
    assert recent_after_append({"recent": {"from": 0, "ids": ["a"]}}, 5, ["f"], 10) == {
        "from": 5, "ids": ["f"]}


def test_first_ids_list_the_first_page_and_follow_appends_and_deletions() -> None:
    first = first_after_append(None, 0, ["a", "b", "c"], 10)
    assert first == ["a", "b", "c"]
    first = first_after_append({"first": first}, 3, [f"m{i}" for i in range(3, 15)], 10)
    assert first is not None and len(first) == 10 and first[-1] == "m9"
    record = {"next_seq": 15, "page_size": 10, "first": first,
              "recent": {"from": 10, "ids": [f"m{i}" for i in range(10, 15)]}}
    assert recent_keys(record, 0, 2) == ["a", "b"]  # the head, by key
    assert first_after_append(record, 15, ["x"], 10) == first  # past the first page
    assert first_after_append({"next_seq": 4}, 4, ["x"], 10) is None  # from before it
    blanked = first_after_delete(record, {1})
    assert blanked is not None and blanked[:3] == ["a", None, "c"]
    assert recent_keys({**record, "first": blanked}, 0, 3) == ["a", "c"]
    assert recent_keys({**record, "first": first[:9]}, 0, 2) is None  # incomplete: searched


def test_the_window_after_a_turn_reads_no_page_by_search_on_either_store(
        two_views: tuple[BaseStore, ...]) -> None:
    reader, writer = (EpisodicTier(s, ROOT) for s in two_views)
    fill(writer, 200)
    budget = 1000
    assert reader.window("s", budget, compact=False) == uncached(reader, "s", budget)
    for turn in range(12):  # crosses a page boundary more than once
        writer.add_messages([{"role": "user", "content": f"question {turn} " + "q" * 30},
                             {"role": "assistant", "content": f"answer {turn} " + "a" * 30}],
                            "s")
        w = reader.window("s", budget, compact=False)
        assert w.tail[-1].content.startswith(f"answer {turn}")
        assert w == uncached(reader, "s", budget)
    victims = [w.tail[-1].id, w.tail[-3].id]
    writer.delete_messages("s", victims)
    w = reader.window("s", budget, compact=False)
    assert not {m.id for m in w.tail} & set(victims)
    assert w == uncached(reader, "s", budget)


def test_a_writer_that_does_not_keep_recent_ids_is_read_by_search() -> None:
    store = CountingStore()
    tier = EpisodicTier(store, ROOT)
    fill(tier, 100)
    tier.window("s", 1000, compact=False)
    record = store.get(tier.sessions_namespace, "s")
    assert record is not None
    # an older writer appends without moving ``recent``: the span no longer ends at next_seq
    extra = StoredMessage(id="x" * 32, session_id="s", role="user", content="from an old writer",
                          seq=100, ts=datetime(2026, 1, 2, tzinfo=UTC))
    store.put(tier.messages_namespace("s"), extra.id, extra.to_value("alice", 10))
    store.put(tier.sessions_namespace, "s",
              {**record.value, "next_seq": 101, "count": 101}, index=False)
    store.searched.clear()
    w = tier.window("s", 1000, compact=False)
    assert w.tail[-1].content == "from an old writer"
    # the tail's pages searched (the listed span no longer ends at next_seq), the head's by
    # key (the first page's list is complete)
    assert store.searched.count(tier.messages_namespace("s")) == (w.rows_scanned - 1) // 10 + 1
    assert w == uncached(tier, "s", 1000)
