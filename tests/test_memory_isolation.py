"""Profile isolation: no call on one profile ever returns another profile's data."""

# ruff: noqa: F811 - pytest fixtures imported from test_memory_support are redefined as parameters

from __future__ import annotations

import tempfile
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from test_memory_support import (  # noqa: F401 - fixtures
    DIMS,
    chroma_store_class,
    embed,
    make_store,
    memory,
    store,
)

from langmem_edge.errors import InvalidInputError, InvalidNamespaceError, LimitExceededError
from langmem_edge.memory import AgentMemory
from langmem_edge.testing import FakeEmbeddings


def test_same_texts_and_keys_stay_in_their_profile(memory: AgentMemory) -> None:
    a, b = memory.profile("user:a"), memory.profile("user:b")
    ra = a.remember("Secret code is 1234", key="secret.code", contact="c")
    rb = b.remember("Secret code is 1234", key="secret.code", contact="c")
    for p, mine, theirs in [(a, ra, rb), (b, rb, ra)]:
        for query in ["Secret code", "secret.code", theirs.id, "1234"]:
            for contact in [None, "c"]:
                ids = {c.id for c in p.recall(query, contact=contact).candidates}
                assert theirs.id not in ids
        assert p.get(theirs.id) is None
        assert [m.id for m in p.history("secret.code")] == [mine.id]
        assert p.history(theirs.id) == []
        assert [m.id for m in p.list(status="all").memories] == [mine.id]
        assert p.delete(theirs.id) is False
        with pytest.raises(Exception, match="no memory"):
            p.forget(theirs.id)
    assert a.get(ra.id) is not None and b.get(rb.id) is not None


def test_key_supersession_never_crosses_profiles(memory: AgentMemory) -> None:
    a, b = memory.profile("a"), memory.profile("b")
    ra = a.remember("Theme dark", key="preference.theme")
    b.remember("Theme light", key="preference.theme")
    assert a.get(ra.id).status == "active"


def test_similar_profile_names_are_distinct(memory: AgentMemory) -> None:
    memory.profile("alice").remember("Alice fact about kites")
    assert memory.profile("alice2").recall("kites").count == 0
    assert memory.profile("alic").recall("kites").count == 0


def test_delete_profile_removes_everything(memory: AgentMemory, store: BaseStore) -> None:
    a, b = memory.profile("a"), memory.profile("b")
    a.remember("Likes tea", key="k")
    a.remember("Likes coffee", key="k")
    b.remember("Likes water")
    assert memory.list_profiles() == ["a", "b"]
    assert memory.delete_profile("a") >= 2
    assert memory.list_profiles() == ["b"]
    assert a.recall("likes").count == 0 and a.list(status="all").memories == []
    assert b.recall("likes water").count == 1
    rest = store.search(("langmem_edge", "profiles", "a"), limit=100)
    assert rest == []
    a.remember("Likes juice")  # the profile can be used again
    assert [m.text for m in a.list().memories] == ["Likes juice"]


@pytest.mark.parametrize("name", ["", "a.b", "x" * 101, "nul\x00", "a\x1fb", "tab\t", "\x7f"])
def test_profile_names_are_validated(memory: AgentMemory, name: str) -> None:
    with pytest.raises((InvalidInputError, LimitExceededError)):
        memory.profile(name)


@pytest.mark.parametrize("name", ["nul\x00", "a\x1fb", "tab\t", "\x7f", "a.b", "   "])
def test_bad_profile_names_are_namespace_errors(memory: AgentMemory, name: str) -> None:
    with pytest.raises(InvalidNamespaceError, match="profile name"):
        memory.profile(name)


def test_separator_in_a_name_reaches_no_other_profile(memory: AgentMemory) -> None:
    memory.profile("alice").remember("Alice fact about kites")
    for name in ["alice\x1fmemories", "alice\x1f", "\x1falice"]:
        with pytest.raises(InvalidNamespaceError):
            memory.profile(name)
    assert memory.list_profiles() == ["alice"]


@pytest.mark.parametrize("wild", ["*", "a*", "?", "*a"])
def test_wildcard_names_are_plain_profiles(memory: AgentMemory, wild: str) -> None:
    memory.profile("a").remember("A fact about kites")
    memory.profile("ab").remember("AB fact about kites")
    memory.profile(wild).remember("Wild fact about kites")
    assert memory.list_profiles() == sorted({"a", "ab", wild})
    assert [c.memory.text for c in memory.profile(wild).recall("kites").candidates] == [
        "Wild fact about kites"]
    assert memory.delete_profile(wild) >= 1
    assert memory.list_profiles() == ["a", "ab"]
    assert memory.profile("a").recall("kites").count == 1
    assert memory.profile("ab").recall("kites").count == 1


def test_namespace_is_validated(store: BaseStore) -> None:
    from langmem_edge.errors import ConfigurationError

    for bad in [(), ("a.b",), ("langgraph",), "app", ("a\x1fb",), ("ok", "\t")]:
        with pytest.raises(ConfigurationError):
            AgentMemory(store, namespace=bad)  # type: ignore[arg-type]


def test_two_apps_share_a_store_without_seeing_each_other(store: BaseStore) -> None:
    one = AgentMemory(store, namespace=("app1",)).profile("p")
    two = AgentMemory(store, namespace=("app2",)).profile("p")
    one.remember("Only in app one")
    assert two.recall("app one").count == 0 and two.list().memories == []


# -- property test ---------------------------------------------------------------------------

PROFILES = ["p0", "p1", "p2", "user:p3", "*"]
CONTACTS = [None, "bob", "carol"]
WORDS = ["tea", "coffee", "dark", "mode", "city", "paris", "dog", "cat", "secret", "plan"]

texts_st = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)
ops_st = st.lists(
    st.one_of(
        st.tuples(
            st.just("remember"),
            st.sampled_from(PROFILES),
            st.sampled_from(CONTACTS),
            texts_st,
            st.sampled_from([None, "k.a", "k.b"]),
            st.sampled_from(["fact", "event", "task"]),
        ),
        st.tuples(
            st.just("recall"),
            st.sampled_from(PROFILES),
            st.sampled_from(CONTACTS),
            st.one_of(texts_st, st.sampled_from(["k.a", "k.b"])),
        ),
        st.tuples(st.just("forget"), st.sampled_from(PROFILES), st.integers(0, 50)),
        st.tuples(st.just("list"), st.sampled_from(PROFILES)),
    ),
    min_size=5,
    max_size=30,
)


def _run_ops(memory: AgentMemory, ops: list[Any]) -> None:
    owner: dict[str, str] = {}
    contact_of: dict[str, str | None] = {}
    written: list[str] = []
    for op in ops:
        if op[0] == "remember":
            _, prof, contact, text, key, kind = op
            rec = memory.profile(prof).remember(
                text, key=key, kind=kind, contact=contact, session_id="s"
            )
            owner[rec.id] = prof
            contact_of[rec.id] = contact
            written.append(rec.id)
        elif op[0] == "recall":
            _, prof, contact, query = op
            res = memory.profile(prof).recall(query, contact=contact)
            for c in res.candidates:
                assert owner[c.id] == prof, "recall returned another profile's memory"
                assert c.memory is not None and c.memory.profile == prof
                assert contact_of[c.id] in (None, contact)
        elif op[0] == "forget":
            _, prof, i = op
            if written:
                mid = written[i % len(written)]
                if owner[mid] == prof:
                    memory.profile(prof).forget(mid)
                else:
                    with pytest.raises(Exception, match="no memory"):
                        memory.profile(prof).forget(mid)
                    assert memory.profile(owner[mid]).get(mid) is not None
        else:
            _, prof = op
            for m in memory.profile(prof).list(status="all", limit=500).memories:
                assert owner[m.id] == prof


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=ops_st)
def test_property_no_cross_profile_reads_inmemory(ops: list[Any]) -> None:
    store = InMemoryStore(index={"dims": DIMS, "embed": FakeEmbeddings(DIMS), "fields": ["text"]})
    _run_ops(AgentMemory(store), ops)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=ops_st)
def test_property_no_cross_profile_reads_chroma(ops: list[Any]) -> None:
    cls = chroma_store_class()
    if cls is None:
        pytest.skip("ChromaStore is not importable yet")
    with tempfile.TemporaryDirectory() as folder:
        store = cls.from_path(
            folder, index={"dims": DIMS, "embed": FakeEmbeddings(DIMS), "fields": ["text"]}
        )
        try:
            _run_ops(AgentMemory(store), ops)
        finally:
            store.close()
