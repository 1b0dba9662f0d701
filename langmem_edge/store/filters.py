"""Filters of ``ChromaStore``: which leaves of a value an item row mirrors so a filter can
run inside Chroma (the ``fs`` list and ``g:`` fields), the ``where`` a filter pushes down,
and the Python check that always decides (InMemoryStore's rules, plus dotted keys). Pure
functions, no I/O; the rest of the row layout is :mod:`langmem_edge.store.layout`."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from langmem_edge.errors import InvalidInputError

STRINGS_FIELD = "fs"
"""The metadata list that mirrors a value's short string leaves, one element
``<dotted.path>`` U+001F ``<string>`` each (:func:`string_entry`): an equality is pushed down as
``$contains``. One list, not a field per leaf: Chroma reads every scalar field of each row
it returns, whatever ``include`` asks for, but a row's lists only when metadata is asked
for, and reads ask for documents only.
Measured (``benchmarks/filter_selectivity.py --mirror``, docs/store.md): a memory record's
row goes from 28 scalar fields to 15, and a profile read costs about a third less."""

ENTRY_SEPARATOR = "\x1f"
"""Between a leaf's path and its string in a :data:`STRINGS_FIELD` entry. A path or string
holding it could make two leaves' entries equal: a pushed-down filter then lets an item
through that Python rejects, never the reverse."""

NUMBER_FIELD_PREFIX = "g:"
"""Prefix of the metadata fields that mirror numeric leaves (as floats) for range filters."""

MAX_FILTER_STRING = 256
"""Longest string leaf mirrored into metadata; longer strings are filtered in Python."""

MAX_FILTER_DEPTH = 3
"""Deepest dict nesting mirrored into metadata."""

MAX_FILTER_FIELDS = 64
"""Most leaves mirrored per item (strings and numbers, the first ones in the value's
order); an item with more
carries ``INCOMPLETE_FIELD`` and is let through every pushed-down filter."""

INCOMPLETE_FIELD = "fx"
"""Item-row flag: some filterable leaf was not mirrored (see :func:`filter_fields`)."""

INCOMPLETE_FLAG = 1
"""The value of :data:`INCOMPLETE_FIELD`: an int, which Chroma's SQLite indexes. Chroma keeps
no index of bool values, so every pushed-down filter's ``fx == True`` branch read every
metadata row of the collection as soon as one candidate failed the filter (a filtered read of
a 100-row namespace at 100,000 items: 80 ms against 0.7)."""


def and_where(clauses: Iterable[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """Combine ``where`` clauses with ``$and`` (Chroma wants exactly one operator per dict)."""
    flat: list[dict[str, Any]] = []
    for clause in clauses:
        if not clause:
            continue
        if set(clause) == {"$and"}:
            flat.extend(clause["$and"])
        elif len(clause) > 1:
            flat.extend({k: v} for k, v in clause.items())
        else:
            flat.append(dict(clause))
    if not flat:
        return None
    if len(flat) == 1:
        return flat[0]
    return {"$and": flat}


def _number(v: Any) -> float | None:
    """``float(v)`` as Python's range filters compute it, or None (non-finite, too large for
    a float, or not numeric)."""
    if isinstance(v, (Mapping, list, tuple)) or v is None:
        return None
    try:
        x = float(v)
    except (TypeError, ValueError, OverflowError):
        return None
    return x if math.isfinite(x) else None


def string_entry(path: str, value: str) -> str:
    """The :data:`STRINGS_FIELD` element of a string leaf at ``path``."""
    return path + ENTRY_SEPARATOR + value


def filter_fields(value: Mapping[str, Any]) -> dict[str, Any]:
    """Leaves of ``value`` mirrored as metadata so filters can run inside Chroma, plus
    ``INCOMPLETE_FIELD: INCOMPLETE_FLAG`` when a leaf that a pushed-down filter could name was
    left out (more than ``MAX_FILTER_FIELDS``, or a numeric string that is not finite, such
    as ``"inf"``, which Python's range check still compares).

    :data:`STRINGS_FIELD` lists the short strings (equality; absent when there are none);
    ``g:<dotted.path>`` holds ``float(leaf)`` for every leaf Python's range filters can
    convert (numbers, bools, numeric strings), so comparisons pushed down agree with the
    Python check (a bool's equality is pushed down as its number). Keys containing ``.`` are
    skipped (their dotted path would be ambiguous); so are lists.
    """
    out: dict[str, Any] = {}
    strings: list[str] = []
    leaves = 0
    incomplete = False

    def walk(node: Mapping[str, Any], path: str, depth: int) -> None:
        nonlocal incomplete, leaves
        for k, v in node.items():
            if not _pushable_key(k):
                continue  # never pushed down either: the Python check decides
            if leaves >= MAX_FILTER_FIELDS:
                incomplete = True
                return
            p = f"{path}.{k}" if path else k
            if isinstance(v, str) and len(v) <= MAX_FILTER_STRING:
                strings.append(string_entry(p, v))  # a bool is pushed down as its g: number
                leaves += 1
            if (x := _number(v)) is not None:
                out[NUMBER_FIELD_PREFIX + p] = x
                leaves += 1
            elif isinstance(v, Mapping):
                if depth < MAX_FILTER_DEPTH:
                    walk(v, p, depth + 1)
            elif _non_finite(v):
                incomplete = True

    walk(value, "", 1)
    if strings:
        out[STRINGS_FIELD] = strings
    if incomplete:
        out[INCOMPLETE_FIELD] = INCOMPLETE_FLAG
    return out


def _pushable_key(k: object) -> bool:
    """Keys whose leaves are mirrored and may be pushed down: non-empty strings without
    ``.`` (a dotted path would be ambiguous) and not starting with ``$``."""
    return isinstance(k, str) and bool(k) and "." not in k and not k.startswith("$")


def _non_finite(v: Any) -> bool:
    """A leaf Python's range check converts to an infinity or NaN (``"inf"``, ``"nan"``), or
    a number too large for a float (``10**400``, ``"1e400"`` is infinite)."""
    if isinstance(v, (Mapping, list, tuple, bool)) or v is None:
        return False
    try:
        return not math.isfinite(float(v))
    except OverflowError:
        return True
    except (TypeError, ValueError):
        return False


_RANGE_PUSH = {"$gt", "$gte", "$lt", "$lte"}


def pushdown_where(filter: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A ``where`` Chroma can evaluate that keeps every item the ``filter`` keeps.

    Pushed down: equality on a short string (:data:`STRINGS_FIELD` ``$contains``),
    equality on a number or bool and the range operators on anything numeric (``g:``, as
    floats), on keys without dots. ``$ne`` and anything else stay in Python. The full filter
    is always re-checked in Python (``matches_filter``), so this only narrows the
    candidates, never decides.
    """
    return _pushdown(filter)[0]


def pushed_whole(filter: Mapping[str, Any] | None) -> bool:
    """Whether every condition of ``filter`` is in its :func:`pushdown_where` (True without a
    filter): Chroma's hits then nearly all pass the Python check (it still decides: numeric
    equality is pushed down as floats, an incomplete mirror lets rows through), so a search
    may ask Chroma for about the page rather than a multiple of it."""
    return _pushdown(filter)[1]


def _pushdown(filter: Mapping[str, Any] | None) -> tuple[dict[str, Any] | None, bool]:
    """``(pushdown_where(filter), pushed_whole(filter))``."""
    if not filter:
        return None, True
    clauses: list[dict[str, Any]] = []
    whole = True

    def equality(p: str, v: Any) -> None:
        nonlocal whole
        if isinstance(v, str) and len(v) <= MAX_FILTER_STRING:
            clauses.append({STRINGS_FIELD: {"$contains": string_entry(p, v)}})
        elif (not isinstance(v, str) and isinstance(v, (bool, int, float))
              and (x := _number(v)) is not None):
            clauses.append({NUMBER_FIELD_PREFIX + p: x})
        else:
            whole = False

    def walk(node: Mapping[str, Any], path: str, depth: int) -> None:
        nonlocal whole
        for k, v in node.items():
            if not _pushable_key(k):
                whole = False
                continue
            p = f"{path}.{k}" if path else k
            if isinstance(v, Mapping):
                ops = {o: x for o, x in v.items() if isinstance(o, str) and o.startswith("$")}
                if not ops:
                    if depth < MAX_FILTER_DEPTH:
                        walk(v, p, depth + 1)
                    else:
                        whole = False
                    continue
                if ops.keys() - _RANGE_PUSH - {"$eq"}:
                    whole = False  # $ne: Python's alone
                if "$eq" in ops:
                    equality(p, ops["$eq"])
                for op in _RANGE_PUSH & ops.keys():
                    if (x := _number(ops[op])) is not None:
                        clauses.append({NUMBER_FIELD_PREFIX + p: {op: x}})
                    else:
                        whole = False
            else:
                equality(p, v)

    walk(filter, "", 1)
    where = and_where(clauses)
    if where is None:
        return None, False
    # items whose mirror is incomplete are let through; Python decides for them
    return {"$or": [where, {INCOMPLETE_FIELD: INCOMPLETE_FLAG}]}, whole


def lookup(value: Mapping[str, Any], key: str) -> Any:
    """A filter key's value: the literal top-level key if present, else a dotted path."""
    if key in value:
        return value[key]
    if "." not in key:
        return None
    node: Any = value
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def matches_filter(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """Whether ``value`` passes a store ``filter``: InMemoryStore's rules, plus dotted keys."""
    if not filter:
        return True
    return all(_compare(lookup(value, k), fv) for k, fv in filter.items())


def _compare(item_value: Any, filter_value: Any) -> bool:
    if isinstance(filter_value, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in filter_value):
            return all(_apply(item_value, o, x) for o, x in filter_value.items())
        if not isinstance(item_value, Mapping):
            return False
        return all(_compare(item_value.get(k), v) for k, v in filter_value.items())
    if isinstance(filter_value, (list, tuple)):
        return (
            isinstance(item_value, (list, tuple))
            and len(item_value) == len(filter_value)
            and all(_compare(i, f) for i, f in zip(item_value, filter_value, strict=True))
        )
    return bool(item_value == filter_value)


_RANGE_OPS = {
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}


def _apply(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(value == operand)
    if op == "$ne":
        return bool(value != operand)
    if op in _RANGE_OPS:
        try:
            return bool(_RANGE_OPS[op](float(value), float(operand)))
        except (TypeError, ValueError, OverflowError):
            return False  # a missing, non-numeric or too large value never satisfies a range
    raise InvalidInputError(
        f"Unsupported filter operator {op!r}; use one of $eq, $ne, $gt, $gte, $lt, $lte"
    )


def validate_filter(filter: Mapping[str, Any] | None) -> None:
    """Reject a filter that is not a mapping, and unknown ``$`` operators, before anything
    runs."""
    if filter is None:
        return
    if not isinstance(filter, Mapping):
        raise InvalidInputError(
            f"Invalid filter {filter!r}: a filter is a dict of field names to values or "
            f"{{operator: value}} dicts, got {type(filter).__name__}"
        )

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            for k, v in node.items():
                if isinstance(k, str) and k.startswith("$") and k not in _ALLOWED_OPS:
                    raise InvalidInputError(
                        f"Unsupported filter operator {k!r}; use one of "
                        "$eq, $ne, $gt, $gte, $lt, $lte"
                    )
                walk(v)

    # top-level keys are field names (``{"$x": 1}`` filters a field called "$x", as in
    # InMemoryStore); operators appear inside a field's dict
    for v in filter.values():
        walk(v)


_ALLOWED_OPS = {"$eq", "$ne", *_RANGE_OPS}
