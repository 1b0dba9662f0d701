"""``ChromaStore.nearest_keys``: the vector ranking alone, without reading values.

Its names come from a per-process map learned from item rows (``store/names.py``), so the
tests check it against ``search`` on a fresh store, after another client's writes, and after
deletes, on a folder and on the server.
"""

from __future__ import annotations

from typing import Any

import pytest

from langmem_edge import ChromaStore, ConfigurationError, EmbeddingError, InvalidInputError
from langmem_edge.store.ranking import KeyHit
from langmem_edge.testing import FakeEmbeddings

DIMS = 32
TOPICS = [
    "dark mode theme",
    "coffee every morning",
    "hiking in the alps",
    "jazz records",
    "python type hints",
    "sourdough bread",
    "chess openings",
    "tea ceremony",
]


def index(emb: Any = None) -> dict[str, Any]:
    return {"dims": DIMS, "embed": emb or FakeEmbeddings(DIMS), "fields": ["text"]}


@pytest.fixture
def filled(chroma_store_factory: Any) -> Any:
    """A store with 8 topics x 5 namespaces ``("u", "user<n>")`` and a decoy prefix."""
    store = chroma_store_factory("a", index=index())
    for n in range(5):
        for i, topic in enumerate(TOPICS):
            store.put(("u", f"user{n}"), f"k{i}", {"text": f"{topic} {n}"})
    store.put(("decoy",), "k0", {"text": "dark mode theme 0"})
    return store


def as_pairs(hits: list[KeyHit]) -> list[tuple[tuple[str, ...], str]]:
    return [(h.namespace, h.key) for h in hits]


def test_ranks_as_search_does(filled: ChromaStore) -> None:
    for prefix in [("u", "user3"), ("u",), ()]:
        found = filled.search(prefix, query="dark theme", limit=6)
        keys = filled.nearest_keys(prefix, "dark theme", limit=6)
        assert as_pairs(keys) == [(i.namespace, i.key) for i in found]
        assert [k.score for k in keys] == pytest.approx([i.score for i in found])


def test_only_items_under_the_prefix(filled: ChromaStore) -> None:
    keys = filled.nearest_keys(("u", "user1"), "dark mode theme 0", limit=20)
    assert len(keys) == len(TOPICS)
    assert {k.namespace for k in keys} == {("u", "user1")}
    assert filled.nearest_keys(("nobody",), "dark mode", limit=5) == []


def test_a_fresh_store_learns_the_names(filled: ChromaStore, chroma_store_factory: Any) -> None:
    warm = filled.nearest_keys(("u", "user2"), "jazz", limit=4)
    cold = chroma_store_factory("a", index=index())  # a second client: nothing learned yet
    assert len(cold._names) == 0
    assert cold.nearest_keys(("u", "user2"), "jazz", limit=4) == warm


def test_another_clients_writes_and_deletes(filled: ChromaStore, chroma_store_factory: Any) -> None:
    other = chroma_store_factory("a", index=index())
    filled.nearest_keys(("u", "user0"), "chess", limit=3)  # learn the old names
    other.put(("u", "user0"), "new", {"text": "chess openings chess openings"})
    other.delete(("u", "user0"), "k6")
    keys = as_pairs(filled.nearest_keys(("u", "user0"), "chess openings", limit=3))
    assert keys[0] == (("u", "user0"), "new")
    assert (("u", "user0"), "k6") not in keys


def test_limit_zero_and_bad_arguments(filled: ChromaStore) -> None:
    assert filled.nearest_keys(("u",), "tea", limit=0) == []
    with pytest.raises(InvalidInputError):
        filled.nearest_keys(("u",), "tea", limit=-1)
    with pytest.raises(InvalidInputError):
        filled.nearest_keys(("u",), "", limit=3)
    with pytest.raises(InvalidInputError):
        filled.nearest_keys(("u", 3), "tea", limit=3)  # type: ignore[arg-type]


def test_needs_an_index(chroma_store_factory: Any) -> None:
    store = chroma_store_factory("plain")
    with pytest.raises(ConfigurationError):
        store.nearest_keys(("u",), "tea")


def test_embedding_failure_is_an_embedding_error(chroma_store_factory: Any) -> None:
    emb = FakeEmbeddings(DIMS)
    store = chroma_store_factory("e", index=index(emb))
    store.put(("u",), "k", {"text": "tea"})

    def broken(text: str) -> list[float]:
        raise RuntimeError("model down")

    emb.embed_query = broken  # type: ignore[method-assign]
    with pytest.raises(EmbeddingError):
        store.nearest_keys(("u",), "tea")


async def test_async_twin(filled: ChromaStore) -> None:
    assert await filled.anearest_keys(("u",), "bread", limit=5) == filled.nearest_keys(
        ("u",), "bread", limit=5
    )


def test_rare_prefix_among_many_neighbours(chroma_store_factory: Any) -> None:
    """The prefix holds 3 of 300 near-identical items: the unfiltered rounds find too few,
    so Chroma filters, and all 3 come back."""
    store = chroma_store_factory("r", index=index())
    from langgraph.store.base import PutOp

    store.batch([PutOp(("bulk",), f"k{i}", {"text": f"sourdough bread {i}"}) for i in range(300)])
    for i in range(3):
        store.put(("rare",), f"r{i}", {"text": f"sourdough bread rare {i}"})
    keys = store.nearest_keys(("rare",), "sourdough bread", limit=10)
    assert sorted(k.key for k in keys) == ["r0", "r1", "r2"]
    # the prefix's small share is remembered: the next search filters at once, same answer
    assert store._prefix_share[("rare",)] < 0.1
    assert store.nearest_keys(("rare",), "sourdough bread", limit=10) == keys
    assert [r.key for r in store.search(("rare",), query="sourdough bread", limit=10)] == [
        k.key for k in keys
    ]
