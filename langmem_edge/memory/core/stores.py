"""What memory may use of a store beyond the ``BaseStore`` API, each found by duck typing.

Memory never imports the store layer (import-linter says so); a store that offers more than
``batch``/``abatch`` is recognised by the methods it has. Today that is one capability:
ranking keys by vector without reading values (:class:`NearestKeys`, ``ChromaStore``), which
the tiers use where they keep the values themselves (the semantic tier's profile index, the
episodic tier's message index).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from langgraph.store.base import BaseStore

__all__ = ["NearestKeys", "ranks_keys"]


@runtime_checkable
class NearestKeys(Protocol):
    """A store that ranks keys by vector without reading values (``ChromaStore``).

    A caller that keeps the values itself asks for keys alone
    (:meth:`ChromaStore.nearest_keys`): on 100k memories that is a few milliseconds instead
    of the tens that reading 50 rows costs.
    """

    def nearest_keys(self, namespace_prefix: tuple[str, ...], /, query: str, *,
                     limit: int = 10) -> Sequence[Any]: ...

    async def anearest_keys(self, namespace_prefix: tuple[str, ...], /, query: str, *,
                            limit: int = 10) -> Sequence[Any]: ...


def ranks_keys(store: BaseStore) -> bool:
    """Whether ``store`` embeds what it is given (it has an index config) and ranks keys by
    vector alone (:class:`NearestKeys`)."""
    return bool(getattr(store, "index_config", None)) and isinstance(store, NearestKeys)
