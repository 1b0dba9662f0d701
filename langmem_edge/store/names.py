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

from langmem_edge.store import layout

__all__ = ["DEFAULT_CAPACITY", "ItemNames"]

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
                    namespace = tuple(joined.split(layout.NS_SEP)) if meta["nd"] else ()
                    self._namespaces[joined] = namespace
                self._names[iid] = (namespace, meta["k"])

    def within(self, iid: str, prefix: tuple[str, ...]) -> bool | None:
        """Whether ``iid``'s namespace starts with ``prefix``; None when not learned."""
        name = self._names.get(iid)
        if name is None:
            return None
        return name[0][: len(prefix)] == prefix
