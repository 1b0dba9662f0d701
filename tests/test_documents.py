"""Documents (memory/documents/): text, Markdown and PDF; dedupe by content; status
transitions (processing -> ready, failed with the error); search of ready documents only;
delete leaves nothing; profile and session deletes; isolation; export/import; the recall
injection option; the CLI on a folder and on the server."""

from __future__ import annotations

import io
import json
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from typer.testing import CliRunner

from langmem_edge import AgentMemory, ConfigurationError, InvalidInputError, MemoryOptions
from langmem_edge.cli import app
from langmem_edge.cli.base import EXIT_INVALID, EXIT_NOT_FOUND, FAKE_EMBEDDINGS_ENV
from langmem_edge.memory.documents.reading import chunk_text
from langmem_edge.memory.documents.records import CHUNK_CHARS, CHUNK_OVERLAP_CHARS
from langmem_edge.memory.transfer import export_jsonl, import_jsonl
from langmem_edge.testing import FakeEmbeddings

DIMS = 64

HANDBOOK = "\n\n".join([
    "# Employee handbook",
    "## Vacation\nEvery employee gets twenty-five vacation days a year. Unused vacation days "
    "carry over until March.",
    "## Expenses\nTravel expenses are reimbursed within ten days when the receipt is "
    "uploaded to the finance portal.",
    "## Security\nLaptops must use full-disk encryption and a screen lock after five minutes.",
] + [f"## Appendix {i}\nThe cafeteria menu of week {i} lists soup, salad and pasta."
     for i in range(12)])

RECIPES = ("Grandma's lasagna needs ricotta, mozzarella and a slow tomato sauce. Bake it for "
           "forty minutes at 180 degrees. " * 6)


class ExplodingEmbeddings(FakeEmbeddings):
    """Fake embeddings that raise on any text containing ``EXPLODE``."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if any("EXPLODE" in t for t in texts):
            raise RuntimeError("the embedding model is out of memory")
        return super().embed_documents(texts)


def vector_store(embed: Any = None) -> InMemoryStore:
    return InMemoryStore(index={"dims": DIMS, "embed": embed or FakeEmbeddings(DIMS),
                                "fields": ["text"]})


def pdf_bytes(lines: list[str]) -> bytes:
    """A minimal valid one-page PDF with ``lines`` of Helvetica text (xref offsets exact)."""
    def esc(s: str) -> str:
        return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

    stream = "BT /F1 12 Tf 72 720 Td 14 TL " + " ".join(f"({esc(x)}) Tj T*" for x in lines) \
        + " ET"
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font "
        "<< /F1 5 0 R >> >> /Contents 4 0 R >>",
        f"<< /Length {len(stream.encode('latin-1'))} >>\nstream\n{stream}\nendstream",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{n} 0 obj\n{body}\nendobj\n".encode("latin-1"))
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for off in offsets:
        out.write(f"{off:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
              .encode())
    return out.getvalue()


def items_under(store: BaseStore, prefix: tuple[str, ...]) -> list[Any]:
    return [it for it in store.search(prefix, limit=100_000)
            if tuple(it.namespace[: len(prefix)]) == prefix]


@pytest.fixture
def memory() -> AgentMemory:
    return AgentMemory(vector_store())


# -- reading and chunking -------------------------------------------------------------------


def test_chunks_cover_the_text_with_overlap_and_size() -> None:
    text = " ".join(f"word{i}" for i in range(2_000))
    pieces = chunk_text(text)
    assert all(len(p) <= CHUNK_CHARS for p in pieces)
    assert pieces[0].startswith("word0 ") and pieces[-1].endswith("word1999")
    for a, b in zip(pieces, pieces[1:], strict=False):
        head = b.split()[0]
        assert head in a.split()  # each passage starts inside the one before
        assert len(a) - a.rindex(head) <= CHUNK_OVERLAP_CHARS + len(head) + 1
    words = {w for p in pieces for w in p.split()}
    assert words == set(text.split())  # nothing lost at a boundary


def test_text_markdown_and_pdf(memory: AgentMemory, tmp_path: Path) -> None:
    alice = memory.profile("alice")
    md = tmp_path / "handbook.md"
    md.write_text(HANDBOOK, encoding="utf-8")
    pdf = tmp_path / "travel.pdf"
    pdf.write_bytes(pdf_bytes(["Travel policy", "Book trains for trips under four hours.",
                               "Flights need approval from a manager."]))
    doc_md = alice.documents.add(md, wait=True)
    doc_pdf = alice.documents.add(str(pdf), wait=True)
    doc_txt = alice.documents.add(RECIPES, name="recipes", wait=True)
    assert (doc_md.format, doc_md.name, doc_md.status) == ("markdown", "handbook.md", "ready")
    assert (doc_pdf.format, doc_pdf.name, doc_pdf.status) == ("pdf", "travel.pdf", "ready")
    assert (doc_txt.format, doc_txt.name, doc_txt.status) == ("text", "recipes", "ready")
    assert doc_md.source == str(md.absolute()) and doc_md.chunks >= 2
    hit = alice.documents.search("approval for flights from a manager", limit=1)[0]
    assert hit.document_id == doc_pdf.id and "Flights need approval" in hit.text
    hit = alice.documents.search("unused vacation days carry over", limit=1)[0]
    assert (hit.document_id, hit.name) == (doc_md.id, "handbook.md")
    assert "twenty-five vacation days" in hit.text and hit.score is not None
    hit = alice.documents.search("lasagna ricotta", limit=1)[0]
    assert hit.document_id == doc_txt.id and hit.chunk == 0


def test_bad_sources_are_refused(memory: AgentMemory, tmp_path: Path) -> None:
    alice = memory.profile("alice")
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\xff\xfe\x00\x81" * 10)
    with pytest.raises(InvalidInputError, match="neither a PDF nor UTF-8"):
        alice.documents.add(binary)
    with pytest.raises(InvalidInputError, match="not a readable PDF"):
        alice.documents.add(b"%PDF-1.4 this is not really a pdf")
    with pytest.raises(InvalidInputError, match="holds no text"):
        alice.documents.add("   \n  ")
    with pytest.raises(InvalidInputError, match="not a file"):
        alice.documents.add(tmp_path / "missing.txt")
    assert len(alice.documents.list()) == 0


def test_same_content_is_stored_once(memory: AgentMemory, tmp_path: Path) -> None:
    alice = memory.profile("alice")
    first = alice.documents.add(HANDBOOK, name="handbook", wait=True)
    path = tmp_path / "copy.md"
    path.write_text(HANDBOOK + "\n\n", encoding="utf-8")  # trailing blank lines: same text
    again = alice.documents.add(path, wait=True)
    assert again.id == first.id and again.name == "handbook" and again.status == "ready"
    assert [d.id for d in alice.documents.list()] == [first.id]
    other = alice.documents.add(HANDBOOK + " More.", wait=True)
    assert other.id != first.id and len(alice.documents.list()) == 2


# -- status transitions ------------------------------------------------------------------------


def test_background_processing_goes_from_processing_to_ready() -> None:
    gate = threading.Event()

    class Slow(FakeEmbeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            gate.wait(30)
            return super().embed_documents(texts)

    memory = AgentMemory(vector_store(Slow(DIMS)))
    alice = memory.profile("alice")
    doc = alice.documents.add(HANDBOOK, name="handbook")
    assert doc.status == "processing" and doc.chunks == 0
    assert alice.documents.get(doc.id).status == "processing"
    assert alice.documents.search("vacation days") == []  # not ready: never searched
    gate.set()
    done = alice.documents.get(doc.id, wait=True)
    assert done.status == "ready" and done.chunks > 0 and done.error is None
    assert done.updated_at >= doc.updated_at
    assert alice.documents.search("vacation days")[0].document_id == doc.id


def test_a_failed_embedding_leaves_status_failed_and_no_passages() -> None:
    store = vector_store(ExplodingEmbeddings(DIMS))
    memory = AgentMemory(store)
    alice = memory.profile("alice")
    good = alice.documents.add(HANDBOOK, name="handbook", wait=True)
    # the bomb sits in a late passage: earlier batches were written before it failed
    bad_text = "\n\n".join([f"Section {i}: the warehouse stores pallets of vacation gear."
                            * 4 for i in range(200)] + ["EXPLODE here"])
    bad = alice.documents.add(bad_text, name="bad")
    bad = alice.documents.get(bad.id, wait=True)
    assert bad.status == "failed" and bad.chunks == 0
    assert bad.error == "RuntimeError: the embedding model is out of memory"
    layout = memory.profile("alice").documents._scope
    assert items_under(store, layout.chunks(bad.id)) == []
    hits = alice.documents.search("warehouse pallets of vacation gear", limit=20)
    assert hits and {h.document_id for h in hits} == {good.id}
    # adding it again processes it again (and fails again, recorded)
    again = alice.documents.add(bad_text, wait=True)
    assert again.id == bad.id and again.status == "failed"


async def test_async_twins(memory: AgentMemory) -> None:
    alice = memory.profile("alice")
    doc = await alice.documents.aadd(HANDBOOK, name="handbook")
    done = await alice.documents.aget(doc.id, wait=True)
    assert done is not None and done.status == "ready"
    waited = await alice.documents.aadd(RECIPES, name="recipes", wait=True)
    assert waited.status == "ready"
    hits = await alice.documents.asearch("lasagna", limit=1)
    assert hits[0].document_id == waited.id
    page = await alice.documents.alist()
    assert [d.name for d in page] == ["handbook", "recipes"]
    assert await alice.documents.adelete(doc.id) is True
    assert await alice.documents.aget(doc.id) is None


# -- listing, deleting, isolation --------------------------------------------------------------


def test_list_pages_through_every_document_once(memory: AgentMemory) -> None:
    alice = memory.profile("alice")
    ids = {alice.documents.add(f"Note number {i} about topic {i}.", wait=True).id
           for i in range(23)}
    seen: list[str] = []
    cursor = None
    while True:
        page = alice.documents.list(limit=5, cursor=cursor)
        seen += [d.id for d in page]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert len(seen) == 23 and set(seen) == ids


def test_delete_leaves_nothing(memory: AgentMemory) -> None:
    alice = memory.profile("alice")
    doc = alice.documents.add(HANDBOOK, name="handbook", wait=True)
    root = memory.profile("alice").documents._scope.layout.documents()
    assert len(items_under(memory.store, root)) > 2
    assert alice.documents.delete(doc.id) is True
    assert items_under(memory.store, root) == []
    assert alice.documents.get(doc.id) is None and alice.documents.search("vacation") == []
    assert alice.documents.delete(doc.id) is False


def test_deleting_a_profile_or_a_session_removes_documents(memory: AgentMemory) -> None:
    alice = memory.profile("alice")
    alice.remember("Alice likes tea")
    kept = alice.documents.add(HANDBOOK, name="handbook", wait=True)
    in_session = alice.documents.add(RECIPES, name="recipes", session_id="s1", wait=True)
    result = alice.delete_session("s1")
    assert result.messages_deleted == 0
    assert alice.documents.get(in_session.id) is None
    assert [d.id for d in alice.documents.list()] == [kept.id]
    root = alice.documents._scope.layout.root
    memory.delete_profile("alice")
    assert items_under(memory.store, root) == []
    assert memory.profile("alice").documents.list().documents == []


def test_profiles_are_isolated(memory: AgentMemory) -> None:
    alice, bob = memory.profile("alice"), memory.profile("bob")
    a = alice.documents.add(HANDBOOK, name="handbook", wait=True)
    assert bob.documents.search("vacation days") == []
    assert bob.documents.get(a.id) is None and len(bob.documents.list()) == 0
    assert bob.documents.delete(a.id) is False
    b = bob.documents.add(HANDBOOK, name="bob's copy", wait=True)  # same content, own copy
    assert b.id == a.id and b.profile == "bob" and b.name == "bob's copy"
    bob.documents.delete(b.id)
    assert alice.documents.get(a.id).status == "ready"
    assert alice.documents.search("vacation days")[0].document_id == a.id


def test_keyword_search_without_vectors() -> None:
    memory = AgentMemory(InMemoryStore())
    alice = memory.profile("alice")
    doc = alice.documents.add(HANDBOOK, name="handbook", wait=True)
    alice.documents.add(RECIPES, name="recipes", wait=True)
    hits = alice.documents.search("reimbursed travel expenses receipt", limit=2)
    assert hits[0].document_id == doc.id and "reimbursed" in hits[0].text


# -- export and import ---------------------------------------------------------------------


def test_export_import_round_trip_gives_the_same_search(memory: AgentMemory,
                                                        tmp_path: Path) -> None:
    alice = memory.profile("alice")
    alice.remember("Alice prefers dark mode", key="preference.ui_theme")
    pdf = tmp_path / "travel.pdf"
    pdf.write_bytes(pdf_bytes(["Travel policy", "Book trains for trips under four hours."]))
    for source in (HANDBOOK, RECIPES, pdf):
        alice.documents.add(source, wait=True)
    path = tmp_path / "alice.jsonl"
    result = export_jsonl(memory, path)
    assert result.counts["document"] == 3 and result.counts["document_text"] == 3
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    texts = [ln for ln in lines if ln["type"] == "document_text"]
    assert "".join(t["value"]["text"] for t in texts if t["value"]["document_id"]
                   == alice.documents.add(HANDBOOK).id) == HANDBOOK

    queries = ["vacation days", "lasagna", "trains for short trips", "encryption laptops"]

    def results(m: AgentMemory) -> list[Any]:
        p = m.profile("alice")
        return [[(h.document_id, h.chunk, h.text, round(h.score or 0, 6))
                 for h in p.documents.search(q, limit=4)] for q in queries]

    target = AgentMemory(vector_store())
    imported = import_jsonl(target, path)
    assert imported.written["document"] == 3
    assert results(target) == results(memory)
    before = [d.model_dump(exclude={"updated_at"}) for d in memory.profile("alice")
              .documents.list()]
    after = [d.model_dump(exclude={"updated_at"}) for d in target.profile("alice")
             .documents.list()]
    assert after == before
    again = import_jsonl(target, path)  # idempotent
    assert not any(again.written.values()) and again.existing["document"] == 3
    assert results(target) == results(memory)


# -- the recall injection option ---------------------------------------------------------------


def test_memory_block_includes_document_passages_by_option(memory: AgentMemory) -> None:
    from langmem_edge.graphs.hooks import MemoryHooks
    from langmem_edge.graphs.recall import DOCUMENTS_SECTION_TITLE

    alice = memory.profile("alice")
    alice.remember("Alice asked how many vacation days she gets", kind="event")
    alice.documents.add(HANDBOOK, name="handbook", wait=True)

    class Runtime:
        context = {"profile": "alice"}
        store = None
        config: dict[str, Any] = {"configurable": {"thread_id": "t1"}}

    messages = [HumanMessage("how many vacation days do I get?")]
    off = MemoryHooks(memory).memory_block(messages, Runtime())
    assert off is not None and "Alice asked" in off and DOCUMENTS_SECTION_TITLE not in off
    on = MemoryHooks(memory, MemoryOptions(documents=2)).memory_block(messages, Runtime())
    assert on is not None and DOCUMENTS_SECTION_TITLE in on
    assert "twenty-five vacation days" in on and "[handbook" in on and "Alice asked" in on
    assert on.rstrip().endswith("</memory>") and on.count("<memory>") == 1
    small = MemoryHooks(memory, MemoryOptions(documents=2, recall_budget_tokens=150)).memory_block(
        messages, Runtime())
    from langmem_edge.memory.core.tokens import estimate_tokens

    assert small is None or estimate_tokens(small) <= 150
    with pytest.raises(ConfigurationError, match="documents"):
        MemoryOptions(documents=-1)


# -- the CLI -------------------------------------------------------------------------------------


@pytest.fixture(params=["folder", pytest.param("server", marks=pytest.mark.server)])
def cli(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "folder":
        options = ["--path", str(tmp_path / "memory")]
    else:
        url = request.getfixturevalue("chroma_server_url")
        options = ["--url", url, "--namespace", f"t{uuid.uuid4().hex[:12]}"]
    runner = CliRunner(env={FAKE_EMBEDDINGS_ENV: "1"})

    def run(*args: str, code: int = 0) -> Any:
        result = runner.invoke(app, [*options, *args])
        assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
        return result

    return run


def test_cli_documents_commands(cli: Any, tmp_path: Path) -> None:
    md = tmp_path / "handbook.md"
    md.write_text(HANDBOOK, encoding="utf-8")
    pdf = tmp_path / "travel.pdf"
    pdf.write_bytes(pdf_bytes(["Travel policy", "Flights need approval from a manager."]))
    added = cli("documents", "add", str(md), "-p", "alice")
    assert "ready" in added.stdout and "handbook.md" in added.stdout
    doc = json.loads(cli("documents", "add", str(pdf), "-p", "alice", "--json").stdout)
    assert doc["status"] == "ready" and doc["format"] == "pdf"
    listed = json.loads(cli("documents", "list", "-p", "alice", "--json").stdout)
    assert [d["name"] for d in listed["documents"]] == ["handbook.md", "travel.pdf"]
    assert "travel.pdf" in cli("documents", "list", "-p", "alice").stdout
    found = json.loads(cli("documents", "search", "flights approval manager", "-p", "alice",
                           "--limit", "1", "--json").stdout)
    assert found[0]["document_id"] == doc["id"] and "approval" in found[0]["text"]
    assert "travel.pdf" in cli("documents", "search", "flights approval", "-p", "alice").stdout
    cli("documents", "delete", doc["id"], "-p", "alice")
    listed = json.loads(cli("documents", "list", "-p", "alice", "--json").stdout)
    assert [d["name"] for d in listed["documents"]] == ["handbook.md"]
    cli("documents", "delete", doc["id"], "-p", "alice", code=EXIT_NOT_FOUND)
    bad = tmp_path / "blob.bin"
    bad.write_bytes(b"\xff\xfe\x00\x81" * 4)
    cli("documents", "add", str(bad), "-p", "alice", code=EXIT_INVALID)


def test_create_memory_agent_shows_document_passages_with_the_option(
        memory: AgentMemory) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    from langmem_edge.graphs import MemoryRecallNode, create_memory_agent
    from langmem_edge.graphs.recall import DOCUMENTS_SECTION_TITLE
    from langmem_edge.testing import ScriptedChatModel

    memory.profile("alice").documents.add(HANDBOOK, name="handbook", wait=True)
    assert MemoryRecallNode(memory, MemoryOptions(documents=3)).hooks.options.documents == 3
    shown = {}
    for n in (0, 2):
        model = ScriptedChatModel(responses=["ok"])
        agent = create_memory_agent(model, memory=memory, checkpointer=InMemorySaver(),
                                    memory_tools=False, options=MemoryOptions(documents=n))
        agent.invoke({"messages": [("user", "how many vacation days carry over?")]},
                     {"configurable": {"thread_id": f"t{n}"}}, context={"profile": "alice"})
        agent.memory_middleware.close()
        shown[n] = "\n".join(str(m.content) for m in model.calls[-1])
    assert DOCUMENTS_SECTION_TITLE not in shown[0]
    assert DOCUMENTS_SECTION_TITLE in shown[2] and "twenty-five vacation days" in shown[2]
