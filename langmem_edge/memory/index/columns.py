"""The profile index's numeric columns: one row per record, for vectorised masks and ranking.

Rows are never reused (a deleted record leaves a dead row). Scopes and writers are small
integer codes.
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
    "scope": "<i4", "kind": "<i1", "writer": "<i4",
}
"""Every column but ``present``, with its dtype."""

_FILL = {"scope": -1, "kind": -1, "writer": -1}


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
            self.ids[row] = None
            self.dead += 1
        return row
