"""Recall on a long user message: ``recall_query`` against the message cut at the limit.

A user of a coding agent asks a question inside a long paste (a log, a code excerpt, a JSON
dump). The memory block is recalled on a query made from that message; the query limit is
``limits.max_text_chars`` (10,000 characters). This compares, on LoCoMo turns stored as
memories (one memory per dialog turn, ``"[date] speaker: text"``, one profile per
conversation), the recall of a question's evidence turns through ``Profile.recall`` when
the query is:

- ``question``: the bare question (what a short message would give: the ceiling);
- ``cut``: the long message cut at the limit (``message[:10000]``: what a caller that
  only trims gets);
- ``recall_query``: :func:`langmem_edge.retrieval.shape.recall_query` of the long message
  (what the graphs use: code/markup/log lines left out, questions first, head and tail).

Each question is wrapped in a paste of about 12,000-14,000 characters built from a log, a
code excerpt and a minified JSON dump (seeded, varied per question), with one line of prose
("I was going through my notes while the build ran.") and the question placed **after** the
paste (``end``) or **before** it (``start``). Categories 1, 2 and 4 (multi-hop, temporal,
single-hop: the ones with evidence turns); recall@k is the share of a question's evidence
turns in the top k, averaged.

Run (from the project root; the data set is not part of the project, see its README)::

    python benchmarks/long_query.py [--path ../shared/datasets/locomo/locomo_dev.json]
        [--conversations 2] [--questions 60] [--k 10]

Embeddings: ``default_embeddings()`` (all-MiniLM-L6-v2); store: ``InMemoryStore`` (the
recall path is the same on ``ChromaStore``).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import table  # noqa: E402

from langmem_edge.retrieval.shape import recall_query  # noqa: E402

DEFAULT_PATH = ROOT.parent / "shared" / "datasets" / "locomo" / "locomo_dev.json"
CATEGORIES = (1, 2, 4)
PROSE = "I was going through my notes while the build ran."


def paste(rng: random.Random) -> str:
    """A log, a code excerpt and a JSON dump, about 12,000-14,000 characters."""
    service = rng.choice(["upload", "billing", "search", "auth", "mailer"])
    log = "\n".join(
        f"2025-0{rng.randint(1, 9)}-{rng.randint(10, 28)} {rng.randint(0, 23):02d}:"
        f"{rng.randint(0, 59):02d}:03,{rng.randint(100, 999)} "
        f"{rng.choice(['ERROR', 'WARN', 'INFO'])} [{service}-worker-{rng.randint(0, 9)}] "
        f"{service}.pool - connection to redis://cache:{rng.randint(6000, 6999)} refused "
        f"(attempt {i}, backoff {rng.randint(1, 900)} ms)" for i in range(rng.randint(60, 75)))
    code = "\n".join([
        f"def handle_{service}(request):",
        "    payload = json.loads(request.body)",
        "    for item in payload['items']:",
        f"        {service}_queue.put(item, timeout={rng.randint(1, 30)})",
        "    return Response(status=202)",
        "",
    ] * rng.randint(6, 10))
    dump = json.dumps([{"id": i, "state": rng.choice(["failed", "retry", "ok"]),
                        "queue": service, "ms": rng.randint(1, 9999)}
                       for i in range(rng.randint(40, 60))], separators=(",", ":"))
    return f"Here is the log:\n{log}\n```python\n{code}```\nand the job dump:\n{dump}"


def load(path: Path, conversations: int) -> list[dict[str, Any]]:
    data = json.loads(path.read_text())
    return data[:conversations]


def turns_of(conv: dict[str, Any]) -> dict[str, str]:
    """``{dia_id: "[date] speaker: text"}`` of one conversation."""
    c = conv["conversation"]
    out: dict[str, str] = {}
    n = 1
    while f"session_{n}" in c:
        date = c.get(f"session_{n}_date_time", "")
        for t in c[f"session_{n}"]:
            text = f"[{date}] {t['speaker']}: {t['text']}"
            if t.get("blip_caption"):
                text += f" [shares {t['blip_caption']}]"
            out[t["dia_id"]] = text
        n += 1
    return out


def evidence_of(qa: dict[str, Any], valid: set[str]) -> frozenset[str]:
    ids: set[str] = set()
    for raw in qa.get("evidence") or []:
        for part in str(raw).replace(",", ";").split(";"):
            part = part.strip()
            if ":" not in part:
                continue
            d, _, t = part.partition(":")
            ident = f"{d}:{int(t)}" if t.isdigit() else part
            if ident in valid:
                ids.add(ident)
    return frozenset(ids)


def recall_at(ranked: Sequence[str], evidence: frozenset[str], k: int) -> float:
    return len(evidence & set(ranked[:k])) / len(evidence)


def run(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    from langgraph.store.memory import InMemoryStore

    from langmem_edge import AgentMemory
    from langmem_edge.embeddings import default_embeddings

    rng = random.Random(40)
    scores: dict[str, list[float]] = {}
    lengths: dict[str, list[int]] = {}
    started = time.perf_counter()
    for conv in load(Path(args.path), args.conversations):
        turns = turns_of(conv)
        memory = AgentMemory(InMemoryStore(index={"dims": 384, "embed": default_embeddings(),
                                                  "fields": ["text"]}))
        limit = memory.config.limits.max_text_chars
        profile = memory.profile(f"locomo-{conv.get('sample_id', 'x')}")
        ids = list(turns)
        written = profile.remember_many([{"text": turns[i]} for i in ids])
        by_id = {r.id: dia for r, dia in zip(written, ids, strict=True)}
        qas = [q for q in conv["qa"] if q.get("category") in CATEGORIES
               and evidence_of(q, set(turns))][:args.questions]
        for qa in qas:
            evidence = evidence_of(qa, set(turns))
            body = paste(rng)
            messages = {"end": f"{PROSE}\n{body}\n{qa['question']}",
                        "start": f"{qa['question']}\n{PROSE}\n{body}"}
            queries = {"question": qa["question"]}
            for place, message in messages.items():
                queries[f"cut ({place})"] = message[:limit]
                queries[f"recall_query ({place})"] = recall_query(message, limit)
                lengths.setdefault(place, []).append(len(message))
            for name, query in queries.items():
                found = profile.recall(query, limit=args.k)
                ranked = [by_id.get(c.memory.id, "") if c.memory is not None else ""
                          for c in found.candidates]
                scores.setdefault(name, []).append(recall_at(ranked, evidence, args.k))
    seconds = time.perf_counter() - started
    out = {name: {"recall": sum(v) / len(v), "n": len(v)} for name, v in scores.items()}
    rows = [(name, f"{r['recall']:.3f}", r["n"]) for name, r in out.items()]
    print(table(["query", f"recall@{args.k}", "questions"], rows))
    sizes = [n for v in lengths.values() for n in v]
    print(f"\nmessages {min(sizes):,}-{max(sizes):,} characters; {args.conversations} "
          f"conversation(s); {seconds:.0f} s")
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--path", default=str(DEFAULT_PATH))
    parser.add_argument("--conversations", type=int, default=2)
    parser.add_argument("--questions", type=int, default=60,
                        help="questions per conversation (categories 1, 2, 4)")
    parser.add_argument("--k", type=int, default=10)
    run(parser.parse_args(argv))


if __name__ == "__main__":
    main()
