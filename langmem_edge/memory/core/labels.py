"""Namespace labels: which user strings may become one, and reaching them without wildcards.

Three user strings become store namespace labels: the application namespace given to
``AgentMemory``, profile names and session ids. Each is checked by :func:`check_label`:
a non-blank string, no ``.`` (langgraph's rule) and no control character (U+0000-U+001F,
U+007F). ``ChromaStore`` joins labels with U+001F, so a label holding one could address
another namespace (``"alice\\x1fmemories"`` would sit inside ``alice``); ``InMemoryStore``
takes them, so the check is made here, the same on every store. Everything else a user
writes (texts, keys, contacts, tags, metadata) goes into values and item keys only.

``*`` and other glob characters are ordinary labels, but ``*`` is a wildcard in the
``match_conditions`` of ``list_namespaces`` (and other stores may read more characters as
patterns). So no label a user chose ever goes into a match condition:

- deleting a profile or a session's part of it goes through a store's own exact
  :class:`PrefixDeleter` method when it has one, else through ``search`` (whose
  ``namespace_prefix`` is an exact tuple prefix) and deletes by key, every result's
  namespace compared with the prefix in Python (:func:`plan_delete_prefix`);
- listing profiles lists namespaces under the wildcard-free head of the application
  namespace and compares tuples in Python (:func:`plan_child_labels`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from langgraph.store.base import BaseStore, Item, ListNamespacesOp, MatchCondition, PutOp, SearchOp

from langmem_edge.errors import (
    ConfigurationError,
    InvalidInputError,
    InvalidNamespaceError,
    LimitExceededError,
)
from langmem_edge.memory.core.plans import Call, Plan, batch

__all__ = [
    "PrefixDeleter",
    "plan_scan",
    "WILDCARD",
    "check_label",
    "check_namespace",
    "plan_child_labels",
    "plan_delete_prefix",
    "under",
]

WILDCARD = "*"
"""The label ``list_namespaces`` match conditions read as "any label"."""

_REFUSED = re.compile("[.\x00-\x1f\x7f]")
"""Characters a label may not hold: '.' (langgraph's rule) and the control characters."""

LABEL_RULE = "a non-blank string without '.' or control characters (U+0000-U+001F, U+007F)"
"""What a label may be, as error messages say it."""


def check_label(value: Any, name: str, max_chars: int, *, allow_blank: bool = False) -> str:
    """``value`` if it may be a namespace label, else :class:`InvalidNamespaceError` naming
    it and the rule (``LimitExceededError`` when it is over ``max_chars``). ``allow_blank``
    lets through a label of spaces only (session ids always could), never an empty one."""
    if not isinstance(value, str) or not (value if allow_blank else value.strip()):
        rule = LABEL_RULE.replace("non-blank", "non-empty") if allow_blank else LABEL_RULE
        raise InvalidNamespaceError(f"{name} must be {rule}, got {value!r}")
    if len(value) > max_chars:
        raise LimitExceededError(f"{name} is {len(value)} characters; at most {max_chars}")
    bad = _REFUSED.search(value)
    if bad:
        char = bad.group()
        what = "'.'" if char == "." else f"the control character U+{ord(char):04X}"
        raise InvalidNamespaceError(
            f"{name} {value!r} contains {what}: it becomes a store namespace label, so it "
            f"must be {LABEL_RULE}"
        )
    return value


def check_namespace(value: Any, name: str, max_chars: int) -> tuple[str, ...]:
    """A namespace given at construction (``AgentMemory(namespace=...)``, a tier's root): a
    non-empty tuple of labels (:func:`check_label`), else :class:`ConfigurationError`."""
    if isinstance(value, str) or not isinstance(value, tuple) or not value:
        raise ConfigurationError(f"{name} must be a non-empty tuple of labels, got {value!r}")
    for label in value:
        try:
            check_label(label, f"{name} label", max_chars)
        except InvalidInputError as e:
            raise ConfigurationError(str(e)) from e
    return value


def under(namespace: Sequence[str], prefix: tuple[str, ...]) -> bool:
    """Whether ``namespace`` starts with exactly the labels of ``prefix``."""
    return tuple(namespace[: len(prefix)]) == prefix


@runtime_checkable
class PrefixDeleter(Protocol):
    """A store that deletes every item under an exact namespace prefix (``ChromaStore``).

    ``delete_prefix(prefix)`` removes every item whose namespace starts with exactly the
    labels of ``prefix`` (no wildcards), without reading values, and returns how many it
    removed. On such a store ``delete_profile`` costs a few calls instead of a page of
    reads and deletes per 1,000 items.
    """

    def delete_prefix(self, prefix: tuple[str, ...], /) -> int: ...

    async def adelete_prefix(self, prefix: tuple[str, ...], /) -> int: ...


def plan_delete_prefix(
    store: BaseStore,
    prefix: tuple[str, ...],
    *,
    page: int,
    doomed: Callable[[Item], bool] | None = None,
    filter: dict[str, Any] | None = None,
) -> Plan[int]:
    """Plan: delete the items whose namespace starts with exactly ``prefix``; returns how
    many. With ``doomed``, only the items it accepts (``filter`` narrows the reads to them
    and is checked again by ``doomed``).

    A :class:`PrefixDeleter` does it when ``doomed`` is not given. Otherwise pages of
    ``search(prefix)`` are read and deleted. The items kept (refused by ``doomed``, or
    outside ``prefix`` on a store whose prefix match is looser than a tuple prefix) stay in
    the results, so every next page asks for that many more: each round deletes something
    or learns a new kept item, and a short page with nothing to delete ends it.
    """
    if doomed is None and isinstance(store, PrefixDeleter):
        return int((yield Call(store.delete_prefix, store.adelete_prefix, (prefix,))))
    kept: set[tuple[tuple[str, ...], str]] = set()
    deleted = 0
    while True:
        limit = page + len(kept)
        (items,) = yield batch(store, [SearchOp(prefix, filter=filter, limit=limit)])
        gone = [it for it in items
                if under(it.namespace, prefix) and (doomed is None or doomed(it))]
        if gone:
            yield batch(store, [PutOp(tuple(it.namespace), it.key, None) for it in gone])
            deleted += len(gone)
        else:
            kept.update((tuple(it.namespace), it.key) for it in items)
            if len(items) < limit:
                return deleted


def plan_scan(store: BaseStore, namespace: tuple[str, ...], *, page: int,
              filter: dict[str, Any] | None = None, cap: int | None = None
              ) -> Plan[list[Item]]:
    """Plan: the items under ``namespace`` matching ``filter`` (at most ``cap``), one search
    a page of ``page`` (so one store call while there are fewer)."""
    items: list[Item] = []
    while cap is None or len(items) < cap:
        want = page if cap is None else min(page, cap - len(items))
        (got,) = yield batch(store, [SearchOp(namespace, filter=filter, limit=want,
                                              offset=len(items))])
        items += got
        if len(got) < want:
            break
    return items


def plan_child_labels(store: BaseStore, prefix: tuple[str, ...], *, page: int
                      ) -> Plan[list[str]]:
    """Plan: the distinct labels right below exactly ``prefix``, sorted.

    ``prefix`` must be made of labels fixed by the deployment (the application namespace
    and ``"profiles"``), never of a name a user chose; even so, the match condition holds
    only its head before the first ``*``, and every namespace listed is compared with
    ``prefix`` in Python, so a ``*`` in the application namespace matches only itself.
    """
    head = prefix[: prefix.index(WILDCARD)] if WILDCARD in prefix else prefix
    conditions = (MatchCondition(match_type="prefix", path=head),) if head else None
    labels: set[str] = set()
    offset = 0
    while True:
        (namespaces,) = yield batch(store, [ListNamespacesOp(
            match_conditions=conditions, max_depth=len(prefix) + 1, limit=page,
            offset=offset)])
        labels.update(ns[len(prefix)] for ns in namespaces
                      if len(ns) > len(prefix) and under(ns, prefix))
        if len(namespaces) < page:
            return sorted(labels)
        offset += len(namespaces)
