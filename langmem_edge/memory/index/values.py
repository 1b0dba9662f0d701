"""The profile index's record values: a mapping by memory id whose values may come lazily.

A full load puts every record's value in; an index image (``index/image.py``) instead hands
over its values still packed, in chunks of :data:`CHUNK_RECORDS` records, and a value is
decoded when it is first read: a first recall reads the few dozen records it returns, not
the profile. A chunk (:func:`pack_chunk`) is zlib over the records' JSON texts one after
another, each record the list of its values in the chunk's field order (a record with other
keys is written as itself), with each text's end offset kept beside it; reading one record
decompresses its chunk (a few tens of kilobytes) and parses that record alone.
"""

from __future__ import annotations

import json
import threading
import zlib
from collections.abc import Iterator, MutableMapping, Sequence
from typing import Any

import numpy as np

__all__ = ["CHUNK_LEVEL", "CHUNK_RECORDS", "RecordValues", "pack_chunks", "unpack_record"]

CHUNK_RECORDS = 64
"""Records per packed chunk: decoding one record decompresses its chunk (about 50 KB of
JSON at the benchmark's records), so smaller chunks read faster and compress worse."""

CHUNK_LEVEL = 6
"""zlib level of the chunks (a chunk is small: a higher level costs little to write)."""

_MISSING = object()

_ENCODE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def pack_chunks(values: Sequence[dict[str, Any]], fields: list[str],
                size: int = CHUNK_RECORDS) -> tuple[list[bytes], np.ndarray]:
    """``values`` as zlib chunks of ``size`` records (see the module docstring), and each
    record's end offset in its decompressed chunk (one ``int64`` per record)."""
    chunks: list[bytes] = []
    ends = np.zeros(len(values), dtype=np.int64)
    for start in range(0, len(values), size):
        texts = []
        at = 0
        for i, v in enumerate(values[start:start + size], start):
            text = (_ENCODE(list(v.values())) if list(v) == fields else _ENCODE(v)).encode()
            texts.append(text)
            at += len(text)
            ends[i] = at
        chunks.append(zlib.compress(b"".join(texts), CHUNK_LEVEL))
    return chunks, ends


def unpack_record(raw: bytes, start: int, end: int, fields: list[str]) -> dict[str, Any]:
    """The record at ``raw[start:end]`` of a decompressed chunk."""
    row = json.loads(raw[start:end])
    if isinstance(row, list):
        return dict(zip(fields, row, strict=True))
    if not isinstance(row, dict):
        raise ValueError(f"not a packed record: {row!r:.40}")
    return row


class RecordValues(MutableMapping[str, dict[str, Any]]):
    """Record values by memory id (insertion order kept), some still packed in an image's
    chunks: each is decoded at its first read, and a write or a delete replaces it."""

    def __init__(self) -> None:
        self._map: dict[str, Any] = {}  # a value, or an int: its position in the image
        self._packed = 0
        self._chunks: list[Any] = []
        self._ids: list[str] = []  # by position in the image
        self._ends: np.ndarray = np.zeros(0, dtype=np.int64)
        self._fields: list[str] = []
        self._size = CHUNK_RECORDS
        self._raw: tuple[int, bytes] | None = None  # the last chunk decompressed
        self._lock = threading.Lock()

    @classmethod
    def from_chunks(cls, ids: list[str], chunks: list[Any], ends: np.ndarray,
                    fields: list[str], size: int) -> RecordValues:
        """Values of ``ids`` (in this order) packed by :func:`pack_chunks` (``chunks`` may
        be buffers); nothing is decoded yet. Raises ``ValueError`` when they do not fit."""
        if len(ends) != len(ids) or len(chunks) != -(-len(ids) // size):
            raise ValueError("index image values do not fit its records")
        out = cls()
        out._map = dict(zip(ids, range(len(ids)), strict=True))
        out._packed = len(ids)
        out._chunks, out._ends, out._fields, out._size = list(chunks), ends, fields, size
        out._ids = ids
        return out

    @property
    def packed(self) -> int:
        """How many values are still packed (not read yet)."""
        return self._packed

    def _unpack(self, key: str, pos: int) -> dict[str, Any]:
        with self._lock:  # readers of the index may run on several threads
            held = self._map.get(key, _MISSING)
            if held is not pos:  # decoded by another thread meanwhile
                return held if held is not _MISSING else self[key]
            chunk = pos // self._size
            if self._raw is None or self._raw[0] != chunk:
                self._raw = (chunk, zlib.decompress(self._chunks[chunk]))
            first = chunk * self._size
            start = int(self._ends[pos - 1]) if pos > first else 0
            value = unpack_record(self._raw[1], start, int(self._ends[pos]), self._fields)
            self._map[key] = value
            self._packed -= 1
            if not self._packed:  # everything read: let the chunks go
                self._chunks, self._raw = [], None
            return value

    def __getitem__(self, key: str) -> dict[str, Any]:
        value = self._map[key]
        if type(value) is int:
            return self._unpack(key, value)
        return value  # type: ignore[no-any-return]

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        """The value of ``key``, or ``default``."""
        value = self._map.get(key, _MISSING)
        if value is _MISSING:
            return default
        if type(value) is int:
            return self._unpack(key, value)
        return value

    def __setitem__(self, key: str, value: dict[str, Any]) -> None:
        with self._lock:
            if type(self._map.get(key)) is int:
                self._packed -= 1
            self._map[key] = value

    def __delitem__(self, key: str) -> None:
        with self._lock:
            if type(self._map[key]) is int:
                self._packed -= 1
            del self._map[key]

    def __contains__(self, key: object) -> bool:
        return key in self._map

    def __iter__(self) -> Iterator[str]:
        return iter(self._map)

    def __len__(self) -> int:
        return len(self._map)

    def values(self) -> Any:
        """Every value (decoding those still packed, in their chunks' order)."""
        self._unpack_all()
        return self._map.values()

    def items(self) -> Any:
        """Every ``(id, value)`` (decoding those still packed)."""
        self._unpack_all()
        return self._map.items()

    def _unpack_all(self) -> None:
        """Decode every packed value, a chunk at a time (one JSON parse per chunk)."""
        with self._lock:
            if not self._packed:
                return
            ids, size, ends, fields = self._ids, self._size, self._ends, self._fields
            for chunk, data in enumerate(self._chunks):
                first, last = chunk * size, min((chunk + 1) * size, len(ids))
                wanted = [pos for pos in range(first, last)
                          if type(self._map.get(ids[pos])) is int]
                if not wanted:
                    continue
                raw = zlib.decompress(data)
                cuts = [0, *ends[first:last].tolist()]
                rows = json.loads(b"[" + b",".join(
                    raw[cuts[i]:cuts[i + 1]] for i in range(last - first)) + b"]")
                for pos in wanted:
                    row = rows[pos - first]
                    value = dict(zip(fields, row, strict=True)) if isinstance(row, list) else row
                    if not isinstance(value, dict):
                        raise ValueError(f"not a packed record: {row!r:.40}")
                    self._map[ids[pos]] = value  # replaces a value: the dict's order stays
                    self._packed -= 1
            self._chunks, self._raw = [], None
