"""What one ``recall_conversation`` costs as a profile's history grows (issue 34, episodic tier).

    python benchmarks/episodic_recall.py [--messages 300,1000,3000] [--ops 30] [--rounds 3]
                                         [--config NAME=JSON ...] [--folder /dev/shm]

One ``ChromaStore`` folder (tmpfs by default) and deterministic fake embeddings
(``langmem_edge.testing.FakeEmbeddings``, 64-d), with one profile per size, each holding
``--messages`` messages in sessions of 20 (``ingest(..., extract=False)``): chat-like
sentences over a 2,000-word vocabulary with Zipf-like frequencies, so BM25 has common and
rare words to weigh.
Each query is four words of a random stored message. Then, in ``--rounds`` rounds, the
configurations (``--config NAME=JSON``: ``EpisodicConfig`` overrides; default: the defaults
alone) take turns on every size, ``--ops`` profile-wide hybrid recalls each, each through a
new ``AgentMemory`` handle over the same store (a process that kept nothing) and again through
one handle reused (a warm process).

Printed: per configuration and size, the median and p95 milliseconds and the Chroma calls per
recall, with the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import tempfile
import time

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from _common import CHROMA_CALLS, count_chroma_calls, percentile, table  # noqa: E402

from langmem_edge import AgentMemory, ChromaStore  # noqa: E402
from langmem_edge.testing import FakeEmbeddings  # noqa: E402

DIMS = 64


def forget_process_caches() -> None:
    """Drop what this process keeps of every profile's messages (the page caches, and the
    message indexes of releases that had them): a service with more users than the caches
    hold meets each user cold."""
    import importlib
    import weakref

    for name in ("pages", "recall_index"):
        try:
            mod = importlib.import_module(f"langmem_edge.memory.episodic.{name}")
        except ImportError:
            continue
        for value in vars(mod).values():
            if isinstance(value, weakref.WeakKeyDictionary):
                value.clear()
SESSION = 20
def _sentences(rng: random.Random, n: int) -> list[str]:
    vocab = [f"w{i:04d}" for i in range(2000)]
    weights = [1.0 / (i + 1) for i in range(len(vocab))]
    out = []
    for _ in range(n):
        words = rng.choices(vocab, weights=weights, k=rng.randint(6, 30))
        out.append("I think " + " ".join(words) + ".")
    return out


def build(store: ChromaStore, sizes: list[int], seed: int) -> dict[int, list[str]]:
    rng = random.Random(seed)
    memory = AgentMemory(store)
    texts: dict[int, list[str]] = {}
    for size in sizes:
        profile = memory.profile(f"user:{size}")
        texts[size] = _sentences(rng, size)
        for s in range(0, size, SESSION):
            profile.ingest(
                [{"role": "user" if i % 2 == 0 else "assistant", "content": t}
                 for i, t in enumerate(texts[size][s:s + SESSION])],
                session_id=f"s{s // SESSION}", extract=False)
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", default="300,1000,3000")
    parser.add_argument("--ops", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--config", action="append", default=[],
                        help="NAME=JSON of EpisodicConfig overrides (repeatable)")
    parser.add_argument("--folder", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    sizes = [int(x) for x in args.messages.split(",")]
    configs = {"default": {}}
    for spec in args.config:
        name, _, body = spec.partition("=")
        configs[name] = json.loads(body)
    print(f"load average before: {os.getloadavg()}", flush=True)
    root = tempfile.mkdtemp(dir=args.folder)
    try:
        store = ChromaStore.from_path(root, index={"dims": DIMS, "embed": FakeEmbeddings(DIMS),
                                                   "fields": ["text"]})
        t0 = time.perf_counter()
        texts = build(store, sizes, args.seed)
        print(f"built {sum(sizes)} messages in {time.perf_counter() - t0:.0f} s", flush=True)
        count_chroma_calls()
        rng = random.Random(args.seed + 1)
        samples: dict[tuple[str, str, int], list[float]] = {}
        calls: dict[tuple[str, str, int], list[int]] = {}
        warm = {name: AgentMemory(store, config={"episodic": cfg})
                for name, cfg in configs.items()}
        for _ in range(args.rounds):
            for size in sizes:
                for name, cfg in configs.items():
                    for mode in ("new", "warm", "cold"):
                        for _ in range(args.ops):
                            words = rng.choice(texts[size]).rstrip(".").split()[2:]
                            query = " ".join(rng.sample(words, min(4, len(words))))
                            memory = (AgentMemory(store, config={"episodic": cfg})
                                      if mode == "new" else warm[name])
                            profile = memory.profile(f"user:{size}")
                            if mode == "cold":  # a process whose caches hold other users
                                forget_process_caches()
                            before = sum(CHROMA_CALLS.values())
                            start = time.perf_counter()
                            profile.episodic.search(query)
                            samples.setdefault((name, mode, size), []).append(
                                (time.perf_counter() - start) * 1000)
                            calls.setdefault((name, mode, size), []).append(
                                sum(CHROMA_CALLS.values()) - before)
        rows = []
        for (name, mode, size), ms in samples.items():
            rows.append([name, mode, size, f"{statistics.median(ms):.1f}",
                         f"{percentile(ms, 95):.1f}",
                         f"{statistics.mean(calls[name, mode, size]):.1f}"])
        print(table(["config", "handle", "messages", "p50 ms", "p95 ms", "calls"], rows))
        print(f"load average after: {os.getloadavg()}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({f"{n}/{m}/{s}": {"p50": statistics.median(v),
                                            "p95": percentile(v, 95),
                                            "calls": statistics.mean(calls[n, m, s])}
                           for (n, m, s), v in samples.items()}, f, indent=1)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
