"""The ``langmem-edge`` CLI: every command on a folder and on a server (exit code, output,
``--json`` parsed), the errors a shell user meets, paging, and a real process with the real
model."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from typer.testing import CliRunner

from langmem_edge.cli import app
from langmem_edge.cli.base import (
    EXIT_FAILURE,
    EXIT_INVALID,
    EXIT_NOT_FOUND,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    FAKE_EMBEDDINGS_ENV,
)
from langmem_edge.memory.records import MemoryRecord, new_memory_id
from langmem_edge.memory.transfer import EXPORT_FORMAT, EXPORT_VERSION

Run = Callable[..., Result]


def runner_for(options: list[str]) -> Run:
    runner = CliRunner(env={FAKE_EMBEDDINGS_ENV: "1"})

    def run(*args: str, input: str | None = None, code: int = 0) -> Result:
        result = runner.invoke(app, [*options, *args], input=input)
        assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
        return result

    return run


@pytest.fixture(params=["folder", pytest.param("server", marks=pytest.mark.server)])
def cli(request: pytest.FixtureRequest, tmp_path: Path) -> Run:
    """``cli(*args, input=..., code=0)``: run a command on a folder or on the session's
    server (a namespace of its own), check the exit code, return the result."""
    if request.param == "folder":
        return runner_for(["--path", str(tmp_path / "memory")])
    url = request.getfixturevalue("chroma_server_url")
    return runner_for(["--url", url, "--namespace", f"t{uuid.uuid4().hex[:12]}"])


def js(result: Result) -> Any:
    return json.loads(result.stdout)


def test_memories_commands(cli: Run) -> None:
    first = js(cli("remember", "Alice prefers light mode", "--key", "preference.ui_theme",
                   "-p", "alice", "--json"))
    second = js(cli("remember", "Alice prefers dark mode", "--key", "preference.ui_theme",
                    "-p", "alice", "--json"))
    assert second["supersedes"] == [first["id"]]
    shown = cli("remember", "Alice lives in Lisbon", "--key", "identity.city", "-p", "alice",
                "--tag", "home", "--contact", "bob")
    assert "Remembered" in shown.stdout
    cli("remember", "Finish the report", "--kind", "task", "-p", "alice")

    got = js(cli("recall", "which theme does alice prefer", "-p", "alice", "--json"))
    assert got["count"] >= 1 and got["candidates"][0]["text"] == "Alice prefers dark mode"
    table = cli("recall", "which theme does alice prefer", "-p", "alice").stdout
    assert "dark" in table and second["id"] in table
    # the rows the relevance fill added are marked as such, with no score on the match scale
    fills = [c for c in got["candidates"] if not c["matched"]]
    assert fills and all(c["score"] == 0.0 for c in fills)
    for c in fills:
        row = next(line for line in table.splitlines() if c["id"] in line)
        assert "fill" in row and "0.000" not in row
    assert f"fill: {len(fills)} of {got['count']} matched nothing" in table
    scoped = js(cli("recall", "where does alice live", "-p", "alice", "--contact", "bob",
                    "--json"))
    assert scoped["candidates"][0]["text"] == "Alice lives in Lisbon"

    chain = js(cli("history", "preference.ui_theme", "-p", "alice", "--json"))
    assert [(m["id"], m["status"]) for m in chain] == [(first["id"], "superseded"),
                                                      (second["id"], "active")]
    assert "superseded" in cli("history", "preference.ui_theme", "-p", "alice").stdout

    one = js(cli("show", second["id"], "-p", "alice", "--json"))
    assert one["text"] == "Alice prefers dark mode" and one["key"] == "preference.ui_theme"
    assert "preference.ui_theme" in cli("show", second["id"], "-p", "alice").stdout

    page = js(cli("list", "-p", "alice", "--json"))
    assert [m["text"] for m in page["memories"]] == [
        "Alice prefers dark mode", "Alice lives in Lisbon", "Finish the report"]
    assert page["next_cursor"] is None
    tasks = js(cli("list", "-p", "alice", "--kind", "task", "--json"))["memories"]
    assert [m["kind"] for m in tasks] == ["task"]
    assert "Lisbon" in cli("list", "-p", "alice").stdout

    forgotten = js(cli("forget", second["id"], "-p", "alice", "--reason", "wrong", "--json"))
    assert forgotten["status"] == "forgotten" and forgotten["forgotten_reason"] == "wrong"
    after = js(cli("recall", "which theme does alice prefer", "-p", "alice", "--json"))
    assert second["id"] not in [c["id"] for c in after["candidates"]]
    gone = js(cli("list", "-p", "alice", "--status", "forgotten", "--json"))["memories"]
    assert [m["id"] for m in gone] == [second["id"]]

    text = cli("summary", "-p", "alice").stdout
    assert "# Memory of alice" in text and "Lisbon" in text
    assert js(cli("summary", "-p", "alice", "--json"))["profile"] == "alice"

    stats = js(cli("stats", "--json"))
    assert stats["total"] == 4 and stats["profiles"]["alice"]["by_status"]["forgotten"] == 1
    assert "alice" in cli("stats").stdout


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


CONVERSATION = [
    {"role": "user", "content": "Hi, I live in Singapore and I prefer dark mode."},
    {"role": "assistant", "content": "Noted: Singapore, dark mode."},
    {"role": "user", "content": "I work as a nurse."},
]


def test_ingest_sessions_and_delete_session(cli: Run, tmp_path: Path) -> None:
    jsonl = write(tmp_path / "chat-1.jsonl", "\n".join(json.dumps(m) for m in CONVERSATION))
    first = js(cli("ingest", str(jsonl), "-p", "alice", "--json"))
    assert first["session_id"] == "chat-1" and first["messages_added"] == 3
    assert first["memories_written"]  # the rule-based extractor learnt something
    again = js(cli("ingest", str(jsonl), "-p", "alice", "--json"))
    assert again["messages_added"] == 0 and again["memories_written"] == []
    as_json = write(tmp_path / "c2.json", json.dumps({"messages": CONVERSATION[:2]}))
    shown = cli("ingest", str(as_json), "-p", "alice", "--session", "s2", "--contact", "bob")
    assert "2 new messages of 2" in shown.stdout

    sessions = js(cli("sessions", "-p", "alice", "--json"))
    assert {s["session_id"]: s["messages"] for s in sessions} == {"chat-1": 3, "s2": 2}
    assert "chat-1" in cli("sessions", "-p", "alice").stdout

    refused = cli("delete-session", "chat-1", "-p", "alice", input="n\n", code=EXIT_FAILURE)
    assert "Nothing deleted" in refused.stderr
    assert len(js(cli("sessions", "-p", "alice", "--json"))) == 2
    done = js(cli("delete-session", "chat-1", "-p", "alice", "--json", "--yes"))
    assert done["messages_deleted"] == 3 and done["memories_deleted"] == len(
        first["memories_written"])
    assert [s["session_id"] for s in js(cli("sessions", "-p", "alice", "--json"))] == ["s2"]
    missing = cli("delete-session", "chat-1", "-p", "alice", "--yes", code=EXIT_NOT_FOUND)
    assert "no session 'chat-1'" in missing.stderr and "'s2'" in missing.stderr


@pytest.mark.parametrize("content, says", [
    ("this is not json\n", "line 1 is not JSON"),
    ('{"foo": 1}', "message 1 is not a message"),
    ('[{"role": "user", "content": "hi"}, {"role": "user"}]', "message 2 is not a message"),
    ('{"role": "user", "content": "ok"}\n[1, 2]\n', "line 2 is not a message"),
    ('{"role": "user", "content": "ok"}\n{"role": "bot", "content": "x"}\n',
     "line 2: role 'bot' is not one of"),
    ("42", "holds a JSON int"),
    ("", "is empty"),
    ("[]", "holds no messages"),
])
def test_ingest_refuses_files_that_are_not_messages(tmp_path: Path, content: str,
                                                    says: str) -> None:
    cli = runner_for(["--path", str(tmp_path / "memory")])
    result = cli("ingest", str(write(tmp_path / "bad.jsonl", content)), code=EXIT_INVALID)
    assert says in result.stderr and "error:" in result.stderr
    assert result.stdout == ""


def test_missing_things_exit_3(cli: Run, tmp_path: Path) -> None:
    cli("remember", "Alice prefers tea", "-p", "alice")
    result = cli("recall", "tea", "-p", "nobody", code=EXIT_NOT_FOUND)
    assert "no profile 'nobody'" in result.stderr and "'alice'" in result.stderr
    cli("recall", "tea", code=EXIT_NOT_FOUND)  # the default profile is empty
    assert "no memory 'nope'" in cli("show", "nope", "-p", "alice",
                                     code=EXIT_NOT_FOUND).stderr
    cli("forget", "nope", "-p", "alice", code=EXIT_NOT_FOUND)
    assert "no memory under key" in cli("history", "x.y", "-p", "alice",
                                        code=EXIT_NOT_FOUND).stderr
    for command in (["list"], ["summary"], ["sessions"], ["delete-profile", "--yes"]):
        cli(*command, "-p", "nobody", code=EXIT_NOT_FOUND)
    cli("export", str(tmp_path / "x.jsonl"), "-p", "nobody", code=EXIT_NOT_FOUND)
    cli("list", "-p", "alice", "--status", "maybe", code=EXIT_INVALID)


def test_a_folder_that_does_not_exist(tmp_path: Path) -> None:
    cli = runner_for(["--path", str(tmp_path / "nothing-here")])
    result = cli("recall", "tea", code=EXIT_NOT_FOUND)
    assert "no memory store at" in result.stderr and "nothing-here" in result.stderr
    assert not (tmp_path / "nothing-here").exists()  # a read does not create it


def test_a_server_that_does_not_answer() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cli = runner_for(["--url", f"http://127.0.0.1:{port}"])
    result = cli("stats", code=EXIT_UNAVAILABLE)
    assert f"http://127.0.0.1:{port} does not answer" in result.stderr
    assert "chroma run" in result.stderr


def test_path_and_url_together_is_a_usage_error(tmp_path: Path) -> None:
    result = runner_for(["--path", str(tmp_path), "--url", "http://127.0.0.1:1"])(
        "stats", code=EXIT_USAGE)
    assert "not both" in result.stderr


def test_delete_profile_asks_first(cli: Run) -> None:
    cli("remember", "Bob likes jazz", "-p", "bob")
    cli("remember", "Alice likes tea", "-p", "alice")
    cli("delete-profile", "-p", "bob", input="n\n", code=EXIT_FAILURE)
    assert "Bob likes jazz" in cli("summary", "-p", "bob").stdout
    assert "Deleted profile 'bob'" in cli("delete-profile", "-p", "bob", input="y\n").stdout
    cli("recall", "jazz", "-p", "bob", code=EXIT_NOT_FOUND)
    assert js(cli("stats", "--json"))["total"] == 1
    cli("remember", "Carol likes chess", "-p", "carol")
    out = js(cli("delete-profile", "-p", "carol", "--yes", "--json"))
    assert out["profile"] == "carol" and out["items_deleted"] > 0


def test_export_import_round_trip(cli: Run, tmp_path: Path) -> None:
    cli("remember", "Alice prefers light mode", "--key", "preference.ui_theme", "-p", "alice")
    cli("remember", "Alice prefers dark mode", "--key", "preference.ui_theme", "-p", "alice")
    cli("ingest", str(write(tmp_path / "s1.json", json.dumps(CONVERSATION))), "-p", "alice")
    cli("remember", "Zed likes chess", "-p", "zed")
    dump = tmp_path / "alice.jsonl"
    exported = js(cli("export", str(dump), "-p", "alice", "--json"))
    assert exported["profiles"] == ["alice"] and exported["counts"]["message"] == 3
    header = json.loads(dump.read_text().splitlines()[0])
    assert header["format"] == EXPORT_FORMAT and header["version"] == EXPORT_VERSION
    everything = cli("export").stdout.splitlines()  # to standard output, every profile
    assert json.loads(everything[0])["profiles"] == ["alice", "zed"]
    assert json.loads(everything[-1])["type"] == "end"

    other = runner_for(["--path", str(tmp_path / "other")])
    written = js(other("import", str(dump), "--json"))
    assert written["written"] == exported["counts"] and written["profiles"] == ["alice"]
    history = ["history", "preference.ui_theme", "-p", "alice", "--json"]
    assert js(other(*history)) == js(cli(*history))
    query = ["recall", "which theme does alice prefer", "-p", "alice", "--json"]
    ids = [c["id"] for c in js(cli(*query))["candidates"]]
    assert [c["id"] for c in js(other(*query))["candidates"]] == ids
    again = other("import", str(dump))
    assert "written nothing" in again.stdout
    assert js(other("import", str(dump), "--json"))["existing"] == exported["counts"]
    bad = other("import", str(write(tmp_path / "no.jsonl", '{"role": "user"}\n')),
                code=EXIT_INVALID)
    assert "not a langmem-edge export header" in bad.stderr


def memories_export(path: Path, profile: str, texts: list[str]) -> list[str]:
    """An export file of one memory per text (written as they are: `remember` would fold
    near-duplicates itself); returns their ids."""
    now = datetime.now(UTC)
    records = [MemoryRecord(id=new_memory_id(), profile=profile, text=t, created_at=now,
                            updated_at=now, valid_from=now, embedding_status="complete")
               for t in texts]
    lines = [json.dumps({"type": "header", "format": EXPORT_FORMAT, "version": EXPORT_VERSION,
                         "namespace": ["langmem_edge"], "profiles": [profile]})]
    lines += [json.dumps({"type": "memory", "profile": profile, "key": r.id,
                          "value": r.to_value()}) for r in records]
    lines.append(json.dumps({"type": "end", "lines": len(records),
                             "counts": {"memory": len(records)}}))
    path.write_text("\n".join(lines) + "\n")
    return [r.id for r in records]


def test_consolidate(cli: Run, tmp_path: Path) -> None:
    texts = ["alice drinks green tea every morning", "alice drinks hot green tea every morning",
             "alice drinks hot green tea every morning", "the office is in Lisbon"]
    ids = memories_export(tmp_path / "a.jsonl", "alice", texts)
    cli("import", str(tmp_path / "a.jsonl"))
    cli("remember", "Zed likes chess", "-p", "zed")
    report = js(cli("consolidate", "-p", "alice", "--json"))
    assert [p["profile"] for p in report["profiles"]] == ["alice"]
    (merge,) = report["profiles"][0]["merged"]
    assert set(merge["members"]) == set(ids[:3]) and merge["by"] == "rules"
    assert report["changed"] and report["merged"] == 1
    active = js(cli("list", "-p", "alice", "--json"))["memories"]
    assert sorted(m["text"] for m in active) == sorted(texts[2:])
    # a second pass at once changes nothing; --all covers every profile; the table
    again = js(cli("consolidate", "--all", "--json"))
    assert [p["profile"] for p in again["profiles"]] == ["alice", "zed"]
    assert not again["changed"] and again["merged"] == 0
    table = cli("consolidate", "-p", "alice").stdout
    assert "0 decayed, 0 merged" in table and "alice" in table
    missing = cli("consolidate", "-p", "nobody", code=EXIT_NOT_FOUND)
    assert "no profile 'nobody'" in missing.stderr


def test_reflect(cli: Run, tmp_path: Path) -> None:
    cli("ingest", str(write(tmp_path / "s1.json", json.dumps(CONVERSATION))), "-p", "alice",
        "--session", "s1")
    got = js(cli("reflect", "-p", "alice", "--json"))
    assert got["written"] and got["profile"] == "alice"
    reflection = got["reflection"]
    assert reflection["by"] == "rules" and reflection["sessions"] == ["s1"]
    assert reflection["messages_reviewed"] == len(CONVERSATION)
    # nothing new since: nothing written, said in words
    assert not js(cli("reflect", "-p", "alice", "--json"))["written"]
    assert "Nothing new to reflect on" in cli("reflect", "-p", "alice").stdout
    # the reflection travels with an export
    dump = tmp_path / "a.jsonl"
    assert js(cli("export", str(dump), "-p", "alice", "--json"))["counts"]["reflection"] == 1
    cli("reflect", "-p", "nobody", code=EXIT_NOT_FOUND)


def test_reflect_prints_the_reflection(tmp_path: Path) -> None:
    cli = runner_for(["--path", str(tmp_path / "memory")])
    cli("ingest", str(write(tmp_path / "s1.json", json.dumps(CONVERSATION))), "-p", "alice",
        "--session", "s1")
    shown = cli("reflect", "-p", "alice").stdout
    assert "Reflection" in shown and "summary" in shown and "by rules" in shown


def bulk_export(path: Path, n: int) -> set[str]:
    """An export file of ``n`` memories of profile ``bulk`` (faster than n remembers)."""
    now = datetime.now(UTC)
    ids = []
    lines = [json.dumps({"type": "header", "format": EXPORT_FORMAT, "version": EXPORT_VERSION,
                         "namespace": ["langmem_edge"], "profiles": ["bulk"]})]
    for i in range(n):
        record = MemoryRecord(id=new_memory_id(), profile="bulk", text=f"bulk memory {i}",
                              created_at=now, updated_at=now, valid_from=now)
        ids.append(record.id)
        lines.append(json.dumps({"type": "memory", "profile": "bulk", "key": record.id,
                                 "value": record.to_value()}))
    lines.append(json.dumps({"type": "end", "lines": n, "counts": {"memory": n}}))
    path.write_text("\n".join(lines) + "\n")
    return set(ids)


@pytest.mark.slow  # 1,200 memories through the CLI (15 s)
def test_paging_through_1200_memories_returns_each_once(cli: Run, tmp_path: Path) -> None:
    expected = bulk_export(tmp_path / "bulk.jsonl", 1200)
    cli("import", str(tmp_path / "bulk.jsonl"))
    for limit, newest_first in ((500, False), (170, True)):
        seen: list[str] = []
        cursor: list[str] = []
        pages = 0
        while True:
            flags = ["--newest-first"] if newest_first else []
            page = js(cli("list", "-p", "bulk", "--limit", str(limit), *flags, *cursor,
                          "--json"))
            seen += [m["id"] for m in page["memories"]]
            pages += 1
            if page["next_cursor"] is None:
                break
            cursor = ["--cursor", page["next_cursor"]]
        assert len(seen) == len(set(seen)) == 1200 and set(seen) == expected
        assert seen == sorted(seen, reverse=newest_first)
        assert pages == -(-1200 // limit)
    cli("list", "-p", "bulk", "--limit", "501", code=EXIT_INVALID)


def _commands() -> list[tuple[list[str], Any]]:
    """``(argv, click command)`` of every command, sub-commands included."""
    import typer.main

    def walk(cmd: Any, path: list[str]) -> list[tuple[list[str], Any]]:
        found = [(path, cmd)] if path else []
        for name, sub in getattr(cmd, "commands", {}).items():
            found += walk(sub, [*path, name])
        return found

    return walk(typer.main.get_command(app), [])


@pytest.mark.parametrize(("argv", "command"), _commands(), ids=lambda v: " ".join(v)
                         if isinstance(v, list) else "")
def test_help_reads_as_written(argv: list[str], command: Any) -> None:
    """Flags show no value type (it was ``--json <bool>``) and each paragraph of a command's
    help is one paragraph on screen, not cut where the source line ended."""
    import inspect
    import re

    result = CliRunner(env={"COLUMNS": "400"}).invoke(app, [*argv, "--help"])
    assert result.exit_code == 0, result.output
    screen = re.sub(r"\s+", " ", result.stdout)
    assert "<bool>" not in screen
    for paragraph in inspect.cleandoc(command.help or "").split("\n\n"):
        flowed = re.sub(r"\s+", " ", paragraph.replace("`", "")).strip()
        lines = [line.strip(" │") for line in result.stdout.splitlines()]
        assert any(flowed in line for line in lines), (flowed, result.stdout)


def test_the_progress_bar_shows_a_known_total_from_the_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An ingest of 400 messages showed ``0/?`` for its whole 25-30 s."""
    import io

    from rich.console import Console

    from langmem_edge.cli import base

    screen = io.StringIO()
    monkeypatch.setattr(base, "err", Console(file=screen, force_terminal=True, width=80))
    with base.progress("Ingesting chat.json", total=400):
        pass
    assert "0/400" in screen.getvalue() and "0/?" not in screen.getvalue()


def test_counts_agree_with_their_nouns() -> None:
    from langmem_edge.cli.base import plural

    assert [plural(n, "memory") for n in (0, 1, 8)] == ["0 memories", "1 memory", "8 memories"]
    assert plural(2, "new message") == "2 new messages" and plural(1, "day") == "1 day"
    assert plural(3, "day") == "3 days"


def test_help_lists_every_command() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("remember", "recall", "ingest", "list", "show", "forget", "history",
                    "summary", "export", "import", "stats", "sessions", "delete-session",
                    "delete-profile", "consolidate", "reflect", "documents", "demo", "chat",
                    "ui"):
        assert command in result.stdout


def run_process(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k != FAKE_EMBEDDINGS_ENV}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          env={**clean, **(env or {})}, timeout=600,
                          cwd=Path(__file__).resolve().parent.parent)


@pytest.mark.slow
def test_a_real_process_with_the_real_model(tmp_path: Path) -> None:
    """The console command as a user runs it: the real model, no loading bar, exit codes."""
    store = ["-m", "langmem_edge.cli", "--path", str(tmp_path / "m")]
    wrote = run_process(*store, "remember", "Alice is allergic to peanuts", "-p", "alice")
    assert wrote.returncode == 0, wrote.stderr
    assert "Loading weights" not in wrote.stderr and wrote.stderr.strip() == ""
    run_process(*store, "remember", "Alice lives in Singapore", "-p", "alice")
    got = run_process(*store, "recall", "what food must she avoid?", "-p", "alice", "--json")
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["candidates"][0]["text"] == "Alice is allergic to peanuts"
    missing = run_process(*store, "recall", "x", "-p", "nobody")
    assert missing.returncode == EXIT_NOT_FOUND and "no profile 'nobody'" in missing.stderr


MODEL_MODULES = ("torch", "sentence_transformers", "transformers", "onnxruntime", "tokenizers")
"""What loading an embedding model imports (the default's: onnxruntime, tokenizers)."""


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A folder with a memory, its history and a session (fake vectors: only to make it)."""
    folder = tmp_path_factory.mktemp("cli-imports") / "m"
    cli = runner_for(["--path", str(folder)])
    cli("remember", "Alice likes tea", "--key", "preference.drink", "-p", "alice")
    memory_id = js(cli("remember", "Alice likes coffee", "--key", "preference.drink", "-p",
                       "alice", "--json"))["id"]
    lines = [json.dumps({"role": "user", "content": "hello there"})]
    cli("ingest", str(write(folder.parent / "chat.jsonl", "\n".join(lines))), "-p", "alice",
        "--session", "chat-1")
    return folder, memory_id


def imported_by(folder: Path, *args: str) -> list[str]:
    """Run one command (real embeddings configured) in a new process: the model modules it
    imported."""
    probe = (
        "import sys; from typer.testing import CliRunner; from langmem_edge.cli import app; "
        f"r = CliRunner().invoke(app, ['--path', {str(folder)!r}, *{list(args)!r}]); "
        "assert r.exit_code == 0, r.output; "
        f"print([m for m in {MODEL_MODULES!r} if m in sys.modules])")
    done = run_process("-c", probe)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().replace("'", '"'))


@pytest.mark.parametrize("command", [
    ["list", "-p", "alice", "--json"],
    ["show", "{id}", "-p", "alice", "--json"],
    ["history", "preference.drink", "-p", "alice", "--json"],
    ["stats", "--json"],
    ["sessions", "-p", "alice", "--json"],
    ["export", "-"],
], ids=lambda c: c[0])
def test_commands_that_embed_nothing_never_import_a_model(
        written: tuple[Path, str], command: list[str]) -> None:
    """No text to embed, no model: neither onnxruntime and tokenizers (the default) nor
    torch is imported, so these commands start in about the time of chromadb's import."""
    folder, memory_id = written
    assert imported_by(folder, *(a.format(id=memory_id) for a in command)) == []


def test_recall_never_imports_torch(written: tuple[Path, str]) -> None:
    """``recall`` embeds its query with the default model: onnxruntime, never torch."""
    folder, _ = written
    assert imported_by(folder, "recall", "what does alice drink?", "-p", "alice",
                       "--json") == ["onnxruntime", "tokenizers"]


def test_ingest_of_more_messages_than_one_call_takes(tmp_path: Path) -> None:
    cli = runner_for(["--path", str(tmp_path / "memory")])
    lines = [json.dumps({"role": "user" if i % 2 == 0 else "assistant",
                         "content": f"weather report number {i}"}) for i in range(1001)]
    done = js(cli("ingest", str(write(tmp_path / "long.jsonl", "\n".join(lines))), "--json"))
    assert done["messages"] == done["messages_added"] == 1001
    assert js(cli("sessions", "--json"))[0]["messages"] == 1001
    lines[700] = json.dumps({"role": "bot", "content": "x"})
    bad = cli("ingest", str(write(tmp_path / "bad.jsonl", "\n".join(lines))), "--session",
              "other", code=EXIT_INVALID)
    assert "bad.jsonl line 701: role 'bot' is not one of" in bad.stderr
    assert "the messages before it were stored" in bad.stderr


def test_the_console_script_is_the_app() -> None:
    import tomllib

    from langmem_edge.cli import main

    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml")
                            .read_text())["project"]
    assert project["scripts"]["langmem-edge"] == "langmem_edge.cli:main"
    assert callable(main)
    assert any(dep.startswith("typer") for dep in project["dependencies"])


def test_analyze_takes_a_folders_statistics_and_refuses_a_missing_one(tmp_path: Path) -> None:
    cli = runner_for(["--path", str(tmp_path / "memory")])
    cli("remember", "Likes tea")
    result = cli("analyze", str(tmp_path / "memory"))
    assert "Planner statistics taken on" in result.stdout
    assert "no Chroma folder" in cli("analyze", str(tmp_path / "nothing"),
                                     code=EXIT_NOT_FOUND).stderr
    assert not (tmp_path / "nothing").exists()


def test_pending_lists_what_a_dead_job_owes_and_flush_writes_it(tmp_path: Path) -> None:
    """A post-turn job stored a session's messages, then died before writing their memories
    (the server went away, the process was killed): the session's extraction mark says what it
    owes, ``pending`` lists it from any process, ``flush`` writes it, once."""
    from langmem_edge import AgentMemory, ChromaStore
    from langmem_edge.cli.base import DEFAULT_NAMESPACE
    from langmem_edge.embeddings import DEFAULT_DIMS
    from langmem_edge.testing import FakeEmbeddings

    folder = tmp_path / "memory"
    store = ChromaStore.from_path(str(folder), index={
        "dims": DEFAULT_DIMS, "embed": FakeEmbeddings(DEFAULT_DIMS), "fields": ["text"]})
    try:
        profile = AgentMemory(store, namespace=(DEFAULT_NAMESPACE,)).profile("carol")
        # what Profile.ingest does before it writes the memories: store, mark left behind
        profile._episodic().ingest(CONVERSATION, "carol-t0", confirm_later=True)
        assert profile.list().memories == []
    finally:
        store.close()
    cli = runner_for(["--path", str(folder)])
    owed = js(cli("pending", "--all", "--json"))
    assert [(o["profile"], o["session_id"], o["pending"]) for o in owed] == [
        ("carol", "carol-t0", 3)]
    assert "carol-t0" in cli("pending", "-p", "carol").stdout
    flushed = cli("flush", "--all")
    assert "Flushed 1 session:" in flushed.stdout and "memories written" in flushed.stdout
    assert js(cli("pending", "--all", "--json")) == []
    assert "Flushed 0 sessions: 0 memories written." in cli("flush", "--all").stdout
    texts = [m["text"] for m in js(cli("list", "-p", "carol", "--json"))["memories"]]
    assert any("Singapore" in t for t in texts) and len(texts) == len(set(texts))
    again = js(cli("flush", "--all", "--json"))
    assert again == {"flushed": [], "failed": []}


def test_python_dash_m_runs_the_same_command(monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m langmem_edge.cli`` is the ``langmem-edge`` command (in process: the fast
    loop covers the entry module too)."""
    import runpy

    monkeypatch.setattr(sys, "argv", ["langmem-edge", "--help"])
    with pytest.raises(SystemExit) as exited:
        runpy.run_module("langmem_edge.cli", run_name="__main__")
    assert exited.value.code == 0
    assert "memories" in capsys.readouterr().out
