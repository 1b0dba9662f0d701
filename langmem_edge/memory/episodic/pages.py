"""Per-process cache of a session's complete history pages and overlays, checked at every
window.

A window reads a session's newest pages at every call; on a store whose filtered search costs
about the size of the namespace (ChromaStore: ~0.1 s a page at 10,000 messages), re-reading
pages that cannot have changed is where the time goes. This cache keeps the pages a window
read, and trusts them only as far as the session record (read fresh at every window, in its
first batch) proves they are unchanged:

- **What changes a page.** Messages are never rewritten: ingest only appends (new messages get
  ``seq`` from the record's ``next_seq`` on, in the same batch that moves ``next_seq`` and
  ``count``), and a deletion removes messages and lowers ``count`` in the same batch (the
  store applies its deletes before its puts), as :meth:`~.tier.EpisodicTier.delete_session`
  removes the record itself.
- **What the check is.** The cached pages were read under a record ``R``; a window reading
  record ``R'`` keeps them only when ``R'`` is ``R`` grown by appends alone: same ``epoch``
  (a random token a session gets when it is created, so a session deleted and created again
  is a new one), same page size and first timestamp, and ``next_seq`` and ``count`` moved by
  the same amount (a deletion in between makes ``count`` lag behind). Otherwise the
  session's pages are dropped and read again.
- **What is kept.** Pages as read, each with the ``seq`` it was read *up to*: the page's end,
  or ``next_seq`` for the newest page. In a session that never lost a message
  (``count == next_seq``) a page must hold every ``seq`` up to there (a short page would mean
  a write not yet visible, and is not kept). A page read up to its end is used for as long as
  the session only grows; the newest page only while ``next_seq`` has not moved (an append
  may have added to it: it is read again).

- **Overlays** are kept too, listed under a (session record, overlays mark) pair. The mark,
  ``(*R, "overlays")`` / session id, gets a fresh random token after every overlay write
  (:func:`~.compaction.overlays_mark`), and a deletion of overlays lowers the session
  record's ``count`` in the same batch, so a window reading both by key (one ``get`` of two
  ids) lists the overlays again only when the mark moved or the record shows more than
  appends. A steady window is thus that one read and no search at all, and so is the window
  after a turn (plus the newest page by key, below).

- **Pages by key.** The session record also lists the ids of its newest messages
  (``recent``: ``{"from": seq, "ids": [...]}``, one id per ``seq`` from ``from`` to
  ``next_seq - 1``, ``None`` where a message was deleted), covering at least the newest
  :data:`RECENT_PAGES` pages. Ingest extends it in the batch that writes the messages and moves
  ``next_seq``, a deletion blanks the ids it removes in the batch that lowers ``count``. A
  history page inside that span is read by key (:func:`recent_keys`; one ``get`` of at most a
  page's ids) instead of a filtered search: the page a new turn wrote to, which every window
  after a turn must read again, costs a read by id whatever the session's size. Pages before
  the span, and sessions whose record has no ``recent`` yet (written before it existed: the
  next ingest starts one), are searched as before.

Sessions created before the ``epoch`` field existed are read page by page until their next
ingest gives them one, and nothing is cached on a store with a default TTL (items may expire
without a trace in the record). Two writers appending to one session at once (which the
tier does not support: :mod:`.tier`) may hand two messages the same ``seq``; a page cached
between the two writes would miss one of them until the session record shows a deletion or a
new epoch.

The cache is held per store object (weakly), per messages namespace, bounded by
:data:`MAX_CACHED_SESSIONS` and :data:`MAX_CACHED_PAGES`, and thread-safe: windows run from
the event loop, worker threads and the background executor alike.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from typing import Any, TypeVar

from langgraph.store.base import BaseStore, Item

from langmem_edge.memory.episodic.extraction import StoredMessage

__all__ = [
    "MAX_CACHED_PAGES",
    "MAX_CACHED_SESSIONS",
    "MAX_CACHED_TOKENS",
    "RECENT_PAGES",
    "SESSION_IDENTITY_FIELDS",
    "PageCache",
    "appended_only",
    "page_cache_for",
    "recent_after_append",
    "recent_after_delete",
    "recent_keys",
    "store_cache",
]

MAX_CACHED_SESSIONS = 256
"""Sessions whose pages one store's cache keeps (least recently used dropped first)."""

MAX_CACHED_TOKENS = 16_384
"""Token estimates of messages remembered (then forgotten all at once): a message's id is a
hash of its session, role and content, so its estimate under one set of ratios never
changes."""

MAX_CACHED_PAGES = 64
"""Pages kept per session (least recently used dropped first): 640 messages at the default
page size, more than a window reads (``max_rows_scanned``, 200, plus the head)."""

RECENT_PAGES = 2
"""Newest history pages whose message ids the session record lists (``recent``): two, so a
turn that fills one page and starts the next is still read by key."""

SESSION_IDENTITY_FIELDS = ("epoch", "profile", "session_id", "page_size", "first_ts")
"""Session-record fields that never change while the session exists."""


def appended_only(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether session record ``new`` is ``old`` grown by appends alone (see the module
    docstring); False for a record without an ``epoch``."""
    if new.get("epoch") is None:
        return False
    if any(old.get(f) != new.get(f) for f in SESSION_IDENTITY_FIELDS):
        return False
    grown = int(new["next_seq"]) - int(old["next_seq"])
    counted = int(new.get("count", 0)) - int(old.get("count", 0))
    return grown >= 0 and grown == counted


def recent_after_append(record: Mapping[str, Any] | None, start: int, ids: list[str],
                        page_size: int) -> dict[str, Any]:
    """The ``recent`` field of a session record after messages ``ids`` were appended at seq
    ``start`` onwards: the old span extended when it reaches ``start`` (else a new one), then
    cut to the newest :data:`RECENT_PAGES` pages."""
    old = (record or {}).get("recent")
    if isinstance(old, dict) and int(old["from"]) + len(old["ids"]) == start:
        first, listed = int(old["from"]), [*old["ids"], *ids]
    else:
        first, listed = start, list(ids)
    end = start + len(ids)
    keep_from = max(first, ((end - 1) // page_size - RECENT_PAGES + 1) * page_size)
    return {"from": keep_from, "ids": listed[keep_from - first:]}


def recent_after_delete(record: Mapping[str, Any], seqs: set[int]) -> dict[str, Any] | None:
    """The ``recent`` field of ``record`` with the ids of deleted ``seqs`` blanked (None when
    the record has none)."""
    old = record.get("recent")
    if not isinstance(old, dict):
        return None
    first = int(old["from"])
    return {"from": first,
            "ids": [None if first + i in seqs else mid for i, mid in enumerate(old["ids"])]}


def recent_keys(record: Mapping[str, Any] | None, lo: int, hi: int) -> list[str] | None:
    """The ids of the messages with ``lo <= seq < hi`` when the session record lists them all
    (``recent``), skipping deleted ones; None when the range starts before the listed span, or
    the span does not end at the record's ``next_seq`` (a writer that does not keep ``recent``
    appended since): read it with a search."""
    old = record.get("recent") if record is not None else None
    if record is None or not isinstance(old, dict):
        return None
    first, ids = int(old["from"]), old["ids"]
    if lo < first or first + len(ids) != int(record["next_seq"]):
        return None
    return [mid for mid in ids[lo - first:hi - first] if mid is not None]


def _read_up_to(record: Mapping[str, Any], page: int, size: int) -> int:
    """The ``seq`` a page read under ``record`` holds every message below (from its start)."""
    return min(int(record["next_seq"]), (page + 1) * size)


def _whole(record: Mapping[str, Any], page: int, size: int, found: int) -> bool:
    n = int(record["next_seq"])
    upto = _read_up_to(record, page, size)
    if upto <= page * size:
        return False
    return int(record.get("count", n)) < n or found == upto - page * size


class _Session:
    """The pages of one session and the record they were checked against; the session's
    overlays and the (record, overlays mark) they were listed under."""

    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record
        self.pages: OrderedDict[int, tuple[int, tuple[StoredMessage, ...]]] = OrderedDict()
        self.overlays: tuple[dict[str, Any], dict[str, Any] | None, list[Item]] | None = None


class PageCache:
    """Complete history pages per messages namespace, valid under a session record."""

    def __init__(self) -> None:
        self._sessions: OrderedDict[tuple[str, ...], _Session] = OrderedDict()
        self._tokens: dict[tuple[str, Hashable], int] = {}
        self._lock = threading.Lock()

    def tokens(self, message: StoredMessage, ratios: Hashable,
               estimate: Callable[[str], int]) -> int:
        """``estimate(message.content)``, remembered per message id and ``ratios`` (the
        estimate's parameters)."""
        key = (message.id, ratios)
        found = self._tokens.get(key)
        if found is None:
            found = estimate(message.content)
            with self._lock:
                if len(self._tokens) >= MAX_CACHED_TOKENS:
                    self._tokens.clear()
                self._tokens[key] = found
        return found

    def check(self, namespace: tuple[str, ...], record: Mapping[str, Any]
              ) -> dict[int, tuple[StoredMessage, ...]]:
        """The cached pages of ``namespace`` still exact under ``record`` (the session record
        just read); forgets the session's pages when they are not, and remembers ``record``
        as the one new pages are read under."""
        with self._lock:
            entry = self._sessions.get(namespace)
            if entry is None or not appended_only(entry.record, record):
                entry = _Session(dict(record))
                self._sessions[namespace] = entry
                while len(self._sessions) > MAX_CACHED_SESSIONS:
                    self._sessions.popitem(last=False)
            else:
                entry.record = dict(record)
            self._sessions.move_to_end(namespace)
            size = int(record.get("page_size", 0)) or 1
            for page, (upto, _) in list(entry.pages.items()):
                if upto < _read_up_to(record, page, size):  # the newest page grew since
                    del entry.pages[page]
            return {page: msgs for page, (_, msgs) in entry.pages.items()}

    def keep(self, namespace: tuple[str, ...], record: Mapping[str, Any], page: int,
             page_size: int, messages: tuple[StoredMessage, ...]) -> None:
        """Remember page ``page`` read under ``record``, if it holds every message up to where
        it was read and ``record`` is still the session's latest checked record (else another
        window moved on: skip)."""
        if record.get("epoch") is None or not _whole(record, page, page_size, len(messages)):
            return
        with self._lock:
            entry = self._sessions.get(namespace)
            if entry is None or entry.record != record:
                return
            entry.pages[page] = (_read_up_to(record, page, page_size), messages)
            entry.pages.move_to_end(page)
            while len(entry.pages) > MAX_CACHED_PAGES:
                entry.pages.popitem(last=False)

    def overlays(self, namespace: tuple[str, ...], record: Mapping[str, Any],
                 mark: Mapping[str, Any] | None) -> list[Item] | None:
        """The overlay items listed under this overlays mark and a session record that
        ``record`` only grew from by appends (a deletion of overlays moves the record
        otherwise), or None (list them again)."""
        with self._lock:
            entry = self._sessions.get(namespace)
            found = entry.overlays if entry is not None else None
        if found is None or found[1] != mark or not appended_only(found[0], record):
            return None
        return list(found[2])

    def keep_overlays(self, namespace: tuple[str, ...], record: Mapping[str, Any],
                      mark: Mapping[str, Any] | None, items: list[Item]) -> None:
        """Remember the overlay items listed under ``record`` and ``mark``."""
        if record.get("epoch") is None:
            return
        with self._lock:
            entry = self._sessions.get(namespace)
            if entry is not None and entry.record == record:
                entry.overlays = (dict(record), dict(mark) if mark else None, list(items))


_CACHES: weakref.WeakKeyDictionary[BaseStore, PageCache] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()

C = TypeVar("C")


def store_cache(store: BaseStore, caches: weakref.WeakKeyDictionary[BaseStore, C],
                make: Callable[[], C]) -> C | None:
    """The per-process cache of ``store`` held (weakly) in ``caches``, made on first use;
    None when nothing may be cached: the store expires items by default (they may vanish
    without a trace in a session record) or cannot be referenced weakly."""
    ttl = getattr(store, "ttl_config", None) or {}
    if ttl.get("default_ttl") is not None:
        return None
    with _CACHES_LOCK:
        try:
            cache = caches.get(store)
            if cache is None:
                cache = caches[store] = make()
        except TypeError:  # not weakly referenceable
            return None
        return cache


def page_cache_for(store: BaseStore) -> PageCache | None:
    """The page cache of ``store`` in this process; None when pages must always be read (the
    store expires items by default, or cannot be referenced weakly)."""
    return store_cache(store, _CACHES, PageCache)
