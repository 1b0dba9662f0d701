"""What every command shares: the app, the global options, opening the memory, output, and
turning errors into exit codes and messages a shell user can act on.

Exit codes::

    0  done
    1  the operation failed (the store refused it, an embedding failed, ...)
    2  usage: an unknown option, a missing argument, a file that does not exist
    3  not found: no store at --path, no such profile, memory, key or session
    4  invalid input: a file that is not messages or not an export, a bad value
    5  the Chroma server at --url does not answer

Environment (each also an option of ``langmem-edge``): ``LANGMEM_EDGE_PATH`` (the folder,
default ``~/.langmem-edge/memory``), ``LANGMEM_EDGE_URL`` (a server instead),
``LANGMEM_EDGE_NAMESPACE``, ``LANGMEM_EDGE_PROFILE`` (the profile of per-profile commands,
default ``default``). ``LANGMEM_EDGE_FAKE_EMBEDDINGS=1`` is a testing aid: hashed
bag-of-words vectors (``langmem_edge.testing.FakeEmbeddings``) instead of the model, so tests
run without loading it; never use it on a store you keep.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:
    from langmem_edge.memory import AgentMemory, Profile
    from langmem_edge.store import ChromaStore

__all__ = [
    "DEFAULT_PATH",
    "EXIT_FAILURE",
    "EXIT_INVALID",
    "EXIT_NOT_FOUND",
    "EXIT_UNAVAILABLE",
    "EXIT_USAGE",
    "FAKE_EMBEDDINGS_ENV",
    "Settings",
    "app",
    "main",
]

DEFAULT_PATH = Path("~/.langmem-edge/memory")
"""The embedded store's folder when neither ``--path`` nor ``--url`` is given."""

DEFAULT_PROFILE = "default"
"""The profile of per-profile commands without ``--profile``."""

DEFAULT_NAMESPACE = "langmem_edge"
"""The application namespace (``AgentMemory(namespace=(...,))``)."""

FAKE_EMBEDDINGS_ENV = "LANGMEM_EDGE_FAKE_EMBEDDINGS"
"""Testing aid: ``1`` uses fake embeddings instead of the model."""

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3
EXIT_INVALID = 4
EXIT_UNAVAILABLE = 5

SHOWN_PROFILES = 10
"""Profile names an error about a missing profile lists."""

def _hide_flag_types() -> None:
    """Recent typer prints a value type after every option in help, flags too
    (``--json <bool>``), though a flag takes no value: show none for flags."""
    from typer.core import TyperOption

    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "flags_hidden", False):
        return

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        return None if self.is_flag else shown(self, ctx)

    display_type_rich.flags_hidden = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_hide_flag_types()

app = typer.Typer(
    name="langmem-edge",
    help="Agent memory in Chroma, from the shell: remember, recall, ingest conversations, "
         "inspect, export and import.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Markdown: a docstring's later paragraphs flow as paragraphs (typer keeps their single
    # line breaks in its "rich" mode, cutting sentences where the source wrapped)
    rich_markup_mode="markdown",
)

out = Console(highlight=False, markup=False, soft_wrap=True)
"""Tables and messages (stdout)."""
err = Console(stderr=True, highlight=False, soft_wrap=True)
"""Errors, confirmations' context and progress bars (stderr)."""


@dataclass(frozen=True)
class Settings:
    """The global options: where the store is and which namespace."""

    path: Path | None
    url: str | None
    namespace: str

    @property
    def where(self) -> str:
        """The store, as messages name it."""
        return f"the Chroma server at {self.url}" if self.url else f"the folder {self.folder}"

    @property
    def folder(self) -> Path:
        """The embedded store's folder (``--path`` or the default)."""
        return (self.path or DEFAULT_PATH).expanduser().absolute()


@app.callback()
def _options(
    ctx: typer.Context,
    path: Annotated[Path | None, typer.Option(
        "--path", envvar="LANGMEM_EDGE_PATH", file_okay=False,
        show_default=str(DEFAULT_PATH), help="Folder of an embedded Chroma store.")] = None,
    url: Annotated[str | None, typer.Option(
        "--url", envvar="LANGMEM_EDGE_URL",
        help="URL of a Chroma server (`chroma run`), e.g. http://127.0.0.1:8000.")] = None,
    namespace: Annotated[str, typer.Option(
        "--namespace", envvar="LANGMEM_EDGE_NAMESPACE",
        help="Application namespace the profiles live under.")] = DEFAULT_NAMESPACE,
) -> None:
    """Agent memory in Chroma, from the shell."""
    if path is not None and url is not None:
        raise typer.BadParameter("give --path or --url, not both", param_hint="--url")
    ctx.obj = Settings(path=path, url=url, namespace=namespace)


ProfileOption = Annotated[str, typer.Option(
    "--profile", "-p", envvar="LANGMEM_EDGE_PROFILE",
    help="The profile (user, contact, agent) to work on.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
AllOption = Annotated[bool, typer.Option(
    "--all", help="Every profile of the namespace (instead of --profile).")]


# -- opening the memory ------------------------------------------------------------------------


def _embeddings() -> Any:
    from langmem_edge.embeddings import DEFAULT_DIMS, default_embeddings

    if os.environ.get(FAKE_EMBEDDINGS_ENV, "").strip().lower() in ("1", "true", "yes"):
        from langmem_edge.testing import FakeEmbeddings

        return DEFAULT_DIMS, FakeEmbeddings(DEFAULT_DIMS)
    return DEFAULT_DIMS, default_embeddings()


def _open_store(settings: Settings, *, create: bool) -> ChromaStore:
    from langmem_edge.errors import NotFoundError
    from langmem_edge.store import ChromaStore

    dims, embed = _embeddings()
    index = {"dims": dims, "embed": embed, "fields": ["text"]}
    if settings.url:
        return ChromaStore.from_url(settings.url, index=index)  # type: ignore[arg-type]
    folder = settings.folder
    if not create and not folder.exists():
        raise NotFoundError(f"no memory store at {folder}: nothing was remembered there yet "
                            "(`langmem-edge remember TEXT` creates it; --path picks another "
                            "folder)")
    folder.mkdir(parents=True, exist_ok=True)
    return ChromaStore.from_path(str(folder), index=index)  # type: ignore[arg-type]


@contextmanager
def opened(ctx: typer.Context, *, create: bool = False) -> Iterator[AgentMemory]:
    """The ``AgentMemory`` of the global options; errors become messages and exit codes
    (:func:`failing`). Access counts are flushed and the store closed at the end.
    ``create``: the command writes, so a missing folder is made."""
    from langmem_edge.memory import AgentMemory

    settings: Settings = ctx.obj
    with failing(settings):
        store = _open_store(settings, create=create)
        try:
            memory = AgentMemory(store, namespace=(settings.namespace,))
            yield memory
            memory.flush()
        finally:
            store.close()


@contextmanager
def opened_profile(ctx: typer.Context, name: str) -> Iterator[tuple[AgentMemory, Profile]]:
    """:func:`opened`, and the profile ``name`` in it (:func:`require_profile`)."""
    with opened(ctx) as memory:
        yield memory, require_profile(ctx, memory, name)


def require_profile(ctx: typer.Context, memory: AgentMemory, name: str) -> Profile:
    """The profile ``name``, or :class:`NotFoundError` naming the profiles there are."""
    from langmem_edge.errors import NotFoundError

    names = memory.list_profiles()
    if name not in names:
        shown = ", ".join(repr(n) for n in names[:SHOWN_PROFILES]) or "none"
        more = f" (and {len(names) - SHOWN_PROFILES} more)" if len(names) > SHOWN_PROFILES \
            else ""
        raise NotFoundError(f"no profile {name!r} in {ctx.obj.where}; profiles: {shown}{more}"
                            " (choose one with --profile)")
    return memory.profile(name)


_EXIT_BY_CODE = {
    "not_found": EXIT_NOT_FOUND,
    "invalid_input": EXIT_INVALID,
    "invalid_namespace": EXIT_INVALID,
    "limit_exceeded": EXIT_INVALID,
    "configuration": EXIT_INVALID,
    "backend_unavailable": EXIT_UNAVAILABLE,
}


@contextmanager
def failing(settings: Settings | None = None) -> Iterator[None]:
    """Turn a langmem_edge error into ``error: <message>`` on stderr and its exit code."""
    from langmem_edge.errors import LangmemEdgeError

    try:
        yield
    except LangmemEdgeError as e:
        code = _EXIT_BY_CODE.get(e.code, EXIT_FAILURE)
        err.print(f"[bold red]error:[/] {escape(e.message)}")
        if code == EXIT_UNAVAILABLE and settings is not None:
            err.print(f"The Chroma server at {settings.url} does not answer. Start one with "
                      "`chroma run --path ./chroma-data --port 8000`, check --url, or leave "
                      f"--url out to use the folder {DEFAULT_PATH}.")
        raise typer.Exit(code) from e


def fail(message: str, code: int) -> NoReturn:
    """Stop with ``error: <message>`` on stderr and exit ``code``."""
    err.print(f"[bold red]error:[/] {escape(message)}")
    raise typer.Exit(code)


def confirm(question: str, yes: bool) -> None:
    """Ask before something that cannot be undone (``--yes`` skips); no: exit 1."""
    if yes:
        return
    if not typer.confirm(question, default=False, err=True):
        err.print("Nothing deleted.")
        raise typer.Exit(EXIT_FAILURE)


# -- output --------------------------------------------------------------------------------------


def emit_json(data: Any) -> None:
    """Print ``data`` as JSON on stdout (pydantic models dumped in JSON mode)."""
    typer.echo(json.dumps(_plain(data), indent=2, ensure_ascii=False, default=str))


def _plain(data: Any) -> Any:
    if hasattr(data, "model_dump"):
        return data.model_dump(mode="json")
    if isinstance(data, list | tuple):
        return [_plain(x) for x in data]
    if isinstance(data, dict):
        return {k: _plain(v) for k, v in data.items()}
    return data


def plural(count: int, word: str) -> str:
    """``"1 memory"``, ``"8 memories"``, ``"0 messages"``: a count and its noun, agreed."""
    if count == 1:
        return f"{count} {word}"
    if word.endswith("y") and word[-2:-1] not in ("a", "e", "i", "o", "u"):
        return f"{count} {word[:-1]}ies"
    return f"{count} {word}s"


@contextmanager
def progress(description: str, total: int | None = None
             ) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr (when it is a terminal); yields ``update(done, total)``.
    ``total``, when known before the first update, is shown from the start (``0/400``, not
    ``0/?``)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  console=err, transient=True, disable=not err.is_terminal) as bar:
        task = bar.add_task(description, total=total)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


def main() -> None:
    """Entry point of the ``langmem-edge`` console script."""
    app()
