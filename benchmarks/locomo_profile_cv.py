"""Path (b)'s fusion knobs, cross-validated in-process: ``recall_conversation``'s ranking
rebuilt from the tier's own functions, without a store.

    python benchmarks/locomo_profile_cv.py ../shared/datasets/locomo/locomo_dev.json

Each conversation's turns become the items the episodic tier stores (``session_id``, ``seq``,
``text`` = turn text + ``" [shares <caption>]"``, ``name``, ``ts`` = the session date), as
``locomo_paths.conversation_messages`` ingests them. The keyword side is the tier's
(:func:`~langmem_edge.memory.episodic.recall.message_fields` +
:func:`~langmem_edge.memory.episodic.recall.message_keyword_ranking`, what the message index
computes too); the vector side is the exact cosine of the question to each message's ``text``
embedding (the store embeds ``text`` only; Chroma's HNSW is approximate, so the store's
figure can differ by a few thousandths); fusion is
:func:`~langmem_edge.memory.episodic.recall.fuse_messages`. Every knob is chosen by
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
from locomo_cv import cross_validate, fmt, product_grid, recall_row  # noqa: E402
from locomo_paths import RESULTS, conversation_messages  # noqa: E402

from langmem_edge.memory.config import EpisodicConfig  # noqa: E402
from langmem_edge.memory.episodic.recall import (  # noqa: E402
    fuse_messages,
    message_fields,
    message_keyword_ranking,
)
from langmem_edge.retrieval.text import default_analyzer  # noqa: E402

DEPTH = EpisodicConfig().recall_depth
"""Results each channel hands to fusion (the tier's ``recall_depth``)."""


class ProfileChannels:
    """One conversation's keyword rankings (per context weight) and vector rankings."""

    def __init__(self, conv: Conversation, vectors: VectorCache) -> None:
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
        texts = [d.value["text"] for d in docs]
        mat = vectors.get(texts)
        mat = mat / np.maximum(np.linalg.norm(mat, axis=1, keepdims=True), 1e-12)
        qs = vectors.get([q.text for q in conv.questions])
        qs = qs / np.maximum(np.linalg.norm(qs, axis=1, keepdims=True), 1e-12)
        sims = qs @ mat.T
        keys = [d.key for d in docs]
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
    """Cross-validate path (b)'s fusion (``rrf_k``, vector weight, context weight)."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT_PATH)
    args = parser.parse_args(argv)
    convs = load(args.path)
    vectors = VectorCache()
    channels = {c.sample_id: ProfileChannels(c, vectors) for c in convs}
    vectors.save()

    def evaluate(cfg: dict[str, Any], cid: str) -> list[tuple[int, float, float]]:
        ch = channels[cid]
        rows = []
        for qi, q in enumerate(ch.conv.questions):
            fused = fuse_messages(ch.keyword(cfg["cw"])[qi], ch.vector[qi] if cfg["vw"] else [],
                                  vector_weight=cfg["vw"], rrf_k=cfg["k"], limit=RESULTS)
            rows.append(recall_row(q.category, [ch.back[k] for k, _ in fused], q.evidence))
        return rows

    default = EpisodicConfig()
    grids = {
        "the defaults (rrf_k 5, vector 0.5, context 0.5)": [
            {"k": default.recall_rrf_k, "vw": default.recall_vector_weight,
             "cw": default.recall_context_weight}],
        "keyword only (context 0.5)": [{"k": 5.0, "vw": 0.0, "cw": 0.5}],
        "tuned: rrf_k x vector weight x context weight": product_grid(
            k=[2.0, 5.0, 10.0, 20.0, 60.0], vw=[0.1, 0.2, 0.3, 0.5, 0.7, 1.0],
            cw=[0.3, 0.5, 0.7]),
    }
    ids = [c.sample_id for c in convs]
    for name, grid in grids.items():
        res = cross_validate(grid, evaluate, ids)
        print(f"{name}: CV {fmt(res.held_out['1-5'])}, in-sample {fmt(res.in_sample['1-5'])}"
              f", chosen {sorted({tuple(sorted(c.items())) for c in res.chosen.values()})}")


if __name__ == "__main__":
    main()
