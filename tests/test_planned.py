"""``planned`` and ``threaded``: a method written once, with an async twin that shares its one
signature (issue 38's "signatures once")."""

from __future__ import annotations

import asyncio
import inspect
import threading
from typing import Any

import pytest
from langgraph.store.base import GetOp, PutOp
from langgraph.store.memory import InMemoryStore

from langmem_edge._twins import threaded
from langmem_edge.memory import Profile, ProfileWorking
from langmem_edge.memory.core.plans import Plan, StoreStep, planned


class Notes:
    """A toy with one planned method over a store."""

    def __init__(self, store: InMemoryStore) -> None:
        self.store = store

    @planned
    def put(self, key: str, text: str, *, tag: str = "") -> Plan[str | None]:
        """Store ``text`` under ``key``; returns what was there."""
        old = yield StoreStep((GetOp(("n",), key),), self.store)
        yield StoreStep((PutOp(("n",), key, {"text": text, "tag": tag}),), self.store)
        return old[0].value["text"] if old[0] is not None else None

    aput = put.twin


def test_the_sync_face_and_the_twin_run_one_body() -> None:
    notes = Notes(InMemoryStore())
    assert notes.put("a", "one") is None
    assert asyncio.run(notes.aput("a", "two", tag="x")) == "one"
    assert notes.put("a", "three") == "two"
    assert Notes.put(notes, "a", "four") == "three"  # called on the class
    assert asyncio.run(Notes.aput(notes, "a", "five")) == "four"


def test_both_faces_show_the_written_signature_and_docs() -> None:
    notes = Notes(InMemoryStore())
    want = "(key: 'str', text: 'str', *, tag: 'str' = '') -> 'str | None'"  # future annotations
    assert str(inspect.signature(notes.put)) == want
    assert str(inspect.signature(notes.aput)) == want
    assert str(inspect.signature(Notes.put)).startswith("(self, key: 'str'")
    assert notes.put.__name__ == "put" and notes.aput.__name__ == "aput"
    assert notes.put.__doc__ == "Store ``text`` under ``key``; returns what was there."
    assert notes.aput.__doc__ == "Async :meth:`put`."
    assert inspect.iscoroutinefunction(notes.aput)
    assert not inspect.iscoroutinefunction(notes.put)


def test_a_bad_argument_fails_on_both_faces_alike() -> None:
    notes = Notes(InMemoryStore())
    with pytest.raises(TypeError):
        notes.put("a")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        asyncio.run(notes.aput("a"))  # type: ignore[call-arg]


@pytest.mark.parametrize(("cls", "name"), [
    (Profile, "remember"), (Profile, "recall"), (Profile, "update"),
    (ProfileWorking, "set_ongoing_task"), (ProfileWorking, "get_context"),
])
def test_the_memory_twins_share_their_signature(cls: type[Any], name: str) -> None:
    sync, twin = inspect.signature(getattr(cls, name)), inspect.signature(getattr(cls, "a" + name))
    assert sync == twin
    assert "Plan" not in str(sync.return_annotation)


class Blocking:
    """A toy whose async twin runs the blocking method on a worker thread."""

    def lookup(self, key: str, *, default: int = 0) -> int:
        """The value of ``key``."""
        if key == "bad":
            raise KeyError(key)
        return {"a": 1}.get(key, default) + threading.get_ident() * 0

    alookup = threaded(lookup)


def test_threaded_twins_share_the_signature_and_run_off_the_event_loop() -> None:
    toy = Blocking()
    assert asyncio.run(toy.alookup("a")) == 1
    assert asyncio.run(toy.alookup("z", default=7)) == 7
    assert asyncio.run(Blocking.alookup(toy, "a")) == 1
    assert str(inspect.signature(toy.alookup)) == str(inspect.signature(toy.lookup))
    assert toy.alookup.__name__ == "alookup" and inspect.iscoroutinefunction(toy.alookup)
    with pytest.raises(KeyError):
        asyncio.run(toy.alookup("bad"))

    async def thread_of_call() -> bool:
        seen: list[int] = []
        original = Blocking.lookup

        def spy(self: Blocking, key: str, *, default: int = 0) -> int:
            seen.append(threading.get_ident())
            return original(self, key, default=default)

        twin = threaded(spy)
        await twin(toy, "a")
        return seen[0] != threading.get_ident()

    assert asyncio.run(thread_of_call())
