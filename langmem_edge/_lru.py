""":class:`LRU`: the one bounded map behind every per-process hint and cache that keeps the
most recently used entries (the checkpointer's head hints, memory's access writers and size
hints, the graphs' entry cache, state handoffs and remembered threads)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["LRU"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRU(Generic[K, V]):
    """At most ``capacity`` entries, the least recently used dropped first. Thread-safe."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def get(self, key: K) -> V | None:
        """The entry of ``key`` (now the most recently used), or None."""
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            return self._items[key]

    def put(self, key: K, value: V) -> None:
        """Set ``key``'s entry (the most recently used), dropping the oldest past capacity."""
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        """The entry of ``key``, made by ``make()`` and put when there is none."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        value = make()
        with self._lock:  # a thread that made one first wins
            value = self._items.setdefault(key, value)
            self._items.move_to_end(key)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
            return value

    def pop(self, key: K) -> V | None:
        """Remove and return ``key``'s entry (None when there is none)."""
        with self._lock:
            return self._items.pop(key, None)

    def items(self) -> list[tuple[K, V]]:
        """Every entry, least recently used first."""
        with self._lock:
            return list(self._items.items())

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._items.clear()
