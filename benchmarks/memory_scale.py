"""What a memory operation costs as a service grows in users: the baseline of issue 34.

    python benchmarks/memory_scale.py [--profiles 20,60] [--memories 100] [--ops 20]
                                      [--rounds 3] [--folder /dev/shm] [--server]

An ``AgentMemory`` over a ``ChromaStore`` folder (on tmpfs by default: the disk is not what is
measured; ``--server``: on a throwaway ``chroma run`` instead), deterministic fake
embeddings (``langmem_edge.testing.FakeEmbeddings``, 64-d: the model is not what is measured
either), one store per profile count, each loaded with
``--memories`` memories in each of its profiles (``remember_many``). Then, in ``--rounds``
rounds that interleave the stores (A, B, A, B, ...), ``--ops`` of each operation on a random
profile of the store, as a service with many users does:

- ``recall``: ``profile.recall(query)`` (one of the profile's memory texts, reworded);
- ``remember``: ``profile.remember(text)`` (a new fact);
- ``remember_key``: ``profile.remember(text, key=...)`` under one of 15 keys (the write
  settles its key: reads the key's active records after it and supersedes the older);
- ``ingest``: ``profile.ingest(2 messages, session_id=<new>)`` (rule-based extraction).

Printed: per store and operation, the median milliseconds, the ratio to the smallest store's
median in the same run, and the Chroma calls per operation (every ``Collection`` method call
counted, whoever makes it), with the load average before and after. The design target of the
memory redesign (issue 34): the ratio close to 1.0 and one round trip an operation where the
database allows.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import statistics
import tempfile
import time

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from _common import CHROMA_CALLS, count_chroma_calls, table  # noqa: E402

from langmem_edge import AgentMemory, ChromaStore  # noqa: E402
from langmem_edge.testing import FakeEmbeddings, chroma_server  # noqa: E402

DIMS = 64
TOPICS = ["hiking", "jazz", "sushi", "chess", "sailing", "pottery", "tennis", "opera",
          "cycling", "baking", "poetry", "karate", "surfing", "gardening", "painting"]
def _fact(rng: random.Random, i: int) -> str:
    topic = rng.choice(TOPICS)
    return f"Fact {i}: the user enjoys {topic} on weekday number {rng.randint(1, 7)}."


def build(folder: str, profiles: int, memories: int, seed: int, url: str | None = None,
          ) -> tuple[ChromaStore, AgentMemory]:
    """A store of ``profiles`` x ``memories``: on ``folder``, or on the server at ``url``
    (collections named ``scale-`` and the folder's last part)."""
    index = {"dims": DIMS, "embed": FakeEmbeddings(DIMS), "fields": ["text"]}
    store = (ChromaStore.from_url(url, collection_prefix=f"scale-{os.path.basename(folder)}",
                                 index=index)
             if url else ChromaStore.from_path(folder, index=index))
    memory = AgentMemory(store)
    rng = random.Random(seed)
    start = time.perf_counter()
    for p in range(profiles):
        memory.profile(f"user:{p}").remember_many(
            [_fact(rng, i) for i in range(memories)])
        if (p + 1) % 1000 == 0 and p + 1 < profiles:  # a long build shows its pace
            print(f"  {p + 1:,} of {profiles:,} profiles in {time.perf_counter() - start:.0f} s",
                  flush=True)
    return store, memory


OPS = ("recall", "remember", "remember_key", "ingest")
"""The operations measured, in their order within a round."""


def run_op(memory: AgentMemory, profiles: int, op: str, rng: random.Random, n: int
           ) -> tuple[float, int]:
    """One operation on a random profile: (seconds, Chroma calls)."""
    profile = memory.profile(f"user:{rng.randrange(profiles)}")
    before = sum(CHROMA_CALLS.values())
    start = time.perf_counter()
    if op == "recall":
        profile.recall(f"what does the user enjoy, {rng.choice(TOPICS)}?")
    elif op == "remember":
        profile.remember(f"The user bought a {rng.choice(TOPICS)} book, number {n}.")
    elif op == "remember_key":  # settles its key: supersedes the key's earlier record
        topic = rng.choice(TOPICS)
        profile.remember(f"The user's favourite {topic} place is number {n}.",
                         key=f"favourite.{topic}")
    else:
        profile.ingest([{"role": "user", "content": f"I love {rng.choice(TOPICS)}."},
                        {"role": "assistant", "content": "Noted."}],
                       session_id=f"bench-{n}")
    return time.perf_counter() - start, sum(CHROMA_CALLS.values()) - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profiles", default="20,60", help="profile counts (default 20,60)")
    parser.add_argument("--memories", type=int, default=100, help="memories a profile")
    parser.add_argument("--ops", type=int, default=20, help="operations of each kind a round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--folder", default="/dev/shm" if os.path.isdir("/dev/shm") else None,
                        help="where the stores' folders go (default: tmpfs)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--server", action="store_true",
                        help="the stores on a throwaway `chroma run` (ChromaStore.from_url)")
    parser.add_argument("--json", help="also write the figures to this file (for "
                        "benchmarks/memory_scale_ab.py)")
    args = parser.parse_args()
    counts = [int(x) for x in args.profiles.split(",")]
    count_chroma_calls()
    load_before = os.getloadavg()[0]
    root = tempfile.mkdtemp(prefix="memory-scale-", dir=args.folder)
    stack = contextlib.ExitStack()  # the server, when asked for: stopped whatever happens
    try:
        url = stack.enter_context(chroma_server()) if args.server else None
        built = {}
        for n in counts:
            start = time.perf_counter()
            built[n] = build(os.path.join(root, f"p{n}"), n, args.memories, args.seed, url)
            print(f"loaded {n} profiles x {args.memories} memories in "
                  f"{time.perf_counter() - start:.1f} s", flush=True)
        samples: dict[tuple[int, str], list[tuple[float, int]]] = {}
        rng = random.Random(args.seed)
        serial = 0
        for _ in range(args.rounds):
            for n in counts:  # interleaved: each round runs every store in turn
                _, memory = built[n]
                for op in OPS:
                    for _ in range(args.ops):
                        serial += 1
                        samples.setdefault((n, op), []).append(
                            run_op(memory, n, op, rng, serial))
        rows = []
        figures = []
        for op in OPS:
            base = statistics.median(t for t, _ in samples[(counts[0], op)])
            for n in counts:
                times = sorted(t for t, _ in samples[(n, op)])
                calls = [c for _, c in samples[(n, op)]]
                med = statistics.median(times)
                p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
                rows.append([op, n, f"{med * 1000:.1f}", f"{p95 * 1000:.1f}",
                             f"{med / base:.2f}x", f"{statistics.mean(calls):.1f}"])
                figures.append({"op": op, "profiles": n, "p50_ms": med * 1000,
                                "p95_ms": p95 * 1000, "calls": statistics.mean(calls)})
        print(table(["operation", "profiles", "p50 ms", "p95 ms", "vs smallest",
                     "Chroma calls / op"], rows))
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"figures": figures, "load": [load_before, os.getloadavg()[0]]}, f)
        print(f"\n{args.memories} memories a profile, {args.ops} ops of each kind x "
              f"{args.rounds} rounds, interleaved; load average {load_before:.2f} before, "
              f"{os.getloadavg()[0]:.2f} after")
        for store, _ in built.values():
            store.close()
    finally:
        stack.close()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
