"""Namespace labels through AgentMemory: what may become a label, and no wildcard escapes.

Profile names and session ids become store namespace labels; AgentMemory refuses control
characters in them on every store (``InMemoryStore`` would take them, ``ChromaStore`` joins
labels with U+001F). ``*`` and other glob characters are ordinary names: nothing a user
names ever reaches a ``list_namespaces`` match condition, where ``*`` is a wildcard.
"""

# ruff: noqa: F811 - pytest fixtures imported from test_memory_support are redefined as parameters

from __future__ import annotations

from typing import Any

import pytest
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.base import InvalidNamespaceError as LanggraphInvalidNamespaceError
from langgraph.store.memory import InMemoryStore
from test_memory_support import (  # noqa: F401 - fixtures
    DIMS,
    chroma_store_class,
    embed,
    make_store,
    memory,
    store,
)

from langmem_edge.errors import ConfigurationError, InvalidInputError, InvalidNamespaceError
from langmem_edge.memory import AgentMemory
from langmem_edge.testing import FakeEmbeddings

CONTROL_NAMES = ["alice\x1fmemories", "tab\tname", "line\nbreak", "del\x7f", "nul\x00",
                 "\x1f", "bell\x07"]
GLOB_NAMES = ["*", "a*", "*a", "?", "[ab]", "%", "_", "**"]
CONVERSATION = [{"role": "user", "content": "I live in Lisbon and my dog is called Rex."},
                {"role": "assistant", "content": "Noted."}]


def everything(store: BaseStore, prefix: tuple[str, ...] = ("langmem_edge",)) -> list[Any]:
    """Every item under ``prefix``."""
    items: list[Any] = []
    while True:
        page = store.search(prefix, limit=500, offset=len(items))
        items += page
        if len(page) < 500:
            return items


# -- control characters ----------------------------------------------------------------------


@pytest.mark.parametrize("name", CONTROL_NAMES)
def test_profile_names_with_control_characters_are_refused(memory: AgentMemory,
                                                           store: BaseStore, name: str) -> None:
    with pytest.raises(InvalidNamespaceError, match="control character") as caught:
        memory.profile(name)
    assert repr(name) in str(caught.value)
    assert isinstance(caught.value, LanggraphInvalidNamespaceError)
    assert caught.value.code == "invalid_namespace"
    for call in (memory.delete_profile, lambda n: memory.reembed(profile=n)):
        with pytest.raises(InvalidNamespaceError):
            call(name)
    assert everything(store) == []


def test_a_separator_in_a_profile_name_cannot_reach_another_profile(memory: AgentMemory
                                                                    ) -> None:
    alice = memory.profile("alice")
    alice.remember("Alice likes kites", key="hobby")
    with pytest.raises(InvalidNamespaceError):
        memory.profile("alice\x1fmemories").remember("Planted note about kites", key="hobby")
    assert [c.memory.text for c in alice.recall("kites").candidates] == ["Alice likes kites"]
    assert memory.list_profiles() == ["alice"]


@pytest.mark.parametrize("session", ["s\x1fx", "s\tx", "\x7f", "s\nx"])
def test_session_ids_with_control_characters_are_refused(memory: AgentMemory, store: BaseStore,
                                                         session: str) -> None:
    p = memory.profile("p")
    with pytest.raises(InvalidNamespaceError, match="session_id") as caught:
        p.ingest(CONVERSATION, session_id=session)
    assert repr(session) in str(caught.value)
    assert everything(store) == []
    tier = p._episodic()
    for call in (lambda: tier.list_messages(session), lambda: p.delete_session(session),
                 lambda: p.episodic.window(session, 1000), lambda: tier.overlays(session),
                 lambda: p.episodic.search("dog", scope="conversation",
                                               session_id=session)):
        with pytest.raises(InvalidNamespaceError):
            call()


def test_ingest_refuses_a_bad_contact_before_writing(memory: AgentMemory,
                                                     store: BaseStore) -> None:
    # the contact is a value, not a label, but the memories extracted from the messages
    # refuse control characters in it: the whole ingest is refused before anything is written
    with pytest.raises(InvalidInputError, match="contact"):
        memory.profile("p").ingest(CONVERSATION, session_id="s", contact="bob\x1f")
    assert everything(store) == []


def test_values_and_keys_may_hold_what_labels_may_not(memory: AgentMemory) -> None:
    p = memory.profile("p")
    rec = p.remember("Likes *.txt files\x1f and tabs\t", key="pref.files*",
                     contact="*", session_id="a*b", tags=["*"], metadata={"x\x1f": "*"})
    assert p.get(rec.id).key == "pref.files*"
    assert [c.id for c in p.recall("txt files", contact="*").candidates] == [rec.id]
    out = p.ingest([{"role": "user", "content": "a\x1fb \t c"}], session_id="s:1/2*",
                   contact="carol*")
    assert out.messages_added == 1
    assert [m.content for m in p._episodic().list_messages("s:1/2*")] == ["a\x1fb \t c"]


@pytest.mark.parametrize("bad", [("app\x1fx",), ("ok", "\t"), ("a\x7f",)])
def test_namespace_labels_with_control_characters_are_refused(store: BaseStore,
                                                              bad: tuple[str, ...]) -> None:
    with pytest.raises(ConfigurationError, match="control character") as caught:
        AgentMemory(store, namespace=bad)
    assert isinstance(caught.value.__cause__, InvalidNamespaceError)


# -- wildcards -------------------------------------------------------------------------------


@pytest.mark.parametrize("wild", GLOB_NAMES)
def test_delete_profile_of_a_glob_name_deletes_only_that_profile(memory: AgentMemory,
                                                                 wild: str) -> None:
    names = ["a", "ab", "b", wild]
    for n in names:
        memory.profile(n).remember(f"Memory of {n} about kites")
        memory.profile(n).ingest(CONVERSATION, session_id="s1")
    assert memory.delete_profile(wild) >= 3
    assert memory.list_profiles() == sorted(set(names) - {wild})
    for n in set(names) - {wild}:
        assert memory.profile(n).recall("kites").count >= 1
        assert len(memory.profile(n)._episodic().list_messages("s1")) == 2
    assert memory.profile(wild).list(status="all").memories == []
    assert memory.delete_profile(wild) == 0


async def test_adelete_profile_of_star_deletes_only_it(memory: AgentMemory) -> None:
    for n in ["a", "*"]:
        await memory.profile(n).aremember(f"Memory of {n}")
    assert await memory.adelete_profile("*") >= 1
    assert await memory.alist_profiles() == ["a"]


def test_star_profile_is_listed_counted_and_isolated(memory: AgentMemory) -> None:
    star, a = memory.profile("*"), memory.profile("a")
    rs = star.remember("Star secret about kites", key="secret")
    ra = a.remember("A secret about kites", key="secret")
    assert memory.list_profiles() == ["*", "a"]
    assert set(memory.stats().profiles) == {"*", "a"}
    assert [c.id for c in star.recall("kites").candidates] == [rs.id]
    assert [c.id for c in a.recall("kites").candidates] == [ra.id]
    assert [m.id for m in star.list(status="all").memories] == [rs.id]
    assert star.get(ra.id) is None and a.get(rs.id) is None


def test_a_star_namespace_does_not_reach_other_apps(store: BaseStore) -> None:
    app = AgentMemory(store, namespace=("app",))
    app.profile("p").remember("App data about kites")
    star = AgentMemory(store, namespace=("*",))
    assert star.list_profiles() == [] and star.stats().total == 0
    assert star.delete_profile("p") == 0
    star.profile("q").remember("Star app data")
    assert star.list_profiles() == ["q"] and app.list_profiles() == ["p"]
    assert app.profile("p").recall("kites").count == 1


# -- names round-trip ------------------------------------------------------------------------

ODD_NAMES = ["alice", "alice2", "alic", "user:alice", "user", "a b", " lead", "trail ",
             "ü-ß", "日本", "*", "/x/", "alice:memories", "memories", "profiles", "meta",
             "changes", "x" * 100]


def test_profile_names_round_trip(memory: AgentMemory) -> None:
    for n in ODD_NAMES:
        memory.profile(n).remember(f"Memory of {n!r}")
    assert memory.list_profiles() == sorted(ODD_NAMES)
    stats = memory.stats()
    assert set(stats.profiles) == set(ODD_NAMES)
    assert all(s.total == 1 for s in stats.profiles.values()) and stats.total == len(ODD_NAMES)
    for n in ["alice", "user", "memories"]:
        assert memory.delete_profile(n) >= 1
    rest = sorted(set(ODD_NAMES) - {"alice", "user", "memories"})
    assert memory.list_profiles() == rest
    for n in rest:
        assert [m.text for m in memory.profile(n).list().memories] == [f"Memory of {n!r}"]


# -- the delete_prefix protocol --------------------------------------------------------------


class PrefixDeletingStore(InMemoryStore):
    """An ``InMemoryStore`` with ``delete_prefix`` (as ``ChromaStore`` has): counts calls."""

    def __init__(self) -> None:
        super().__init__(index={"dims": DIMS, "embed": FakeEmbeddings(DIMS),
                                "fields": ["text"]})
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def _delete(self, prefix: tuple[str, ...]) -> int:
        doomed = [(ns, key) for ns, items in self._data.items()
                  if ns[:len(prefix)] == prefix for key in items]
        self.batch([PutOp(ns, key, None) for ns, key in doomed])
        return len(doomed)

    def delete_prefix(self, prefix: tuple[str, ...]) -> int:
        self.calls.append(("sync", tuple(prefix)))
        return self._delete(tuple(prefix))

    async def adelete_prefix(self, prefix: tuple[str, ...]) -> int:
        self.calls.append(("async", tuple(prefix)))
        return self._delete(tuple(prefix))


def _fill(memory: AgentMemory, names: list[str]) -> None:
    for n in names:
        memory.profile(n).remember(f"Memory of {n} about kites", key="k")
        memory.profile(n).remember(f"Newer memory of {n} about kites", key="k")
        memory.profile(n).ingest(CONVERSATION, session_id="s1")


def test_delete_profile_uses_delete_prefix_when_the_store_has_it() -> None:
    store = PrefixDeletingStore()
    memory = AgentMemory(store)
    _fill(memory, ["*", "a", "a*"])
    before = len(everything(store))
    root = ("langmem_edge", "profiles", "*")
    deleted = memory.delete_profile("*")
    assert store.calls and all(mode == "sync" for mode, _ in store.calls)
    assert all(prefix[:3] == root for _, prefix in store.calls)
    assert store.calls[-1][1] == root  # the generation marker goes last
    assert deleted == before - len(everything(store)) >= 6
    assert memory.list_profiles() == ["a", "a*"]
    assert memory.profile("a").recall("kites").count >= 1


async def test_adelete_profile_uses_adelete_prefix() -> None:
    store = PrefixDeletingStore()
    memory = AgentMemory(store)
    _fill(memory, ["*", "b"])
    assert await memory.adelete_profile("*") >= 6
    assert store.calls and all(mode == "async" for mode, _ in store.calls)
    assert await memory.alist_profiles() == ["b"]


def test_fallback_counts_what_it_deleted(memory: AgentMemory, store: BaseStore) -> None:
    _fill(memory, ["*", "a"])
    before = len(everything(store))
    deleted = memory.delete_profile("*")
    assert deleted == before - len(everything(store))
    assert everything(store, ("langmem_edge", "profiles", "*")) == []
