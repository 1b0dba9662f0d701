"""Which namespace and key an item id stands for, remembered from the rows a store reads.

An item's Chroma id is a hash of its ``(namespace, key)`` (:func:`layout.item_id`), so the
pair an id stands for never changes, whoever writes what: an entry learned once stays true
for good, across processes, with nothing to invalidate. Whether the item still exists is
another question, which the rows answer.

Vector queries then need only ids and distances from Chroma: reading a row's metadata costs
about 4 us per field, and a vector row carries some thirty (measured: 160 neighbours out of
104k rows, 1.8 ms with ids alone, 14.5 ms with their metadata). The candidates' names come
from here; an id seen for the first time is named by its first vector row, which carries the
name and little else.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from langmem_edge._chroma import split_labels
from langmem_edge.store.layout import current_generation

__all__ = ["DEFAULT_CAPACITY", "Generations", "ItemNames"]

DEFAULT_CAPACITY = 500_000
"""Ids remembered per store before the memory is cleared and relearned (~250 bytes each)."""


class ItemNames:
    """A bounded, thread-safe map from item id to ``(namespace, key)``."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self._names: dict[str, tuple[tuple[str, ...], str]] = {}
        self._namespaces: dict[str, tuple[str, ...]] = {}  # one tuple per distinct namespace
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, iid: object) -> bool:
        return iid in self._names

    def get(self, iid: str) -> tuple[tuple[str, ...], str] | None:
        """The ``(namespace, key)`` of ``iid``, or None when not learned yet."""
        return self._names.get(iid)

    def learn(self, ids: Iterable[str], metas: Iterable[Mapping[str, Any]]) -> None:
        """Remember the names in rows (item ids, and metadata holding ``ns``, ``nd`` and
        ``k``, in the same order)."""
        with self._lock:
            for iid, meta in zip(ids, metas, strict=True):
                if iid in self._names:
                    continue
                if len(self._names) >= self.capacity:
                    self._names.clear()
                    self._namespaces.clear()
                joined = meta["ns"]
                namespace = self._namespaces.get(joined)
                if namespace is None:
                    namespace = split_labels(joined) if meta["nd"] else ()
                    self._namespaces[joined] = namespace
                self._names[iid] = (namespace, meta["k"])

    def within(self, iid: str, prefix: tuple[str, ...]) -> bool | None:
        """Whether ``iid``'s namespace starts with ``prefix``; None when not learned."""
        name = self._names.get(iid)
        if name is None:
            return None
        return name[0][: len(prefix)] == prefix


class Generations:
    """Which vector generation each item's row named when this process last read or wrote it.

    Unlike a name, an item's generation changes with every put that changes its texts, so
    this is a hint, used where reading the item rows would cost more than the ranking:
    :meth:`ChromaStore.nearest_keys` and the vector channel of hybrid search. A hit of a
    generation the hint does not know (or an item it has not seen) sends the store to read the
    item row, which corrects the hint; ``search`` always checks the rows it reads. What the
    hint can miss: another process's put that crashed between writing an item row and
    deleting its old vector rows, for an item this process saw before: until this process
    reads that item again, its old vectors may still score it in those two rankings.
    """

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self._gens: dict[str, str] = {}

    def get(self, iid: str) -> str | None:
        """The generation last seen for ``iid``, or None."""
        return self._gens.get(iid)

    def learn(self, ids: Iterable[str], metas: Iterable[Mapping[str, Any]]) -> None:
        """Remember the generations named by item rows (``vg``;
        :data:`~langmem_edge.store.layout.NO_VECTORS` for an item without vectors)."""
        if len(self._gens) >= self.capacity:
            self._gens.clear()
        for iid, meta in zip(ids, metas, strict=True):
            self._gens[iid] = current_generation(meta)

    def forget(self, ids: Iterable[str]) -> None:
        """Drop ``ids`` (deleted items)."""
        for iid in ids:
            self._gens.pop(iid, None)
