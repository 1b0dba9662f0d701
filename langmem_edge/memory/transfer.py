"""Export and import: profiles as JSON Lines, and back (the user's exit path).

``export_jsonl(memory, "alice.jsonl", profiles=["alice"])`` writes one profile (or, without
``profiles``, every profile of the memory's namespace); ``import_jsonl(memory, "alice.jsonl")``
writes it into another (or the same) ``AgentMemory``. Both read and write through the
``BaseStore`` API only, so an export from a Chroma folder imports into a Chroma server, an
``InMemoryStore`` or langgraph's SQL stores. The format is documented in ``docs/export.md``::

    {"type": "header", "format": "langmem-edge-export", "version": 1, "namespace": [...],
     "profiles": [...], "exported_at": "..."}
    {"type": "memory", "profile": "alice", "key": "<memory id>", "value": {...}}
    {"type": "access", "profile": "alice", "memory_id": "...", "key": "<writer>", "value": {...}}
    {"type": "message", "profile": "alice", "session_id": "s1", "key": "<message id>", ...}
    {"type": "overlay", "profile": "alice", "session_id": "s1", "key": "...", "value": {...}}
    {"type": "session", "profile": "alice", "key": "s1", "value": {...}}
    {"type": "working", "profile": "alice", "thread": "t1", "key": "notes", "value": {...}}
    {"type": "goal", "profile": "alice", "key": "<goal id>", "value": {...}}
    {"type": "reflection", "profile": "alice", "key": "<reflection id>", "value": {...}}
    {"type": "document", "profile": "alice", "key": "<document id>", "value": {...}}
    {"type": "document_text", "profile": "alice", "document_id": "...", "key": "000000", ...}
    {"type": "contact_link", "profile": "alice", "key": "telegram:123", "value": {...}}
    {"type": "end", "lines": 42, "counts": {"memory": 10, ...}}

Every line between the header and the end line is one store item of a profile: its record
type, the profile, the label of its namespace below the type's part (the session, thread or
memory it belongs to) and the item's key and value, exactly as stored. Memories keep their
ids, statuses and ``supersedes`` / ``superseded_by`` pointers, so every supersession chain and
``history`` comes back as it was.

**Adding record types.** A line's ``type`` says what it is; a reader skips (and counts) types
it does not know, so new records are added as new types without a new format version (the
reflective tier's ``goal`` lines, each with its whole history, and ``reflection`` lines came
this way: an older reader skips them and imports the rest). ``version`` changes only when a
line of a known type changes meaning; a reader refuses a version newer than its own.

**Import** checks the whole file before writing anything (header first, a known format and
version, every line of a known type well formed, the end line's counts matching: a cut-off
file is refused). Then it writes, per profile: access counts, messages, overlays, working
rows, session records, goals, reflections, documents' texts, documents (each cut into
passages and embedded again, as ``documents.add`` does: passages are not exported), and last
the memories (one write of the change
protocol per batch, so every process's index sees them). An item already present (same
namespace and key) is
left as it is and counted as ``existing``: importing a file twice changes nothing the second
time, and an import after a partial one finishes it. Memories are embedded again by the
target store (vectors are not exported; the same model gives the same vectors).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from langgraph.store.base import GetOp, PutOp, SearchOp
from pydantic import BaseModel, Field, ValidationError

from langmem_edge.errors import InvalidInputError, NotFoundError
from langmem_edge.memory.agent import AgentMemory
from langmem_edge.memory.core.labels import check_label, under
from langmem_edge.memory.core.layout import ProfileLayout
from langmem_edge.memory.core.plans import Call, Plan, batch, run_async, run_sync
from langmem_edge.memory.core.validate import check_profile_name
from langmem_edge.memory.documents import Document
from langmem_edge.memory.documents.plans import DocumentScope, plan_restore
from langmem_edge.memory.episodic.embedded import MESSAGE_INDEX_FIELDS
from langmem_edge.memory.index.profile_index import ProfileIndex
from langmem_edge.memory.index.store_io import plan_write_records
from langmem_edge.memory.records import MemoryRecord, SessionInfo, utcnow, with_live
from langmem_edge.memory.reflective.records import Goal, Reflection

__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "RECORD_TYPES",
    "ExportResult",
    "ImportResult",
    "RecordType",
    "SessionInfo",
    "aexport_jsonl",
    "aimport_jsonl",
    "alist_sessions",
    "export_jsonl",
    "import_jsonl",
    "list_sessions",
]

EXPORT_FORMAT = "langmem-edge-export"
"""The header's ``format``: what the file is."""

EXPORT_VERSION = 1
"""The format version this module writes, and the newest it reads."""

IMPORT_BATCH = 200
"""Items checked and written per store batch on import."""

PROGRESS_EVERY = 200
"""Export lines between two ``on_progress`` calls (and one at the end of each profile)."""

READ_LIMIT = 100_000_000
"""``limit`` of the one search that reads a part of a profile on export (offset pages are
not stable on stores that order by update time while others write)."""

MAX_LABEL_CHARS = 200
"""Longest session id, thread id or memory id a line may name."""

Progress = Callable[[int, int], None]
"""``on_progress(done, total)``: lines written (or imported) so far, and the total known."""


@dataclass(frozen=True)
class RecordType:
    """One kind of line: where its items live under a profile's root and how they are put.

    ``part`` is the namespace labels under the profile root (``("memories",)``,
    ``("reflective", "goals")``...);
    ``label`` names the line field holding the one label below it (``session_id`` of a
    message), ``None`` when the items sit right in the part; ``embed`` is what a put passes
    as ``index``: ``None`` (the store's fields, as the tier writes them) or ``False``.
    """

    name: str
    part: tuple[str, ...]
    label: str | None = None
    embed: bool | None = False
    record: type[BaseModel] | None = None
    """The model a value must validate as (its ``id`` is the key), or ``None``."""

    def namespace(self, layout: ProfileLayout, label: str | None) -> tuple[str, ...]:
        """The namespace of an item of this type (``label`` given iff the type has one)."""
        base = (*layout.root, *self.part)
        return (*base, label) if label is not None else base


def _put_index(kind: RecordType, value: dict[str, Any]) -> list[str] | bool | None:
    """What the put of an imported item passes as ``index``: a message written with its
    embedded field (:mod:`~langmem_edge.memory.episodic.embedded`) embeds that field, as the
    tier wrote it; otherwise the type's ``embed``."""
    if kind.name == "message" and "embed_text" in value:
        return list(MESSAGE_INDEX_FIELDS)
    return kind.embed


RECORD_TYPES: dict[str, RecordType] = {
    "access": RecordType("access", ("access",), "memory_id"),
    "message": RecordType("message", ("messages",), "session_id", embed=None),
    "overlay": RecordType("overlay", ("overlays",), "session_id"),
    "session": RecordType("session", ("sessions",)),
    "working": RecordType("working", ("working",), "thread"),
    "goal": RecordType("goal", ("reflective", "goals"), record=Goal),
    "reflection": RecordType("reflection", ("reflective", "reflections"), record=Reflection),
    "document_text": RecordType("document_text", ("documents", "texts"), "document_id"),
    "document": RecordType("document", ("documents", "records"), record=Document),
    "contact_link": RecordType("contact_link", ("contacts",)),
    "memory": RecordType("memory", ("memories",), record=MemoryRecord),
}
"""The record types of format version 1, in the order an import writes them (memories
last, once the messages they cite are there). The reflective tier's leases are transient
and not exported."""

EXPORT_ORDER = ("memory", "access", "session", "message", "overlay", "working", "goal",
                "reflection", "document", "document_text", "contact_link")
"""The order of the lines of one profile in an export."""


class ExportResult(BaseModel):
    """What :func:`export_jsonl` wrote."""

    profiles: list[str] = Field(default_factory=list)
    """The profiles exported."""
    counts: dict[str, int] = Field(default_factory=dict)
    """Lines written, by record type."""


class ImportResult(BaseModel):
    """What :func:`import_jsonl` did."""

    profiles: list[str] = Field(default_factory=list)
    """The profiles the file held (after the ``profiles`` filter)."""
    written: dict[str, int] = Field(default_factory=dict)
    """Items written, by record type."""
    existing: dict[str, int] = Field(default_factory=dict)
    """Items already present and left as they were, by record type."""
    unknown: dict[str, int] = Field(default_factory=dict)
    """Lines of record types this version does not know (skipped), by type."""


@dataclass(frozen=True)
class _Line:
    type: RecordType
    profile: str
    label: str | None
    key: str
    value: dict[str, Any]

    def to_json(self) -> str:
        out: dict[str, Any] = {"type": self.type.name, "profile": self.profile}
        if self.type.label is not None:
            out[self.type.label] = self.label
        out.update(key=self.key, value=self.value)
        return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


# -- reading a profile ---------------------------------------------------------------------


def _plan_read(memory: AgentMemory, name: str, types: Sequence[str]) -> Plan[list[_Line]]:
    """Every item of ``name`` of the given record types, as lines (one batch of searches)."""
    layout = ProfileLayout(memory.namespace, name)
    kinds = [RECORD_TYPES[t] for t in types]
    prefixes = [k.namespace(layout, None) for k in kinds]
    found = yield batch(memory.store, [SearchOp(p, limit=READ_LIMIT) for p in prefixes])
    lines: list[_Line] = []
    for kind, prefix, items in zip(kinds, prefixes, found, strict=True):
        depth = len(prefix) + (kind.label is not None)
        got = []
        for it in items:
            ns = tuple(it.namespace)
            if len(ns) != depth or not under(ns, prefix) or it.value.get("profile") != name:
                continue  # another profile's value, or a namespace this version does not know
            label = ns[-1] if kind.label is not None else None
            got.append(_Line(kind, name, label, it.key, dict(it.value)))
        if kind.name == "message":
            got.sort(key=lambda ln: (ln.label or "", int(ln.value.get("seq", 0)), ln.key))
        else:
            got.sort(key=lambda ln: (ln.label or "", ln.key))
        lines += got
    return lines


def _plan_profiles(memory: AgentMemory, profiles: Sequence[str] | None) -> Plan[list[str]]:
    if profiles is None:
        names: list[str] = yield Call(memory.list_profiles, memory.alist_profiles)
        return names
    limit = memory.config.limits.max_profile_chars
    wanted = list(dict.fromkeys(check_profile_name(p, limit) for p in profiles))
    present = set((yield Call(memory.list_profiles, memory.alist_profiles)))
    missing = [p for p in wanted if p not in present]
    if missing:
        raise NotFoundError(f"no profile {missing[0]!r} in namespace {memory.namespace!r} "
                            f"(it holds nothing); profiles: {_some(sorted(present))}")
    return wanted


def _some(names: Sequence[str], shown: int = 10) -> str:
    if not names:
        return "none"
    more = f", ... ({len(names) - shown} more)" if len(names) > shown else ""
    return ", ".join(repr(n) for n in names[:shown]) + more


# -- export ----------------------------------------------------------------------------------


def _plan_export(memory: AgentMemory, profiles: Sequence[str] | None,
                 emit: Callable[[str], None], on_progress: Progress | None
                 ) -> Plan[ExportResult]:
    names = yield from _plan_profiles(memory, profiles)
    emit(json.dumps({"type": "header", "format": EXPORT_FORMAT, "version": EXPORT_VERSION,
                     "namespace": list(memory.namespace), "profiles": names,
                     "exported_at": utcnow().isoformat()}, ensure_ascii=False))
    counts: Counter[str] = Counter()
    done = total = 0
    for name in names:
        lines = yield from _plan_read(memory, name, EXPORT_ORDER)
        total += len(lines)
        for line in lines:
            emit(line.to_json())
            counts[line.type.name] += 1
            done += 1
            if on_progress is not None and (done % PROGRESS_EVERY == 0 or done == total):
                on_progress(done, total)
        if on_progress is not None and not lines:
            on_progress(done, total)
    emit(json.dumps({"type": "end", "lines": done, "counts": dict(counts)}))
    return ExportResult(profiles=names, counts=dict(counts))


class _Sink:
    """Where export lines go: a text file given, or a path written through a temporary
    file renamed at the end (a failed export leaves no half file under the name)."""

    def __init__(self, dest: str | os.PathLike[str] | IO[str]) -> None:
        if isinstance(dest, str | os.PathLike):
            self.path: Path | None = Path(dest)
            self.tmp = self.path.with_name(self.path.name + ".partial")
            self.file: IO[str] = open(self.tmp, "w", encoding="utf-8")  # noqa: SIM115
        else:
            self.path, self.file = None, dest

    def emit(self, line: str) -> None:
        self.file.write(line + "\n")

    def close(self, ok: bool) -> None:
        if self.path is None:
            self.file.flush()
            return
        self.file.close()
        if ok:
            os.replace(self.tmp, self.path)
        else:
            self.tmp.unlink(missing_ok=True)


def export_jsonl(memory: AgentMemory, dest: str | os.PathLike[str] | IO[str], *,
                 profiles: Sequence[str] | None = None,
                 on_progress: Progress | None = None) -> ExportResult:
    """Write ``profiles`` (default: every profile) of ``memory`` to ``dest`` (a path or a
    text file) as JSON Lines (see the module docstring and ``docs/export.md``).

    Raises:
        NotFoundError: a profile named in ``profiles`` holds nothing.
    """
    sink = _Sink(dest)
    ok = False
    try:
        result = run_sync(_plan_export(memory, profiles, sink.emit, on_progress))
        ok = True
        return result
    finally:
        sink.close(ok)


async def aexport_jsonl(memory: AgentMemory, dest: str | os.PathLike[str] | IO[str], *,
                        profiles: Sequence[str] | None = None,
                        on_progress: Progress | None = None) -> ExportResult:
    """Async :func:`export_jsonl` (the store is read asynchronously; lines are written as
    they come)."""
    sink = _Sink(dest)
    ok = False
    try:
        result = await run_async(_plan_export(memory, profiles, sink.emit, on_progress))
        ok = True
        return result
    finally:
        sink.close(ok)


# -- import: checking the file ----------------------------------------------------------------


@dataclass
class _Parsed:
    lines: list[_Line]
    unknown: Counter[str]


def _where(n: int) -> str:
    return f"line {n}"


def _parse_line(raw: str, n: int, *, first: bool) -> dict[str, Any]:
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as e:
        raise InvalidInputError(f"{_where(n)} is not JSON ({e.msg}): an export holds one JSON "
                                "object a line") from e
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        if first:
            _check_header({})
        raise InvalidInputError(f"{_where(n)} is not an export line: a JSON object with a "
                                "'type' is expected")
    return obj


def _check_header(obj: dict[str, Any]) -> None:
    if obj.get("type") != "header" or obj.get("format") != EXPORT_FORMAT:
        raise InvalidInputError(
            "the first line is not a langmem-edge export header (expected type 'header' and "
            f"format {EXPORT_FORMAT!r}): is this a file written by `langmem-edge export`?")
    version = obj.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise InvalidInputError(f"line 1: format version must be a positive integer, got "
                                f"{version!r}")
    if version > EXPORT_VERSION:
        raise InvalidInputError(
            f"the file is format version {version}, written by a newer langmem-edge; this "
            f"one reads versions up to {EXPORT_VERSION}: upgrade langmem-edge to import it")


def _check_item(obj: dict[str, Any], n: int, limit: int) -> _Line:
    kind = RECORD_TYPES[obj["type"]]
    where = f"{_where(n)} ({kind.name})"
    try:
        profile = check_profile_name(obj.get("profile"), limit)
        label = None
        if kind.label is not None:
            label = check_label(obj.get(kind.label), f"{where} {kind.label}", MAX_LABEL_CHARS,
                                allow_blank=True)
    except InvalidInputError as e:
        raise InvalidInputError(f"{where}: {e}") from e
    key, value = obj.get("key"), obj.get("value")
    if not isinstance(key, str) or not key:
        raise InvalidInputError(f"{where}: 'key' must be a non-empty string")
    if not isinstance(value, dict):
        raise InvalidInputError(f"{where}: 'value' must be a JSON object")
    if value.get("profile") != profile:
        raise InvalidInputError(f"{where}: the value belongs to profile "
                                f"{value.get('profile')!r}, the line to {profile!r}")
    if kind.record is not None:
        if value.get("id") != key:
            raise InvalidInputError(f"{where}: the {kind.name}'s id {value.get('id')!r} is not "
                                    f"its key {key!r}")
        try:
            kind.record.model_validate(value)
        except ValidationError as e:
            raise InvalidInputError(f"{where}: not a {kind.name} record: {e}") from e
    return _Line(kind, profile, label, key, value)


def _parse(lines: Iterable[str], limit: int, profiles: set[str] | None) -> _Parsed:
    out: list[_Line] = []
    unknown: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    header = end = None
    n = 0
    for n, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        obj = _parse_line(raw, n, first=header is None)
        if header is None:
            _check_header(obj)
            header = obj
            continue
        if end is not None:
            raise InvalidInputError(f"{_where(n)} comes after the end line")
        if obj["type"] == "end":
            end = obj
        elif obj["type"] in RECORD_TYPES:
            line = _check_item(obj, n, limit)
            seen[line.type.name] += 1
            if profiles is None or line.profile in profiles:
                out.append(line)
        else:
            seen[obj["type"]] += 1
            unknown[obj["type"]] += 1
    if header is None:
        raise InvalidInputError("the file is empty: a langmem-edge export starts with a "
                                "header line")
    if end is None:
        raise InvalidInputError(f"the file ends at line {n} without its end line: it was cut "
                                "short (export again, or copy the whole file)")
    counts = end.get("counts")
    if not isinstance(counts, dict) or {k: v for k, v in counts.items() if v} != dict(seen):
        raise InvalidInputError(f"the end line counts {counts!r} but the file holds "
                                f"{dict(seen)!r}: lines are missing or were added")
    return _Parsed(out, unknown)


def _read(source: str | os.PathLike[str] | IO[str] | Iterable[str]) -> list[str]:
    if isinstance(source, str | os.PathLike):
        try:
            with open(source, encoding="utf-8") as f:
                return f.read().splitlines()
        except UnicodeDecodeError as e:
            raise InvalidInputError(f"{os.fspath(source)!r} is not UTF-8 text: {e}") from e
    return list(source)


# -- import: writing --------------------------------------------------------------------------


def _plan_import(memory: AgentMemory, parsed: _Parsed, on_progress: Progress | None
                 ) -> Plan[ImportResult]:
    store = memory.store
    by_profile: dict[str, list[_Line]] = {}
    for line in parsed.lines:
        by_profile.setdefault(line.profile, []).append(line)
    written: Counter[str] = Counter()
    existing: Counter[str] = Counter()
    total, done = len(parsed.lines), 0
    for name, lines in by_profile.items():
        layout = ProfileLayout(memory.namespace, name)
        index = ProfileIndex(layout, memory.config.recall)
        for type_name, kind in RECORD_TYPES.items():
            todo = [ln for ln in lines if ln.type is kind]
            for lo in range(0, len(todo), IMPORT_BATCH):
                chunk = todo[lo: lo + IMPORT_BATCH]
                spots = [(kind.namespace(layout, ln.label), ln.key) for ln in chunk]
                got = yield batch(store, [GetOp(ns, key) for ns, key in spots])
                fresh = [it is None for it in got]
                new = [(ln, spot) for ln, spot, f in zip(chunk, spots, fresh, strict=True) if f]
                existing[type_name] += len(chunk) - len(new)
                if new and kind.name == "memory":  # absent a moment ago: new records
                    # an export of records written before the ``live`` field gets it here
                    values = [with_live(ln.value) for ln, _ in new]
                    puts = [(v, _memory_index(memory, v)) for v in values]
                    yield from plan_write_records(store, index, new=puts)
                elif new and kind.name == "document":  # its text is in: cut and embed it
                    scope = DocumentScope(store=store, layout=layout,
                                          has_vectors=memory.has_vectors,
                                          page=memory.config.index.page_size)
                    for ln, _ in new:
                        yield from plan_restore(scope, ln.value)
                elif new:
                    yield batch(store, [PutOp(ns, key, ln.value, index=_put_index(kind, ln.value))
                                        for ln, (ns, key) in new])
                written[type_name] += len(new)
                done += len(chunk)
                if on_progress is not None:
                    on_progress(done, total)
    return ImportResult(profiles=list(by_profile), written=dict(written),
                        existing=dict(existing), unknown=dict(parsed.unknown))


def _memory_index(memory: AgentMemory, value: dict[str, Any]) -> list[str] | bool:
    """Embed a memory again iff it had a vector where it came from (and the store has an
    index): tasks, encrypted and pending memories are written as they were."""
    return ["text"] if memory.has_vectors and value.get("embedding_status") == "complete" \
        else False


def _prepared(memory: AgentMemory, source: Any, profiles: Sequence[str] | None) -> _Parsed:
    limit = memory.config.limits.max_profile_chars
    wanted = None if profiles is None else {check_profile_name(p, limit) for p in profiles}
    return _parse(_read(source), limit, wanted)


def import_jsonl(memory: AgentMemory,
                 source: str | os.PathLike[str] | IO[str] | Iterable[str], *,
                 profiles: Sequence[str] | None = None,
                 on_progress: Progress | None = None) -> ImportResult:
    """Import an export (a path, a text file or its lines) into ``memory``: only the
    ``profiles`` given, or every profile in it. The whole file is checked before anything is
    written; items already present are left as they are (idempotent).

    Raises:
        InvalidInputError: the file is not a langmem-edge export, is cut short, has a bad
            line (the message names it) or is of a newer format version.
    """
    parsed = _prepared(memory, source, profiles)
    return run_sync(_plan_import(memory, parsed, on_progress))


async def aimport_jsonl(memory: AgentMemory,
                        source: str | os.PathLike[str] | IO[str] | Iterable[str], *,
                        profiles: Sequence[str] | None = None,
                        on_progress: Progress | None = None) -> ImportResult:
    """Async :func:`import_jsonl` (the file is read before the first await)."""
    parsed = _prepared(memory, source, profiles)
    return await run_async(_plan_import(memory, parsed, on_progress))


# -- sessions -----------------------------------------------------------------------------------


def _plan_sessions(memory: AgentMemory, profile: str) -> Plan[list[SessionInfo]]:
    name = check_profile_name(profile, memory.config.limits.max_profile_chars)
    lines = yield from _plan_read(memory, name, ("session",))
    out = []
    for ln in lines:
        v = ln.value
        end = int(v.get("next_seq") or 0)
        out.append(SessionInfo(session_id=ln.key, messages=int(v.get("count") or 0),
                               first_at=v.get("first_ts"), last_at=v.get("last_ts"),
                               contact=v.get("contact"),
                               pending=max(0, end - int(v.get("extracted_to", end)))))
    return sorted(out, key=lambda s: (s.last_at is None, s.last_at, s.session_id))


def list_sessions(memory: AgentMemory, profile: str) -> list[SessionInfo]:
    """The episodic sessions of ``profile`` (from their session records), least recently
    active first."""
    return run_sync(_plan_sessions(memory, profile))


async def alist_sessions(memory: AgentMemory, profile: str) -> list[SessionInfo]:
    """Async :func:`list_sessions`."""
    return await run_async(_plan_sessions(memory, profile))
