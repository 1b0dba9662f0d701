"""LoCoMo turn-level retrieval benchmark for langmem_edge's hybrid search.

Usage (from the project root)::

    python benchmarks/locomo.py [PATH] [--backend core|store] [--context 2]
        [--context-weight 0.5] [--weights vector=1,keyword=1,key=1.5] [--rrf-k 60]

PATH defaults to ``../shared/datasets/locomo/locomo_dev.json`` (relative to the project
root). The data set is CC BY-NC 4.0 and is never copied into the repository.

What is measured (the data set README's metric): one document per dialog turn, text
``"[<session date>] <speaker>: <text>"`` plus ``" [shares <caption>]"`` for images; one
namespace per conversation; one search per question; recall@5, recall@10 (fraction of the
question's evidence turns in the top k, averaged) and hit@5 (any evidence in the top 5),
per category and overall (1-4 and 1-5), for each channel alone and for the fusion.

How items are written (what any store user can reproduce): namespace
``("locomo", <conversation>)``, key = the turn id made opaque (``d1t3``: LoCoMo turns have no
meaningful key, so the exact-key channel has nothing to match, as for any message log), and
value ``{"text": <turn document>, "context": <neighbouring turns>}`` where ``context`` joins
the text of the ``--context`` turns before and after within the same session (default 2;
``--context-speakers`` writes "speaker: text" lines instead). With ``--context 0`` only
``text`` is indexed. The keyword channel weighs ``context`` by ``--context-weight``
(BM25F, default 0.5); the vector channel embeds each field and keeps the best cosine, as
``InMemoryStore`` does.

Fusion: the benchmark configuration is ``rrf_k`` 10 with weights vector 0.5, keyword 1,
key 1.5 (chosen on a coarse grid, see docs/retrieval.md); the ``fused-60`` row is the
library default (``rrf_k`` 60, weights 1 / 1 / 1.5) on the same channels.

Backends: ``core`` runs the retrieval core in-process (``_keyword_core`` + exact cosine +
``fuse``); ``store`` writes the items into a ``ChromaStore`` (temporary folder) and calls
``store.search(namespace, query=..., limit=50)`` with hybrid ranking (needs a
``ChromaStore`` accepting ``ranking="hybrid"`` and ``hybrid=<HybridConfig>``).

Embeddings: ``langmem_edge.embeddings.default_embeddings()`` (all-MiniLM-L6-v2, int8 ONNX),
cached by text hash in ``/tmp/langmem_edge_bench/embeddings-all-minilm-l6-v2-int8.npz`` so a
rerun embeds nothing (``embeddings-all-minilm-l6-v2.npz`` holds the torch model's, written by
``locomo_signals.py``).
"""

from __future__ import annotations

import argparse
import atexit
import hashlib
import json
import re
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # _keyword_core

from _keyword_core import KeywordIndex, KeywordRow  # noqa: E402

from langmem_edge.retrieval.config import resolve_hybrid_config  # noqa: E402
from langmem_edge.retrieval.hybrid import fuse  # noqa: E402

DEFAULT_PATH = ROOT.parent / "shared" / "datasets" / "locomo" / "locomo_dev.json"
CACHE_DIR = Path("/tmp/langmem_edge_bench")
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
                  5: "adversarial"}
KS = (5, 10)
RESULT_DEPTH = 10

BENCH_CONTEXT = 2
"""Neighbouring turns each side (same session) written into an item's ``context`` field."""
BENCH_CONTEXT_WEIGHT = 0.5
"""BM25F weight of ``context`` (a neighbour's word counts half a word of the turn itself)."""
BENCH_WEIGHTS = "vector=0.5,keyword=1,key=1.5"
"""Fusion weights of the benchmark configuration (the library defaults are 1 / 1 / 1.5)."""
BENCH_RRF_K = 10.0
"""RRF constant of the benchmark configuration (the library default is 60)."""


# --------------------------------------------------------------------------- data


@dataclass
class Turn:
    dia_id: str
    session: int
    speaker: str
    text: str
    date: str
    caption: str | None

    @property
    def document(self) -> str:
        doc = f"[{self.date}] {self.speaker}: {self.text}"
        return doc + (f" [shares {self.caption}]" if self.caption else "")

    @property
    def line(self) -> str:
        share = f" [shares {self.caption}]" if self.caption else ""
        return f"{self.speaker}: {self.text}{share}"


@dataclass
class Question:
    text: str
    evidence: frozenset[str]
    category: int


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn]
    questions: list[Question]
    skipped: int = 0

    @property
    def namespace(self) -> tuple[str, str]:
        return ("locomo", self.sample_id)


_EVIDENCE_RE = re.compile(r"D:?(\d+):(\d+)")


def clean_evidence(raw: Sequence[Any], valid: set[str]) -> frozenset[str]:
    """Evidence ids as ``D<s>:<t>``: split multi-id strings, drop zero padding, repair
    ``D:11:26``, drop ids of turns that do not exist."""
    out: set[str] = set()
    for entry in raw:
        for part in re.split(r"[;,]", str(entry)):
            m = _EVIDENCE_RE.search(part.strip())
            if m:
                dia = f"D{int(m.group(1))}:{int(m.group(2))}"
                if dia in valid:
                    out.add(dia)
    return frozenset(out)


def load(path: Path) -> list[Conversation]:
    """Conversations, turns and cleaned questions (questions without evidence skipped)."""
    data = json.loads(Path(path).read_text())
    convs: list[Conversation] = []
    for sample in data:
        conv = sample["conversation"]
        sessions = sorted(int(m.group(1)) for k in conv if (m := re.fullmatch(r"session_(\d+)", k)))
        turns = [
            Turn(t["dia_id"], s, t["speaker"], t["text"], conv.get(f"session_{s}_date_time", ""),
                 t.get("blip_caption"))
            for s in sessions
            for t in conv[f"session_{s}"]
        ]
        valid = {t.dia_id for t in turns}
        questions: list[Question] = []
        skipped = 0
        for qa in sample["qa"]:
            ev = clean_evidence(qa.get("evidence") or [], valid)
            if not ev:
                skipped += 1
                continue
            questions.append(Question(qa["question"], ev, int(qa["category"])))
        convs.append(Conversation(sample["sample_id"], turns, questions, skipped))
    return convs


def opaque_key(dia_id: str) -> str:
    """``D1:3`` -> ``d1t3``: a key with no separators, so no segment equals a query word."""
    session, turn = dia_id[1:].split(":")
    return f"d{session}t{turn}"


def item_values(
    conv: Conversation, context: int, *, speakers: bool = False
) -> dict[str, dict[str, str]]:
    """``dia_id -> value`` written for each turn (``text`` and, if context > 0, ``context``:
    the text of the neighbouring turns of the same session, or ``speaker: text`` lines with
    ``speakers=True``)."""
    values: dict[str, dict[str, str]] = {}
    turns = conv.turns
    for i, turn in enumerate(turns):
        value = {"text": turn.document}
        if context > 0:
            near = [
                turns[j].line if speakers else turns[j].text
                for j in range(max(0, i - context), min(len(turns), i + context + 1))
                if j != i and turns[j].session == turn.session
            ]
            if near:
                value["context"] = " ".join(near)
        values[turn.dia_id] = value
    return values


# --------------------------------------------------------------------------- embeddings


SAVE_EVERY = 2000
"""New vectors that make :class:`VectorCache` rewrite its file at once."""
SAVE_SECONDS = 60.0
"""Seconds after which any new vector makes :class:`VectorCache` rewrite its file."""


class VectorCache:
    """Embeddings by sha256 of the text, persisted in one ``.npz`` under /tmp (keyed by the
    model's name and the text's hash), written in bulk and at exit."""

    def __init__(self, name: str = "all-minilm-l6-v2-int8") -> None:
        self.path = CACHE_DIR / f"embeddings-{name}.npz"
        self.vectors: dict[str, np.ndarray] = {}
        self.embed_seconds = 0.0
        self._unsaved = 0
        self._saved_at = time.monotonic()
        atexit.register(self.save)
        if self.path.exists():
            z = np.load(self.path)
            self.vectors = dict(zip(z["keys"].tolist(), z["vectors"], strict=True))

    def save(self) -> None:
        """Write the cache file if vectors were added since the last save (also at exit)."""
        if not self._unsaved:
            return
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=np.array(list(self.vectors)),
                 vectors=np.stack(list(self.vectors.values())))
        tmp.replace(self.path)
        self._unsaved = 0
        self._saved_at = time.monotonic()

    @staticmethod
    def _h(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def embed(self, texts: list[str]) -> Sequence[Sequence[float]]:
        """Vectors of texts not in the cache (the default model; a subclass may use another)."""
        from langmem_edge.embeddings import default_embeddings

        return default_embeddings().embed_documents(texts)

    def get(self, texts: Sequence[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if self._h(t) not in self.vectors))
        if missing:
            start = time.perf_counter()
            vecs = self.embed(missing)
            self.embed_seconds += time.perf_counter() - start
            for text, vec in zip(missing, vecs, strict=True):
                self.vectors[self._h(text)] = np.asarray(vec, dtype=np.float32)
            self._unsaved += len(missing)
            if self._unsaved >= SAVE_EVERY or time.monotonic() - self._saved_at > SAVE_SECONDS:
                self.save()
        out = np.stack([self.vectors[self._h(t)] for t in texts]).astype(np.float64)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)


def field_matrix(
    vectors: VectorCache, values: dict[str, dict[str, str]]
) -> tuple[np.ndarray, np.ndarray]:
    """One row per indexed field of every item (normalised vectors) and, per row, the number
    of the item it belongs to (for a max over an item's fields, as ``InMemoryStore``)."""
    owners: list[int] = []
    texts: list[str] = []
    for n, value in enumerate(values.values()):
        for text in value.values():
            owners.append(n)
            texts.append(text)
    return vectors.get(texts), np.asarray(owners)


# --------------------------------------------------------------------------- backends


Rankings = dict[str, list[tuple[str, float]]]


@dataclass
class Timing:
    ingest: list[float] = field(default_factory=list)
    query: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))


class CoreBackend:
    """The retrieval core in-process: what the store does, minus Chroma."""

    def __init__(self, config: dict[str, Any], vectors: VectorCache | None) -> None:
        self.config = config
        self.vectors = vectors
        self.timing = Timing()

    def ingest(self, conv: Conversation, values: dict[str, dict[str, str]]) -> None:
        start = time.perf_counter()
        index = KeywordIndex(config=self.config["keyword"])
        index.apply(
            KeywordRow(dia, conv.namespace, opaque_key(dia), value)
            for dia, value in values.items()
        )
        self.index = index
        self.ids = list(values)
        self.timing.ingest.append(time.perf_counter() - start)
        if self.vectors is not None:
            self.matrix, self.owners = field_matrix(self.vectors, values)

    def rank(self, question: str, depth: int) -> Rankings:
        out: Rankings = {}
        ns = ("locomo",)
        t = time.perf_counter()
        out["keyword"] = self.index.search_keyword(question, namespace_prefix=ns, limit=depth)
        t2 = time.perf_counter()
        out["key"] = self.index.search_key(question, namespace_prefix=ns, limit=depth)
        t3 = time.perf_counter()
        self.timing.query["keyword"].append(t2 - t)
        self.timing.query["key"].append(t3 - t2)
        if self.vectors is not None:
            q = self.vectors.get([question])[0]
            t4 = time.perf_counter()
            sims = self.matrix @ q
            best = np.full(len(self.ids), -np.inf)
            np.maximum.at(best, self.owners, sims)
            order = sorted(range(len(self.ids)), key=lambda i: (-best[i], self.ids[i]))[:depth]
            out["vector"] = [(self.ids[i], float(best[i])) for i in order]
            self.timing.query["vector"].append(time.perf_counter() - t4)
        return out


class StoreBackend:
    """``ChromaStore.search(..., query=...)`` on a temporary folder."""

    def __init__(self, config: dict[str, Any], context: int) -> None:
        import tempfile

        from langmem_edge.embeddings import default_embeddings
        from langmem_edge.store import ChromaStore  # type: ignore[attr-defined]

        self.folder = tempfile.mkdtemp(prefix="langmem-edge-locomo-")
        fields = ["text", "context"] if context > 0 else ["text"]
        try:
            self.store = ChromaStore.from_path(
                self.folder,
                index={"dims": 384, "embed": default_embeddings(), "fields": fields},
                ranking="hybrid",
                hybrid=config,
            )
        except TypeError as e:
            import shutil

            shutil.rmtree(self.folder, ignore_errors=True)
            raise SystemExit(
                f"--backend store needs a ChromaStore with hybrid ranking ({e}); "
                "use --backend core"
            ) from e
        self.timing = Timing()

    def ingest(self, conv: Conversation, values: dict[str, dict[str, str]]) -> None:
        from langgraph.store.base import PutOp

        start = time.perf_counter()
        self.store.batch([PutOp(conv.namespace, opaque_key(d), v) for d, v in values.items()])
        self.timing.ingest.append(time.perf_counter() - start)
        self.back = {opaque_key(d): d for d in values}
        self.namespace = conv.namespace

    def rank(self, question: str, depth: int) -> Rankings:
        """The fused ranking (``store.search``) and each channel alone, all through the store
        (``hybrid_search`` with the other channels' weights at 0)."""
        out: Rankings = {}
        start = time.perf_counter()
        items = self.store.search(self.namespace, query=question, limit=depth)
        self.timing.query["fused"].append(time.perf_counter() - start)
        out["fused"] = [(self.back[it.key], float(it.score or 0.0)) for it in items]
        for channel in ("vector", "keyword", "key"):
            weights = {c: (1.0 if c == channel else 0.0) for c in ("vector", "keyword", "key")}
            start = time.perf_counter()
            alone = self.store.hybrid_search(
                self.namespace, query=question, limit=depth, hybrid={"weights": weights}
            )
            self.timing.query[channel].append(time.perf_counter() - start)
            out[channel] = [(self.back[it.key], float(it.score or 0.0)) for it in alone]
        return out


# --------------------------------------------------------------------------- scoring


def score(ranked: Sequence[str], evidence: frozenset[str]) -> tuple[float, ...]:
    recalls = tuple(len(evidence & set(ranked[:k])) / len(evidence) for k in KS)
    return (*recalls, float(bool(evidence & set(ranked[:5]))))


def summarise(rows: dict[int, list[tuple[float, ...]]]) -> dict[str, tuple[float, ...]]:
    def mean(cats: Sequence[int]) -> tuple[float, ...]:
        sel = [r for c in cats for r in rows.get(c, [])]
        return tuple(float(x) for x in np.mean(sel, axis=0)) if sel else (0.0, 0.0, 0.0)

    out = {f"cat{c}": mean([c]) for c in sorted(rows)}
    out["1-4"] = mean([1, 2, 3, 4])
    out["1-5"] = mean([1, 2, 3, 4, 5])
    return out


def print_table(results: dict[str, dict[str, tuple[float, ...]]], counts: dict[int, int]) -> None:
    cols = [f"cat{c}" for c in sorted(counts)] + ["1-4", "1-5"]
    head = "".join(f"{c:>20}" for c in cols)
    print(f"{'channel':<10}{head}")
    sub = "".join(f"{'r@5  r@10  h@5':>20}" for _ in cols)
    print(f"{'':<10}{sub}")
    for name, res in results.items():
        cells = "".join(f"{res[c][0]:>8.3f}{res[c][1]:>6.3f}{res[c][2]:>6.3f}" for c in cols)
        print(f"{name:<10}{cells}")
    names = ", ".join(f"{c} {CATEGORY_NAMES[c]} (n={counts[c]})" for c in sorted(counts))
    print(f"categories: {names}")


def ms(values: Sequence[float]) -> str:
    return f"{1000 * statistics.median(values):.2f} ms" if values else "n/a"


# --------------------------------------------------------------------------- main


def parse_weights(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for part in filter(None, text.split(",")):
        name, _, value = part.partition("=")
        out[name.strip()] = float(value)
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    convs = load(args.path)
    keyword: dict[str, Any] = {"k1": args.k1, "b": args.b}
    if args.context > 0:
        keyword["field_weights"] = {"context": args.context_weight}
    config = resolve_hybrid_config(
        {"keyword": keyword, "rrf_k": args.rrf_k, "weights": parse_weights(args.weights)}
    )
    defaults = resolve_hybrid_config({"keyword": keyword})
    vectors = None if args.no_vector else VectorCache()
    backend: Any
    if args.backend == "store":
        backend = StoreBackend(dict(config), args.context)
    else:
        backend = CoreBackend(dict(config), vectors)
    rows: dict[str, dict[int, list[tuple[float, ...]]]] = defaultdict(lambda: defaultdict(list))
    fuse_times: list[float] = []
    depth = max(config["depth"], RESULT_DEPTH)
    counts: dict[int, int] = defaultdict(int)
    for conv in convs:
        backend.ingest(conv, item_values(conv, args.context, speakers=args.context_speakers))
        for q in conv.questions:
            counts[q.category] += 1
            rankings = backend.rank(q.text, depth)
            if args.backend == "core":
                start = time.perf_counter()
                fused = fuse(rankings, config, limit=RESULT_DEPTH)
                fuse_times.append(time.perf_counter() - start)
                rankings["fused"] = [(h.id, h.score) for h in fused]
                plain = fuse(rankings, defaults, limit=RESULT_DEPTH)
                rankings["fused-60"] = [(h.id, h.score) for h in plain]
            for name, ranked in rankings.items():
                rows[name][q.category].append(score([d for d, _ in ranked], q.evidence))
    order = [n for n in ("keyword", "vector", "key", "fused", "fused-60") if n in rows]
    results = {name: summarise(rows[name]) for name in order}
    skipped = sum(c.skipped for c in convs)
    print(f"LoCoMo {args.path.name}: {len(convs)} conversations, "
          f"{sum(len(c.turns) for c in convs)} turns, {sum(counts.values())} questions "
          f"({skipped} without usable evidence skipped); backend {args.backend}")
    print(f"config: context={args.context} speakers={args.context_speakers} "
          f"context_weight={args.context_weight} "
          f"weights={config['weights']} rrf_k={config['rrf_k']} k1={args.k1} b={args.b}")
    print_table(results, dict(counts))
    if "fused-60" in results:
        print("fused-60: the library's default fusion (weights vector 1, keyword 1, key 1.5; "
              "rrf_k 60) on the same channels")
    timing = backend.timing
    print(f"ingest per conversation (median, embedding excluded): {ms(timing.ingest)}")
    if vectors is not None and vectors.embed_seconds:
        print(f"embedding (not cached yet): {vectors.embed_seconds:.1f} s")
    parts = [f"{name} {ms(vals)}" for name, vals in timing.query.items()]
    if fuse_times:
        parts.append(f"fusion {ms(fuse_times)}")
    print("query time per question (median, query embedding excluded): " + ", ".join(parts))
    return {"results": results, "counts": dict(counts)}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--backend", choices=("core", "store"), default="core")
    parser.add_argument("--context", type=int, default=BENCH_CONTEXT,
                        help="neighbouring turns each side written into the 'context' field")
    parser.add_argument("--context-weight", type=float, default=BENCH_CONTEXT_WEIGHT,
                        help="BM25F weight of the 'context' field")
    parser.add_argument("--context-speakers", action="store_true",
                        help="write 'speaker: text' lines into 'context' (default: text only)")
    parser.add_argument("--weights", default=BENCH_WEIGHTS,
                        help="fusion weights, e.g. vector=1,keyword=1,key=1.5")
    parser.add_argument("--rrf-k", type=float, default=BENCH_RRF_K)
    parser.add_argument("--k1", type=float, default=1.2)
    parser.add_argument("--b", type=float, default=0.75)
    parser.add_argument("--no-vector", action="store_true", help="skip the vector channel")
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    args = parser.parse_args(argv)
    out = run(args)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

