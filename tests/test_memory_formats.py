"""Records written before the ``live`` field (``memory/index/formats.py``): the first read of
a process gives every active one its field, once, and recall finds them as before; an export
of such records imports with the field."""

# ruff: noqa: F811 - pytest fixtures imported from test_memory_support are redefined as parameters

from __future__ import annotations

import io
import json
from typing import Any

from langgraph.store.base import BaseStore, PutOp
from test_memory_support import make_store, texts  # noqa: F401 - fixtures

from langmem_edge.memory import AgentMemory
from langmem_edge.memory.core.plans import run_sync
from langmem_edge.memory.index.formats import FORMATS, LIVE_MARK, Upgrades, plan_upgrade
from langmem_edge.memory.records import LIVE
from langmem_edge.memory.transfer import export_jsonl, import_jsonl

NS = ("langmem_edge",)


def stored(store: BaseStore, profile: str) -> dict[str, dict[str, Any]]:
    items = store.search((*NS, "profiles", profile, "memories"), limit=1000)
    return {it.key: it.value for it in items}


def as_before_the_field(store: BaseStore) -> None:
    """Every stored record without ``live`` and no marker: a store of the previous release."""
    for profile in ("p", "q"):
        ns = (*NS, "profiles", profile, "memories")
        store.batch([PutOp(ns, key, {k: v for k, v in value.items() if k != LIVE},
                           index=["text"]) for key, value in stored(store, profile).items()])
    store.delete((*NS, FORMATS), LIVE_MARK)


def test_records_of_the_previous_release_get_their_field_once_and_are_recalled(
        make_store) -> None:
    store = make_store()
    old = AgentMemory(store)
    p, q = old.profile("p"), old.profile("q")
    p.remember("Prefers tea in the morning", key="drink")
    kept = p.remember("Prefers coffee in the morning", key="drink")  # the tea is superseded
    gone = p.remember("Plays the cello on sundays")
    p.forget(gone.id)
    q.remember("Grows tomatoes on the balcony")
    as_before_the_field(store)
    assert all(LIVE not in v for v in stored(store, "p").values())
    skipped = AgentMemory(store)
    skipped.upgrades.done = True  # as if checked: the reads of active records miss them all
    assert texts(skipped.profile("p").recall("coffee morning", fill=False)) == []

    memory = AgentMemory(store)  # a process of this release
    assert texts(memory.profile("p").recall("coffee morning", fill=False)) == [kept.text]
    assert texts(memory.profile("q").recall("tomatoes balcony", fill=False)) == [
        "Grows tomatoes on the balcony"]
    lives = {v["text"]: v.get(LIVE) for v in stored(store, "p").values()}
    assert lives == {"Prefers tea in the morning": None, kept.text: "p",
                     "Plays the cello on sundays": None}
    assert store.get((*NS, FORMATS), LIVE_MARK).value["records"] == 2
    assert run_sync(plan_upgrade(store, Upgrades(NS))) == 0  # the marker: nothing again


def test_an_empty_memory_gets_its_marker_at_the_first_read(make_store) -> None:
    store = make_store()
    memory = AgentMemory(store)
    memory.profile("p").recall("tea")
    assert memory.upgrades.done
    assert store.get((*NS, FORMATS), LIVE_MARK).value["records"] == 0


def test_an_export_of_records_without_the_field_imports_with_it(make_store) -> None:
    source = AgentMemory(make_store(path="a"))
    rec = source.profile("p").remember("Keeps bees in the garden", key="hobby.bees")
    buf = io.StringIO()
    export_jsonl(source, buf)
    lines = [json.loads(line) for line in buf.getvalue().splitlines()]
    for line in lines:
        if isinstance(line.get("value"), dict):
            line["value"].pop(LIVE, None)
    old = io.StringIO("".join(json.dumps(line) + "\n" for line in lines))
    target_store = make_store(path="b")
    target = AgentMemory(target_store)
    import_jsonl(target, old)
    assert stored(target_store, "p")[rec.id][LIVE] == "p"
    assert texts(target.profile("p").recall("bees garden", fill=False)) == [rec.text]
