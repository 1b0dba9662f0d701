"""What memory may use of a store beyond the ``BaseStore`` API, each found by duck typing.

Memory never imports the store layer (import-linter says so); a store that offers more than
``batch``/``abatch`` is recognised by the methods it has. The capabilities, all
``ChromaStore``'s:

- ranking keys by vector without reading values (:class:`NearestKeys`), which the tiers use
  where they hold the values already (the profile read for an operation);
- ranking keys by BM25 inside the database (:class:`KeywordSearch`): a large profile's
  recall asks it instead of reading the profile;
- rewriting items only while they exist (:class:`PutExisting`), for side-effect rewrites
  that must never bring back a record another writer deleted;
- applying a batch of puts whole (:func:`atomic_put_limit`), which lets an ingest write its
  messages and the memories extracted from them as one batch (``docs/architecture.md``);
- returning each item's vector with its row (:class:`ListsVectors`), so an operation that
  reads a profile whole ranks it by vector in process, with no second read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from langgraph.store.base import BaseStore, Op, PutOp
from langgraph.store.base.embed import get_text_at_path, tokenize_path

__all__ = ["KEYWORD_ONLY", "KeywordSearch", "ListsVectors", "NearestKeys", "PutExisting",
           "PutNew", "RewritesMatching", "atomic_put_limit", "distinct_text_batches",
           "existing_item", "ranks_keys", "reads_vectors"]

KEYWORD_ONLY = "keyword:"
"""How a put's ``index`` names a path for a :class:`KeywordSearch` store's keyword channel
alone (``"keyword:name"``: analysed, not embedded). The store layer defines it
(``langmem_edge.store.layout.KEYWORD_ONLY``); memory imports no store module, so it is
spelled here too, and a test holds the two equal. A store without the channel finds no
field of that name and indexes nothing for it."""


@runtime_checkable
class NearestKeys(Protocol):
    """A store that ranks keys by vector without reading values (``ChromaStore``).

    A caller that keeps the values itself asks for keys alone
    (:meth:`ChromaStore.nearest_keys`): on 100k memories that is a few milliseconds instead
    of the tens that reading 50 rows costs. ``first_text_only`` ranks each item by its first
    indexed text alone (one Chroma call a round): for items that embed one text each.
    """

    def nearest_keys(self, namespace_prefix: tuple[str, ...], /, query: str, *,
                     limit: int = 10, first_text_only: bool = False) -> Sequence[Any]: ...

    async def anearest_keys(self, namespace_prefix: tuple[str, ...], /, query: str, *,
                            limit: int = 10, first_text_only: bool = False
                            ) -> Sequence[Any]: ...


@runtime_checkable
class KeywordSearch(Protocol):
    """A store that ranks keys by BM25 over the items' indexed texts (``ChromaStore``).

    :meth:`ChromaStore.keyword_search` returns hits shaped as :class:`NearestKeys`' do
    (``namespace``, ``key``, ``score``: here BM25's), best first; statistics are those of
    the items under the prefix; ``field_weights`` weighs the indexed fields for one call
    (BM25F; unnamed fields 0). A put's ``index`` path ``"keyword:<path>"``
    (:data:`KEYWORD_ONLY`) is analysed for this channel and not embedded. Without it, a
    caller ranks the scope in process.
    """

    def keyword_search(self, namespace_prefix: tuple[str, ...], /, query: str, *,
                       limit: int = 10, filter: dict[str, Any] | None = None,
                       field_weights: Mapping[str, float] | None = None
                       ) -> Sequence[Any]: ...

    async def akeyword_search(self, namespace_prefix: tuple[str, ...], /, query: str, *,
                              limit: int = 10, filter: dict[str, Any] | None = None,
                              field_weights: Mapping[str, float] | None = None
                              ) -> Sequence[Any]: ...


@runtime_checkable
class PutExisting(Protocol):
    """A store that rewrites items only if they still exist (``ChromaStore``).

    :meth:`ChromaStore.put_existing` takes ``(namespace, key, value)`` triples (or with a
    fourth element, the put's ``index``) and returns,
    for each, whether it was rewritten; an item deleted meanwhile stays deleted. With
    ``merge=True`` the value holds changes applied to the value stored, and ``when`` rewrites
    only items whose stored fields equal it, both judged on the store's own read (the caller
    reads nothing first); ``confirm=False`` spares the read-back after the write. On a plain
    ``BaseStore`` a caller reads then puts, and a delete between the two is undone.
    """

    def put_existing(
        self, items: Sequence[tuple[tuple[str, ...], str, dict[str, Any]]], /, *,
        merge: bool = False, when: Mapping[str, Any] | None = None, confirm: bool = True,
    ) -> list[bool]: ...

    async def aput_existing(
        self, items: Sequence[tuple[tuple[str, ...], str, dict[str, Any]]], /, *,
        merge: bool = False, when: Mapping[str, Any] | None = None, confirm: bool = True,
    ) -> list[bool]: ...


def existing_item(namespace: tuple[str, ...], key: str, value: dict[str, Any],
                  stored: Mapping[str, Any]) -> tuple[Any, ...]:
    """A :class:`PutExisting` item rewriting a record whose stored value is ``stored``
    (``value``: the whole new value, or the changes with ``merge=True``): it keeps the
    record's vectors (its text is unchanged), and one stored without a vector (pending,
    failed, a task) is rewritten without one (``index=False``)."""
    if stored.get("embedding_status", "complete") == "complete":
        return (namespace, key, value)
    return (namespace, key, value, False)


@runtime_checkable
class RewritesMatching(Protocol):
    """A store that reads the items matching a filter, lets its caller decide what to change,
    and rewrites them as read, in one call (``ChromaStore``: one read, at most one update).

    :meth:`ChromaStore.rewrite_matching` takes ``(namespace, filter, rewrite)``, where
    ``rewrite(items)`` returns ``{key: changes}``; it returns the values written by key. On a
    plain ``BaseStore`` a caller searches, then puts.
    """

    def rewrite_matching(
        self, namespace: tuple[str, ...], /, filter: dict[str, Any],
        rewrite: Callable[[list[Any]], Mapping[str, dict[str, Any]]], *, limit: int = ...,
    ) -> dict[str, dict[str, Any]]: ...

    async def arewrite_matching(
        self, namespace: tuple[str, ...], /, filter: dict[str, Any],
        rewrite: Callable[[list[Any]], Mapping[str, dict[str, Any]]], *, limit: int = ...,
    ) -> dict[str, dict[str, Any]]: ...


@runtime_checkable
class PutNew(Protocol):
    """A store that writes items its caller knows are new without reading them first
    (``ChromaStore``).

    :meth:`ChromaStore.put_new` takes ``(namespace, key, value, index)`` quadruples; an item
    that did exist is replaced (its ``created_at`` restarts). For keys the caller has just
    made (a new memory's random id). On a plain ``BaseStore`` a caller puts.
    """

    def put_new(
        self, items: Sequence[tuple[tuple[str, ...], str, dict[str, Any], Any]], /
    ) -> None: ...

    async def aput_new(
        self, items: Sequence[tuple[tuple[str, ...], str, dict[str, Any], Any]], /
    ) -> None: ...


@runtime_checkable
class ListsVectors(Protocol):
    """A store that returns each item's vector with its row (``ChromaStore``).

    :meth:`ChromaStore.batch_vectors` is ``batch`` plus, for each query-less search by its
    position, the vector of each item returned (its first indexed text's; None without
    one), read in the same database call. ``embeddings`` embeds queries as the store does,
    so scores computed from these vectors are the store's own cosine similarities.
    """

    embeddings: Any

    def batch_vectors(self, ops: Sequence[Op], /) -> tuple[list[Any], dict[int, list[Any]]]:
        ...

    async def abatch_vectors(self, ops: Sequence[Op], /
                             ) -> tuple[list[Any], dict[int, list[Any]]]: ...


def reads_vectors(store: BaseStore) -> bool:
    """Whether ``store`` ranks keys by vector (:func:`ranks_keys`) and returns vectors with
    its rows (:class:`ListsVectors`), with an embedding model to embed queries."""
    return (ranks_keys(store) and isinstance(store, ListsVectors)
            and getattr(store, "embeddings", None) is not None)


def ranks_keys(store: BaseStore) -> bool:
    """Whether ``store`` embeds what it is given (it has an index config) and ranks keys by
    vector alone (:class:`NearestKeys`)."""
    return bool(getattr(store, "index_config", None)) and isinstance(store, NearestKeys)


def atomic_put_limit(store: BaseStore) -> int:
    """How many puts ``store`` promises to apply whole in one batch; 0: no such promise.

    A store with an ``atomic_put_limit`` attribute (an int above 0; ``ChromaStore``'s) promises:
    a batch of at most that many puts, each with a value (no deletes, no reads), is
    applied all or nothing, even if the process dies during it, and every reader sees either
    none of it or all of it. ``InMemoryStore`` makes no such promise (a reader on another
    thread can see half a batch), nor does a store wrapped in anything that does not pass the
    attribute on.
    """
    limit = getattr(store, "atomic_put_limit", 0)
    return limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else 0


def distinct_text_batches(store: BaseStore, ops: Sequence[Op]) -> list[list[Op]]:
    """``ops`` as the batches to send ``store``: one, unless they are all puts and two of
    them would embed the same text, on a store that does not apply a batch whole
    (:func:`atomic_put_limit`). Then each put goes to the batch after the last one embedding
    one of its texts, and never before an earlier put of its key (order is kept).

    LangGraph's ``InMemoryStore`` embeds each distinct text of a batch once and then fails to
    place the vectors when two puts share one ("Number of embeddings (n) does not match
    number of indices (n + 1)"): two messages "thanks" embedded as they are, or two equal
    passages of a document. Only puts are split, so every result stays ``None``."""
    config = getattr(store, "index_config", None)
    if (len(ops) < 2 or not config or atomic_put_limit(store)
            or not all(isinstance(op, PutOp) for op in ops)):
        return [list(ops)]
    default = config.get("fields") or ["$"]
    batches: list[tuple[list[Op], set[str]]] = []
    for op in ops:
        assert isinstance(op, PutOp)
        texts: set[str] = set()
        if op.value is not None and op.index is not False:
            for path in default if op.index is None else op.index:
                if not path.startswith(KEYWORD_ONLY):
                    tokens = path if path == "$" else tokenize_path(path)
                    texts.update(get_text_at_path(op.value, tokens))
        sharing = [i for i, (_, seen) in enumerate(batches) if texts & seen]
        same_key = [i for i, (part, _) in enumerate(batches)
                    if any(o.namespace == op.namespace and o.key == op.key for o in part)]
        at = max([sharing[-1] + 1 if sharing else 0, *same_key])
        if at == len(batches):
            batches.append(([], set()))
        batches[at][0].append(op)
        batches[at][1].update(texts)
    return [part for part, _ in batches]
