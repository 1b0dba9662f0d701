"""The profile index's numeric columns: one row per record, for vectorised masks and ranking.

Rows are never reused (a deleted record leaves a dead row; the profile index rebuilds its
rows when dead ones outnumber live ones). Scopes and writers are small integer codes. An
index image (``index/image.py``) holds the live rows as arrays: :meth:`Columns.snapshot` and
:meth:`Columns.restore` move them without a Python object per record.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from langmem_edge.memory.core.dates import iso_to_epoch
from langmem_edge.memory.records import KINDS

__all__ = ["COLUMN_DTYPES", "INITIAL_ROWS", "Columns", "ended_at", "own_access"]

_INF = math.inf

INITIAL_ROWS = 1024
"""Rows the columns hold before they first grow (they double when full)."""

COLUMN_DTYPES: dict[str, str] = {
    "touched": "<f8", "access": "<f8", "confidence": "<f8", "valid_from": "<f8",
    "valid_until": "<f8", "superseded_at": "<f8", "forgotten_at": "<f8",
    "scope": "<i4", "kind": "<i1", "writer": "<i4", "slot": "<i8",
}
"""Every column but ``present``, with its dtype (as an index image stores it)."""

_FILL = {"scope": -1, "kind": -1, "writer": -1, "slot": -1}


def ended_at(value: dict[str, Any], status: str) -> float:
    """When a record stopped being current by ``status`` (``superseded`` / ``forgotten``):
    its ``<status>_at`` stamp, ``-inf`` when it has the status without a stamp, else ``inf``.
    """
    stamp = value.get(f"{status}_at")
    if stamp:
        return iso_to_epoch(stamp)
    return -_INF if value.get("status") == status else _INF


def own_access(value: dict[str, Any]) -> tuple[float, float]:
    """``(access, touched)`` of a record by itself: its ``access_count``, and its last access
    (else its creation) as epoch seconds; the profile index adds the count items."""
    created = iso_to_epoch(value.get("created_at"), 0.0)
    return (float(value.get("access_count") or 0),
            iso_to_epoch(value.get("last_accessed_at"), created))


class Columns:
    """Numeric columns of every record, for vectorised fill ranking."""

    present: np.ndarray
    touched: np.ndarray
    access: np.ndarray
    confidence: np.ndarray
    valid_from: np.ndarray
    valid_until: np.ndarray
    superseded_at: np.ndarray
    forgotten_at: np.ndarray
    scope: np.ndarray
    kind: np.ndarray
    writer: np.ndarray
    slot: np.ndarray

    def __init__(self, capacity: int = INITIAL_ROWS) -> None:
        self.row_of: dict[str, int] = {}
        self.ids: list[str | None] = []
        self.dead = 0
        self.codes: dict[str, int] = {}
        self._alloc(capacity)

    def _alloc(self, capacity: int) -> None:
        old = getattr(self, "present", None)
        n = 0 if old is None else len(old)

        def grow(arr: np.ndarray | None, dtype: Any, fill: Any) -> np.ndarray:
            new = np.full(capacity, fill, dtype=dtype)
            if arr is not None:
                new[:n] = arr[:n]
            return new
        self.present = grow(old, bool, False)
        for name, dtype in COLUMN_DTYPES.items():
            setattr(self, name, grow(getattr(self, name, None), dtype, _FILL.get(name, 0.0)))

    def code(self, text: str | None) -> int:
        """A small integer for a scope or writer string (-1 for ``None``)."""
        if text is None:
            return -1
        code = self.codes.get(text)
        if code is None:
            code = self.codes[text] = len(self.codes)
        return code

    def set(self, value: dict[str, Any]) -> int:
        """Write a record's columns; returns its row (rows are never reused)."""
        mid = value["id"]
        row = self.row_of.get(mid)
        if row is None:
            row = len(self.ids)
            if row >= len(self.present):
                self._alloc(2 * len(self.present))
            self.ids.append(mid)
            self.row_of[mid] = row
        created = iso_to_epoch(value.get("created_at"), 0.0)
        self.present[row] = True
        self.access[row], self.touched[row] = own_access(value)
        self.confidence[row] = float(value.get("confidence", 0.0))
        self.valid_from[row] = iso_to_epoch(value.get("valid_from"), created)
        self.valid_until[row] = iso_to_epoch(value.get("valid_until"))
        self.superseded_at[row] = ended_at(value, "superseded")
        self.forgotten_at[row] = ended_at(value, "forgotten")
        self.scope[row] = self.code(value.get("scope"))
        kind = value.get("kind")
        self.kind[row] = KINDS.index(kind) if kind in KINDS else -1
        self.writer[row] = self.code(value.get("writer"))
        return row

    def drop(self, mid: str) -> int | None:
        """Mark a record's row dead; returns it."""
        row = self.row_of.pop(mid, None)
        if row is not None:
            self.present[row] = False
            self.slot[row] = -1
            self.ids[row] = None
            self.dead += 1
        return row

    def snapshot(self, ids: list[str]) -> dict[str, np.ndarray]:
        """The columns of the records ``ids`` (live), in that order, as new arrays."""
        rows = np.fromiter((self.row_of[mid] for mid in ids), dtype=np.intp, count=len(ids))
        return {name: getattr(self, name)[rows].astype(dtype)
                for name, dtype in COLUMN_DTYPES.items()}

    def restore(self, ids: list[str], arrays: dict[str, np.ndarray], codes: list[str]) -> None:
        """Replace every row by ``ids`` (row ``i`` is ``ids[i]``, all live) with the columns
        :meth:`snapshot` gave; ``codes`` are the scope and writer strings in code order.
        Raises ``ValueError`` when an array is missing or of another length."""
        n = len(ids)
        if set(arrays) != set(COLUMN_DTYPES) or any(len(a) != n for a in arrays.values()):
            raise ValueError("index image columns do not fit its records")
        self.__init__(max(INITIAL_ROWS, n))  # type: ignore[misc]
        self.ids = list(ids)
        self.row_of = dict(zip(self.ids, range(n), strict=True))  # type: ignore[arg-type]
        self.codes = {text: i for i, text in enumerate(codes)}
        self.present[:n] = True
        for name, array in arrays.items():
            getattr(self, name)[:n] = array
