"""The episodic tier's message writes: the rows, in one store step.

An ingest's append (messages, the session record, and extracted memories riding with them)
and a deletion are each one batch of rows. On a store that applies a batch
of puts whole (:func:`~langmem_edge.memory.core.stores.atomic_put_limit`, ``ChromaStore``)
no reader sees part of it and a crash leaves all or nothing; elsewhere the session record's
extraction mark moves last, so the next ingest repairs a failure (``docs/architecture.md``,
write rule 5). Nothing else is written: every reader reads the rows themselves.
"""

from __future__ import annotations

from collections.abc import Sequence

from langgraph.store.base import BaseStore, PutOp

from langmem_edge.memory.core.plans import Call, Plan, StoreStep
from langmem_edge.memory.core.stores import PutNew, atomic_put_limit

__all__ = ["applies_whole", "plan_new_rows"]


def applies_whole(store: BaseStore, puts: int) -> bool:
    """Whether ``store`` applies a batch of ``puts`` puts whole."""
    return puts <= atomic_put_limit(store)


def plan_new_rows(store: BaseStore, ops: Sequence[PutOp]) -> Plan[None]:
    """Write ``ops``, puts of rows whose keys were read absent (messages with new ``seq``,
    memories with new ids) and rows only their writer writes (the session record), as one
    step: on a :class:`~langmem_edge.memory.core.stores.PutNew` store that applies them whole,
    without the read a batch makes first (a rewritten row's ``created_at`` restarts: nothing
    reads it)."""
    if (isinstance(store, PutNew) and applies_whole(store, len(ops))
            and all(op.value is not None for op in ops)):
        yield Call(store.put_new, store.aput_new,
                   ([(op.namespace, op.key, op.value, op.index) for op in ops],))
    else:
        yield StoreStep(tuple(ops))
