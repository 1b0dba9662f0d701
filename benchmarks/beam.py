"""BEAM evidence-message retrieval: ``recall_conversation`` against BM25 and plain dense search.

BEAM (github:mohammadtavakoli78/BEAM) holds long chats between a user and an assistant
(coding, planning, general; assistant answers of 2,000-10,000 characters, with code) and
probing questions whose ``source_chat_ids`` name the evidence messages' ``id``. Only the 500K
and 1M tiers are used here (the project is measured on chats it does not have); the data is
read at run time from a checkout or a bare git mirror and never copied into the repository.

Run (from the project root)::

    python benchmarks/beam.py --mirror /work/.mirror/mohammadtavakoli78+BEAM/repo
        [--tier 500K] [--chats 10] [--json OUT]
    python benchmarks/beam.py --path <BEAM checkout> ...

What is measured, for each probing question with evidence (abstention questions have none):
recall@5 and recall@10 (the share of the question's evidence messages in the top k,
averaged), per question type and overall, for

- ``bm25``: Okapi BM25 (the library's analyser and :class:`~langmem_edge.retrieval.bm25.
  rank_fields`, k1 1.2, b 0.75) over each raw message's text;
- ``dense``: cosine of all-MiniLM-L6-v2 (``default_embeddings()``, int8 ONNX) between the
  question and each raw message's text (the model reads its first 256 word pieces);
- ``recall_conversation``: ``profile.episodic.search(q, scope="all", limit=10)`` with
  library defaults, on an ``AgentMemory`` over an ``InMemoryStore`` indexed with
  ``default_embeddings()`` (the recall path is the same on ``ChromaStore``), after
  ``Profile.ingest(batch, session_id=..., extract=False)`` of each BEAM batch as a session
  (messages carry the batch's ``time_anchor`` as their timestamp; extraction is off: it
  writes memories, not messages, and recall of messages does not read them);
- ``--variants``: the same path with ``EpisodicConfig`` fields changed, one row each
  (``field=value[,field=value]``, values in JSON), e.g. ``recall_mode="semantic"`` (the
  vector channel alone) or ``recall_second_round_weight=0``. The pseudo-field
  ``ALONE_CHARS`` sets the length from which a message stands alone (issue 40:
  :data:`~langmem_edge.memory.episodic.recall.ALONE_CHARS` while the row recalls and while
  its own store is written, ingested once); ``ALONE_CHARS=1e9`` is the state before issue 40::

      python benchmarks/beam.py --mirror <mirror> --chats 3 --variants ALONE_CHARS=1e9

Embeddings are cached by text hash under ``/tmp/langmem_edge_bench`` (:class:`locomo.
VectorCache`), the store's included, so a rerun embeds nothing new.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

from _common import table  # noqa: E402
from langchain_core.embeddings import Embeddings  # noqa: E402
from locomo import VectorCache  # noqa: E402
from locomo_paths import DiskCachedEmbeddings  # noqa: E402

from langmem_edge.memory.episodic import recall  # noqa: E402
from langmem_edge.retrieval.bm25 import rank_fields  # noqa: E402
from langmem_edge.retrieval.text import default_analyzer  # noqa: E402

KS = (5, 10)
ALONE = "ALONE_CHARS"
"""A variant field that sets the length from which a message stands alone, in the tier's
recall and embedding (``1e9``: no message does, the state before issue 40)."""
TIERS = ("500K", "1M")
"""The tiers this benchmark may read (the others are kept unseen)."""


class Source:
    """BEAM files from a checkout (``path``) or a bare git mirror (``mirror``)."""

    def __init__(self, *, path: str | None, mirror: str | None) -> None:
        if (path is None) == (mirror is None):
            raise SystemExit("give exactly one of --path and --mirror")
        self.path, self.mirror = path, mirror

    def read(self, rel: str) -> Any:
        if self.path is not None:
            return json.loads((Path(self.path) / rel).read_text())
        out = subprocess.run(["git", f"--git-dir={self.mirror}", "show", f"HEAD:{rel}"],
                             capture_output=True, check=True)
        return json.loads(out.stdout)

    def chats(self, tier: str) -> list[str]:
        if self.path is not None:
            names = [p.name for p in (Path(self.path) / "chats" / tier).iterdir()]
        else:
            out = subprocess.run(["git", f"--git-dir={self.mirror}", "ls-tree",
                                  "--name-only", f"HEAD:chats/{tier}/"],
                                 capture_output=True, check=True, text=True)
            names = [n for n in out.stdout.split() if n.isdigit() and self._stored(tier, n)]
        return sorted((n for n in names if n.isdigit()), key=int)

    def _stored(self, tier: str, name: str) -> bool:
        """Whether the mirror holds the chat's file (a snapshot may list large files it
        does not hold: such chats are left out, and the run names the chats it read)."""
        rel = f"chats/{tier}/{name}/chat.json"
        return subprocess.run(["git", f"--git-dir={self.mirror}", "cat-file", "-e",
                               f"HEAD:{rel}"], capture_output=True).returncode == 0


def sessions_of(chat: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """``[(session id, [{"id", "role", "content", "timestamp"}])]``: one session a batch."""
    out = []
    for b, batch in enumerate(chat):
        anchor = batch.get("time_anchor")
        ts = datetime.strptime(anchor, "%B-%d-%Y").isoformat() if anchor else None
        msgs = [{"id": m["id"], "role": m["role"], "content": m["content"], "timestamp": ts}
                for turn in batch["turns"] for m in turn if str(m.get("content", "")).strip()]
        out.append((f"batch-{batch.get('batch_number', b + 1)}", msgs))
    return out


def evidence_of(question: dict[str, Any]) -> frozenset[int]:
    """The evidence message ids of a question: ``source_chat_ids`` is a list, a dict of lists
    (``first_statement``, ``updated_info``, ...) or lists of lists, or missing."""
    def ids(raw: Any) -> list[int]:
        if isinstance(raw, dict):
            return [i for v in raw.values() for i in ids(v)]
        if isinstance(raw, list):
            return [i for v in raw for i in ids(v)]
        return [] if raw is None else [int(raw)]
    return frozenset(ids(question.get("source_chat_ids")))


def questions_of(probing: dict[str, list[dict[str, Any]]]) -> list[tuple[str, str, frozenset]]:
    return [(kind.replace("_", " "), q["question"], ev) for kind, qs in probing.items()
            for q in qs if (ev := evidence_of(q))]


def ingested(sessions: list[tuple[str, list[dict[str, Any]]]], embed: Embeddings,
             chat_name: str, alone: float) -> Any:
    """An ``InMemoryStore`` holding the chat, each batch ingested as a session through
    ``Profile.ingest``, with :data:`~langmem_edge.memory.episodic.recall.ALONE_CHARS`
    set to ``alone`` while it writes (``inf``: every message embedded with its day, speaker
    and the turns before, as before issue 40)."""
    from langgraph.store.memory import InMemoryStore

    from langmem_edge import AgentMemory

    store = InMemoryStore(index={"dims": 384, "embed": embed, "fields": ["text"]})
    profile = AgentMemory(store).profile(f"beam-{chat_name}")
    kept, recall.ALONE_CHARS = recall.ALONE_CHARS, alone
    try:
        for sid, ms in sessions:
            profile.ingest([{k: v for k, v in m.items() if k != "id"} for m in ms],
                           session_id=sid, extract=False)
    finally:
        recall.ALONE_CHARS = kept
    return store


def recall_at(ranked: Sequence[int], evidence: frozenset[int], k: int) -> float:
    return len(evidence & set(ranked[:k])) / len(evidence)


def parse_variant(spec: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in spec.split(","):
        name, _, value = part.partition("=")
        out[name.strip()] = json.loads(value)
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    from langgraph.store.memory import InMemoryStore

    from langmem_edge import AgentMemory

    source = Source(path=args.path, mirror=args.mirror)
    cache = VectorCache()
    embed = DiskCachedEmbeddings(cache)
    analyzer = default_analyzer()
    variants = {"recall_conversation": {}} | {v: parse_variant(v) for v in args.variants}
    # scores[method][type][k] -> list of recall@k
    scores: dict[str, dict[str, dict[int, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))
    n_messages = n_chars = 0
    seconds: dict[str, float] = defaultdict(float)
    chats = source.chats(args.tier)[:args.chats]
    for chat_name in chats:
        base = f"chats/{args.tier}/{chat_name}"
        sessions = sessions_of(source.read(f"{base}/chat.json"))
        questions = questions_of(source.read(f"{base}/probing_questions/"
                                             "probing_questions.json"))
        messages = [m for _, ms in sessions for m in ms]
        ids = [m["id"] for m in messages]
        n_messages += len(messages)
        n_chars += sum(len(m["content"]) for m in messages)
        started = time.perf_counter()
        bm25 = {str(i): {"text": analyzer.terms(m["content"])} for i, m in enumerate(messages)}
        matrix = cache.get([m["content"] for m in messages])
        qvec = cache.get([q for _, q, _ in questions])
        seconds["baselines"] += time.perf_counter() - started
        by_key: dict[tuple[str, str, str], list[int]] = defaultdict(list)
        for sid, ms in sessions:
            for m in ms:
                by_key[(sid, m["role"], m["content"][:1000])].append(m["id"])
        stores: dict[Any, InMemoryStore] = {}
        profiles = {}
        for name, cfg in variants.items():
            cfg = dict(cfg)
            alone = cfg.pop(ALONE, recall.ALONE_CHARS)
            if alone not in stores:
                started = time.perf_counter()
                stores[alone] = ingested(sessions, embed, chat_name, alone)
                cache.save()
                seconds["ingest"] += time.perf_counter() - started
            profiles[name] = alone, AgentMemory(stores[alone], config={
                "episodic": cfg}).profile(f"beam-{chat_name}")
        k_max = max(KS)
        for qi, (kind, question, evidence) in enumerate(questions):
            ranked_bm25 = [ids[int(h.id)] for h in rank_fields(
                bm25, analyzer.query_terms(question), k1=1.2, b=0.75, limit=k_max)]
            ranked_dense = [ids[i] for i in np.argsort(-(matrix @ qvec[qi]))[:k_max]]
            ranked = {"bm25": ranked_bm25, "dense": ranked_dense}
            for name, (alone, prof) in profiles.items():
                started = time.perf_counter()
                kept, recall.ALONE_CHARS = recall.ALONE_CHARS, alone
                try:
                    found = prof.episodic.search(question, scope="all", limit=k_max)
                finally:
                    recall.ALONE_CHARS = kept
                seconds[name] += time.perf_counter() - started
                ranked[name] = [i for m in found for i in by_key.get(
                    (m.session_id, m.role, m.content[:1000]), [])][:k_max]
            for name, r in ranked.items():
                for k in KS:
                    value = recall_at(r, evidence, k)
                    scores[name][kind][k].append(value)
                    scores[name]["all"][k].append(value)
        print(f"chat {chat_name}: {len(messages)} messages, {len(questions)} questions",
              file=sys.stderr, flush=True)
    cache.save()
    methods = list(scores)
    kinds = sorted(k for k in scores["dense"] if k != "all") + ["all"]
    rows = []
    for kind in kinds:
        n = len(scores["dense"][kind][KS[0]])
        rows.append([f"**{kind}** ({n})" if kind == "all" else f"{kind} ({n})"] + [
            " / ".join(f"{np.mean(scores[m][kind][k]):.3f}" for k in KS) for m in methods])
    print(table(["question type (n)", *(f"{m} r@5 / r@10" for m in methods)], rows))
    print(f"\n{args.tier}: {len(chats)} chats ({', '.join(chats)}), {n_messages:,} messages, "
          f"{n_chars:,} characters; seconds: "
          + ", ".join(f"{k} {v:.0f}" for k, v in seconds.items()))
    out = {m: {kind: {f"recall@{k}": float(np.mean(scores[m][kind][k])) for k in KS}
               for kind in kinds} for m in methods}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--path", help="a BEAM checkout")
    parser.add_argument("--mirror", help="a bare git mirror of BEAM")
    parser.add_argument("--tier", choices=TIERS, default="500K")
    parser.add_argument("--chats", type=int, default=10, help="the first N chats of the tier")
    parser.add_argument("--variants", nargs="*", default=[],
                        help="EpisodicConfig overrides, one row each: field=value[,field=value]")
    parser.add_argument("--json", help="write the figures here")
    run(parser.parse_args(argv))


if __name__ == "__main__":
    main()
