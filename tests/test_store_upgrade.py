"""Opening a store's item rows (``langmem_edge/store/upgrade.py``): the copy of ``rows0`` into
``<prefix>-rows<dims>`` when a store used without an index gets one, a copy killed half-way,
and the layouts this version refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import chromadb
import pytest

from langmem_edge import ChromaStore
from langmem_edge._chroma import SCHEMA_KEY
from langmem_edge.errors import ConfigurationError
from langmem_edge.store import layout, upgrade
from langmem_edge.testing import FakeEmbeddings


def index(dims: int = 16) -> dict[str, Any]:
    return {"dims": dims, "embed": FakeEmbeddings(dims), "fields": ["text"]}


def collections(store: ChromaStore) -> set[str]:
    return {c.name for c in store._client.list_collections()}


def plain_store(path: str, n: int) -> list[tuple[tuple[str, ...], str, dict[str, Any]]]:
    """A store used without an index, with ``n`` items; returns them."""
    items = [(("users", f"u{i % 3}"), f"k{i}", {"text": f"note {i} about tea", "n": i})
             for i in range(n)]
    store = ChromaStore.from_path(path)
    assert store._items.name == "langmem_edge-rows0"
    for ns, key, value in items:
        store.put(ns, key, value)
    store.close()
    return items


def listed(store: ChromaStore) -> list[tuple[tuple[str, ...], str, dict[str, Any]]]:
    return sorted(((it.namespace, it.key, it.value)
                   for it in store.search(("users",), limit=1000)), key=lambda t: t[1])


def test_a_store_used_without_an_index_is_copied_when_it_gets_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "s")
    plain = ChromaStore.from_path(path)
    assert plain._items.name == "langmem_edge-rows0"
    plain.put(("a",), "x", {"text": "red apples"})
    plain.put(("a",), "y", {"text": "green pears"})
    plain.close()

    monkeypatch.setattr(upgrade, "UPGRADE_PROGRESS_ROWS", 1)
    indexed = ChromaStore.from_path(path, index=index())
    assert "copying langmem_edge-rows0 into langmem_edge-rows16" in capsys.readouterr().err
    assert collections(indexed) == {"langmem_edge-rows16", "langmem_edge-vectors"}
    assert upgrade.COPYING_KEY not in indexed._items.metadata
    assert indexed._items.metadata[SCHEMA_KEY] == layout.SCHEMA_VERSION
    assert indexed.get(("a",), "x").value == {"text": "red apples"}
    # items written without an index have no vectors until they are written again
    assert [r.score for r in indexed.search(("a",), query="red apples")] == [None, None]
    embs = indexed._items.get(include=["embeddings"])["embeddings"]
    assert layout.placeholders(embs).tolist() == [True, True]
    indexed.put(("a",), "x", {"text": "red apples"})
    assert indexed.search(("a",), query="red apples")[0].key == "x"
    indexed.close()

    # a later process without an index keeps using the indexed rows
    again = ChromaStore.from_path(path)
    assert capsys.readouterr().err == ""  # copied once
    assert again._items.name == "langmem_edge-rows16"
    again.put(("a",), "z", {"text": "no vectors"})
    again.put(("a",), "x", {"text": "red apples", "seen": 1}, index=False)  # keeps its vector
    again.close()
    last = ChromaStore.from_path(path, index=index())
    assert last.search(("a",), query="red apples")[0].key == "x"
    assert last.get(("a",), "z").value == {"text": "no vectors"}


@pytest.mark.parametrize("kill_at", ["upsert", "delete_collection"])
def test_a_copy_killed_before_it_finished_is_made_again_on_the_next_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kill_at: str
) -> None:
    """Killed after the first page of 10 rows, or after the last one but before ``rows0``
    was deleted: the marker stays, the next open copies again, and nothing is lost."""
    path = str(tmp_path / "s")
    items = plain_store(path, 25)
    monkeypatch.setattr(upgrade, "GET_PAGE", 10)
    original = upgrade.UpgradeMixin._copy_rows
    copied: list[int] = []

    def killed(self: Any, source_name: str, rows: Any) -> None:
        inner, seen = self._call, []

        def call(fn: Any, *args: Any, **kwargs: Any) -> Any:
            seen.append(fn.__name__)
            if fn.__name__ == kill_at and seen.count(kill_at) == (2 if kill_at == "upsert"
                                                                   else 1):
                copied.append(rows.count())
                raise KeyboardInterrupt("killed")
            return inner(fn, *args, **kwargs)

        self._call = call
        try:
            original(self, source_name, rows)
        finally:
            self._call = inner

    monkeypatch.setattr(upgrade.UpgradeMixin, "_copy_rows", killed)
    with pytest.raises(KeyboardInterrupt):
        ChromaStore.from_path(path, index=index())
    assert copied == [10 if kill_at == "upsert" else 25]
    monkeypatch.setattr(upgrade.UpgradeMixin, "_copy_rows", original)
    store = ChromaStore.from_path(path, index=index())
    assert collections(store) == {"langmem_edge-rows16", "langmem_edge-vectors"}
    assert upgrade.COPYING_KEY not in store._items.metadata
    assert listed(store) == sorted(items, key=lambda t: t[1])
    store.close()


def test_a_store_opened_with_other_dims_is_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "s")
    ChromaStore.from_path(path, index=index(16)).close()
    with pytest.raises(ConfigurationError, match="16-dimensional"):
        ChromaStore.from_path(path, index=index(8))


@pytest.mark.parametrize("found", [1, 5, 7])
def test_layouts_of_development_versions_are_refused_untouched(tmp_path: Path, found: int
                                                               ) -> None:
    """Rows of an older schema, or the ``-items`` collection of schemas 1 to 4: a typed
    error naming the way out, and the folder left as it was (nothing copied or raised)."""
    client = chromadb.PersistentClient(path=str(tmp_path / "s"))
    name = "langmem_edge-items" if found < 5 else "langmem_edge-rows16"
    old = client.create_collection(name, metadata={SCHEMA_KEY: found}, embedding_function=None)
    old.add(ids=["x"], embeddings=[[0.25] * 16], documents=["{}"])
    with pytest.raises(ConfigurationError, match="langmem-edge export"):
        ChromaStore(client, index=index())
    assert {c.name for c in client.list_collections()} == {name}
    assert client.get_collection(name).metadata[SCHEMA_KEY] == found
    assert client.get_collection(name).count() == 1


def test_a_rows0_of_an_older_schema_is_refused_before_it_is_copied(tmp_path: Path) -> None:
    client = chromadb.PersistentClient(path=str(tmp_path / "s"))
    old = client.create_collection("langmem_edge-rows0", metadata={SCHEMA_KEY: 6},
                                   embedding_function=None)
    old.add(ids=["x"], embeddings=[[1.0]], documents=["{}"])
    with pytest.raises(ConfigurationError, match="reads schema 8. Move the data"):
        ChromaStore(client, index=index())
    assert client.get_collection("langmem_edge-rows0").count() == 1
