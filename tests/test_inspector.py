"""The memory inspector through starlette's TestClient: every page and action, paging, the
token and CSRF refusals, the Host check, escaping, and the ``ui`` command's refusals."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph.store.memory import InMemoryStore
from starlette.testclient import TestClient
from typer.testing import CliRunner

from langmem_edge.cli import app as cli_app
from langmem_edge.cli.base import EXIT_INVALID, FAKE_EMBEDDINGS_ENV
from langmem_edge.errors import ConfigurationError
from langmem_edge.inspector import create_app
from langmem_edge.inspector.security import (
    CSRF_FIELD,
    SESSION_COOKIE,
    TOKEN_COOKIE,
    TOKEN_ENV,
    TOKEN_HEADER,
    check_bind,
)
from langmem_edge.inspector.server import address
from langmem_edge.memory import AgentMemory, Profile
from langmem_edge.memory.transfer import list_sessions
from langmem_edge.testing import FakeEmbeddings

BASE = "http://127.0.0.1"
SCRIPT = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned=2">'
DIMS = 64
ROOT = Path(__file__).resolve().parent.parent
SERVER_START_SECONDS = 180
"""Longest ``langmem-edge ui`` may take to answer (imports on a loaded machine)."""


def _memory() -> AgentMemory:
    store = InMemoryStore(index={"dims": DIMS, "embed": FakeEmbeddings(DIMS),
                                 "fields": ["text"]})
    return AgentMemory(store)


def _seed(memory: AgentMemory) -> dict[str, Any]:
    alice = memory.profile("user:alice")
    theme = alice.remember("Alice prefers dark mode in every editor",
                           key="preference.ui_theme", writer="onboarding", confidence=0.8)
    city = alice.remember("Alice lives in Lisbon", key="home.city", contact="crm:acme",
                          valid_until="2030-01-01")
    hostile = alice.remember(SCRIPT, key="note.hostile")
    alice.remember("Call the dentist on Monday", kind="task", session_id="s-tasks")
    alice.ingest([{"role": "user", "content": "I am planning a trip to Porto in May"},
                  {"role": "assistant", "content": "Noted: a trip to Porto in May"},
                  {"role": "user", "content": SCRIPT}], session_id="s1")
    alice.working.set_context("s1", "user wants a PDF itinerary")
    alice.working.set_ongoing_task("s1", "book a hotel in Porto", steps=["search", "pay"])
    alice.working.set_context("t-solo", "a thread with notes only")
    for _ in range(2):
        alice.remember("deploy of the billing service failed", kind="event",
                       fact_type="workflow-failure", metadata={"workflow": "deploy"})
    alice.reflective.add_goal("Learn Portuguese", steps=["book a course"])
    memory.profile("user:bob").remember("Bob takes his coffee black")
    return {"alice": alice, "theme": theme, "city": city, "hostile": hostile}


@pytest.fixture
def memory() -> AgentMemory:
    return _memory()


@pytest.fixture
def seeded(memory: AgentMemory) -> dict[str, Any]:
    return _seed(memory)


@pytest.fixture
def client(memory: AgentMemory) -> Iterator[TestClient]:
    with TestClient(create_app(memory), base_url=BASE) as c:
        yield c


def _csrf(client: TestClient, url: str) -> str:
    page = client.get(url)
    assert page.status_code == 200, page.text
    found = re.search(rf'name="{CSRF_FIELD}" value="([^"]+)"', page.text)
    assert found, f"no CSRF field on {url}"
    return found.group(1)


def _ids(html: str) -> list[str]:
    return re.findall(r'<tr class="status-[a-z]+" data-id="([0-9a-f]+)"', html)


# -- pages -----------------------------------------------------------------------------------


def test_profiles_page_lists_and_pages_the_profiles(client: TestClient, seeded: Any,
                                                    memory: AgentMemory) -> None:
    memory.profile("user:carol").remember("Carol is vegetarian")
    page = client.get("/")
    assert page.status_code == 200
    for name in ("user:alice", "user:bob", "user:carol"):
        assert f">{name}</a>" in page.text
    first = client.get("/?limit=2").text
    assert "user:alice" in first and "user:carol" not in first and 'rel="next"' in first
    second = client.get("/?limit=2&offset=2").text
    assert "user:carol" in second and "user:alice" not in second and 'rel="prev"' in second


def test_profile_page_shows_memories_with_their_fields(client: TestClient,
                                                       seeded: Any) -> None:
    html = client.get("/profile", params={"p": "user:alice"}).text
    assert "Alice prefers dark mode in every editor" in html
    assert "0.80" in html and "onboarding" in html          # confidence and writer
    assert "crm:acme" in html and "agent-wide" in html       # contact and scope
    assert "2030-01-01" in html                               # validity
    assert "preference.ui_theme" in html and "explicit" in html  # key and source
    tasks = client.get("/profile", params={"p": "user:alice", "kind": "task"}).text
    assert "Call the dentist on Monday" in tasks and "dark mode" not in tasks


def test_memories_page_by_cursor_visits_each_memory_once(client: TestClient,
                                                         memory: AgentMemory) -> None:
    bulk = memory.profile("bulk")
    written = {m.id for m in bulk.remember_many([f"memory number {i}" for i in range(130)])}
    url: str | None = "/profile?p=bulk&limit=50"
    seen: list[str] = []
    pages = 0
    while url:
        html = client.get(url).text
        seen += _ids(html)
        pages += 1
        nxt = re.search(r'id="next-page" href="([^"]+)"', html)
        url = unescape(nxt.group(1)) if nxt else None
    assert pages == 3 and len(seen) == len(set(seen)) == 130 and set(seen) == written


def test_memory_page_shows_fields_history_and_forms(client: TestClient, seeded: Any) -> None:
    theme = seeded["theme"]
    html = client.get("/memory", params={"p": "user:alice", "id": theme.id}).text
    assert theme.id in html and 'id="history"' in html
    for form in ("edit-form", "forget-form", "delete-form"):
        assert f'id="{form}"' in html


def test_search_explains_each_result_by_channel(client: TestClient, seeded: Any) -> None:
    html = client.get("/search", params={"p": "user:alice", "q": "dark mode editor"}).text
    results = html.split('<li class="result"')[1:]
    assert results and "Alice prefers dark mode in every editor" in results[0]
    top = results[0]
    assert 'data-channel="keyword"' in top and 'data-channel="vector"' in top
    assert "Found by" in top and "it shares words with the query (BM25)" in top
    fills = [r for r in results[1:] if "Not a match" in r]
    assert fills  # what the relevance fill added says so, with no match score
    for other in fills:
        assert "not matched (relevance fill)" in other and "score 0" not in other
    assert "matched" in html.split('id="count"')[1].split("</p>")[0]
    contact = client.get("/search", params={"p": "user:alice", "q": "where does alice live",
                                            "contact": "crm:acme"}).text
    assert "Alice lives in Lisbon" in contact and "the contact&#39;s own memories" in contact


def test_sessions_and_a_session_with_messages_overlays_and_working_notes(
        client: TestClient, seeded: Any, memory: AgentMemory) -> None:
    alice: Profile = seeded["alice"]
    alice.ingest([{"role": "user" if i % 2 == 0 else "assistant",
                   "content": f"message {i} about hotels and flights to Porto"}
                  for i in range(60)], session_id="long")
    alice.episodic.window("long", 300)
    sessions = client.get("/sessions", params={"p": "user:alice"}).text
    assert 'data-session="s1"' in sessions and 'data-session="long"' in sessions
    one = client.get("/session", params={"p": "user:alice", "s": "s1"}).text
    assert "I am planning a trip to Porto in May" in one
    assert "user wants a PDF itinerary" in one and "book a hotel in Porto" in one
    long = client.get("/session", params={"p": "user:alice", "s": "long", "limit": 25}).text
    assert 'class="overlays"' in long and alice.episodic.overlays("long")[0].summary[:20] in \
        unescape(long)
    assert "message 0 about" in long and "message 25 about" not in long
    later = client.get("/session", params={"p": "user:alice", "s": "long", "start": 25,
                                           "limit": 25}).text
    assert "message 25 about" in later and 'rel="prev"' in later and 'rel="next"' in later
    assert client.get("/session", params={"p": "user:alice", "s": "nope"}).status_code == 404


def test_working_page_lists_threads_with_notes_and_tasks(client: TestClient,
                                                         seeded: Any) -> None:
    html = client.get("/working", params={"p": "user:alice"}).text
    assert 'data-thread="s1"' in html and 'data-thread="t-solo"' in html
    assert "user wants a PDF itinerary" in html and "book a hotel in Porto" in html
    one = client.get("/working", params={"p": "user:alice", "limit": 1}).text
    assert one.count("data-thread=") == 1 and 'rel="next"' in one


def test_reflection_on_demand_then_the_reflective_page(client: TestClient,
                                                       seeded: Any) -> None:
    empty = client.get("/reflective", params={"p": "user:alice"}).text
    assert "Learn Portuguese" in empty and "No reflection yet" in empty
    csrf = _csrf(client, "/jobs?p=user:alice")
    report = client.post("/jobs/reflect", data={CSRF_FIELD: csrf, "p": "user:alice"})
    assert report.status_code == 200 and 'id="reflection-report"' in report.text
    assert "deploy" in report.text  # the learning about the repeated failure
    page = client.get("/reflective", params={"p": "user:alice"}).text
    assert 'class="reflection"' in page and "learnings" in page
    learning = seeded["alice"].list(kind="fact", limit=500)
    assert any(m.source == "reflection" and m.text in unescape(page) for m in learning)


def test_consolidation_on_demand_shows_its_report(client: TestClient, seeded: Any) -> None:
    csrf = _csrf(client, "/jobs?p=user:alice")
    report = client.post("/jobs/consolidate", data={CSRF_FIELD: csrf, "p": "user:alice"})
    assert report.status_code == 200 and 'id="consolidation-report"' in report.text
    assert "memory(ies) looked at" in report.text


def test_summary_page(client: TestClient, seeded: Any) -> None:
    html = client.get("/summary", params={"p": "user:alice"}).text
    assert "# Memory of user:alice" in html and "Alice prefers dark mode" in html


# -- actions ---------------------------------------------------------------------------------


def test_edit_writes_a_new_version_the_history_shows(client: TestClient, seeded: Any) -> None:
    alice: Profile = seeded["alice"]
    theme = seeded["theme"]
    url = f"/memory?p=user:alice&id={theme.id}"
    done = client.post("/memory/edit", data={CSRF_FIELD: _csrf(client, url), "p": "user:alice",
                                             "id": theme.id, "text": "Alice prefers light mode",
                                             "confidence": "0.95"}, follow_redirects=False)
    assert done.status_code == 303
    new_id = re.search(r"id=([0-9a-f]+)", done.headers["location"]).group(1)
    chain = alice.history("preference.ui_theme")
    assert [m.text for m in chain] == ["Alice prefers dark mode in every editor",
                                       "Alice prefers light mode"]
    assert chain[0].status == "superseded" and chain[1].id == new_id
    assert chain[1].confidence == pytest.approx(0.95)
    page = client.get(done.headers["location"]).text
    assert "Saved as a new version." in page
    history = page.split('id="history"')[1]
    assert "Alice prefers dark mode in every editor" in history and "superseded" in history
    csrf = _csrf(client, f"/memory?p=user:alice&id={new_id}")
    bad = client.post("/memory/edit", data={CSRF_FIELD: csrf, "p": "user:alice", "id": new_id,
                                            "confidence": "very"})
    assert bad.status_code == 400 and "confidence must be a number" in bad.text


def test_forget_keeps_the_memory_and_recall_no_longer_returns_it(client: TestClient,
                                                                  seeded: Any) -> None:
    alice: Profile = seeded["alice"]
    theme = seeded["theme"]
    url = f"/memory?p=user:alice&id={theme.id}"
    done = client.post("/memory/forget", data={CSRF_FIELD: _csrf(client, url),
                                               "p": "user:alice", "id": theme.id,
                                               "reason": "asked by the user"})
    assert done.status_code == 200 and 'id="memory-status">forgotten' in done.text
    assert alice.get(theme.id).status == "forgotten"
    assert theme.id not in {c.id for c in alice.recall("dark mode editor").candidates}
    search = client.get("/search", params={"p": "user:alice", "q": "dark mode editor"}).text
    assert f'data-id="{theme.id}"' not in search


def test_delete_removes_the_memory(client: TestClient, seeded: Any) -> None:
    alice: Profile = seeded["alice"]
    city = seeded["city"]
    done = client.post("/memory/delete", data={
        CSRF_FIELD: _csrf(client, f"/memory?p=user:alice&id={city.id}"), "p": "user:alice",
        "id": city.id})
    assert done.status_code == 200 and f"Deleted memory {city.id}." in done.text
    assert alice.get(city.id) is None
    assert client.get("/memory", params={"p": "user:alice", "id": city.id}).status_code == 404


def test_delete_session_removes_messages_working_rows_and_its_memories(
        client: TestClient, seeded: Any, memory: AgentMemory) -> None:
    alice: Profile = seeded["alice"]
    assert any(m.session_id == "s-tasks" for m in alice.list(limit=500))
    done = client.post("/session/delete", data={
        CSRF_FIELD: _csrf(client, "/session?p=user:alice&s=s1"), "p": "user:alice", "s": "s1"})
    assert done.status_code == 200 and "Deleted session s1: 3 message(s)" in done.text
    assert "s1" not in {s.session_id for s in list_sessions(memory, "user:alice")}
    assert alice.episodic.messages("s1") == [] and alice.working.get_context("s1") == ""
    assert "s1" not in alice.working.threads()


# -- safety ----------------------------------------------------------------------------------


def test_posts_without_the_sessions_csrf_token_are_refused(client: TestClient,
                                                           seeded: Any) -> None:
    alice: Profile = seeded["alice"]
    theme = seeded["theme"]
    form = {"p": "user:alice", "id": theme.id, "text": "hijacked"}
    assert client.post("/memory/edit", data=form).status_code == 403
    assert client.post("/memory/edit", data={**form, CSRF_FIELD: "0" * 64}).status_code == 403
    assert client.post("/memory/edit", data={**form, CSRF_FIELD: "é" * 64}).status_code == 403
    # a token from another browser session is not this session's
    with TestClient(client.app, base_url=BASE) as other:
        foreign = _csrf(other, f"/memory?p=user:alice&id={theme.id}")
    client.get("/")  # this browser has its own session cookie
    assert client.post("/memory/edit", data={**form, CSRF_FIELD: foreign}).status_code == 403
    for action, extra in (("/memory/forget", {}), ("/memory/delete", {}),
                          ("/session/delete", {"s": "s1"}), ("/jobs/consolidate", {}),
                          ("/jobs/reflect", {})):
        assert client.post(action, data={**form, **extra}).status_code == 403, action
    assert client.get("/memory/delete", params=form).status_code == 405
    assert alice.get(theme.id).status == "active" and alice.episodic.messages("s1")
    assert alice.reflective.reflections() == []


def test_session_cookie_is_httponly_and_strict(client: TestClient) -> None:
    cookie = client.get("/").headers["set-cookie"]
    assert cookie.startswith(f"{SESSION_COOKIE}=") and "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie


def test_stored_markup_renders_as_text_everywhere(client: TestClient, seeded: Any) -> None:
    hostile = seeded["hostile"]
    escaped = "&lt;script&gt;window.__pwned = 1&lt;/script&gt;"
    pages = [
        ("/profile", {"p": "user:alice"}),
        ("/memory", {"p": "user:alice", "id": hostile.id}),
        ("/search", {"p": "user:alice", "q": "window pwned script"}),
        ("/summary", {"p": "user:alice"}),
        ("/session", {"p": "user:alice", "s": "s1"}),
    ]
    for path, params in pages:
        html = client.get(path, params=params).text
        assert "<script>window" not in html and "<img src=x" not in html, path
        assert escaped in html, path
    headers = client.get("/").headers
    assert "script-src 'self'" in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff"


def test_a_profile_name_with_markup_is_escaped_too(client: TestClient,
                                                   memory: AgentMemory) -> None:
    memory.profile("<b>x</b>").remember("hello")
    assert "<b>x</b>" not in client.get("/").text
    assert "&lt;b&gt;x&lt;/b&gt;" in client.get("/profile", params={"p": "<b>x</b>"}).text


def test_token_is_required_on_every_request(memory: AgentMemory, seeded: Any) -> None:
    app = create_app(memory, token="s3cret-token")
    with TestClient(app, base_url=BASE) as anonymous:
        for url in ("/", "/profile?p=user:alice", "/static/inspector.css"):
            assert anonymous.get(url).status_code == 401, url
        assert anonymous.post("/memory/delete", data={"p": "user:alice",
                                                      "id": seeded["theme"].id}
                              ).status_code == 401
        assert anonymous.get("/", headers={TOKEN_HEADER: "wrong"}).status_code == 403
        assert anonymous.get("/", headers={"Authorization": "Bearer wrong"}).status_code == 403
        assert anonymous.get("/", params={"token": "wrong"}).status_code == 403
        assert anonymous.get("/", headers={TOKEN_HEADER: "s3cret-token"}).status_code == 200
        assert anonymous.get("/", headers={"Authorization": "Bearer s3cret-token"}
                             ).status_code == 200
    with TestClient(app, base_url=BASE) as browser:
        first = browser.get("/profile", params={"p": "user:alice", "token": "s3cret-token"},
                            follow_redirects=False)
        assert first.status_code == 303 and "token" not in first.headers["location"]
        assert first.headers["location"] == "/profile?p=user%3Aalice"
        assert f"{TOKEN_COOKIE}=" in first.headers["set-cookie"]
        assert browser.get("/profile", params={"p": "user:alice"}).status_code == 200
        csrf = _csrf(browser, f"/memory?p=user:alice&id={seeded['theme'].id}")
        done = browser.post("/memory/forget", data={CSRF_FIELD: csrf, "p": "user:alice",
                                                    "id": seeded["theme"].id})
        assert done.status_code == 200
    assert seeded["alice"].get(seeded["theme"].id).status == "forgotten"


def test_a_foreign_host_header_is_refused(client: TestClient) -> None:
    assert client.get("/", headers={"host": "evil.example"}).status_code == 400
    assert client.get("/", headers={"host": "localhost:8765"}).status_code == 200


def test_binding_beyond_loopback_needs_a_token() -> None:
    for host in ("127.0.0.1", "localhost", "::1", "[::1]"):
        check_bind(host, None)
    for host in ("0.0.0.0", "192.168.1.10", "::", "example.org"):
        with pytest.raises(ConfigurationError, match="without a token"):
            check_bind(host, None)
        check_bind(host, "tok")
    with pytest.raises(ConfigurationError, match="token is empty"):
        check_bind("0.0.0.0", "  ")
    assert address("127.0.0.1", 8765, None) == "http://127.0.0.1:8765/"
    assert address("::1", 9, "a b") == "http://[::1]:9/?token=a+b"


def test_ui_command_refuses_a_public_host_without_a_token(tmp_path: Any,
                                                          monkeypatch: Any) -> None:
    monkeypatch.delenv("LANGMEM_EDGE_UI_TOKEN", raising=False)
    result = CliRunner().invoke(cli_app, ["--path", str(tmp_path), "ui", "--host", "0.0.0.0"])
    assert result.exit_code == EXIT_INVALID
    assert "without a token" in result.stderr and "--token" in result.stderr
    missing = CliRunner().invoke(cli_app, ["--path", str(tmp_path / "none"), "ui"])
    assert missing.exit_code == 3 and "no memory store" in missing.stderr
    assert "ui" in CliRunner().invoke(cli_app, ["--help"]).stdout


def test_bad_parameters_are_answered_with_what_was_wrong(client: TestClient,
                                                         seeded: Any) -> None:
    missing = client.get("/profile")
    assert missing.status_code == 400 and "&#39;p&#39;" in missing.text
    assert client.get("/profile", params={"p": "nobody"}).status_code == 404
    bad = client.get("/profile", params={"p": "user:alice", "limit": "9999"})
    assert bad.status_code == 400 and "limit must be 1-500" in bad.text
    kind = client.get("/profile", params={"p": "user:alice", "kind": "gossip"})
    assert kind.status_code == 400 and "kind must be one of" in kind.text


def test_the_ui_command_serves_the_store_behind_its_token(tmp_path: Path) -> None:
    """``langmem-edge ui`` as a user runs it: a real process, the token from the environment,
    the address it prints, 401 without the token and the store's memories with it."""
    folder = tmp_path / "m"
    made = CliRunner().invoke(cli_app, ["--path", str(folder), "remember", "Alice likes tea",
                                        "-p", "alice"], env={FAKE_EMBEDDINGS_ENV: "1"})
    assert made.exit_code == 0, made.output
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, FAKE_EMBEDDINGS_ENV: "1", TOKEN_ENV: "tok-123"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "langmem_edge.cli", "--path", str(folder), "ui", "--port",
         str(port)], env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_SECONDS
        while True:
            assert proc.poll() is None, proc.communicate()[1]
            try:
                refused = httpx.get(f"{base}/", timeout=5)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "langmem-edge ui did not start"
                time.sleep(0.2)
        assert refused.status_code == 401
        page = httpx.get(f"{base}/profile", params={"p": "alice"},
                         headers={TOKEN_HEADER: "tok-123"}, timeout=30)
        assert page.status_code == 200 and "Alice likes tea" in page.text
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=SERVER_START_SECONDS)
    assert f"open {base}/?token=tok-123" in stderr


def test_public_names_are_the_curated_list_and_documented() -> None:
    import langmem_edge.inspector as inspector

    assert sorted(inspector.__all__) == ["create_app", "serve"]
    for name in ("create_app", "serve"):
        assert getattr(inspector, name).__doc__, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        inspector.nope  # noqa: B018


def test_searching_counts_no_access(memory: AgentMemory, seeded: Any) -> None:
    """A person searching is not the agent using a memory: no access is counted, unless the
    app is made with ``count_access=True``."""
    theme = seeded["theme"]
    for count_access, expected in ((False, 0), (True, 1)):
        app = create_app(memory, count_access=count_access)
        with TestClient(app, base_url=BASE) as c:
            found = c.get("/search", params={"p": "user:alice", "q": "dark mode editor"})
            assert f'data-id="{theme.id}"' in found.text
        app.state.memory.flush()
        assert AgentMemory(memory.store).profile("user:alice").get(theme.id).access_count \
            == expected


# -- documents -------------------------------------------------------------------------------


class _Poisoned(FakeEmbeddings):
    """Fake embeddings that fail on any text saying POISON (a document whose embedding
    fails)."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if any("POISON" in t for t in texts):
            raise RuntimeError("the embedder refused this text")
        return super().embed_documents(texts)


def test_documents_page_lists_statuses_searches_and_deletes() -> None:
    store = InMemoryStore(index={"dims": DIMS, "embed": _Poisoned(DIMS), "fields": ["text"]})
    memory = AgentMemory(store)
    alice = memory.profile("user:alice")
    handbook = alice.documents.add("Refunds are paid within 14 days of a return.\n\n"
                                  "Shipping to Portugal takes three days.",
                                  name="handbook.md", wait=True)
    broken = alice.documents.add("POISON in every line", name=SCRIPT, wait=True)
    assert (handbook.status, broken.status) == ("ready", "failed")
    with TestClient(create_app(memory), base_url=BASE) as client:
        page = client.get("/documents", params={"p": "user:alice"})
        assert page.status_code == 200
        assert "handbook.md" in page.text and "ready" in page.text
        assert "failed" in page.text and "the embedder refused this text" in page.text
        assert SCRIPT not in page.text and "&lt;script&gt;" in page.text  # the name is text
        assert 'href="/documents?p=user%3Aalice"' in client.get(
            "/profile", params={"p": "user:alice"}).text  # a tab of every profile page

        found = client.get("/documents", params={"p": "user:alice", "q": "refund days"})
        assert "Refunds are paid within 14 days" in found.text
        assert "POISON" not in found.text.split('id="documents"')[0]  # only ready ones

        csrf = _csrf(client, "/documents?p=user%3Aalice")
        refused = client.post("/documents/delete", data={"p": "user:alice", "id": handbook.id},
                              follow_redirects=False)
        assert refused.status_code == 403  # no CSRF token
        assert alice.documents.get(handbook.id) is not None
        done = client.post("/documents/delete", follow_redirects=False,
                           data={"p": "user:alice", "id": handbook.id, CSRF_FIELD: csrf})
        assert done.status_code == 303
        assert "Deleted document" in client.get(done.headers["location"]).text
    assert alice.documents.get(handbook.id) is None
    assert alice.documents.search("refund days") == []
    assert [d.id for d in alice.documents.list()] == [broken.id]


def test_documents_page_pages_by_cursor(memory: AgentMemory) -> None:
    alice = memory.profile("user:alice")
    added = [alice.documents.add(f"Document number {i} about topic {i}", name=f"doc-{i}",
                                wait=True) for i in range(5)]
    seen: list[str] = []
    with TestClient(create_app(memory), base_url=BASE) as client:
        url: str | None = "/documents?p=user%3Aalice&limit=2"
        while url:
            page = client.get(url)
            seen += re.findall(r'<tr data-document="([^"]+)"', page.text)
            nxt = re.search(r'<a rel="next" id="next-page" href="([^"]+)"', page.text)
            url = unescape(nxt.group(1)) if nxt else None
    assert sorted(seen) == sorted(d.id for d in added) and len(seen) == 5
