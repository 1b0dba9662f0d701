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
``(*namespace, "profiles")`` its field, a profile at a time, then writes the marker (an empty
memory gets it at once). On a store that rewrites only
what exists (``PutExisting``: ``ChromaStore``) the change is a merge applied only to records
still active, so a record deleted or superseded meanwhile is left as it is; elsewhere it is a
put of the value read. Processes that start together may each run it: they write the same
thing. A process of an earlier release writing beside this one writes records without the
field, which reads of active records then miss: upgrade every process.
"""

from __future__ import annotations

import logging
import time
from typing import cast

from langgraph.store.base import BaseStore, GetOp, PutOp, SearchOp

from langmem_edge.memory.core.labels import plan_child_labels
from langmem_edge.memory.core.plans import Call, Plan, batch
from langmem_edge.memory.core.stores import PutExisting, existing_item
from langmem_edge.memory.records import LIVE

__all__ = ["FORMATS", "LIVE_MARK", "UPGRADE_CHUNK", "Upgrades", "plan_upgrade"]

logger = logging.getLogger(__name__)

FORMATS = "formats"
"""The label under an ``AgentMemory``'s namespace of the items that record its format."""

LIVE_MARK = "live"
"""The key of the marker that says every record under the namespace has its ``live`` field."""

UPGRADE_CHUNK = 500
"""Records rewritten a call while upgrading."""

SEARCH_LIMIT = 100_000_000
"""``limit`` of the search that reads one profile's records."""

MAX_PROFILES = 100_000
"""Namespaces a listing of the profiles asks for at a time."""


class Upgrades:
    """Whether an ``AgentMemory``'s stored format was checked in this process (shared by its
    profile contexts)."""

    def __init__(self, namespace: tuple[str, ...]) -> None:
        self.namespace = tuple(namespace)
        self.done = False


def plan_upgrade(store: BaseStore, upgrades: Upgrades | None) -> Plan[int]:
    """Bring the records under ``upgrades.namespace`` to the current format, once a process
    (nothing after the first call; one ``get`` when the marker is there), and write the
    marker (an empty memory gets it at once: whatever is written from then on has the
    field); returns the number of records rewritten."""
    if upgrades is None or upgrades.done:
        return 0
    mark = (*upgrades.namespace, FORMATS)
    (found,) = yield batch(store, [GetOp(mark, LIVE_MARK)])
    count = 0
    if found is None:
        count = yield from _plan_add_live(store, upgrades.namespace)
        yield batch(store, [PutOp(mark, LIVE_MARK, {"records": count, "at": time.time()},
                                  index=False)])
    upgrades.done = True
    return count


def _plan_add_live(store: BaseStore, namespace: tuple[str, ...]) -> Plan[int]:
    """Give every active record under ``(*namespace, "profiles")`` that lacks it its ``live``
    field, a profile at a time (its records read whole: a filter on ``status`` would read
    every profile's); returns how many were rewritten."""
    root = (*namespace, "profiles")
    names = yield from plan_child_labels(store, root, page=MAX_PROFILES)
    done = 0
    for n, name in enumerate(names, 1):
        memories = (*root, name, "memories")
        (items,) = yield batch(store, [SearchOp(memories, limit=SEARCH_LIMIT)])
        todo = [it for it in items
                if tuple(it.namespace) == memories and it.value.get("id") == it.key
                and it.value.get("profile") == name and it.value.get("status") == "active"
                and it.value.get(LIVE) != name]
        for lo in range(0, len(todo), UPGRADE_CHUNK):
            chunk = todo[lo: lo + UPGRADE_CHUNK]
            if isinstance(store, PutExisting):
                # applied only where the record is still there and still active
                changes = [existing_item(memories, it.key, {LIVE: name}, it.value)
                           for it in chunk]
                rewriting = cast(PutExisting, store)
                wrote = yield Call(rewriting.put_existing, rewriting.aput_existing, (changes,),
                                   {"merge": True, "confirm": False,
                                    "when": {"status": "active"}})
                done += sum(1 for ok in wrote if ok)
            else:
                yield batch(store, [PutOp(memories, it.key, {**it.value, LIVE: name},
                                          index=False) for it in chunk])
                done += len(chunk)
        if todo:
            logger.info("live field: profile %d of %d (%s), %d records", n, len(names), name,
                        len(todo))
    return done
