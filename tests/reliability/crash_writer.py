"""The writer child of the crash-durability suite (``test_crash.py``).

``python -m reliability.crash_writer --location L --journal J --cycle C [--full-from N]
[--check-only]``:

1. opens the store, the memory and the saver on ``L`` (a folder or a server URL), timing
   the open and counting warnings logged meanwhile (a repair would log one);
2. checks the journal's acknowledged writes: every one present (all of them) and intact
   (entries from ``--full-from`` on also through the search paths: vectors, recall, keyword
   search of messages), plus every visible record whole (items, memories, checkpoints with
   all their writes), and prints one ``REPORT {json}`` line;
3. unless ``--check-only``, prints ``READY`` and writes until it is killed, rotating over
   store puts, ``remember``, ``ingest``, working-tier notes and checkpoint puts, appending
   each acknowledged write to the journal (fsync'd) after it returned.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import sys
import time
from collections.abc import Callable
from typing import Any

from .helpers import (
    CHECKPOINT_WRITES,
    Journal,
    checkpoint_config,
    open_memory,
    open_saver,
    open_store,
    put_checkpoint,
)

ITEMS = ("crash", "items")
"""Namespace of the store puts."""

PROFILE = "writer"
"""The profile ``remember``, ``ingest`` and the working notes write to."""

LIST_LIMIT = 100_000
"""Largest listing the checker reads in one call (more than any run writes)."""

SEARCH_K = 5
"""Hits a search path may take to return an acknowledged write."""


def token(cycle: int, n: int) -> str:
    """The word that makes write ``n`` of ``cycle`` unique (one hashed slot set)."""
    return f"c{cycle}n{n}"


def item_value(tok: str) -> dict[str, Any]:
    """The value of the store put that carries ``tok``: the text and a checksum of it."""
    text = f"item {tok} amber harbor"
    return {"text": text, "tok": tok, "len": len(text), "pad": "x" * 512}


class Writes:
    """The five acknowledged operations of the writer, each returning its journal entry."""

    def __init__(self, store: Any, memory: Any, saver: Any) -> None:
        self.store, self.saver = store, saver
        self.profile = memory.profile(PROFILE)

    def put(self, tok: str) -> dict[str, Any]:
        self.store.put(ITEMS, tok, item_value(tok))
        return {"op": "put", "tok": tok}

    def remember(self, tok: str) -> dict[str, Any]:
        text = f"fact {tok} cedar meadow"
        rec = self.profile.remember(text, key=f"topic.{tok}")
        return {"op": "remember", "tok": tok, "id": rec.id, "text": text}

    def ingest(self, tok: str) -> dict[str, Any]:
        texts = [f"question {tok} willow", f"answer {tok} willow"]
        self.profile.ingest([{"role": "user", "content": texts[0]},
                             {"role": "assistant", "content": texts[1]}], session_id=tok)
        return {"op": "ingest", "tok": tok, "texts": texts}

    def working(self, tok: str) -> dict[str, Any]:
        notes = f"notes {tok} juniper"
        self.profile.working.set_context(f"thread-{tok}", notes)
        return {"op": "working", "tok": tok, "notes": notes}

    def checkpoint(self, tok: str) -> dict[str, Any]:
        cid = put_checkpoint(self.saver, f"thread-{tok}", f"value {tok}")
        return {"op": "checkpoint", "tok": tok, "id": cid}

    def rotation(self) -> list[Callable[[str], dict[str, Any]]]:
        return [self.put, self.remember, self.ingest, self.working, self.checkpoint]


class Checker:
    """Checks a journal against what a freshly opened store, memory and saver read."""

    def __init__(self, store: Any, memory: Any, saver: Any) -> None:
        self.store, self.saver = store, saver
        self.profile = memory.profile(PROFILE)
        self.problems: list[str] = []

    def bad(self, what: str) -> None:
        if len(self.problems) < 50:
            self.problems.append(what)

    def entry(self, e: dict[str, Any], *, full: bool) -> None:
        tok, op = e["tok"], e["op"]
        if op == "put":
            item = self.store.get(ITEMS, tok)
            if item is None or item.value != item_value(tok):
                self.bad(f"put {tok}: {item and item.value!r}")
            elif full:
                hits = self.store.search(ITEMS, query=item_value(tok)["text"], limit=SEARCH_K)
                if tok not in {h.key for h in hits if h.score is not None}:
                    self.bad(f"put {tok}: not found by vector search (vectors lost)")
        elif op == "remember":
            rec = self.profile.get(e["id"])
            if rec is None or rec.text != e["text"] or rec.status != "active":
                self.bad(f"remember {tok}: {rec!r}")
            elif full:
                ids = {c.id for c in self.profile.recall(e["text"], limit=SEARCH_K).candidates}
                if e["id"] not in ids:
                    self.bad(f"remember {tok}: not recalled")
        elif op == "ingest":
            found = self.profile.episodic.search(tok, mode="keyword", scope="all",
                                                 session_id=tok, limit=10)
            texts = sorted(m.content for m in found if m.session_id == tok)
            if texts != sorted(e["texts"]):
                self.bad(f"ingest {tok}: messages {texts!r}")
        elif op == "working":
            notes = self.profile.working.get_context(f"thread-{tok}")
            if notes != e["notes"]:
                self.bad(f"working {tok}: notes {notes!r}")
        elif op == "checkpoint":
            tup = self.saver.get_tuple(checkpoint_config(f"thread-{tok}", e["id"]))
            if tup is None or tup.checkpoint["channel_values"] != {"v": f"value {tok}"}:
                self.bad(f"checkpoint {tok}: {tup!r}")
            elif len(tup.pending_writes or []) != CHECKPOINT_WRITES:
                self.bad(f"checkpoint {tok}: {len(tup.pending_writes or [])} writes")

    def visible(self, acked: set[str]) -> dict[str, int]:
        """Every visible record whole, whether acknowledged or not: items with their value
        and vectors, memories with their record, checkpoints with all their writes or (not
        acknowledged: the kill fell between put and put_writes) none."""
        seen = {"items": 0, "memories": 0, "checkpoints": 0, "unacknowledged": 0}
        for item in self.store.search(ITEMS, limit=LIST_LIMIT):
            seen["items"] += 1
            tok = item.key
            if item.value != item_value(tok):
                self.bad(f"visible item {tok} half-written: {item.value!r}")
            elif tok not in acked:
                seen["unacknowledged"] += 1
                hits = self.store.search(ITEMS, query=item.value["text"], limit=SEARCH_K)
                if tok not in {h.key for h in hits}:
                    self.bad(f"visible item {tok} has no vectors")
        for rec in self.profile.list(status="all", limit=500).memories:
            seen["memories"] += 1
            if self.profile.get(rec.id) is None:
                self.bad(f"listed memory {rec.id} has no record")
        recalled = self.profile.recall("fact cedar meadow", limit=50).candidates
        for cand in recalled:
            if cand.source_type == "memory" and self.profile.get(cand.id) is None:
                self.bad(f"recalled memory {cand.id} has no record")
        for tup in self.saver.list(None):
            seen["checkpoints"] += 1
            writes = len(tup.pending_writes or [])
            tok = tup.config["configurable"]["thread_id"].removeprefix("thread-")
            if writes not in (0, CHECKPOINT_WRITES) or (tok in acked and writes == 0):
                self.bad(f"checkpoint of {tok} has {writes} writes")
        return seen


class _Count(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(f"{record.name}: {record.getMessage()}"[:200])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--location", required=True)
    ap.add_argument("--journal", required=True)
    ap.add_argument("--cycle", type=int, required=True)
    ap.add_argument("--full-from", type=int, default=0)
    ap.add_argument("--prefix", default="rel")
    ap.add_argument("--check-only", action="store_true")
    args = ap.parse_args(argv)

    warned = _Count()
    logging.getLogger("langmem_edge").addHandler(warned)
    logging.getLogger("chromadb").addHandler(warned)
    started = time.perf_counter()
    store = open_store(args.location, prefix=args.prefix)
    memory = open_memory(store)
    saver = open_saver(args.location, prefix=args.prefix)
    opened = time.perf_counter() - started

    entries = Journal.read(args.journal)
    checker = Checker(store, memory, saver)
    for i, e in enumerate(entries):
        checker.entry(e, full=i >= args.full_from)
    seen = checker.visible({e["tok"] for e in entries})
    report = {"cycle": args.cycle, "checked": len(entries),
              "full": max(0, len(entries) - args.full_from), "problems": checker.problems,
              "open_seconds": round(opened, 3), "warnings": warned.records, **seen}
    print("REPORT " + json.dumps(report), flush=True)
    if args.check_only:
        store.close()
        saver.close()
        return 0

    journal = Journal(args.journal)
    writes = Writes(store, memory, saver).rotation()
    print("READY", flush=True)
    for n in itertools.count():
        entry = writes[(n + args.cycle) % len(writes)](token(args.cycle, n))
        journal.append(entry)
    return 0  # pragma: no cover - killed


if __name__ == "__main__":
    sys.exit(main())
