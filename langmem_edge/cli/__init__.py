"""The ``langmem-edge`` command line: agent memory in Chroma, from the shell.

::

    langmem-edge remember "Prefers dark mode" --key preference.ui_theme
    langmem-edge recall "what theme?" --json
    langmem-edge --url http://127.0.0.1:8000 stats

Commands: ``remember``, ``recall``, ``ingest``, ``list``, ``show``, ``forget``, ``history``,
``summary``, ``sessions``, ``delete-session``, ``export``, ``import``, ``stats``,
``delete-profile``, ``consolidate``, ``reflect``, ``documents add|list|search|delete``,
``ui``. Global options, environment variables and exit codes are in
:mod:`langmem_edge.cli.base` and ``docs/cli.md``. Commands import the store and the memory
when they run, so ``langmem-edge --help`` loads neither chromadb nor a model.

``demo`` (a scripted three-session conversation through the memory agent, offline) and
``chat`` (the example chatbot in the terminal) show the whole product at work.
"""

from __future__ import annotations

from importlib import import_module

from langmem_edge.cli.base import app, main

__all__ = ["app", "main"]

COMMAND_MODULES = ("demo", "chat", "memories", "conversations", "admin", "reflective", "documents",
                   "ui")
"""The modules whose commands ``app`` holds, in the order ``--help`` lists them."""

for _name in COMMAND_MODULES:
    import_module(f"langmem_edge.cli.{_name}")
