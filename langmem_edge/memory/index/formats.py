"""The stored format an ``AgentMemory`` brings older records to once: the ``live`` field.

Every record written from 2026-12-06 on carries ``live`` (:data:`~langmem_edge.memory.records.LIVE`:
its profile while it is active, ``None`` once it is not), and a read of "this profile's active
records" filters on it: one equality the store indexes, where ``status == "active"`` is shared
by every profile's active records (Chroma evaluates each equality of a filter as its own index
lookup and intersects them, so that filter read every active record of every profile:
``benchmarks/memory_scale.py``, a recall 23 ms at 20 profiles and 174 ms at 1,000).

Records written before have no ``live``. The first operation of an ``AgentMemory`` in a process
that reads a profile runs :func:`plan_upgrade`: it reads one marker item, ``(*namespace,
"formats") / "live"``; when the marker is missing it gives every active record under
``(*namespace, "profiles")`` its field, then writes the marker. On a store that rewrites only
what exists (``PutExisting``: ``ChromaStore``) the change is a merge applied only to records
still active, so a record deleted or superseded meanwhile is left as it is; elsewhere it is a
put of the value read. Processes that start together may each run it: they write the same
thing. A process of an earlier release writing beside this one writes records without the
field, which reads of active records then miss: upgrade every process.
"""

from __future__ import annotations

import logging
import time
from typing import Any, cast

from langgraph.store.base import BaseStore, GetOp, PutOp, SearchOp

from langmem_edge.memory.core.plans import Call, Plan, batch
from langmem_edge.memory.core.stores import PutExisting
from langmem_edge.memory.records import LIVE, live_of

__all__ = ["FORMATS", "LIVE_MARK", "UPGRADE_CHUNK", "Upgrades", "plan_upgrade"]

logger = logging.getLogger(__name__)

FORMATS = "formats"
"""The label under an ``AgentMemory``'s namespace of the items that record its format."""

LIVE_MARK = "live"
"""The key of the marker that says every record under the namespace has its ``live`` field."""

UPGRADE_CHUNK = 500
"""Records rewritten a call while upgrading."""

SEARCH_LIMIT = 100_000_000
"""``limit`` of the one search that finds the records to upgrade."""


class Upgrades:
    """Whether an ``AgentMemory``'s stored format was checked in this process (shared by its
    profile contexts)."""

    def __init__(self, namespace: tuple[str, ...]) -> None:
        self.namespace = tuple(namespace)
        self.done = False


def plan_upgrade(store: BaseStore, upgrades: Upgrades | None) -> Plan[int]:
    """Bring the records under ``upgrades.namespace`` to the current format, once a process
    (nothing after the first call; one ``get`` when the marker is there); returns the number
    of records rewritten. The marker is written once some record exists (until then, each
    process's first read also searches the empty memory once)."""
    if upgrades is None or upgrades.done:
        return 0
    mark = (*upgrades.namespace, FORMATS)
    (found,) = yield batch(store, [GetOp(mark, LIVE_MARK)])
    count = 0
    if found is None:
        active, count = yield from _plan_add_live(store, upgrades.namespace)
        if active:  # an empty memory has nothing to upgrade, and gets no marker yet
            yield batch(store, [PutOp(mark, LIVE_MARK, {"records": count, "at": time.time()},
                                      index=False)])
    upgrades.done = True
    return count


def _plan_add_live(store: BaseStore, namespace: tuple[str, ...]) -> Plan[tuple[int, int]]:
    """Give every active record under ``(*namespace, "profiles")`` that lacks it its ``live``
    field; returns how many active records there were, and how many were rewritten."""
    root = (*namespace, "profiles")
    (items,) = yield batch(store, [SearchOp(root, filter={"status": "active"},
                                            limit=SEARCH_LIMIT)])
    records = [it for it in items
               if len(it.namespace) == len(root) + 2 and it.namespace[-1] == "memories"
               and it.value.get("id") == it.key
               and it.value.get("profile") == it.namespace[len(root)]]
    todo = [it for it in records
            if it.value.get(LIVE) != live_of(it.value["profile"], it.value.get("status"))]
    if todo:
        logger.info("adding the live field to %d records under %r", len(todo), namespace)
    done = 0
    for lo in range(0, len(todo), UPGRADE_CHUNK):
        chunk = todo[lo: lo + UPGRADE_CHUNK]
        if isinstance(store, PutExisting):
            items_: list[Any] = [
                (it.namespace, it.key, {LIVE: it.value["profile"]})
                if it.value.get("embedding_status", "complete") == "complete"
                else (it.namespace, it.key, {LIVE: it.value["profile"]}, False)
                for it in chunk]
            rewriting = cast(PutExisting, store)
            wrote = yield Call(rewriting.put_existing, rewriting.aput_existing, (items_,),
                               {"merge": True, "confirm": False, "when": {"status": "active"}})
            done += sum(1 for ok in wrote if ok)
        else:
            yield batch(store, [PutOp(it.namespace, it.key,
                                      {**it.value, LIVE: it.value["profile"]}, index=False)
                                for it in chunk])
            done += len(chunk)
        logger.info("live field: %d of %d records", lo + len(chunk), len(todo))
    return len(records), done
