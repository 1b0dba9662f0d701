"""The episodic tier's deletions: a session, or some of its messages (each one batch of rows,
:mod:`.writes`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from langgraph.store.base import GetOp, PutOp

from langmem_edge.memory.core.plans import Plan, StoreStep
from langmem_edge.memory.episodic.compaction import history_ops
from langmem_edge.memory.episodic.embedded import repair_ops, repair_range
from langmem_edge.memory.episodic.messages import validate_session_id
from langmem_edge.memory.episodic.sessions import record_after_delete

if TYPE_CHECKING:
    from langmem_edge.memory.episodic.tier import EpisodicTier

__all__ = ["delete_messages_plan", "delete_session_plan"]

SCAN_ALL = 10**9
"""``cap`` of the scans that find everything of a session to delete."""


def delete_session_plan(tier: EpisodicTier, session_id: str) -> Plan[int]:
    """Delete a session's messages, overlays and record (see
    :meth:`~.tier.EpisodicTier.delete_session`) in one batch; returns the messages deleted."""
    sid = validate_session_id(session_id)
    flt = {"profile": tier.profile}
    msgs = yield from tier._scan_plan(tier.messages_namespace(sid), flt, SCAN_ALL)
    overlays = yield from tier._scan_plan(tier.overlays_namespace(sid), flt, SCAN_ALL)
    (meta,) = yield StoreStep((GetOp(tier.sessions_namespace, sid),))
    ops = [PutOp(it.namespace, it.key, None) for it in (*msgs, *overlays)]
    if meta is not None:
        ops.append(PutOp(tier.sessions_namespace, sid, None))
        ops.append(PutOp(tier.overlays_namespace(sid)[:-1], sid, None))  # overlays mark
    if ops:
        yield StoreStep(tuple(ops))
    return len(msgs)


def delete_messages_plan(tier: EpisodicTier, session_id: str, message_ids: Iterable[str]
                         ) -> Plan[int]:
    """Delete messages and the overlays over them (see
    :meth:`~.tier.EpisodicTier.delete_messages`), giving the messages around them their
    context without them (:func:`~.embedded.repair_ops`), in one batch; returns how many."""
    sid = validate_session_id(session_id)
    ids = list(dict.fromkeys(message_ids))
    ns = tier.messages_namespace(sid)
    found = yield StoreStep((GetOp(tier.sessions_namespace, sid),
                             *(GetOp(ns, mid) for mid in ids)))
    meta, items = found[0], [it for it in found[1:]
                             if it is not None and it.value.get("profile") == tier.profile]
    if not items:
        return 0
    seqs = {int(it.value["seq"]) for it in items}
    overlays = yield from tier._scan_plan(tier.overlays_namespace(sid),
                                          {"profile": tier.profile}, SCAN_ALL)
    stale = [ov for ov in overlays
             if any(ov.value["from_seq"] <= s <= ov.value["to_seq"] for s in seqs)]
    ops = [PutOp(ns, it.key, None) for it in items]
    ops += [PutOp(ov.namespace, ov.key, None) for ov in stale]
    if stale:  # the overlays mark lists them: the next window lists the overlays anew
        ops.append(PutOp(tier.overlays_namespace(sid)[:-1], sid, None))
    gone = {it.key for it in items}
    ps = int(meta.value.get("page_size", tier.config.page_size)) if meta else (
        tier.config.page_size)
    span = repair_range(seqs)

    reads = history_ops(ns, tier.profile, *span, ps, meta.value if meta else None)
    around = yield StoreStep(reads)
    rows = ops + repair_ops(ns, around, gone, span=span, profile=tier.profile)
    if meta is not None:
        rows.append(PutOp(tier.sessions_namespace, sid,
                          record_after_delete(meta.value, seqs, gone), index=False))
    yield StoreStep(tuple(rows))
    return len(items)
