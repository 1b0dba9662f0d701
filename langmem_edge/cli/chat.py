"""``langmem-edge chat``: the example chatbot in the terminal, remembering across runs.

::

    langmem-edge chat -p ana                          # model-free: answers from memory
    langmem-edge chat -p ana --model openai:gpt-4o-mini
    langmem-edge chat -p ana --model local             # SmolLM2-135M, offline (local-model)
    langmem-edge chat -p ana --model ./my-model.gguf   # a GGUF file you have
    langmem-edge --path ./mem chat -p ana < questions.txt

Each run is a new thread of the profile (``--thread`` continues one): what it recalls from an
earlier run comes from the profile's memories in the store of the global ``--path`` /
``--url``. The model is :func:`~langmem_edge.cli.chatbot.choose_chat_model`'s choice:
``--model`` or ``LANGMEM_EDGE_MODEL`` (a ``provider:name`` for ``init_chat_model``; ``local``
for the packaged SmolLM2-135M-Instruct, or a ``.gguf`` file's path: the ``local-model`` extra,
:mod:`langmem_edge.chat_models`) when it can be made, else the model-free
:class:`~langmem_edge.graphs.RecallChatModel`; the first line (stderr) says which. The memory
itself is model-free whatever answers (the rule-based extractor learns from what you say):
a 135M model's extraction replies do not parse, so giving it the memory too would only add
three generations a turn before the same rules ran (``docs/graphs.md``, "A local model").
Lines are read from stdin until its end or ``/quit``; replies go to stdout.
"""

from __future__ import annotations

import sys
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from langmem_edge.cli.base import (
    DEFAULT_PROFILE,
    EXIT_FAILURE,
    ProfileOption,
    Settings,
    app,
    err,
    fail,
    opened,
    out,
    plural,
)

__all__ = ["chat", "new_thread_id", "open_saver"]

THREAD_PREFIX = "chat"
"""First part of the thread id of a new chat run."""
THREAD_SUFFIX_CHARS = 6
"""Random hex characters that end a new thread id (two runs in one second differ)."""


def new_thread_id() -> str:
    """A thread id for a new run: ``chat-20261201-164700-a1b2c3``."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return f"{THREAD_PREFIX}-{stamp}-{uuid.uuid4().hex[:THREAD_SUFFIX_CHARS]}"


def open_saver(settings: Settings) -> Any:
    """A ``ChromaSaver`` on the store the global options name (the threads' checkpoints
    live next to the memory)."""
    from langmem_edge.checkpointers import ChromaSaver

    if settings.url:
        return ChromaSaver.from_url(settings.url)
    return ChromaSaver.from_path(str(settings.folder))


@app.command()
def chat(
    ctx: typer.Context,
    model: Annotated[str | None, typer.Option(
        "--model", envvar="LANGMEM_EDGE_MODEL",
        help="A chat model as provider:name (init_chat_model), 'local' (the packaged "
             "SmolLM2-135M, offline) or a .gguf file; default: model-free.")
    ] = None,
    thread: Annotated[str | None, typer.Option(
        help="Continue this thread (default: a new one each run).")] = None,
    contact: Annotated[str | None, typer.Option(
        help="Who is talking (their memories are contact-scoped).")] = None,
    profile: ProfileOption = DEFAULT_PROFILE,
) -> None:
    """Chat with a memory agent that remembers across runs (stdin to stdout; /quit ends)."""
    from langmem_edge.cli.chatbot import CHATBOT_SYSTEM_PROMPT, chat_loop, choose_chat_model
    from langmem_edge.errors import LangmemEdgeError
    from langmem_edge.graphs import create_memory_agent

    chosen = choose_chat_model(model)
    thread = thread or new_thread_id()
    settings: Settings = ctx.obj
    with opened(ctx, create=True) as memory:
        saver = open_saver(settings)
        try:
            bot = create_memory_agent(chosen.model, memory=memory, checkpointer=saver,
                                      system_prompt=CHATBOT_SYSTEM_PROMPT)
            err.print(f"{chosen.note}; profile {profile!r}, thread {thread}, "
                      f"{settings.where}. /quit or end of input to stop.")
            terminal = sys.stdin.isatty()
            turns = chat_loop(
                bot, profile=profile, thread=thread, contact=contact, lines=sys.stdin,
                write=out.print,
                prompt=(lambda: err.print("you> ", end="")) if terminal else None)
        except LangmemEdgeError:
            raise  # opened() turns it into its message and exit code
        except Exception as e:  # the chat model's own error (a bad key, a network failure)
            fail(f"the chat model {chosen.name or 'model-free'} failed: "
                 f"{type(e).__name__}: {e}", EXIT_FAILURE)
        finally:
            saver.close()
    err.print(f"{plural(turns, 'turn')} on thread {thread}, stored in profile {profile!r} "
              f"(`langmem-edge list -p {profile}` shows what was learned).")
