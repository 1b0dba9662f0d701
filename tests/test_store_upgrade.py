"""Opening stores written by older layouts: the copy into ``<prefix>-rows<dims>``
(``langmem_edge/store/upgrade.py``), on a folder the previous release built
(``tests/fixtures/schema4_store``, made by ``tests/fixtures/build_schema4_store.py``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from legacy_layout import to_schema_5, to_schema_7

from langmem_edge import ChromaStore
from langmem_edge._chroma import SCHEMA_KEY
from langmem_edge.errors import ConfigurationError
from langmem_edge.store import filters, layout, upgrade
from langmem_edge.testing import FakeEmbeddings

FIXTURE = Path(__file__).parent / "fixtures" / "schema4_store"


def index(dims: int = 16) -> dict[str, Any]:
    return {"dims": dims, "embed": FakeEmbeddings(dims), "fields": ["text"]}


def old_store(tmp_path: Path) -> str:
    path = tmp_path / "old"
    shutil.copytree(FIXTURE, path)
    return str(path)


def expected() -> dict[str, Any]:
    return json.loads((FIXTURE.parent / "schema4_store.json").read_text())


def collections(store: ChromaStore) -> set[str]:
    return {c.name for c in store._client.list_collections()}


def check_answers(store: ChromaStore) -> None:
    want = expected()
    items = sorted([list(it.namespace), it.key, it.value]
                   for it in store.search(("users",), limit=1000))
    assert items == want["items"]
    for query, hits in want["searches"].items():
        got = [[list(r.namespace), r.key, r.score] for r in store.search(("users",), query=query,
                                                                           limit=5)]
        assert [g[:2] for g in got] == [h[:2] for h in hits], query
        assert [g[2] for g in got] == pytest.approx([h[2] for h in hits], abs=1e-4)


def test_a_store_of_the_previous_release_is_copied_once_and_loses_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = old_store(tmp_path)
    monkeypatch.setattr(upgrade, "UPGRADE_PROGRESS_ROWS", 10)
    store = ChromaStore.from_path(path, index=index())
    assert "copying langmem_edge-items into langmem_edge-rows16" in capsys.readouterr().err
    assert collections(store) == {"langmem_edge-rows16", "langmem_edge-vectors"}
    assert store._items.metadata[SCHEMA_KEY] == layout.SCHEMA_VERSION
    assert upgrade.COPYING_KEY not in store._items.metadata
    check_answers(store)
    # every item row holds its first text's vector (the one without vectors a placeholder);
    # -vectors keeps the rows of later texts only
    rows = store._items.get(include=["documents", "embeddings"])
    model = FakeEmbeddings(16)
    for doc, emb in zip(rows["documents"], rows["embeddings"], strict=True):
        meta = layout.read_row(doc)
        assert meta is not None  # copied as schema 6
        if meta["nv"]:
            first = model.embed_documents([json.loads(meta["v"])["text"]])[0]
            assert list(emb) == pytest.approx(first, abs=1e-6)
        else:
            assert meta["k"] == "plain"
            assert layout.placeholders([emb]).tolist() == [True]
    assert len(store._vectors.get(include=[])["ids"]) == 1  # "multi"'s second text
    store.close()

    again = ChromaStore.from_path(path, index=index())
    assert capsys.readouterr().err == ""  # copied once
    check_answers(again)
    again.put(("users", "u0", "notes"), "k0", {"text": "a new text"})
    assert again.search(("users", "u0"), query="a new text", limit=1)[0].key == "k0"


@pytest.mark.parametrize("kill_at", ["upsert", "delete_collection"])
def test_a_copy_killed_before_it_finished_is_made_again_on_the_next_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kill_at: str
) -> None:
    """Killed after the first page of 50 rows, or after the last one but before the old
    collection was deleted: the marker stays, and the next open copies again."""
    path = old_store(tmp_path)
    monkeypatch.setattr(upgrade, "GET_PAGE", 50)
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
    assert copied == [50 if kill_at == "upsert" else 122]
    monkeypatch.setattr(upgrade.UpgradeMixin, "_copy_rows", original)
    store = ChromaStore.from_path(path, index=index())
    assert collections(store) == {"langmem_edge-rows16", "langmem_edge-vectors"}
    assert upgrade.COPYING_KEY not in store._items.metadata
    check_answers(store)


def test_a_store_used_without_an_index_is_copied_when_it_gets_one(tmp_path: Path) -> None:
    path = str(tmp_path / "s")
    plain = ChromaStore.from_path(path)
    assert plain._items.name == "langmem_edge-rows0"
    plain.put(("a",), "x", {"text": "red apples"})
    plain.put(("a",), "y", {"text": "green pears"})
    plain.close()

    indexed = ChromaStore.from_path(path, index=index())
    assert collections(indexed) == {"langmem_edge-rows16", "langmem_edge-vectors"}
    assert indexed.get(("a",), "x").value == {"text": "red apples"}
    # items written without an index have no vectors until they are written again
    assert [r.score for r in indexed.search(("a",), query="red apples")] == [None, None]
    indexed.put(("a",), "x", {"text": "red apples"})
    assert indexed.search(("a",), query="red apples")[0].key == "x"
    indexed.close()

    # a later process without an index keeps using the indexed rows
    again = ChromaStore.from_path(path)
    assert again._items.name == "langmem_edge-rows16"
    again.put(("a",), "z", {"text": "no vectors"})
    again.put(("a",), "x", {"text": "red apples", "seen": 1}, index=False)  # keeps its vector
    again.close()
    last = ChromaStore.from_path(path, index=index())
    assert last.search(("a",), query="red apples")[0].key == "x"
    assert last.get(("a",), "z").value == {"text": "no vectors"}


def test_a_store_opened_with_other_dims_is_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "s")
    ChromaStore.from_path(path, index=index(16)).close()
    with pytest.raises(ConfigurationError, match="16-dimensional"):
        ChromaStore.from_path(path, index=index(8))


def test_a_schema_5_store_moves_its_values_into_the_documents_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rows collection of schema 5 (value and bookkeeping in the metadata) is rewritten in
    place at the first open, page by page with a progress line, losing nothing; a crash
    half-way leaves rows of both shapes, which read alike, and the next open finishes."""
    path = str(tmp_path / "s5")
    store = ChromaStore.from_path(path, index=index())
    for i in range(30):
        store.put(("users", f"u{i % 3}"), f"k{i}", {"text": f"note {i} about tea", "n": i},
                  ttl=None if i % 2 else 60)
    store.put(("users", "u0"), "plain", {"text": "no vector"}, index=False)
    want = sorted((it.namespace, it.key, tuple(sorted(it.value.items())))
                  for it in store.search(("users",), limit=100))
    hits = [(h.key, h.score) for h in store.search(("users",), query="note 7 tea", limit=5)]
    to_schema_5(store)
    store.close()
    monkeypatch.setattr(upgrade, "GET_PAGE", 10)
    monkeypatch.setattr(upgrade, "UPGRADE_PROGRESS_ROWS", 5)
    original = ChromaStore._values_to_documents

    def crash(self: Any, rows: Any, found: int) -> None:
        update, calls = rows.update, []

        def counted(**kw: Any) -> Any:
            calls.append(1)
            if len(calls) == 2:
                raise KeyboardInterrupt("killed")
            return update(**kw)

        rows.update = counted
        original(self, rows, found)

    monkeypatch.setattr(ChromaStore, "_values_to_documents", crash)
    with pytest.raises(KeyboardInterrupt):
        ChromaStore.from_path(path, index=index())
    monkeypatch.setattr(ChromaStore, "_values_to_documents", original)
    capsys.readouterr()
    again = ChromaStore.from_path(path, index=index())
    assert f"from schema 5 to {layout.SCHEMA_VERSION}: 31 of 31 rows" in capsys.readouterr().err
    assert again._items.metadata[SCHEMA_KEY] == layout.SCHEMA_VERSION
    got = again._items.get(include=["metadatas", "documents"])
    for meta, doc in zip(got["metadatas"], got["documents"], strict=True):
        assert layout.read_row(doc) is not None
        assert not set(layout.DOCUMENT_ONLY) & meta.keys()
    assert sorted((it.namespace, it.key, tuple(sorted(it.value.items())))
                  for it in again.search(("users",), limit=100)) == want
    assert [h.key for h in again.search(("users",), query="note 7 tea", limit=5)] == [
        k for k, _ in hits]
    again.put(("users", "u1"), "k1", {"text": "changed"})
    assert again.get(("users", "u1"), "k1").value == {"text": "changed"}
    assert again.search(("users",), filter={"n": 1}) == []  # its old mirror is gone
    again.close()
    third = ChromaStore.from_path(path, index=index())
    assert capsys.readouterr().err == ""  # moved once
    third.close()


def test_a_schema_6_store_retypes_its_incomplete_mirror_flags_once(tmp_path: Path) -> None:
    """Schema 6 flagged an item whose filter mirror is incomplete with ``fx = True``, which
    Chroma does not index; opening it retypes the flag of those rows (only those), and a
    filter on a leaf left out of the mirror still finds the item."""
    path = str(tmp_path / "s6")
    store = ChromaStore.from_path(path, index=index())
    wide = {f"k{i:02d}": f"v{i}" for i in range(filters.MAX_FILTER_FIELDS + 6)}
    store.put(("users",), "wide", {"text": "many leaves", **wide})
    store.put(("users",), "plain", {"text": "a few leaves", "k00": "v0"})
    flagged = store._items.get(where={filters.INCOMPLETE_FIELD: filters.INCOMPLETE_FLAG},
                               include=[])["ids"]
    assert flagged == [layout.item_id(("users",), "wide")]
    store._items.update(ids=flagged, metadatas=[{filters.INCOMPLETE_FIELD: True}])
    meta = {k: v for k, v in (store._items.metadata or {}).items() if not k.startswith("hnsw:")}
    store._items.modify(metadata={**meta, SCHEMA_KEY: 6})
    store.close()
    again = ChromaStore.from_path(path, index=index())
    assert again._items.metadata[SCHEMA_KEY] == layout.SCHEMA_VERSION
    rows = again._items.get(include=["metadatas"])
    flags = {iid: m.get(filters.INCOMPLETE_FIELD) for iid, m in zip(
        rows["ids"], rows["metadatas"], strict=True)}
    assert flags == {flagged[0]: filters.INCOMPLETE_FLAG,
                     layout.item_id(("users",), "plain"): None}
    last = f"k{filters.MAX_FILTER_FIELDS + 5:02d}"
    assert [it.key for it in again.search(("users",), filter={last: wide[last]})] == ["wide"]
    assert sorted(it.key for it in again.search(("users",), filter={"k00": "v0"})) == [
        "plain", "wide"]
    again.close()


def test_a_schema_7_store_lists_its_string_mirrors_once(tmp_path: Path) -> None:
    """Schema 7 mirrored each short string leaf as its own ``f:<path>`` field; opening it moves
    them into the one strings list (reads pay for every scalar field of a row), which
    filters then find, and a later put whose value lost its strings drops the list."""
    path = str(tmp_path / "s7")
    store = ChromaStore.from_path(path, index=index())
    store.put(("users",), "a", {"text": "tea", "status": "active", "who": {"name": "ann"},
                                "n": 3, "ok": True})
    store.put(("users",), "b", {"text": "coffee", "status": "gone", "n": 4})
    to_schema_7(store)
    # before the upgrade a pushed-down equality finds nothing: the rows have no list yet
    assert store._items.get(where={filters.STRINGS_FIELD: {"$contains": filters.string_entry(
        "status", "active")}}, include=[])["ids"] == []
    store.close()
    again = ChromaStore.from_path(path, index=index())
    assert again._items.metadata[SCHEMA_KEY] == layout.SCHEMA_VERSION
    rows = again._items.get(include=["metadatas"])
    for meta in rows["metadatas"]:
        assert not [k for k in meta if k.startswith(filters.LEGACY_FILTER_FIELD_PREFIX)]
    lists = {iid: sorted(m[filters.STRINGS_FIELD]) for iid, m in zip(
        rows["ids"], rows["metadatas"], strict=True)}
    sep = filters.ENTRY_SEPARATOR
    assert lists[layout.item_id(("users",), "a")] == [
        f"status{sep}active", f"text{sep}tea", f"who.name{sep}ann"]
    assert [it.key for it in again.search(("users",), filter={"status": "active"})] == ["a"]
    assert [it.key for it in again.search(("users",), filter={"who": {"name": "ann"}})] == [
        "a"]
    assert [it.key for it in again.search(("users",), filter={"n": {"$gte": 4}})] == ["b"]
    assert [it.key for it in again.search(("users",), filter={"ok": True})] == ["a"]
    again.put(("users",), "a", {"n": 5})  # no string leaf left: the list goes
    meta = again._items.get(ids=[layout.item_id(("users",), "a")],
                            include=["metadatas"])["metadatas"][0]
    assert filters.STRINGS_FIELD not in meta
    assert [it.key for it in again.search(("users",), filter={"status": "active"})] == []
    again.close()
