"""Path (b)'s fusion knobs and what its messages embed, cross-validated in-process:
``recall_conversation``'s ranking rebuilt from the tier's own functions, without a store.

    python benchmarks/locomo_profile_cv.py ../shared/datasets/locomo/locomo_dev.json \
        [--embed bare,before:1,before:2,around:2]

Each conversation's turns become the items the episodic tier stores (``session_id``, ``seq``,
``text`` = turn text + ``" [shares <caption>]"``, ``name``, ``ts`` = the session date), as
``locomo_paths.conversation_messages`` ingests them. The keyword side is the tier's
(:func:`~langmem_edge.memory.episodic.recall.message_fields` +
:func:`~langmem_edge.memory.episodic.recall.message_keyword_ranking`, what the message index
computes too); the vector side is the exact cosine of the question to each message's best
embedded field (Chroma's HNSW is approximate, so the store's figure can differ by a few
thousandths), for each ``--embed`` variant (:data:`EMBEDS`), and the number of turns
before a message in its embedded context cross-validated together with fusion.

Fusion is :func:`~langmem_edge.memory.episodic.recall.fuse_messages`. Every knob is chosen by
leave-one-conversation-out cross-validation (``locomo_cv.cross_validate``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from datetime import UTC
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from langgraph.store.base import Item  # noqa: E402
from locomo import DEFAULT_PATH, Conversation, VectorCache, load  # noqa: E402
from locomo_cv import cross_validate, fmt, product_grid, recall_row, summarise  # noqa: E402
from locomo_paths import RESULTS, conversation_messages  # noqa: E402

from langmem_edge.memory.config import EpisodicConfig  # noqa: E402
from langmem_edge.memory.episodic.embedded import (  # noqa: E402
    embedded_fields,
    embedded_text,
)
from langmem_edge.memory.episodic.extraction import StoredMessage  # noqa: E402
from langmem_edge.memory.episodic.recall import (  # noqa: E402
    fuse_messages,
    message_fields,
    message_keyword_ranking,
)
from langmem_edge.retrieval.text import default_analyzer  # noqa: E402

DEPTH = EpisodicConfig().recall_depth
"""Results each channel hands to fusion (the tier's ``recall_depth``)."""

EMBEDS = ("bare", "before:1", "before:2", "around:2")
"""What the vector side embeds per message: ``bare`` (``text`` alone, the tier before
``memory/episodic/embedded.py``), ``before:N`` (the tier's
:func:`~langmem_edge.memory.episodic.embedded.embedded_fields` with ``N`` turns before;
the tier ships ``before:2``: one field, the message then the turns before), ``around:N``
(the same with ``N`` turns before and after: what waiting for the turns after would
add)."""


def embedded_texts(docs: Sequence[Item], embed: str) -> dict[str, list[str]]:
    """Each message's embedded texts by key, for one of :data:`EMBEDS`."""
    if embed == "bare":
        return {d.key: [d.value["text"]] for d in docs}
    side, turns = embed.split(":")
    n = int(turns)
    sessions: dict[str, list[StoredMessage]] = {}
    for d in docs:
        v = d.value
        sessions.setdefault(v["session_id"], []).append(StoredMessage(
            id=d.key, session_id=v["session_id"], role="user", content=v["text"],
            seq=v["seq"], ts=v.get("ts", "2000-01-01T00:00:00+00:00"), name=v["name"]))
    out: dict[str, list[str]] = {}
    for msgs in sessions.values():
        msgs.sort(key=lambda m: m.seq)
        fields = embedded_fields(msgs, [], context_turns=n)
        for i, m in enumerate(msgs):
            if side == "around":
                near = [x.content for x in (*msgs[max(0, i - n):i], *msgs[i + 1:i + 1 + n])]
                out[m.id] = [" ".join([embedded_text(m), *near])]
            else:
                out[m.id] = [fields[m.id]["embed_text"]]
    return out


class ProfileChannels:
    """One conversation's keyword rankings (per context weight) and vector rankings."""

    def __init__(self, conv: Conversation, vectors: VectorCache, embed: str = "bare"
                 ) -> None:
        self.conv = conv
        docs: list[Item] = []
        self.back: dict[str, str] = {}
        turns = iter(conv.turns)
        for s, messages in conversation_messages(conv).items():
            for seq, m in enumerate(messages):
                turn = next(turns)
                key = f"m{len(docs)}"
                ts = m.get("timestamp")
                value: dict[str, Any] = {"session_id": f"session_{s}", "seq": seq,
                                         "text": m["content"], "name": m["name"]}
                if ts:
                    from datetime import datetime
                    value["ts"] = datetime.fromisoformat(ts).replace(tzinfo=UTC).isoformat()
                docs.append(Item(value=value, key=key, namespace=("m",),
                                 created_at="2024-01-01T00:00:00",
                                 updated_at="2024-01-01T00:00:00"))
                self.back[key] = turn.dia_id
        self.docs = docs
        self.fields = message_fields(docs, context_turns=EpisodicConfig().recall_context_turns)
        per_key = embedded_texts(docs, embed)
        keys = [d.key for d in docs]
        flat = [t for k in keys for t in per_key[k]]
        owner = np.array([i for i, k in enumerate(keys) for _ in per_key[k]])
        mat = vectors.get(flat)
        mat = mat / np.maximum(np.linalg.norm(mat, axis=1, keepdims=True), 1e-12)
        qs = vectors.get([q.text for q in conv.questions])
        qs = qs / np.maximum(np.linalg.norm(qs, axis=1, keepdims=True), 1e-12)
        sims = np.full((len(qs), len(keys)), -np.inf)
        np.maximum.at(sims.T, owner, (qs @ mat.T).T)  # a message's best field, as the store
        self.vector = [[(keys[j], float(row[j])) for j in np.argsort(-row)[:DEPTH]]
                       for row in sims]
        self._keyword: dict[float, list[list[tuple[str, float]]]] = {}

    def keyword(self, cw: float) -> list[list[tuple[str, float]]]:
        """Each question's keyword ranking with context weight ``cw``."""
        if cw not in self._keyword:
            cfg = EpisodicConfig()
            self._keyword[cw] = [message_keyword_ranking(
                q.text, self.fields, analyzer=default_analyzer(), k1=cfg.bm25_k1,
                b=cfg.bm25_b, limit=DEPTH,
                field_weights={"context": cw, "name": cfg.recall_name_weight,
                               "date": cfg.recall_date_weight})
                for q in self.conv.questions]
        return self._keyword[cw]


def main(argv: Sequence[str] | None = None) -> None:
    """Cross-validate path (b)'s fusion (``rrf_k``, vector weight, context weight) for each
    embedded-text variant."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--embed", default=",".join(EMBEDS),
                        help=f"comma-separated variants of {EMBEDS} (default: all)")
    args = parser.parse_args(argv)
    convs = load(args.path)
    vectors = VectorCache()
    ids = [c.sample_id for c in convs]
    keyword: dict[str, dict[float, list[list[tuple[str, float]]]]] = {}
    by_embed: dict[str, dict[str, ProfileChannels]] = {}
    default = EpisodicConfig()
    fusion = product_grid(k=[2.0, 5.0, 10.0, 20.0, 60.0], vw=[0.1, 0.2, 0.3, 0.5, 0.7, 1.0],
                          cw=[0.3, 0.5, 0.7])

    def evaluate(cfg: dict[str, Any], cid: str) -> list[tuple[int, float, float]]:
        ch = by_embed[cfg["embed"]][cid]
        rows = []
        for qi, q in enumerate(ch.conv.questions):
            fused = fuse_messages(ch.keyword(cfg["cw"])[qi],
                                  ch.vector[qi] if cfg["vw"] else [],
                                  vector_weight=cfg["vw"], rrf_k=cfg["k"], limit=RESULTS)
            rows.append(recall_row(q.category, [ch.back[k] for k, _ in fused],
                                   q.evidence))
        return rows

    def report(label: str, grid: list[dict[str, Any]]) -> None:
        res = cross_validate(grid, evaluate, ids)
        cats = ", ".join(f"{c} {fmt(res.held_out[c])}" for c in sorted(res.held_out)
                         if c != "1-5")
        print(f"{label}: CV {fmt(res.held_out['1-5'])}, in-sample "
              f"{fmt(res.in_sample['1-5'])}; CV by category: {cats}; chosen "
              f"{sorted({tuple(sorted(c.items())) for c in res.chosen.values()})}",
              flush=True)

    embeds = args.embed.split(",")
    for embed in embeds:
        if embed not in EMBEDS:
            raise SystemExit(f"--embed: {embed!r} is not one of {EMBEDS}")
        channels = by_embed[embed] = {c.sample_id: ProfileChannels(c, vectors, embed)
                                      for c in convs}
        vectors.save()
        for cid, ch in channels.items():  # the keyword side does not depend on the embedding
            ch._keyword = keyword.setdefault(cid, ch._keyword)
        rows = [recall_row(q.category, [ch.back[k] for k, _ in ch.vector[qi][:RESULTS]],
                           q.evidence)
                for ch in channels.values() for qi, q in enumerate(ch.conv.questions)]
        print(f"embed={embed}, vector only: {fmt(summarise(rows)['1-5'])} (no knob)")
        report(f"embed={embed}, the defaults (rrf_k 5, vector 0.5, context 0.5)",
               [{"embed": embed, "k": default.recall_rrf_k, "vw": default.recall_vector_weight,
                 "cw": default.recall_context_weight}])
        report(f"embed={embed}, tuned: rrf_k x vector weight x context weight",
               [g | {"embed": embed} for g in fusion])
        if embed == "bare":
            report("keyword only (context 0.5)", [{"embed": embed, "k": 5.0, "vw": 0.0,
                                                   "cw": 0.5}])
    before = [e for e in embeds if e.startswith("before:")]
    if len(before) > 1:
        report(f"tuned: embedded turns before ({', '.join(before)}) x fusion",
               [g | {"embed": e} for e in before for g in fusion])


if __name__ == "__main__":
    main()
