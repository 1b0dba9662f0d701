"""Episodic tier: ingest throughput and compaction-window assembly time, measured in one run.

    python benchmarks/ingest_bench.py                      # 3 x 1,000 messages; 10,000 for windows
    python benchmarks/ingest_bench.py --n 500 --rounds 1 --window-n 2000 --backends memory

Part 1, ingest (real default model, all-MiniLM-L6-v2, offline): messages/s of
``EpisodicTier.add_messages`` (batches of 500, the per-call limit) and of ``EpisodicTier.ingest``
(the same plus rule-based extraction), each on its own set of distinct texts, against the
embedding model's own throughput on those same texts (``embed_documents`` of the wrapped model,
cache bypassed, batches of 500), measured just before. The ratio is the share of the model's
speed the tier keeps: 1.0 would mean the tier costs nothing on top of embedding. Each variant
runs ``--rounds`` times on fresh texts; medians are reported (the ratio is the median of the
per-round ratios, which cancels most of the noise of a shared machine).

Part 2, window assembly (no embeddings involved): a session of ``--window-n`` messages; the
time of the first ``window()`` (which also summarises one range into an overlay and runs the
pre-compaction flush, model-free) and of a steady-state ``window(compact=False)`` (the p50 of
``--window-repeats`` calls), against one ``search`` of a 10-row history page on the same
store (median of 20). Last, the window right after a 2-message turn was ingested (p50 of 5
turns). Nothing is kept between windows (the pages are read by key:
``memory/episodic/pages.py``); run it with ``PYTHONPATH`` set to an earlier checkout to
measure that code beside this one.

Part 3, ``--turns N`` (what a profile's writes cost, through the public API; child processes
of ``_write_costs.py``): p50 of a 2-message ``Profile.ingest`` and of a ``remember`` (fake
vectors, so the store's and the tiers' share shows), and ``Profile.ingest`` throughput in
batches of 500 (``--turn-bulk`` messages, default model) against the model's own on the
messages, and the model's share of it (its own time on exactly the texts the ingest sent
it: a version that embeds more per message is charged for the model, not the store). With
``--before DIR`` (repeatable: checkouts of earlier code) each round runs every code's child
in turn, so before and after share the machine's load; medians of ``--turn-rounds`` rounds.

    python benchmarks/ingest_bench.py --turns 40 --before ../old --backends chroma
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import median, table, timed  # noqa: E402
from langgraph.store.base import BaseStore  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402

from langmem_edge.embeddings import default_embeddings  # noqa: E402
from langmem_edge.memory.episodic.compaction import page_ops  # noqa: E402
from langmem_edge.memory.episodic.rules import rule_based_memories  # noqa: E402
from langmem_edge.memory.episodic.tier import EpisodicTier  # noqa: E402
from langmem_edge.testing import FakeEmbeddings  # noqa: E402

ROOT = ("bench", "profiles", "p")
BATCH = 500
SUBJECTS = ("I", "My sister", "We", "The team", "My manager", "Our landlord", "You")
VERBS = ("prefer", "booked", "moved to", "need to renew", "decided to buy", "love", "visited",
         "will meet", "asked about", "cancelled")
OBJECTS = ("a flight to Lisbon", "the blue sofa", "version 2.3 of the app", "dark mode",
           "a table for four at 8pm", "the dentist on June 20", "tickets for $120",
           "the quarterly report", "a new apartment in Porto", "the marathon in October")
TAILS = ("", " because it is cheaper", " next week", " with my brother Tom", " again",
         " before the deadline", ", which matters a lot to me", " if possible")


def conversation(n: int, seed: int) -> list[dict[str, str]]:
    """``n`` distinct chat messages (user/assistant alternating), 40-160 characters."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        parts = [f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}"
                 f"{rng.choice(TAILS)}." for _ in range(rng.randint(1, 3))]
        out.append({"role": "user" if i % 2 == 0 else "assistant",
                    "content": f"({seed}-{i}) " + " ".join(parts)})
    return out


def make_store(backend: str, embed: object | None, folder: str) -> BaseStore:
    index = None if embed is None else {"dims": 384, "embed": embed, "fields": ["text"]}
    if backend == "memory":
        return InMemoryStore(index=index)  # type: ignore[arg-type]
    from langmem_edge.store import ChromaStore

    return ChromaStore.from_path(folder, index=index)  # type: ignore[arg-type]


def bench_ingest(
    backend: str, n: int, seed: int, extract: bool, folder: str
) -> tuple[float, float]:
    """(model messages/s, tier messages/s) on one fresh text set: the model first, then the
    tier on the same texts (the content-hash cache is bypassed for the model and cold for the
    tier)."""
    msgs = conversation(n, seed)
    texts = [m["content"] for m in msgs]
    cached = default_embeddings()
    inner = cached.inner  # type: ignore[attr-defined]
    model_s = sum(timed(lambda i=i: inner.embed_documents(texts[i : i + BATCH]))
                  for i in range(0, n, BATCH))
    tier = EpisodicTier(make_store(backend, cached, folder), ROOT)
    call = tier.ingest if extract else tier.add_messages
    tier_s = sum(timed(lambda i=i: call(msgs[i : i + BATCH], f"s{seed}"))
                 for i in range(0, n, BATCH))
    close = getattr(tier.store, "close", None)
    if close:
        close()
    return n / model_s, n / tier_s


def bench_rules(n: int) -> float:
    """Messages/s of rule-based extraction alone (no store, no embeddings)."""
    tier = EpisodicTier(InMemoryStore(), ROOT)
    stored = tier.add_messages(conversation(min(n, BATCH), 7), "r")
    seconds = timed(lambda: rule_based_memories(stored, source="turn", confidence=0.5,
                                                session_id="r"))
    return len(stored) / seconds


TURNS = 5
"""Turns of the after-a-turn window figure per median."""


def bench_window(backend: str, n: int, budget: int, folder: str, repeats: int
                 ) -> dict[str, float]:
    store = make_store(backend, FakeEmbeddings(384) if backend != "memory" else None, folder)
    tier = EpisodicTier(store, ROOT)
    msgs = conversation(n, 99)
    for i in range(0, n, BATCH):
        tier.add_messages(msgs[i : i + BATCH], "w")
    first = timed(lambda: tier.window("w", budget))
    steady = median([timed(lambda: tier.window("w", budget, compact=False))
                     for _ in range(repeats)])
    page = page_ops(tier.messages_namespace("w"), tier.profile, n - 10, n, 10)
    one_page = median([timed(lambda: store.batch(page)) for _ in range(20)])
    w = tier.window("w", budget, compact=False)
    turns = conversation(2 * TURNS, 98)
    after_turn = []
    for i in range(0, len(turns), 2):
        tier.add_messages(turns[i : i + 2], "w")
        after_turn.append(timed(lambda: tier.window("w", budget, compact=False)))
    return {"first": first, "steady": steady, "page": one_page,
            "rows": w.rows_scanned, "tail": len(w.tail), "after_turn": median(after_turn)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1000,
                        help="messages ingested per variant and round")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds per variant (fresh texts each); medians are reported")
    parser.add_argument("--window-n", type=int, default=10_000,
                        help="messages in the window-assembly session")
    parser.add_argument("--budget", type=int, default=4000, help="window budget in tokens")
    parser.add_argument("--window-repeats", type=int, default=21,
                        help="steady-state window calls whose p50 is reported")
    parser.add_argument("--backends", default="memory,chroma",
                        help="comma-separated: memory (InMemoryStore), chroma (embedded)")
    parser.add_argument("--windows-only", action="store_true",
                        help="skip part 1 (ingest throughput); measure window assembly only")
    parser.add_argument("--turns", type=int, default=0,
                        help="part 3 only: turns (and remembers) per child, p50 reported")
    parser.add_argument("--turn-bulk", type=int, default=1000,
                        help="part 3: messages of the bulk Profile.ingest (0: skip it)")
    parser.add_argument("--turn-rounds", type=int, default=3, help="part 3: rounds")
    parser.add_argument("--before", action="append", default=[],
                        help="part 3: a checkout of earlier code, measured alternately")
    args = parser.parse_args()
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if args.turns:
        turns_part(backends, args.turns, args.turn_bulk, args.turn_rounds, args.before)
        return
    if not args.windows_only:
        ingest_part(backends, args.n, args.rounds)
    window_part(backends, args.window_n, args.budget, args.window_repeats)


def turns_part(backends: list[str], turns: int, bulk: int, rounds: int,
               before: list[str]) -> None:
    """Part 3: every code's ``_write_costs.py`` child in turn, ``rounds`` times."""
    here = Path(__file__).resolve().parent
    nan = float("nan")
    codes = [("this code", here.parent)] + [(f"before: {b}", Path(b).resolve()) for b in before]
    rows = []
    for backend in backends:
        runs: dict[str, list[dict[str, float]]] = {label: [] for label, _ in codes}
        for _ in range(rounds):
            for label, root in codes:
                env = {**os.environ, "PYTHONPATH": str(root)}
                out = subprocess.run([sys.executable, str(here / "_write_costs.py"), backend,
                                      str(turns), str(bulk)], env=env, check=True,
                                     capture_output=True, text=True).stdout
                runs[label].append(json.loads(out.strip().splitlines()[-1]))
                print(f"({backend}, {label}: {runs[label][-1]})", file=sys.stderr, flush=True)
        for label, _ in codes:
            r = runs[label]
            rows.append([backend, label,
                         f"{median([x['turn_ms'] for x in r]):.1f}",
                         f"{median([x['remember_ms'] for x in r]):.1f}",
                         f"{median([x.get('turn_calls', nan) for x in r]):g}",
                         f"{median([x.get('remember_calls', nan) for x in r]):g}",
                         f"{median([x['bulk_rate'] for x in r]):,.0f}",
                         f"{median([x['bulk_rate'] / x['model_rate'] for x in r]):.2f}",
                         f"{median([x['embedded_chars'] for x in r]):,.0f}",
                         f"{median([x['model_share'] for x in r]):.2f}"])
    print(f"\n### What a profile's writes cost ({turns} turns and remembers a child, "
          f"{bulk} messages of bulk ingest, medians of {rounds} rounds)\n")
    print(table(["backend", "code", "2-message ingest p50 (ms)", "remember p50 (ms)",
                 "Chroma calls an ingest", "Chroma calls a remember",
                 "bulk ingest (msg/s)", "bulk ingest / model on the messages",
                 "chars embedded a message", "model's share of the bulk ingest"], rows))


def ingest_part(backends: list[str], n: int, rounds_per: int) -> None:
    """Part 1: ingest throughput against the model's own, printed as a table."""
    default_embeddings().embed_documents(["warm-up sentence"])  # load the model once
    rows = []
    seed = 1
    for backend in backends:
        for extract in (False, True):
            rounds = []
            for _ in range(rounds_per):
                with tempfile.TemporaryDirectory() as folder:
                    rounds.append(bench_ingest(backend, n, seed, extract, folder))
                seed += 1
            model_rate = median([r[0] for r in rounds])
            tier_rate = median([r[1] for r in rounds])
            ratio = median([r[1] / r[0] for r in rounds])
            rows.append([backend, "ingest (rule-based extraction)" if extract else
                         "add_messages", n, f"{model_rate:,.0f}", f"{tier_rate:,.0f}",
                         f"{ratio:.2f}"])
    rules = bench_rules(n)
    print(f"\n### Ingest throughput ({n} messages, batches of {BATCH}, default model)\n")
    print(table(["backend", "call", "messages", "model alone (msg/s)", "tier (msg/s)",
                 "tier / model (median of rounds)"], rows))
    print(f"\nRule-based extraction alone: {rules:,.0f} messages/s.")


def window_part(backends: list[str], n: int, budget: int, repeats: int) -> None:
    """Part 2: window assembly, printed as a table."""
    rows = []
    for backend in backends:
        with tempfile.TemporaryDirectory() as folder:
            start = time.perf_counter()
            r = bench_window(backend, n, budget, folder, repeats)
            setup = time.perf_counter() - start
        rows.append([backend, n, budget, f"{r['first'] * 1000:.1f}",
                     f"{r['steady'] * 1000:.1f}", f"{r['page'] * 1000:.2f}",
                     f"{r['steady'] / r['page']:.1f}x", int(r["rows"]), int(r["tail"]),
                     f"{r['after_turn'] * 1000:.1f}"])
        print(f"(window setup on {backend}: {setup:.1f} s)", file=sys.stderr)
    print(f"\n### Window assembly ({n} messages, budget {budget} tokens)\n")
    print(table(["backend", "messages", "budget", "first window, with overlay (ms)",
                 "steady window p50 (ms)", "one 10-row page (ms)", "steady / page",
                 "rows scanned", "tail messages", "after a 2-message turn p50 (ms)"], rows))


if __name__ == "__main__":
    main()
