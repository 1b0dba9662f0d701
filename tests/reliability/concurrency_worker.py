"""A worker process of the concurrency suite (``test_concurrency.py``).

``python -m reliability.concurrency_worker --url U --prefix P --proc N --threads T
--iterations I --keys K``: one store, one memory and one saver shared by ``T`` threads;
each thread, ``I`` times: a store put and a read-back of an earlier put, a ``remember`` under
one of ``K`` keys shared by every process (so supersessions race), a ``recall`` whose matched
memories it tallies, and a checkpoint put. Then ``memory.flush()`` and one ``RESULT {json}``
line: what was acknowledged, the tallies, and every exception raised (type and message).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import traceback
from collections import Counter
from typing import Any

from .helpers import open_memory, open_saver, open_store, put_checkpoint

SHARED_PROFILE = "shared"
"""The profile every process and thread writes to."""

ITEMS = ("conc",)
"""Root namespace of the store puts (one child namespace per process)."""


def work(proc: int, thread: int, args: argparse.Namespace, store: Any, memory: Any,
         saver: Any, out: dict[str, Any], lock: threading.Lock) -> None:
    profile = memory.profile(SHARED_PROFILE)
    items, memories, checkpoints = [], [], []
    access: Counter[str] = Counter()
    errors = []
    ns = (*ITEMS, f"p{proc}")
    for i in range(args.iterations):
        tag = f"p{proc}t{thread}i{i}"
        try:
            store.put(ns, tag, {"text": f"item {tag} amber", "n": i})
            items.append([list(ns), tag])
            back = store.get(ns, items[i // 2][1])
            if back is None:
                errors.append(f"LostRead: {items[i // 2]} not readable")
            rec = profile.remember(f"value {tag} cedar", key=f"shared.k{i % args.keys}")
            memories.append(rec.id)
            found = profile.recall("value cedar", limit=10)
            access.update(c.id for c in found.candidates
                          if c.matched and c.source_type == "memory")
            checkpoints.append([f"p{proc}t{thread}", put_checkpoint(saver, f"p{proc}t{thread}",
                                                                    tag)])
        except Exception as e:  # every exception is a finding: report it
            errors.append(f"{type(e).__name__}: {e} | "
                          + traceback.format_exc(limit=4).replace("\n", " / ")[-600:])
    with lock:
        out["items"] += items
        out["memories"] += memories
        out["checkpoints"] += checkpoints
        out["errors"] += errors
        for k, v in access.items():
            out["access"][k] = out["access"].get(k, 0) + v


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    for name in ("--url", "--prefix"):
        ap.add_argument(name, required=True)
    for name in ("--proc", "--threads", "--iterations", "--keys"):
        ap.add_argument(name, type=int, required=True)
    args = ap.parse_args(argv)
    store = open_store(args.url, prefix=args.prefix)
    memory = open_memory(store)
    saver = open_saver(args.url, prefix=args.prefix)
    out: dict[str, Any] = {"items": [], "memories": [], "checkpoints": [], "errors": [],
                           "access": {}}
    lock = threading.Lock()
    threads = [threading.Thread(target=work, args=(args.proc, t, args, store, memory, saver,
                                                   out, lock))
               for t in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    memory.flush()
    store.close()
    saver.close()
    print("RESULT " + json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
