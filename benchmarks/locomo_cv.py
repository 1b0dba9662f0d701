"""Leave-one-conversation-out cross-validation of LoCoMo turn retrieval (issue 18).

Usage (from the project root)::

    python benchmarks/locomo_cv.py [PATH] [--store] [--profile] [--json OUT]
                                   [--embedder int8|minilm]

PATH defaults to ``../shared/datasets/locomo/locomo_dev.json`` (CC BY-NC 4.0: never copied
into the repository). Every tuned knob is chosen by cross-validation: for each held-out
conversation the grid point with the best recall@5 + recall@10 on the other four is scored
on it; the table reports the mean of the five held-out figures, with the in-sample figure
(best grid point chosen and scored on all five) beside it, labelled.

Signals (one table row each, each adding to the row it names; the grid of a row includes
"off" where the signal has a weight, so cross-validation may turn it off):

- ``vector``: cosine, best of the item's ``text`` / ``context`` fields (all-MiniLM-L6-v2).
- ``keyword``: BM25 over ``text`` + ``context`` (BM25F weight of ``context`` tuned).
- fusion: weighted RRF of both (``rrf_k``, vector weight, context weight tuned).
- speaker / date fields: the turn's speaker and session date as their own BM25F fields
  (weights tuned) instead of inside ``text``.
- temporal: a channel of the turns whose session date carries the question's month / year.
- second round: a keyword search for the question plus the first round's best turn,
  fused with the first round (for multi-hop questions; applied to every question).

The in-process figures use the library's own analyser, BM25 index and fusion
(:mod:`langmem_edge.retrieval`) with exact cosine. ``--store`` then runs the winning
plain-hybrid configuration through the public API (``ChromaStore.search`` on items as a user
writes them, ``limit=10``: the user path (a)) and ``--profile`` runs
``profile.episodic.search`` on messages ingested with ``add_messages`` (path (b));
:mod:`locomo_paths` holds both.

Embeddings are cached under ``/tmp/langmem_edge_bench`` by model and text hash
(:class:`locomo.VectorCache`), so a rerun embeds nothing. ``--embedder minilm`` runs every
row on the torch model's vectors instead of the shipped int8 ONNX ones (the bars of issues 18
and 34 were set on them; ``locomo_signals.make_encoder``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _keyword_core import KeywordIndex, KeywordRow  # noqa: E402
from locomo import (  # noqa: E402
    DEFAULT_PATH,
    Conversation,
    VectorCache,
    field_matrix,
    item_values,
    load,
)

from langmem_edge.memory.episodic.recall import temporal_ranking  # noqa: E402
from langmem_edge.retrieval.config import (  # noqa: E402
    CONVERSATION_HYBRID,
    DEFAULT_CHANNEL_DEPTH,
)
from langmem_edge.retrieval.fusion import rrf_fuse  # noqa: E402

KS = (5, 10)
"""Cut-offs scored: recall@5 and recall@10."""

SHIPPED = {"rrf_k": float(CONVERSATION_HYBRID["rrf_k"]),
           "vw": float(CONVERSATION_HYBRID["weights"]["vector"]),
           "cw": float(CONVERSATION_HYBRID["keyword"]["field_weights"]["context"])}
"""The fusion knobs of ``CONVERSATION_HYBRID`` as the package ships it (read, not copied)."""
DEPTH = DEFAULT_CHANNEL_DEPTH
"""Results each channel hands to fusion (the store's channel depth)."""
CONTEXT = 2
"""Neighbouring turns each side (same session) in an item's ``context`` field."""

Row = tuple[int, float, float]
"""One scored question: (category, recall@5, recall@10)."""
Config = Mapping[str, Any]


# --------------------------------------------------------------------------- scoring + CV


def recall_row(category: int, ranked: Sequence[str], evidence: frozenset[str]) -> Row:
    """Recall@5 and @10 of one ranking against the question's evidence turns."""
    r5, r10 = (len(evidence & set(ranked[:k])) / len(evidence) for k in KS)
    return (category, r5, r10)


def summarise(rows: Sequence[Row]) -> dict[str, tuple[float, float]]:
    """Mean recall@5 / @10 overall (``"1-5"``) and per category (``"cat<N>"``)."""
    out: dict[str, tuple[float, float]] = {}
    groups: dict[str, list[Row]] = {"1-5": list(rows)}
    for r in rows:
        groups.setdefault(f"cat{r[0]}", []).append(r)
    for name, sel in sorted(groups.items()):
        out[name] = (float(np.mean([r[1] for r in sel])), float(np.mean([r[2] for r in sel])))
    return out


def objective(rows: Sequence[Row]) -> float:
    """What tuning maximises: recall@5 + recall@10 over every question given."""
    if not rows:
        return 0.0
    return float(np.mean([r[1] for r in rows]) + np.mean([r[2] for r in rows]))


def folds(ids: Sequence[str]) -> list[tuple[list[str], str]]:
    """Leave-one-out folds: ``(the others, the held-out one)`` for each id, in order."""
    return [([o for o in ids if o != held], held) for held in ids]


@dataclass
class CVResult:
    """One grid's cross-validated and in-sample figures.

    Attributes:
        held_out: Mean over folds of each held-out conversation's summary.
        pooled: The held-out rows of every fold pooled (question-weighted).
        in_sample: The summary of the grid point best on all conversations, on all of them.
        chosen: Each fold's chosen grid point (by held-out id); ``best``: the in-sample one.
    """

    held_out: dict[str, tuple[float, float]]
    pooled: dict[str, tuple[float, float]]
    in_sample: dict[str, tuple[float, float]]
    chosen: dict[str, Config]
    best: Config
    held_rows: list[Row] = field(default_factory=list)


Summary = dict[str, tuple[float, float]]


def _mean_summaries(parts: Sequence[Summary]) -> Summary:
    keys = sorted({k for p in parts for k in p})
    return {
        k: (float(np.mean([p[k][0] for p in parts if k in p])),
            float(np.mean([p[k][1] for p in parts if k in p])))
        for k in keys
    }


def cross_validate(
    grid: Sequence[Config],
    evaluate: Callable[[Config, str], list[Row]],
    ids: Sequence[str],
) -> CVResult:
    """Leave-one-out over ``ids``: tune on the others (``objective``), score the held-out one.

    ``evaluate(config, id)`` scores every question of conversation ``id``; it is called once
    per (grid point, id). Ties go to the earlier grid point.
    """
    if not grid or not ids:
        raise ValueError("cross_validate needs a non-empty grid and at least one id")
    table = {(g, c): evaluate(cfg, c) for g, cfg in enumerate(grid) for c in ids}

    def best(on: Sequence[str]) -> int:
        scores = [objective([r for c in on for r in table[(g, c)]]) for g in range(len(grid))]
        return int(np.argmax(scores))

    held_parts, held_rows, chosen = [], [], {}
    for train, held in folds(ids) if len(ids) > 1 else [(list(ids), ids[0])]:
        g = best(train)
        chosen[held] = grid[g]
        held_parts.append(summarise(table[(g, held)]))
        held_rows += table[(g, held)]
    g_all = best(ids)
    return CVResult(
        held_out=_mean_summaries(held_parts),
        pooled=summarise(held_rows),
        in_sample=summarise([r for c in ids for r in table[(g_all, c)]]),
        chosen=chosen,
        best=grid[g_all],
        held_rows=held_rows,
    )


def product_grid(**axes: Sequence[Any]) -> list[dict[str, Any]]:
    """Every combination of the axes' values, as dicts."""
    names = list(axes)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*axes.values())]


# --------------------------------------------------------------------------- signals


def keyword_fields(conv: Conversation, *, split: bool) -> dict[str, dict[str, str]]:
    """Each turn's keyword fields: ``text`` (the whole document) + ``context``, or with
    ``split`` the document's parts: ``body`` (text + caption), ``speaker``, ``date``."""
    values = item_values(conv, CONTEXT)
    if not split:
        return values
    out: dict[str, dict[str, str]] = {}
    for turn in conv.turns:
        body = turn.text + (f" [shares {turn.caption}]" if turn.caption else "")
        fields = {"body": body, "speaker": turn.speaker, "date": turn.date}
        if "context" in values[turn.dia_id]:
            fields["context"] = values[turn.dia_id]["context"]
        out[turn.dia_id] = fields
    return out


@dataclass
class Channels:
    """Per-conversation channel rankings, computed lazily and memoised (in-process)."""

    conv: Conversation
    vectors: VectorCache | None
    times: dict[str, list[float]] = field(default_factory=dict)
    _indexes: dict[Hashable, KeywordIndex] = field(default_factory=dict)
    _memo: dict[Hashable, list[tuple[str, float]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.dates = {t.dia_id: t.date for t in self.conv.turns}
        self.bodies = {t.dia_id: t.text for t in self.conv.turns}
        self.ids = [t.dia_id for t in self.conv.turns]
        if self.vectors is not None:
            self.matrix, self.owners = field_matrix(self.vectors, item_values(self.conv, CONTEXT))
            self.vectors.get([q.text for q in self.conv.questions])  # one embedding call

    def _timed(self, name: str, fn: Callable[[], list[tuple[str, float]]]
               ) -> list[tuple[str, float]]:
        start = time.perf_counter()
        out = fn()
        self.times.setdefault(name, []).append(time.perf_counter() - start)
        return out

    def vector(self, qi: int) -> list[tuple[str, float]]:
        """Exact cosine ranking, best field per turn."""
        key = ("vector", qi)
        if key not in self._memo:
            if self.vectors is None:
                self._memo[key] = []
            else:
                q = self.vectors.get([self.conv.questions[qi].text])[0]

                def run() -> list[tuple[str, float]]:
                    best = np.full(len(self.ids), -np.inf)
                    np.maximum.at(best, self.owners, self.matrix @ q)
                    order = sorted(range(len(self.ids)), key=lambda i: (-best[i], self.ids[i]))
                    return [(self.ids[i], float(best[i])) for i in order[:DEPTH]]

                self._memo[key] = self._timed("vector", run)
        return self._memo[key]

    def index(self, cw: float, sw: float | None, dw: float | None) -> KeywordIndex:
        """The keyword index for context weight ``cw`` (and speaker / date field weights)."""
        key = (cw, sw, dw)
        if key not in self._indexes:
            split = sw is not None
            weights = {"context": cw, **({"speaker": sw, "date": dw} if split else {})}
            index = KeywordIndex(config={"field_weights": weights})
            ns = ("locomo", self.conv.sample_id)
            index.apply(
                KeywordRow(dia, ns, dia, value)
                for dia, value in keyword_fields(self.conv, split=split).items()
            )
            self._indexes[key] = index
        return self._indexes[key]

    def keyword(self, query: str, cw: float, sw: float | None = None, dw: float | None = None,
                *, name: str = "keyword") -> list[tuple[str, float]]:
        """BM25 ranking of ``query`` under the given field weights."""
        key = ("kw", query, cw, sw, dw)
        if key not in self._memo:
            index = self.index(cw, sw, dw)
            self._memo[key] = self._timed(name, lambda: index.search_keyword(query, limit=DEPTH))
        return self._memo[key]


def fused_ranking(ch: Channels, qi: int, cfg: Config) -> list[str]:
    """The ranked turn ids of question ``qi`` under configuration ``cfg`` (keys: ``rrf_k``,
    ``vw`` vector weight, ``cw`` context weight, optional ``sw``/``dw`` speaker/date
    weights, ``tw`` temporal weight, ``pw`` second-round weight)."""
    q = ch.conv.questions[qi].text
    sw, dw = cfg.get("sw"), cfg.get("dw")
    lists = {"keyword": ch.keyword(q, cfg["cw"], sw, dw)}
    weights = {"keyword": 1.0, "vector": float(cfg.get("vw", 0.0))}
    if weights["vector"] > 0:
        lists["vector"] = ch.vector(qi)
    if cfg.get("tw"):
        start = time.perf_counter()
        lists["temporal"] = temporal_ranking(q, ch.dates, lists["keyword"])
        ch.times.setdefault("temporal", []).append(time.perf_counter() - start)
        weights["temporal"] = float(cfg["tw"])
    fused = rrf_fuse(lists, weights=weights, rrf_k=cfg["rrf_k"], limit=max(KS))
    ids = [h.id for h in fused]
    if cfg.get("pw") and ids:
        expanded = f"{q} {ch.bodies[ids[0]]}"
        lists["round2"] = ch.keyword(expanded, cfg["cw"], sw, dw, name="round2")
        weights["round2"] = float(cfg["pw"])
        ids = [h.id for h in rrf_fuse(lists, weights=weights, rrf_k=cfg["rrf_k"],
                                      limit=max(KS))]
    return ids


def channel_only(ch: Channels, qi: int, name: str, cfg: Config) -> list[str]:
    """One channel alone (``vector`` or ``keyword``)."""
    if name == "vector":
        return [i for i, _ in ch.vector(qi)]
    return [i for i, _ in ch.keyword(ch.conv.questions[qi].text, cfg["cw"])]


# --------------------------------------------------------------------------- the table


RRF_KS = (5.0, 10.0, 20.0, 60.0)
VECTOR_WEIGHTS = (0.25, 0.5, 0.75, 1.0)
CONTEXT_WEIGHTS = (0.25, 0.5, 0.75, 1.0)


def experiment_grids() -> dict[str, tuple[str, list[dict[str, Any]]]]:
    """The table's rows: ``name -> (how it ranks, grid)``."""
    fusion = product_grid(rrf_k=RRF_KS, vw=VECTOR_WEIGHTS, cw=CONTEXT_WEIGHTS)
    near = product_grid(rrf_k=(5.0, 10.0, 20.0), vw=(0.25, 0.5, 0.75), cw=(0.5, 0.75))
    return {
        "vector only": ("vector", [{"cw": 0.5}]),
        "keyword only (context weight tuned)": ("keyword", product_grid(cw=CONTEXT_WEIGHTS)),
        "hybrid, library defaults (rrf_k 60, 1/1), context 1": (
            "fused", [{"rrf_k": 60.0, "vw": 1.0, "cw": 1.0}]),
        f"CONVERSATION_HYBRID as shipped (rrf_k {SHIPPED['rrf_k']:g}, vector "
        f"{SHIPPED['vw']:g}, context {SHIPPED['cw']:g})": ("fused", [SHIPPED]),
        "fusion tuned (rrf_k, vector weight, context weight)": ("fused", fusion),
        "+ speaker / date as own fields (weights tuned)": (
            "fused", [g | {"sw": sw, "dw": dw} for g in near
                      for sw in (0.25, 0.5, 1.0) for dw in (0.25, 0.5, 1.0)]),
        "+ temporal channel (weight tuned, 0 = off)": (
            "fused", [g | {"tw": tw} for g in near for tw in (0.0, 0.25, 0.5, 1.0)]),
        "+ second round for multi-hop (weight tuned, 0 = off)": (
            "fused", [g | {"pw": pw} for g in near for pw in (0.0, 0.25, 0.5, 1.0)]),
    }


def evaluator(channels: Mapping[str, Channels], how: str) -> Callable[[Config, str], list[Row]]:
    """``evaluate(config, conversation id)`` for :func:`cross_validate`."""

    def evaluate(cfg: Config, cid: str) -> list[Row]:
        ch = channels[cid]
        out: list[Row] = []
        for qi, q in enumerate(ch.conv.questions):
            ranked = fused_ranking(ch, qi, cfg) if how == "fused" else channel_only(
                ch, qi, how, cfg)
            out.append(recall_row(q.category, ranked, q.evidence))
        return out

    return evaluate


def fmt(pair: tuple[float, float]) -> str:
    """``0.707 / 0.804``."""
    return f"{pair[0]:.3f} / {pair[1]:.3f}"


def print_cv_table(results: Mapping[str, CVResult], cats: Sequence[str],
                   costs: Mapping[str, str]) -> None:
    """The Markdown table: held-out mean, in-sample, per category (held-out), extra cost."""
    head = ["configuration", "CV held-out 1-5 r@5 / r@10", "in-sample 1-5",
            *[f"{c} (CV)" for c in cats], "extra query cost (median)"]
    print("| " + " | ".join(head) + " |")
    print("| " + " | ".join("---" for _ in head) + " |")
    for name, res in results.items():
        cells = [name, f"**{fmt(res.held_out['1-5'])}**", fmt(res.in_sample["1-5"]),
                 *[fmt(res.held_out[c]) if c in res.held_out else "-" for c in cats],
                 costs.get(name, "-")]
        print("| " + " | ".join(cells) + " |")


def median_ms(values: Sequence[float]) -> str:
    """Median in milliseconds, or ``-``."""
    return f"{1000 * statistics.median(values):.2f} ms" if values else "-"


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Compute every row's cross-validated figures and print the table."""
    convs = load(args.path)
    if args.embedder == "int8":
        vectors = VectorCache()
    else:  # the issues' retrieval bars were set on the torch model's vectors
        from locomo_signals import SignalVectors, make_encoder

        vectors = SignalVectors(make_encoder(args.embedder), set())
    channels = {c.sample_id: Channels(c, vectors) for c in convs}
    ids = list(channels)
    n_q = sum(len(c.questions) for c in convs)
    print(f"LoCoMo {args.path.name}: {len(convs)} conversations, {n_q} questions; "
          f"leave-one-conversation-out over {ids}")
    results: dict[str, CVResult] = {}
    costs: dict[str, str] = {}
    cost_of = {"vector only": "vector", "keyword only (context weight tuned)": "keyword",
               "+ temporal channel (weight tuned, 0 = off)": "temporal",
               "+ second round for multi-hop (weight tuned, 0 = off)": "round2"}
    for name, (how, grid) in experiment_grids().items():
        if args.skip and any(word in name for word in args.skip):
            continue
        start = time.perf_counter()
        results[name] = cross_validate(grid, evaluator(channels, how), ids)
        took = time.perf_counter() - start
        if name in cost_of:
            timings = [t for ch in channels.values() for t in ch.times.get(cost_of[name], [])]
            costs[name] = median_ms(timings)
        print(f"  {name}: {len(grid)} grid points, {took:.1f} s; in-sample best "
              f"{dict(results[name].best)}", file=sys.stderr)
    cats = [f"cat{c}" for c in range(1, 6)]
    print_cv_table(results, cats, costs)
    for name, res in results.items():
        print(f"{name}: folds chose " + "; ".join(
            f"{held}: {dict(cfg)}" for held, cfg in res.chosen.items()))
    out: dict[str, Any] = {
        name: {"held_out": res.held_out, "pooled": res.pooled, "in_sample": res.in_sample,
               "best": dict(res.best), "chosen": {k: dict(v) for k, v in res.chosen.items()}}
        for name, res in results.items()
    }
    if args.store or args.profile:
        import locomo_paths

        best = dict(results["fusion tuned (rrf_k, vector weight, context weight)"].best)
        if args.store:
            configs = {f"CV in-sample best {best}": locomo_paths.hybrid_config(
                rrf_k=best["rrf_k"], vw=best["vw"], cw=best["cw"])}
            out["store"] = locomo_paths.store_path(convs, vectors, configs)
        if args.profile:
            out["profile"] = locomo_paths.profile_path(convs, vectors)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--store", action="store_true",
                        help="also run path (a): ChromaStore.search with the CV choices")
    parser.add_argument("--profile", action="store_true",
                        help="also run path (b): profile.episodic.search")
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    parser.add_argument("--embedder", choices=("int8", "minilm"), default="int8",
                        help="int8: the shipped default (ONNX); minilm: the same model on "
                        "torch, whose vectors set the issues' bars (needs torch)")
    parser.add_argument("--skip", action="append", default=[],
                        help="leave out the rows whose name contains this (repeatable)")
    args = parser.parse_args(argv)
    out = run(args)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2, default=str))


if __name__ == "__main__":
    main()
