"""Consolidation: decay, near-duplicate clusters, merge, supersession, idempotence, safety.

On ``InMemoryStore`` and ``ChromaStore`` (a folder, and the session's server), model-free
and with a ``ScriptedChatModel``; the ten Singapore restatements run with the real default
embeddings.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from langmem_edge import AgentMemory, ChromaStore
from langmem_edge.memory.config import ConsolidationConfig
from langmem_edge.memory.consolidation import _plan_settle
from langmem_edge.memory.core.plans import run_sync
from langmem_edge.memory.records import utcnow
from langmem_edge.memory.semantic.write import WriteSpec, plan_write
from langmem_edge.testing import FakeEmbeddings, ScriptedChatModel

DIMS = 64
BACKENDS = ["memory", "chroma", pytest.param("server", marks=pytest.mark.server)]

SINGAPORE = [
    "The user lives in Singapore.",
    "User lives in Singapore",
    "The user's home is in Singapore.",
    "The user resides in Singapore.",
    "The user is living in Singapore.",
    "User is based in Singapore.",
    "The user lives in Singapore now.",
    "The user currently lives in Singapore.",
    "Singapore is where the user lives.",
    "The user makes their home in Singapore.",
]


def _store(kind: str, request: pytest.FixtureRequest, tmp_path: Any, embed: Any, dims: int
           ) -> Any:
    index = {"dims": dims, "embed": embed, "fields": ["text"]}
    if kind == "memory":
        return InMemoryStore(index=index)  # type: ignore[arg-type]
    if kind == "chroma":
        return ChromaStore.from_path(str(tmp_path / f"c{uuid.uuid4().hex[:6]}"), index=index)
    url = request.getfixturevalue("chroma_server_url")
    return ChromaStore.from_url(url, collection_prefix=f"k{uuid.uuid4().hex[:10]}", index=index)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def memory(backend: str, request: pytest.FixtureRequest, tmp_path: Any
           ) -> Iterator[AgentMemory]:
    store = _store(backend, request, tmp_path, FakeEmbeddings(DIMS), DIMS)
    yield AgentMemory(store)
    if hasattr(store, "close"):
        store.close()


def active(memory: AgentMemory, name: str = "alice") -> list[str]:
    return [m.text for m in memory.profile(name).list(limit=500)]


def test_config_defaults_are_the_design_numbers() -> None:
    cfg = ConsolidationConfig()
    assert (cfg.decay_after_days, cfg.decay_factor, cfg.decay_floor) == (30.0, 0.8, 0.1)
    assert (cfg.sample_size, cfg.cluster_cosine, cfg.min_cluster_size, cfg.max_clusters) == (
        30, 0.85, 2, 5)


@pytest.mark.slow
def test_ten_restatements_become_one_memory_with_the_default_embeddings(
        backend: str, request: pytest.FixtureRequest, tmp_path: Any) -> None:
    from langmem_edge import default_embeddings

    store = _store(backend, request, tmp_path, default_embeddings(), 384)
    memory = AgentMemory(store)
    alice = memory.profile("alice")
    written = [alice.remember(t, source="turn", verify=False) for t in SINGAPORE]
    alice.remember("The user prefers dark mode.", source="turn", verify=False)

    report = memory.consolidate("alice")

    (merge,) = report.profiles[0].merged
    assert sorted(merge.members) == sorted(m.id for m in written)
    assert merge.by == "rules" and merge.text == "The user makes their home in Singapore."
    assert sorted(active(memory)) == ["The user makes their home in Singapore.",
                                      "The user prefers dark mode."]
    canonical = alice.get(merge.memory_id)
    assert canonical is not None and canonical.source == "consolidation"
    assert canonical.confidence == 0.5 and sorted(canonical.supersedes) == sorted(merge.members)
    chain = alice.history(merge.memory_id)
    assert {m.id for m in chain} == {*merge.members, merge.memory_id}
    assert all(m.status == "superseded" and m.superseded_by == merge.memory_id
               for m in chain if m.id != merge.memory_id)
    hits = alice.recall("where does the user live?").candidates
    assert [c.id for c in hits if "Singapore" in c.text] == [merge.memory_id]
    assert not memory.consolidate("alice").changed
    store.close() if hasattr(store, "close") else None


def test_a_cluster_merges_into_the_most_complete_and_most_recent_member(
        memory: AgentMemory) -> None:
    alice = memory.profile("alice")
    a = alice.remember("alice drinks green tea every morning", verify=False)
    b = alice.remember("alice drinks hot green tea every morning", verify=False)
    c = alice.remember("alice drinks hot green tea every morning", verify=False, tags=["drink"])
    other = alice.remember("the office is in Lisbon", verify=False)

    report = memory.consolidate("alice")

    (merge,) = report.profiles[0].merged
    assert set(merge.members) == {a.id, b.id, c.id} and merge.by == "rules"
    new = alice.get(merge.memory_id)
    assert new is not None and new.text == "alice drinks hot green tea every morning"
    assert new.tags == ["drink"] and new.confidence == 0.9
    assert sorted(active(memory)) == ["alice drinks hot green tea every morning",
                                      "the office is in Lisbon"]
    assert alice.get(other.id).status == "active"  # type: ignore[union-attr]
    for old in (a, b, c):
        got = alice.get(old.id)
        assert got is not None and got.status == "superseded"
        assert got.superseded_by == merge.memory_id

    again = memory.consolidate("alice")
    assert not again.changed and again.merged == 0 and again.decayed == 0


def test_a_pass_merges_at_most_five_clusters(memory: AgentMemory) -> None:
    alice = memory.profile("alice")
    topics = ["piano", "chess", "sailing", "pottery", "running", "baking", "hiking"]
    for topic in topics:
        for _ in range(2):
            alice.remember(f"alice enjoys {topic} lessons", verify=False)

    first = memory.consolidate("alice").profiles[0]
    assert len(first.merged) == 5 and all(len(m.members) == 2 for m in first.merged)
    assert len(active(memory)) == 5 + 2 * 2
    second = memory.consolidate("alice").profiles[0]
    assert len(second.merged) == 2
    assert sorted(active(memory)) == sorted(f"alice enjoys {t} lessons" for t in topics)
    assert not memory.consolidate("alice").changed


def test_clusters_keep_to_one_kind_and_one_scope(memory: AgentMemory) -> None:
    alice = memory.profile("alice")
    alice.remember("reply in French", kind="fact", verify=False)
    alice.remember("reply in French", kind="instruction", verify=False)
    alice.remember("reply in French", contact="bob", verify=False)
    alice.remember("reply in French", kind="task", verify=False)
    alice.remember("reply in French", kind="task", verify=False)
    alice.remember("deploy failed", fact_type="workflow-failure", verify=False)
    alice.remember("deploy failed", fact_type="workflow-failure", verify=False)
    assert not memory.consolidate("alice").changed  # events are occurrences: never merged


def test_decay_multiplies_by_0_8_after_30_days_unaccessed_with_a_floor(
        memory: AgentMemory) -> None:
    alice = memory.profile("alice")
    sure = alice.remember("alice likes jazz")  # 0.9
    low = alice.remember("alice may own a boat", confidence=0.11)
    floor = alice.remember("alice once visited Oslo", confidence=0.1)
    start = utcnow()

    assert memory.consolidate("alice", now=start + timedelta(days=29)).decayed == 0
    report = memory.consolidate("alice", now=start + timedelta(days=31)).profiles[0]
    assert {(d.memory_id, d.before, round(d.after, 6)) for d in report.decayed} == {
        (sure.id, 0.9, 0.72), (low.id, 0.11, 0.1)}
    assert alice.get(sure.id).confidence == pytest.approx(0.72)  # type: ignore[union-attr]
    assert alice.get(floor.id).confidence == 0.1  # type: ignore[union-attr]
    # the next decay comes a period after this one, not at every pass
    assert not memory.consolidate("alice", now=start + timedelta(days=40)).changed
    report = memory.consolidate("alice", now=start + timedelta(days=62)).profiles[0]
    assert [(d.memory_id, round(d.after, 6)) for d in report.decayed] == [(sure.id, 0.576)]
    assert alice.get(low.id).confidence == 0.1  # type: ignore[union-attr]


def test_a_recalled_memory_does_not_decay(memory: AgentMemory) -> None:
    alice = memory.profile("alice")
    used = alice.remember("alice speaks Portuguese")
    unused = alice.remember("alice has a red bicycle")
    later = utcnow() + timedelta(days=31)
    # accessed 31 days "after" it was written: its last access is what counts
    memory.store.put(access_rows(memory), "w", {
        "profile": "alice", "counts": {used.id: [1, (later - timedelta(days=1)).isoformat()]}})
    memory2 = AgentMemory(memory.store)
    report = memory2.consolidate("alice", now=later).profiles[0]
    assert [d.memory_id for d in report.decayed] == [unused.id]


def access_rows(memory: AgentMemory) -> tuple[str, ...]:
    return memory.profile("alice")._ctx.layout.access_by_writer


def test_the_model_writes_the_canonical_statement(memory: AgentMemory) -> None:
    model = ScriptedChatModel(responses=[{"text": "Alice drinks green tea each morning."}])
    alice = memory.profile("alice")
    alice.remember("alice drinks green tea every morning", verify=False)
    alice.remember("alice drinks hot green tea every morning", verify=False)

    (merge,) = memory.consolidate("alice", model=model).profiles[0].merged
    assert merge.by == "model" and merge.text == "Alice drinks green tea each morning."
    assert active(memory) == ["Alice drinks green tea each morning."]
    assert "alice drinks hot green tea every morning" in str(model.calls[0][-1].content)


async def test_async_twin(memory: AgentMemory) -> None:
    alice = memory.profile("alice")
    await alice.aremember("alice drinks green tea", verify=False)
    await alice.aremember("alice drinks green tea", verify=False)
    report = await memory.aconsolidate()
    assert report.merged == 1 and [p.profile for p in report.profiles] == ["alice"]
    assert not (await memory.aconsolidate()).changed


def test_a_member_deleted_or_superseded_during_the_pass_skips_its_cluster(
        memory: AgentMemory) -> None:
    alice = memory.profile("alice")
    a = alice.remember("alice drinks green tea", verify=False)
    b = alice.remember("alice drinks green tea", verify=False)
    c = alice.remember("alice plays the cello", key="hobby.music", verify=False)
    d = alice.remember("alice plays the cello", verify=False)
    other = AgentMemory(memory.store)  # another process, writing while the pass runs
    done: list[str] = []

    def agent_writes(messages: Any) -> dict[str, str]:
        if not done:
            other.profile("alice").delete(a.id)
            other.profile("alice").remember("alice plays the viola", key="hobby.music")
            done.append("x")
        return {"text": "merged"}

    model = ScriptedChatModel(respond=agent_writes)
    report = memory.consolidate("alice", model=model).profiles[0]

    assert report.merged == [] and sorted(map(sorted, report.skipped)) == sorted(
        [sorted([a.id, b.id]), sorted([c.id, d.id])])
    assert alice.get(a.id) is None  # not resurrected
    assert alice.get(b.id).status == "active"  # type: ignore[union-attr]
    assert alice.get(c.id).superseded_by is not None  # type: ignore[union-attr]
    assert sorted(active(memory)) == sorted(["alice drinks green tea", "alice plays the cello",
                                             "alice plays the viola"])
    assert "merged" not in active(memory)


def test_a_pass_started_while_one_runs_merges_nothing(memory: AgentMemory) -> None:
    alice = memory.profile("alice")
    alice.remember("alice drinks green tea", verify=False)
    alice.remember("alice drinks green tea", verify=False)
    other = AgentMemory(memory.store)
    inner: list[Any] = []

    def overlapping(messages: Any) -> dict[str, str]:
        if not inner:
            inner.append(other.consolidate("alice"))
        return {"text": "alice drinks green tea"}

    outer = memory.consolidate("alice", model=ScriptedChatModel(respond=overlapping))
    assert inner[0].profiles[0].busy and not inner[0].changed
    assert outer.merged == 1 and active(memory) == ["alice drinks green tea"]


def test_overlapping_merges_of_one_cluster_leave_one_canonical_memory(
        memory: AgentMemory) -> None:
    alice = memory.profile("alice")
    ctx = alice._ctx
    a = alice.remember("alice drinks green tea", verify=False)
    b = alice.remember("alice drinks green tea", verify=False)
    spec = WriteSpec(text="alice drinks green tea", source="consolidation")
    # two passes that both passed their fresh check: both wrote a canonical memory
    first = run_sync(plan_write(ctx, spec, verify=False, supersede=[a.id, b.id]))
    second = run_sync(plan_write(ctx, spec, verify=False, supersede=[a.id, b.id]))
    from langmem_edge.memory.consolidation import Merge

    retired = run_sync(_plan_settle(ctx, [Merge(memory_id=second.id, text="", members=[a.id, b.id],
                                                by="rules")]))
    assert retired == [second.id]
    assert [m.id for m in alice.list()] == [first.id]
    assert alice.get(second.id).superseded_by == first.id  # type: ignore[union-attr]


def test_without_a_vector_index_only_decay_runs() -> None:
    memory = AgentMemory(InMemoryStore())
    alice = memory.profile("alice")
    alice.remember("alice drinks green tea")
    alice.remember("alice drinks green tea")
    report = memory.consolidate("alice", now=utcnow() + timedelta(days=31)).profiles[0]
    assert not report.clustering and report.merged == [] and len(report.decayed) == 2


def test_the_canonical_memory_keeps_the_latest_expiry(memory: AgentMemory) -> None:
    alice = memory.profile("alice")
    soon, late = utcnow() + timedelta(days=3), utcnow() + timedelta(days=9)
    alice.remember("alice is in Rome this week", valid_until=soon, verify=False)
    alice.remember("alice is in Rome this week", valid_until=late, verify=False)
    (merge,) = memory.consolidate("alice").profiles[0].merged
    got = alice.get(merge.memory_id)
    assert got is not None and got.valid_until == late


async def test_passes_run_at_once_merge_each_cluster_once(memory: AgentMemory) -> None:
    import asyncio

    alice = memory.profile("alice")
    for topic in ("piano", "chess", "sailing"):
        for _ in range(3):
            await alice.aremember(f"alice enjoys {topic} lessons", verify=False)
    others = [AgentMemory(memory.store) for _ in range(3)]  # three processes
    reports = await asyncio.gather(*(m.aconsolidate("alice") for m in [memory, *others]))

    # the lease may let several start together (no compare-and-set): the settle step leaves
    # one canonical memory per cluster, every member superseded
    assert sum(r.merged for r in reports) >= 3
    canon = [m for m in alice.list(limit=500) if m.source == "consolidation"]
    assert len(canon) == 3
    assert sorted(active(memory)) == [f"alice enjoys {t} lessons"
                                      for t in ("chess", "piano", "sailing")]
    assert not (await memory.aconsolidate("alice")).changed


def test_passes_that_merge_between_each_other_s_fresh_read_and_write_leave_one(
        backend: str, request: pytest.FixtureRequest, tmp_path: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from langmem_edge.memory.config import MemoryConfig
    from langmem_edge.memory.semantic import write

    store = _store(backend, request, tmp_path, FakeEmbeddings(DIMS), DIMS)
    # a lease this short lets passes start while another runs (as when processes take it at
    # once: it has no compare-and-set)
    config = MemoryConfig(consolidation=ConsolidationConfig(lease_seconds=1e-6))
    alice = AgentMemory(store, config=config).profile("alice")
    for _ in range(3):
        alice.remember("alice enjoys piano lessons", verify=False)
    real_commit = write.plan_commit_new
    passes: list[Any] = []

    def racing_commit(ctx: Any, records: Any, *args: Any, **kw: Any) -> Any:
        # each pass's canonical memory has its id (the older, the smaller) when the next
        # pass starts: three passes write in the reverse order of their ids, the last
        # written taking every member first
        if records[0].source == "consolidation" and len(passes) < 3:
            passes.append(None)
            passes[-1] = AgentMemory(store, config=config).consolidate("alice").profiles[0]
        return (yield from real_commit(ctx, records, *args, **kw))

    monkeypatch.setattr(write, "plan_commit_new", racing_commit)
    passes.append(AgentMemory(store, config=config).consolidate("alice").profiles[0])
    merged = sorted(p.merged[0].memory_id for p in passes if p is not None and p.merged)
    assert len(merged) >= 2
    canon = [m.id for m in alice.list(limit=500) if m.source == "consolidation"]
    assert canon == merged[:1]
    assert [m.text for m in alice.list(limit=500)] == ["alice enjoys piano lessons"]
