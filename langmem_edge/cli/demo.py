"""``langmem-edge demo``: the whole product in one command, offline.

A scripted conversation of three sessions, each on a new thread, goes through the prebuilt
memory agent (:func:`~langmem_edge.graphs.create_memory_agent`) with the model-free
:class:`~langmem_edge.graphs.RecallChatModel` (no LLM: the agent answers from what recall
showed it) over a real ``ChromaStore`` and ``ChromaSaver``. What memory learns after each
turn is the rule-based extractor's work (the memory has no model either).

1. **Session 1** tells the agent a few facts; the demo prints what the store then holds.
2. **Session 2**, a new thread, asks one of them back: the answer is recalled from session 1.
   Then a fact changes (:data:`CHANGED_KEY`).
3. **Session 3**, another thread, asks for the changed fact: the new version is recalled, and
   ``history`` shows the old one, superseded.

Everything printed is read back from the store (the agent's replies quote the memory block
recall built from it). Each claim is checked against the store, and a claim the store does
not bear out is reported and exits 1, rather than printed as if it had happened.

Where: a temporary folder, removed at the end; ``--path DIR`` (the command's or the global
one given on the command line; ``LANGMEM_EDGE_PATH`` is not used, so the demo never writes
into your memory folder by accident) keeps it, to look at with the other commands
(``langmem-edge --path DIR history identity.location -p demo``). With the global ``--url``
it runs on that server, and deletes its profile and threads at the end unless ``--keep``.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.table import Table

from langmem_edge.cli.base import (
    EXIT_FAILURE,
    JsonOption,
    Settings,
    _open_store,
    app,
    emit_json,
    err,
    fail,
    failing,
    out,
)
from langmem_edge.cli.chat import open_saver

if TYPE_CHECKING:
    from langmem_edge.memory import AgentMemory, MemoryRecord

__all__ = ["CHANGED_KEY", "DEMO_PROFILE", "SESSIONS", "DemoSession", "demo"]

DEMO_PROFILE = "demo"
"""The profile the demo talks as (``--profile`` picks another)."""

RUN_ID_CHARS = 6
"""Hex characters of the run id that makes the demo's thread ids unique on a shared server."""

TEMP_PREFIX = "langmem-edge-demo-"
"""Name prefix of the temporary folder the demo runs in without ``--path``."""


MODEL_FREE_NOTE = ("model-free: replies quote what recall found, and the rule-based extractor "
                   "learns from what you say")
"""How the demo's first line describes the agent."""


@dataclass(frozen=True)
class DemoSession:
    """One session of the script: a new thread, the user's messages in order."""

    title: str
    said: tuple[str, ...]


SESSIONS = (
    DemoSession("Session 1: getting to know each other",
                ("Hi! My name is Ana and I live in Lisbon.",
                 "I'm vegetarian, and my favourite colour is teal.")),
    DemoSession("Session 2: a new thread",
                ("What is my favourite colour?",
                 "By the way, I live in Porto now.")),
    DemoSession("Session 3: another thread",
                ("Where do I live?",)),
)
"""The script. Session 2's question is answered from session 1's memory; its second message
changes the fact under :data:`CHANGED_KEY`; session 3 asks for it."""

RECALLED_WORD = "teal"
"""What session 2's answer must contain: the favourite colour told in session 1."""
CHANGED_KEY = "identity.location"
"""The key whose fact session 2 changes (Lisbon, then Porto)."""
OLD_WORD, NEW_WORD = "Lisbon", "Porto"
"""The changed fact's old and new value, as the store's texts and session 3's answer show."""


@dataclass
class Turn:
    """One exchange as it ran."""

    thread: str
    said: str
    reply: str


@dataclass
class Outcome:
    """What the demo read back from the store, and which claims it bore out."""

    profile: str
    where: str
    option: str
    """The global option that names the same store (``--path DIR`` / ``--url URL``)."""
    kept: bool
    sessions: list[dict[str, Any]] = field(default_factory=list)
    threads: list[str] = field(default_factory=list)
    remembered: list[MemoryRecord] = field(default_factory=list)
    history: list[MemoryRecord] = field(default_factory=list)
    checks: dict[str, bool] = field(default_factory=dict)


def _folder(ctx: typer.Context, path: Path | None) -> Path | None:
    """The folder to keep: ``demo --path``, else a global ``--path`` given on the command
    line (not from ``LANGMEM_EDGE_PATH``); ``None``: a temporary folder."""
    if path is not None:
        return path.expanduser().absolute()
    parent = ctx.parent
    source = parent.get_parameter_source("path") if parent is not None else None
    if source is not None and source.name == "COMMANDLINE":  # typer's click or click's
        settings: Settings = ctx.obj
        return settings.folder
    return None


@contextmanager
def _place(ctx: typer.Context, path: Path | None) -> Iterator[tuple[Settings, bool]]:
    """The settings to run on and whether the data is kept; a temporary folder is removed
    at the end, whatever happened."""
    settings: Settings = ctx.obj
    if settings.url:
        if path is not None:
            raise typer.BadParameter("give the demo --path or the global --url, not both",
                                     param_hint="--path")
        yield settings, False
        return
    folder = _folder(ctx, path)
    if folder is not None:
        yield Settings(path=folder, url=None, namespace=settings.namespace), True
        return
    temp = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX))
    try:
        yield Settings(path=temp, url=None, namespace=settings.namespace), False
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def _records(title: str, records: list[MemoryRecord], columns: tuple[str, ...]) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left")
    for name in columns:
        if name == "text":
            table.add_column(name, overflow="fold", ratio=1)
        else:
            table.add_column(name, no_wrap=True)
    for m in records:
        cells = {"key": m.key or "", "status": m.status, "text": m.text,
                 "session": m.session_id or ""}
        table.add_row(*(cells[c] for c in columns))
    return table


def _run(memory: AgentMemory, saver: Any, outcome: Outcome, run_id: str, show: bool) -> None:
    """Run the script and fill ``outcome``."""
    from langmem_edge.graphs import RecallChatModel, create_memory_agent

    agent = create_memory_agent(RecallChatModel(), memory=memory, checkpointer=saver,
                                memory_tools=False)
    profile = memory.profile(outcome.profile)
    if show:
        out.print(f"A memory agent with no LLM ({MODEL_FREE_NOTE}) on {outcome.where}, "
                  f"profile {outcome.profile!r}.")
    try:
        for n, session in enumerate(SESSIONS, start=1):
            thread = f"{run_id}-session-{n}"
            outcome.threads.append(thread)
            if show:
                out.rule(f"{session.title} (thread {thread})")
            turns: list[Turn] = []
            for said in session.said:
                state = agent.invoke({"messages": [("user", said)]},
                                     {"configurable": {"thread_id": thread}},
                                     context={"profile": outcome.profile})
                turns.append(Turn(thread, said, str(state["messages"][-1].content)))
                if show:
                    out.print(f"you:   {said}")
                    out.print("agent: " + turns[-1].reply.replace("\n", "\n       "))
            agent.memory_middleware.flush()  # the turn's extraction runs off the reply path
            outcome.sessions.append({"title": session.title, "thread": thread,
                                     "turns": [vars(t) for t in turns]})
            if n == 1:
                outcome.remembered = profile.list().memories
                if show:
                    out.print(_records("What the store holds after session 1",
                                       outcome.remembered, ("key", "text")))
            if n == 2:
                outcome.history = profile.history(CHANGED_KEY)
                if show:
                    out.print(_records(f"`history {CHANGED_KEY}` after session 2",
                                       outcome.history, ("status", "text", "session")))
    finally:
        agent.memory_middleware.close()


def _check(outcome: Outcome) -> None:
    """Which of the demo's claims the store bears out."""
    recall_reply = outcome.sessions[1]["turns"][0]["reply"]
    final_reply = outcome.sessions[2]["turns"][0]["reply"]
    chain = outcome.history
    outcome.checks = {
        "remembered after session 1": any(RECALLED_WORD in m.text for m in outcome.remembered),
        "recalled on a new thread": RECALLED_WORD in recall_reply,
        "superseded in session 2": (
            len(chain) >= 2 and chain[-1].status == "active" and NEW_WORD in chain[-1].text
            and any(m.status == "superseded" and OLD_WORD in m.text for m in chain[:-1])),
        "new version recalled": NEW_WORD in final_reply and OLD_WORD not in final_reply,
    }


def _print_verdict(outcome: Outcome) -> None:
    table = Table(title="What the demo showed", box=box.SIMPLE_HEAD, title_justify="left")
    table.add_column("claim")
    table.add_column("borne out by the store")
    for claim, ok in outcome.checks.items():
        table.add_row(claim, "yes" if ok else "NO")
    out.print(table)
    if outcome.kept:
        out.print(f"The memory is kept in {outcome.where}: try "
                  f"`langmem-edge {outcome.option} history {CHANGED_KEY} -p {outcome.profile}`.")
    else:
        out.print(f"The demo's data in {outcome.where} was deleted.")


@app.command()
def demo(
    ctx: typer.Context,
    path: Annotated[Path | None, typer.Option(
        "--path", file_okay=False,
        help="Run in this folder and keep it (default: a temporary folder, removed).")
    ] = None,
    profile: Annotated[str, typer.Option(
        "--profile", "-p", help="The profile the demo talks as (must not exist yet).")
    ] = DEMO_PROFILE,
    keep: Annotated[bool, typer.Option(
        help="With --url: keep the demo's profile and threads on the server.")] = False,
    as_json: JsonOption = False,
) -> None:
    """A scripted three-session conversation through the memory agent, offline: what it
    remembered, what it recalls on a new thread, and a fact that changed."""
    from langmem_edge.memory import AgentMemory

    with _place(ctx, path) as (settings, kept), failing(settings):
        kept = kept or keep
        store = _open_store(settings, create=True)
        option = f"--url {settings.url}" if settings.url else f"--path {settings.folder}"
        outcome = Outcome(profile=profile, where=settings.where, option=option, kept=kept)
        memory = AgentMemory(store, namespace=(settings.namespace,))
        saver, started = None, False
        try:
            saver = open_saver(settings)
            if profile in memory.list_profiles():
                fail(f"profile {profile!r} already exists in {settings.where}: the demo "
                     "needs a new one (choose it with --profile, or another --path)",
                     EXIT_FAILURE)
            started = True
            run_id = f"demo-{uuid.uuid4().hex[:RUN_ID_CHARS]}"
            _run(memory, saver, outcome, run_id, show=not as_json)
            _check(outcome)
        finally:
            if started and settings.url and not kept:  # a server's data is not a temp folder
                memory.delete_profile(profile)
                for thread in outcome.threads:
                    saver.delete_thread(thread)
            if saver is not None:
                saver.close()
            store.close()
    if as_json:
        emit_json({"profile": outcome.profile, "where": outcome.where, "kept": kept,
                   "sessions": outcome.sessions,
                   "remembered_after_session_1": outcome.remembered,
                   "history": {"key": CHANGED_KEY, "versions": outcome.history},
                   "checks": outcome.checks, "ok": all(outcome.checks.values())})
    else:
        _print_verdict(outcome)
    if not all(outcome.checks.values()):
        missed = ", ".join(c for c, ok in outcome.checks.items() if not ok)
        err.print(f"[bold red]error:[/] the store did not bear out: {missed}")
        raise typer.Exit(EXIT_FAILURE)
