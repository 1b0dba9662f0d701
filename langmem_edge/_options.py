"""Checking option dicts: a misspelt key is an error that names the key and the nearest one.

Every option dict the package accepts (a store's ``index``, ``ttl``, ``retry`` and ``hybrid``;
a saver's ``ttl`` and ``retry``; ``BackgroundConfig``; ``AgentMemory``'s ``config``, section by
section) goes through :func:`check_keys` before anything is built, so
``index={"fileds": [...]}`` raises ``ConfigurationError: unknown index option 'fileds' (did
you mean 'fields'?); allowed: dims, embed, fields`` instead of silently indexing nothing.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

from langmem_edge.errors import ConfigurationError

__all__ = ["check_keys", "unknown_key_message"]


def unknown_key_message(what: str, key: object, allowed: Iterable[str]) -> str:
    """``unknown <what> option 'key' (did you mean 'x'?); allowed: a, b, c``."""
    names = sorted(allowed)
    near = difflib.get_close_matches(str(key), names, n=1, cutoff=0.5)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    return f"unknown {what} option {key!r}{hint}; allowed: {', '.join(names)}"


def check_keys(what: str, given: Mapping[str, Any] | None, allowed: Iterable[str]) -> None:
    """Raise :class:`ConfigurationError` for the first key of ``given`` not in ``allowed``.

    ``given`` must be a mapping (or ``None``); anything else is refused too.
    """
    if given is None:
        return
    if not isinstance(given, Mapping):
        raise ConfigurationError(f"{what} options must be a dict, got {type(given).__name__}")
    names = set(allowed)
    for key in given:
        if key not in names:
            raise ConfigurationError(unknown_key_message(what, key, names))
