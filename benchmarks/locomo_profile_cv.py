"""Path (b)'s fusion knobs and what its messages embed, cross-validated in-process:
``recall_conversation``'s ranking rebuilt from the tier's own functions, without a store.

    python benchmarks/locomo_profile_cv.py ../shared/datasets/locomo/locomo_dev.json \
        [--embed bare,before:1,before:2,around:2] [--signals temporal,round2]

Each conversation's turns become the items the episodic tier stores (``session_id``, ``seq``,
``text`` = turn text + ``" [shares <caption>]"``, ``name``, ``ts`` = the session date), as
``locomo_paths.conversation_messages`` ingests them. The keyword side is the tier's
(:func:`~langmem_edge.memory.episodic.recall.message_fields` +
:func:`~langmem_edge.memory.episodic.recall.message_keyword_ranking`, what the in-process route
computes too); the vector side is the exact cosine of the question to each message's best
embedded field (Chroma's HNSW is approximate, so the store's figure can differ by a few
thousandths), for each ``--embed`` variant (:data:`EMBEDS`), and the number of turns
before a message in its embedded context cross-validated together with fusion.

The ranking is the tier's :func:`~langmem_edge.memory.episodic.recall.hybrid_ranking` (fusion
and the second keyword round). Every knob is chosen by
leave-one-conversation-out cross-validation (``locomo_cv.cross_validate``).

``--signals`` adds rows on top of the defaults, each weight tuned with 0 (off) in its grid:
``temporal`` (the tier's :func:`~langmem_edge.memory.episodic.recall.temporal_ranking`),
``fields`` (the BM25F weights of the speaker's name and the day, the entity-aware fields the
tier keeps), ``round2`` (the tier's second keyword round, weight and seeds tuned: the question
plus the text of the first round's best ``ROUND2_SEEDS`` messages, BM25 over the same fields,
fused with the first round's lists), ``round2-vector`` (this script only: the same expanded
query's vector ranking too, which embeds one text more per question).
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
    hybrid_ranking,
    message_day,
    message_fields,
    message_keyword_ranking,
)
from langmem_edge.retrieval.bm25 import Corpus, corpus, rank_documents  # noqa: E402
from langmem_edge.retrieval.fusion import rrf_fuse  # noqa: E402
from langmem_edge.retrieval.text import default_analyzer  # noqa: E402

DEPTH = EpisodicConfig().recall_depth
"""Results each channel hands to fusion (the tier's ``recall_depth``)."""

EMBEDS = ("bare", "before:1", "before:2", "around:2", "both:2")
"""What the vector side embeds per message: ``bare`` (``text`` alone, the tier before
``memory/episodic/embedded.py``), ``before:N`` (the tier's
:func:`~langmem_edge.memory.episodic.embedded.embedded_fields` with ``N`` turns before;
the tier ships ``before:2``: one field, the message then the turns before), ``around:N``
(the same with ``N`` turns before and after: what waiting for the turns after would
add), ``both:N`` (``before:N`` and the bare text as two vectors, the better cosine kept)."""


KEYWORDS = {
    "fields": "BM25F in process over each message's text, its neighbours' text (both sides), "
              "speaker and day (the tier's message_fields)",
    "embedded": "BM25 over the one embedded text (day, speaker, text, two turns before): "
                "what the store's keyword channel indexes for a message row",
    "before": "the fields of 'fields', the context from the turns before alone (what a "
              "message row can carry when it is written)",
}
"""The keyword sides ``--keyword`` may choose."""

SIGNALS = ("temporal", "round2", "round2-vector", "fields")
"""Signals ``--signals`` may add on top of the defaults."""

SIGNAL_WEIGHTS = (0.0, 0.25, 0.5, 1.0)
"""Each added signal's weight grid (0: off)."""

FIELD_WEIGHTS = (0.0, 0.5, 1.0, 2.0)
"""``fields``: the BM25F weights tried for the speaker's ``name`` and the message's day."""

ROUND2_SEEDS = (1, 2)
"""How many of the first round's best messages the second round's query appends (tuned)."""


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
            elif side == "both" and fields[m.id]["embed_text"] != m.content:
                out[m.id] = [fields[m.id]["embed_text"], m.content]
            else:
                out[m.id] = [fields[m.id]["embed_text"]]
    return out


class ProfileChannels:
    """One conversation's keyword rankings (per context weight) and vector rankings."""

    def __init__(self, conv: Conversation, vectors: VectorCache, embed: str = "bare",
                 keyword: str = "fields", next_weight: float = 0.0) -> None:
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
        if keyword == "embedded":  # one field: what the store's keyword channel indexes
            self.fields = {k: {"text": t[0]}
                           for k, t in embedded_texts(docs, "before:2").items()}
        elif keyword == "before":  # the fields, the context from the turns before alone
            before = message_fields(docs, context_turns=0)
            texts = {k: f["text"] for k, f in before.items()}
            order = sorted(docs, key=lambda d: (d.value["session_id"], d.value["seq"]))
            turns = EpisodicConfig().recall_context_turns
            for i, d in enumerate(order):
                near = [texts[o.key] for o in order[max(0, i - turns):i]
                        if o.value["session_id"] == d.value["session_id"]]
                if near:
                    before[d.key]["context"] = " ".join(near)
            self.fields = before
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
        # per field weights: each message's weighted tfs, N and the average length
        self._indexes: dict[tuple[float, float, float], Corpus] = {}
        self._expanded: dict[tuple[Any, ...], list[tuple[str, float]]] = {}
        self.vectors = vectors
        self.keys = keys
        self.matrix, self.owner = mat, owner
        self.days = {d.key: message_day(d.value.get("ts")) for d in docs}
        self.next_weight = next_weight
        self._wide = 2 * DEPTH if next_weight else DEPTH
        self._position = {d.key: (d.value["session_id"], int(d.value["seq"])) for d in docs}
        self._at = {pos: key for key, pos in self._position.items()}
        self.texts = {d.key: str(d.value["text"]) for d in docs}

    def _smooth(self, ranked: list[tuple[str, float]]) -> list[tuple[str, float]]:
        """``--next-weight``: each candidate's score plus ``next_weight`` times the scores of
        the next two turns of its session among the candidates (a stand-in, at query time,
        for the context of the turns after, which a row written before them cannot carry);
        the best :data:`DEPTH`."""
        if not self.next_weight:
            return ranked
        score = dict(ranked)
        out = []
        for key, s in ranked:
            sid, seq = self._position[key]
            after = sum(score.get(self._at.get((sid, seq + j), ""), 0.0) for j in (1, 2))
            out.append((key, s + self.next_weight * after))
        out.sort(key=lambda p: -p[1])
        return out[:DEPTH]

    def keyword_for(self, query: str, cw: float, nw: float | None = None,
                    dw: float | None = None) -> list[tuple[str, float]]:
        """The tier's keyword ranking of any ``query`` (context weight ``cw``, speaker and
        day weights ``nw`` / ``dw``, None: the config's), the messages' term counts kept per
        weights: what ``message_keyword_ranking`` computes."""
        cfg = EpisodicConfig()
        weights = (cw, cfg.recall_name_weight if nw is None else nw,
                   cfg.recall_date_weight if dw is None else dw)
        key = (query, *weights)
        if key not in self._expanded:
            if weights not in self._indexes:
                field_weights = dict(zip(("context", "name", "date"), weights, strict=True))
                analyzer = default_analyzer()
                self._indexes[weights] = corpus(
                    {k: {n: analyzer.terms(t) for n, t in parts.items()}
                     for k, parts in self.fields.items()}, field_weights=field_weights)
            tfs, n, avglen = self._indexes[weights]
            hits = rank_documents(tfs, default_analyzer().query_terms(query), n=n,
                                  avglen=avglen, k1=cfg.bm25_k1, b=cfg.bm25_b,
                                  limit=self._wide)
            self._expanded[key] = self._smooth([(h.id, h.score) for h in hits])
        return self._expanded[key]

    def vector_for(self, query: str) -> list[tuple[str, float]]:
        """The vector ranking of any ``query`` (a message's best embedded field)."""
        q = self.vectors.get([query])[0]
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        sims = np.full(len(self.keys), -np.inf)
        np.maximum.at(sims, self.owner, self.matrix @ q)
        return [(self.keys[j], float(sims[j])) for j in np.argsort(-sims)[:DEPTH]]

    def keyword(self, cw: float) -> list[list[tuple[str, float]]]:
        """Each question's keyword ranking with context weight ``cw``."""
        if cw not in self._keyword:
            cfg = EpisodicConfig()
            self._keyword[cw] = [self._smooth(message_keyword_ranking(
                q.text, self.fields, analyzer=default_analyzer(), k1=cfg.bm25_k1,
                b=cfg.bm25_b, limit=self._wide,
                field_weights={"context": cw, "name": cfg.recall_name_weight,
                               "date": cfg.recall_date_weight}))
                for q in self.conv.questions]
        return self._keyword[cw]


def second_round(ch: ProfileChannels, qi: int, cfg: dict[str, Any],
                 first: list[tuple[str, float]], keyword_ranked: list[tuple[str, float]]
                 ) -> list[tuple[str, float]]:
    """Round two: the question plus the text of the first round's best ``cfg["seeds"]``
    messages, ranked by keyword (and by vector when ``cfg["round2_vector"]``), fused by RRF
    with the first round's lists (weight ``cfg["pw"]`` each)."""
    q = ch.conv.questions[qi].text
    expanded = " ".join([q, *(ch.texts[k] for k, _ in first[:cfg.get("seeds", 1)])])
    lists = {"keyword": keyword_ranked, "vector": ch.vector[qi] if cfg["vw"] else [],
             "round2": ch.keyword_for(expanded, cfg["cw"])}
    weights = {"keyword": 1.0, "vector": cfg["vw"], "round2": cfg["pw"]}
    if cfg.get("round2_vector"):
        lists["round2_vector"] = ch.vector_for(expanded)
        weights["round2_vector"] = cfg["pw"] * cfg["vw"]
    hits = rrf_fuse(lists, weights=weights, rrf_k=cfg["k"], limit=RESULTS)
    return [(h.id, h.score) for h in hits]


def main(argv: Sequence[str] | None = None) -> None:
    """Cross-validate path (b)'s fusion (``rrf_k``, vector weight, context weight) for each
    embedded-text variant."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--embed", default=",".join(EMBEDS),
                        help=f"comma-separated variants of {EMBEDS} (default: all)")
    parser.add_argument("--signals", default="",
                        help=f"comma-separated signals of {SIGNALS} to add to the defaults")
    parser.add_argument("--keyword", default="fields", choices=KEYWORDS,
                        help="the keyword side: " + "; ".join(f"{k}: {v}" for k, v in
                                                              KEYWORDS.items()))
    parser.add_argument("--next-weight", type=float, default=0.0,
                        help="add this times the keyword scores of the next two turns "
                             "(ranked among twice the depth) to each message's")
    parser.add_argument("--no-grid", action="store_true",
                        help="skip the 90-point fusion grid (the defaults and --signals only)")
    parser.add_argument("--torch", action="store_true",
                        help="the torch model's vectors (locomo_signals.py's minilm encoder), "
                             "on which the issue-40 bar 0.742 / 0.831 was set")
    args = parser.parse_args(argv)
    convs = load(args.path)
    if args.torch:  # locomo_signals' minilm encoder: its own cache file, as that script's
        from locomo_signals import SignalVectors, make_encoder

        vectors: VectorCache = SignalVectors(make_encoder("minilm"), set())
    else:
        vectors = VectorCache()
    ids = [c.sample_id for c in convs]
    keyword: dict[str, dict[float, list[list[tuple[str, float]]]]] = {}
    by_embed: dict[str, dict[str, ProfileChannels]] = {}
    default = EpisodicConfig()
    fusion = product_grid(k=[2.0, 5.0, 10.0, 20.0, 60.0], vw=[0.1, 0.2, 0.3, 0.5, 0.7, 1.0],
                          cw=[0.3, 0.5, 0.7])

    def evaluate(cfg: dict[str, Any], cid: str) -> list[tuple[int, float, float]]:
        ch = by_embed[cfg["embed"]][cid]
        episodic = EpisodicConfig(
            recall_rrf_k=cfg["k"], recall_vector_weight=cfg["vw"],
            recall_context_weight=cfg["cw"], recall_temporal_weight=cfg.get("tw", 0.0),
            recall_second_round_weight=0.0 if cfg.get("round2_vector") else cfg.get("pw", 0.0),
            recall_second_round_seeds=cfg.get("seeds", 1))
        rows = []
        for qi, q in enumerate(ch.conv.questions):
            nw, dw = cfg.get("nw"), cfg.get("dw")
            keyword_ranked = (ch.keyword(cfg["cw"])[qi] if nw is None and dw is None
                              else ch.keyword_for(q.text, cfg["cw"], nw, dw))
            fused = hybrid_ranking(  # what the tier ranks by
                q.text, keyword=keyword_ranked, vector=ch.vector[qi] if cfg["vw"] else [],
                days=ch.days, text=ch.texts.__getitem__,
                rank=lambda text, cw=cfg["cw"], nw=nw, dw=dw: ch.keyword_for(text, cw, nw, dw),
                config=episodic, limit=RESULTS)
            if cfg.get("round2_vector") and cfg.get("pw") and fused:
                fused = second_round(ch, qi, cfg, fused, keyword_ranked)
            rows.append(recall_row(q.category, [ch.back[k] for k, _ in fused[:RESULTS]],
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
        channels = by_embed[embed] = {c.sample_id: ProfileChannels(c, vectors, embed, args.keyword,
                                                                args.next_weight)
                                      for c in convs}
        vectors.save()
        for cid, ch in channels.items():  # the keyword side does not depend on the embedding
            ch._keyword = keyword.setdefault(cid, ch._keyword)
        rows = [recall_row(q.category, [ch.back[k] for k, _ in ch.vector[qi][:RESULTS]],
                           q.evidence)
                for ch in channels.values() for qi, q in enumerate(ch.conv.questions)]
        print(f"embed={embed}, vector only: {fmt(summarise(rows)['1-5'])} (no knob)")
        base = {"embed": embed, "k": default.recall_rrf_k,
                "vw": default.recall_vector_weight, "cw": default.recall_context_weight,
                "pw": default.recall_second_round_weight,
                "seeds": default.recall_second_round_seeds}
        report(f"embed={embed}, the defaults (rrf_k 5, vector 0.5, context 0.5, second round "
               "0.25 of 2 seeds)", [base])
        report(f"embed={embed}, the defaults, first round alone", [base | {"pw": 0.0}])
        if not args.no_grid:
            report(f"embed={embed}, tuned: rrf_k x vector weight x context weight",
                   [base | g for g in fusion])
        signals = [x for x in args.signals.split(",") if x]
        for signal in signals:
            if signal not in SIGNALS:
                raise SystemExit(f"--signals: {signal!r} is not one of {SIGNALS}")
            if signal == "temporal":
                grid = [base | {"tw": w} for w in SIGNAL_WEIGHTS]
            elif signal == "fields":
                grid = [base | {"nw": nw, "dw": dw} for nw in FIELD_WEIGHTS
                        for dw in FIELD_WEIGHTS]
            else:
                grid = [base | {"pw": w, "seeds": n, "round2_vector": signal != "round2"}
                        for w in SIGNAL_WEIGHTS for n in ROUND2_SEEDS]
            report(f"embed={embed}, the defaults + {signal} (weight tuned, 0 = off)", grid)
        if embed == "bare":
            report("keyword only (context 0.5)", [{"embed": embed, "k": 5.0, "vw": 0.0,
                                                   "cw": 0.5}])
    before = [e for e in embeds if e.startswith("before:")]
    if len(before) > 1:
        report(f"tuned: embedded turns before ({', '.join(before)}) x fusion",
               [g | {"embed": e} for e in before for g in fusion])


if __name__ == "__main__":
    main()
