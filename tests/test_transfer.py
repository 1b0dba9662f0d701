"""Export and import (memory/transfer.py): a round trip keeps recall, history, sessions,
overlays, working rows and access counts; import is idempotent; bad files are refused
before anything is written."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from langmem_edge import AgentMemory, InvalidInputError, NotFoundError
from langmem_edge.memory.transfer import (
    EXPORT_VERSION,
    aexport_jsonl,
    aimport_jsonl,
    export_jsonl,
    import_jsonl,
    list_sessions,
)
from langmem_edge.testing import FakeEmbeddings

DIMS = 64
QUERIES = ["what theme does alice like", "where does alice live", "coffee", "deploy friday"]


def index() -> dict[str, Any]:
    return {"dims": DIMS, "embed": FakeEmbeddings(DIMS), "fields": ["text"]}


def conversation(n: int, prefix: str) -> list[dict[str, str]]:
    return [{"role": "user" if i % 2 == 0 else "assistant",
             "content": f"{prefix} message {i} about the weather report number {i}"}
            for i in range(n)]


def seed(memory: AgentMemory) -> None:
    """A profile with supersession chains, an update, a forgotten memory, contact scopes,
    a task, two sessions (one compacted: an overlay), working rows and access counts."""
    alice = memory.profile("alice")
    alice.remember("Alice prefers light mode", key="preference.ui_theme")
    alice.remember("Alice prefers dark mode", key="preference.ui_theme")
    third = alice.remember("Alice prefers solarized dark", key="preference.ui_theme")
    alice.update(third.id, text="Alice prefers solarized dark, always")
    city = alice.remember("Alice lives in Singapore", key="identity.city")
    alice.remember("Alice moved to Lisbon", key="identity.city")
    gone = alice.remember("Alice drinks coffee at 9", key="habit.coffee")
    alice.forget(gone.id, reason="wrong")
    alice.remember("Bob asked about the deploy on friday", contact="bob", kind="event")
    alice.remember("Finish the friday deploy checklist", kind="task", session_id="s1")
    alice.ingest(conversation(40, "long"), session_id="s1")
    alice.ingest(conversation(4, "short"), session_id="s2", contact="bob")
    window = alice.episodic.window("s1", 120)
    assert window.new_overlay is not None
    alice.working.set_context("t1", "step one done")
    alice.working.set_context("t1", "step two next", mode="append")
    alice.working.set_ongoing_task("t1", "ship it", steps=["a", "b"])
    alice.working.record_tool_call("t1", "call-1", "search", {"q": "x"}, "found x")
    alice.recall("what theme does alice like")
    alice.get(city.id)
    memory.flush()
    memory.profile("zed").remember("Zed likes chess", key="preference.game")


def export_lines(memory: AgentMemory, **kwargs: Any) -> list[dict[str, Any]]:
    buf = io.StringIO()
    export_jsonl(memory, buf, **kwargs)
    lines = [json.loads(x) for x in buf.getvalue().splitlines()]
    lines[0].pop("exported_at")
    return lines


def fingerprint(memory: AgentMemory, name: str = "alice") -> dict[str, Any]:
    """What a user sees: every record (any status) with its access count, the history of
    each key, recall results, sessions."""
    p = memory.profile(name)
    records = [m.model_dump(mode="json") for m in p.list(status="all", limit=500)]
    keys = sorted({r["key"] for r in records if r["key"]})
    recalls = {q: [(c.id, round(c.score, 4)) for c in p.recall(q).candidates] for q in QUERIES}
    return {"records": records,
            "history": {k: [m.id for m in p.history(k)] for k in keys},
            "recall": recalls,
            "sessions": [s.model_dump(mode="json") for s in list_sessions(memory, name)]}


@pytest.fixture
def source(chroma_store_factory: Any) -> AgentMemory:
    memory = AgentMemory(chroma_store_factory("src", index=index()))
    seed(memory)
    return memory


def test_round_trip_gives_the_same_profile(source: AgentMemory, chroma_store_factory: Any,
                                           tmp_path: Path) -> None:
    dump = tmp_path / "alice.jsonl"
    result = export_jsonl(source, dump, profiles=["alice"])
    assert result.profiles == ["alice"]
    every = source.profile("alice").list(status="all", limit=500)
    assert result.counts["memory"] == len(every) == 9 and result.counts["overlay"] == 1
    assert result.counts["session"] == 2 and result.counts["message"] == 44
    assert result.counts["working"] >= 4 and result.counts["access"] >= 1
    before = fingerprint(source)
    target = AgentMemory(chroma_store_factory("dst", index=index()))
    imported = import_jsonl(target, dump)
    assert imported.profiles == ["alice"] and imported.written == result.counts
    assert imported.existing == {k: 0 for k in result.counts}
    assert target.list_profiles() == ["alice"]  # zed was not in the file
    # a new process's view of the imported store: the same records, chains, recalls
    fresh = AgentMemory(target.store)
    after = fingerprint(fresh)
    assert after == before
    theme = fresh.profile("alice").history("preference.ui_theme")
    assert [m.status for m in theme] == ["superseded"] * 3 + ["active"]
    assert theme[-1].text == "Alice prefers solarized dark, always"
    # the messages, overlays and working rows are the same items: export both and compare
    lines = export_lines(fresh, profiles=["alice"])
    assert lines == export_lines(source, profiles=["alice"])
    assert [ln["key"] for ln in lines if ln["type"] == "overlay"] == [overlay_id(dump)]
    w = fresh.profile("alice").working
    assert w.get_context("t1") == "step one done\nstep two next"
    assert w.get_ongoing_task("t1").steps == ("a", "b")
    turn = w.unfinished_turn("t1")
    assert turn is not None and turn.rows[0].result_preview == "found x"


def overlay_id(dump: Path) -> str:
    lines = [json.loads(x) for x in dump.read_text().splitlines()]
    return next(ln["key"] for ln in lines if ln["type"] == "overlay")


def test_import_is_idempotent(source: AgentMemory, tmp_path: Path) -> None:
    dump = tmp_path / "all.jsonl"
    result = export_jsonl(source, dump)  # every profile
    assert result.profiles == ["alice", "zed"]
    target = AgentMemory(InMemoryStore(index=index()))
    first = import_jsonl(target, dump)
    once = export_lines(target)
    again = import_jsonl(target, dump)
    assert sum(again.written.values()) == 0
    assert again.existing == first.written
    assert export_lines(target) == once
    assert export_lines(target) == export_lines(source)
    # the same file into its own store: nothing new, nothing changed
    back = import_jsonl(source, dump)
    assert sum(back.written.values()) == 0


def test_import_finishes_a_partial_one(source: AgentMemory, tmp_path: Path) -> None:
    dump = tmp_path / "a.jsonl"
    export_jsonl(source, dump, profiles=["alice"])
    target = AgentMemory(InMemoryStore(index=index()))
    target.profile("alice").remember("Alice prefers light mode", key="preference.ui_theme")
    # the import adds what is missing and leaves the memory already there as it is
    import_jsonl(target, dump, profiles=["alice"])
    records = target.profile("alice").list(status="all", limit=500)
    assert len(records) == len(source.profile("alice").list(status="all", limit=500)) + 1


async def test_async_twins(source: AgentMemory, tmp_path: Path) -> None:
    dump = tmp_path / "a.jsonl"
    result = await aexport_jsonl(source, dump, profiles=["zed"])
    assert result.counts == {"memory": 1}
    target = AgentMemory(InMemoryStore(index=index()))
    got = await aimport_jsonl(target, dump)
    assert got.written == {"memory": 1}
    assert target.profile("zed").recall("chess").candidates[0].text == "Zed likes chess"


def test_progress_is_reported(source: AgentMemory, tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    export_jsonl(source, tmp_path / "a.jsonl", on_progress=lambda d, t: seen.append((d, t)))
    assert seen and seen[-1][0] == seen[-1][1] > 50
    seen.clear()
    import_jsonl(AgentMemory(InMemoryStore(index=index())), tmp_path / "a.jsonl",
                 on_progress=lambda d, t: seen.append((d, t)))
    assert seen[-1][0] == seen[-1][1]


def test_missing_profile_is_not_found(source: AgentMemory, tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="'nobody'.*'alice', 'zed'"):
        export_jsonl(source, tmp_path / "x.jsonl", profiles=["nobody"])
    assert not (tmp_path / "x.jsonl").exists()
    assert not (tmp_path / "x.jsonl.partial").exists()


def small_export() -> list[str]:
    memory = AgentMemory(InMemoryStore(index=index()))
    memory.profile("zed").remember("Zed likes chess", key="preference.game")
    buf = io.StringIO()
    export_jsonl(memory, buf)
    return buf.getvalue().splitlines()


@pytest.mark.parametrize("edit, message", [
    (lambda ls: ["not json", *ls], "line 1 is not JSON"),
    (lambda ls: ls[1:], "first line is not a langmem-edge export header"),
    (lambda ls: ls[:-1], "without its end line"),
    (lambda ls: [ls[0], ls[2]], "end line counts"),
    (lambda ls: [ls[0].replace(f'"version": {EXPORT_VERSION}', '"version": 99'), *ls[1:]],
     "format version 99"),
    (lambda ls: [ls[0], ls[1].replace('"profile":"zed"', '"profile":"eve"', 1), ls[2]],
     "line 2 \\(memory\\): the value belongs to profile 'zed'"),
    (lambda ls: [ls[0], ls[1].replace('"key":"', '"key":"x', 1), ls[2]], "is not its key"),
    (lambda ls: [ls[0], ls[1], ls[2], ls[2]], "after the end line"),
    (lambda ls: [], "the file is empty"),
])
def test_bad_files_are_refused_before_writing(edit: Any, message: str) -> None:
    target = AgentMemory(InMemoryStore(index=index()))
    with pytest.raises(InvalidInputError, match=message):
        import_jsonl(target, edit(small_export()))
    assert target.list_profiles() == []


def test_unknown_record_types_are_skipped_and_counted() -> None:
    header, memory_line, end = small_export()
    future = json.dumps({"type": "hologram", "profile": "zed", "key": "r1", "value": {}})
    counts = json.loads(end)
    counts["counts"]["hologram"] = 1
    target = AgentMemory(InMemoryStore(index=index()))
    result = import_jsonl(target, [header, memory_line, future, json.dumps(counts)])
    assert result.unknown == {"hologram": 1} and result.written == {"memory": 1}


def test_list_sessions(source: AgentMemory) -> None:
    sessions = list_sessions(source, "alice")
    assert [(s.session_id, s.messages) for s in sessions] == [("s1", 40), ("s2", 4)]
    assert sessions[1].contact == "bob" and sessions[0].first_at is not None
    assert list_sessions(source, "zed") == []


def reflective_source() -> AgentMemory:
    """A profile with goals (one moved twice: a history of three) and a reflection."""
    memory = AgentMemory(InMemoryStore(index=index()))
    bob = memory.profile("bob")
    bob.remember("Bob ships on fridays", key="habit.ship")
    bob.ingest(conversation(6, "plan"), session_id="s1")
    r = bob.reflective
    goal = r.add_goal("ship the beta", steps=["write docs", "tag release"])
    r.update_goal(goal.id, steps_done=["write docs"])
    r.update_goal(goal.id, status="done", note="released")
    r.add_goal("learn rust")
    assert bob.reflect().written
    return memory


def test_reflective_records_round_trip(tmp_path: Path) -> None:
    source = reflective_source()
    dump = tmp_path / "bob.jsonl"
    result = export_jsonl(source, dump)
    assert result.counts["goal"] == 2 and result.counts["reflection"] == 1
    target = AgentMemory(InMemoryStore(index=index()))
    first = import_jsonl(target, dump)
    assert first.written == result.counts and first.unknown == {}
    before, after = source.profile("bob").reflective, target.profile("bob").reflective
    assert after.export() == before.export()
    goals = after.goals()
    assert [g.title for g in goals] == ["ship the beta", "learn rust"]
    assert [e.status for e in goals[0].history] == ["open", "progressed", "done"]
    assert [r.id for r in after.reflections()] == [r.id for r in before.reflections()]
    # a learning the reflection cites is a memory that came along with its id
    cited = {ref.memory_id for r in after.reflections() for ref in r.learnings}
    assert cited <= {m.id for m in target.profile("bob").list(status="all", limit=500)}
    # idempotent: a second import writes nothing and changes nothing
    again = import_jsonl(target, dump)
    assert sum(again.written.values()) == 0 and again.existing == first.written
    assert export_lines(target) == export_lines(source)


def test_a_bad_goal_line_is_refused(tmp_path: Path) -> None:
    dump = tmp_path / "bob.jsonl"
    export_jsonl(reflective_source(), dump)
    lines = dump.read_text().splitlines()
    n = next(i for i, ln in enumerate(lines) if json.loads(ln)["type"] == "goal")
    bad = json.loads(lines[n])
    bad["value"]["status"] = "maybe"
    lines[n] = json.dumps(bad)
    target = AgentMemory(InMemoryStore(index=index()))
    with pytest.raises(InvalidInputError, match=f"line {n + 1} \\(goal\\): not a goal record"):
        import_jsonl(target, lines)
    assert target.list_profiles() == []


def test_imported_messages_embed_the_field_the_tier_wrote(tmp_path: Path) -> None:
    """Messages exported with their embedded field (day, speaker, turns before) are put
    with that field embedded again, not the store's own fields."""
    from langgraph.store.base import PutOp

    from langmem_edge.memory.episodic.embedded import MESSAGE_INDEX_FIELDS

    src = AgentMemory(InMemoryStore(index=index()))
    src.profile("alice").ingest(conversation(4, "trip"), session_id="s1")
    dump = tmp_path / "dump.jsonl"
    export_jsonl(src, dump)

    class Recording(InMemoryStore):
        puts: list[PutOp] = []

        def batch(self, ops: Any) -> Any:
            ops = list(ops)
            self.puts += [op for op in ops if isinstance(op, PutOp)]
            return super().batch(ops)

    target_store = Recording(index=index())
    import_jsonl(AgentMemory(target_store), dump)
    messages = [op for op in target_store.puts if "messages" in op.namespace
                and op.value is not None and op.value.get("kind") == "message"]
    assert len(messages) == 4
    assert all(op.index == MESSAGE_INDEX_FIELDS for op in messages)
