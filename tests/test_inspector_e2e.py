"""The memory inspector end to end: the real app under uvicorn on a free 127.0.0.1 port, over
a folder store with seeded data, driven by a real headless Chromium (Debian's ``chromium``
and ``chromium-driver``, through selenium). Every change made in the browser is checked in the
store afterwards, through a fresh ``AgentMemory`` (its own index, so it reads the store).

Run as a script, it seeds a store, serves it and saves the screenshot of the profile page in
the docs::

    HF_HUB_OFFLINE=1 python tests/test_inspector_e2e.py   # -> docs/images/inspector.png
"""

from __future__ import annotations

import shutil
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")

pytestmark = [
    pytest.mark.slow,  # a real headless Chromium
    pytest.mark.skipif(
        CHROMIUM is None or CHROMEDRIVER is None,
        reason="needs Debian's chromium and chromium-driver (`apt-get install -y chromium "
               "chromium-driver`; .ci/run installs them)"),
]

ROOT = Path(__file__).resolve().parent.parent
SCREENSHOT = ROOT / "docs" / "images" / "inspector.png"
TOKEN = "e2e-token-4f1c"
PROFILE = "user:alice"
SCRIPT = "<script>window.__pwned = 1; alert('pwned')</script>"
WAIT_SECONDS = 60
"""Longest a page or the server may take (a loaded CI machine is slow, never this slow)."""
WINDOW = (1400, 1000)
"""The browser window the screenshot is taken in."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _open_store(folder: Path) -> Any:
    from langmem_edge.embeddings import DEFAULT_DIMS
    from langmem_edge.store import ChromaStore
    from langmem_edge.testing import FakeEmbeddings

    index = {"dims": DEFAULT_DIMS, "embed": FakeEmbeddings(DEFAULT_DIMS), "fields": ["text"]}
    return ChromaStore.from_path(str(folder), index=index)  # type: ignore[arg-type]


def seed(memory: Any) -> dict[str, Any]:
    """What the e2e run and the screenshot show: a profile with memories of every kind, a
    contact, a session with working notes, a hostile memory and a goal."""
    alice = memory.profile(PROFILE)
    theme = alice.remember("Alice prefers dark mode in every editor", key="preference.ui_theme",
                           writer="onboarding", confidence=0.8)
    city = alice.remember("Alice lives in Lisbon", key="home.city", contact="crm:acme",
                          valid_until="2030-01-01")
    alice.remember("Always answer Alice in European Portuguese", kind="instruction",
                   key="instruction.language")
    alice.remember("Alice's team ships the billing service on Fridays", writer="crm-sync",
                   confidence=0.7)
    alice.remember("Book the Porto hotel before Friday", kind="task", session_id="s1")
    alice.remember("Deploy of the billing service failed", kind="event",
                   fact_type="workflow-failure", metadata={"workflow": "deploy"})
    hostile = alice.remember(SCRIPT, key="note.hostile")
    alice.ingest([{"role": "user", "content": "I am planning a trip to Porto in May"},
                  {"role": "assistant", "content": "Noted: a trip to Porto in May"}],
                 session_id="s1")
    alice.ingest([{"role": "user", "content": "Remind me to renew my passport"}],
                 session_id="s2")
    alice.working.set_context("s1", "user wants a PDF itinerary")
    alice.working.set_ongoing_task("s1", "book a hotel in Porto", steps=["search", "pay"])
    alice.reflective.add_goal("Learn Portuguese", steps=["book a course"])
    memory.profile("user:bob").remember("Bob takes his coffee black")
    return {"theme": theme, "city": city, "hostile": hostile}


@contextmanager
def serving(memory: Any, *, token: str | None) -> Iterator[str]:
    """The inspector of ``memory`` under uvicorn in a thread; yields its base address."""
    import uvicorn

    from langmem_edge.inspector import create_app

    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(memory, token=token), host="127.0.0.1",
                                           port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + WAIT_SECONDS
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the inspector did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(WAIT_SECONDS)


@contextmanager
def browser() -> Iterator[Any]:
    """A headless Chromium driven by selenium (the system chromedriver: nothing fetched)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                f"--window-size={WINDOW[0]},{WINDOW[1]}", "--no-first-run"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(WAIT_SECONDS)
    driver.implicitly_wait(5)
    try:
        yield driver
    finally:
        driver.quit()


def _fresh(store: Any) -> Any:
    from langmem_edge.memory import AgentMemory

    return AgentMemory(store).profile(PROFILE)


def _no_alert(driver: Any) -> bool:
    from selenium.common.exceptions import NoAlertPresentException

    try:
        driver.switch_to.alert  # noqa: B018 - raises when there is none
    except NoAlertPresentException:
        return True
    return False


def _text(driver: Any, css: str) -> str:
    from selenium.webdriver.common.by import By

    return str(driver.find_element(By.CSS_SELECTOR, css).text)


def test_the_inspector_in_a_real_browser(tmp_path: Path) -> None:
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    from langmem_edge.memory import AgentMemory
    from langmem_edge.memory.transfer import list_sessions

    store = _open_store(tmp_path / "memory")
    try:
        memory = AgentMemory(store)
        seeded = seed(memory)
        with serving(memory, token=TOKEN) as base, browser() as driver:
            # a wait polls across page loads: an element of the page being left may be gone
            # from the document mid-poll (Chromium: "Node with given id does not belong to
            # the document"); poll again, and still fail at the timeout
            wait = WebDriverWait(driver, WAIT_SECONDS, ignored_exceptions=[WebDriverException])

            # without the token: refused
            driver.get(f"{base}/")
            assert "401 Unauthorized" in driver.find_element(By.TAG_NAME, "body").text
            driver.get(f"{base}/profile?p=user%3Aalice")
            assert "401 Unauthorized" in driver.find_element(By.TAG_NAME, "body").text

            # with it: the cookie is set, the address loses the token
            driver.get(f"{base}/?token={TOKEN}")
            assert "token" not in driver.current_url
            profiles = _text(driver, "#profiles")
            assert PROFILE in profiles and "user:bob" in profiles

            # open the profile: memories with their fields; the <script> is text, not code
            driver.find_element(By.LINK_TEXT, PROFILE).click()
            wait.until(ec.presence_of_element_located((By.ID, "memories")))
            table = _text(driver, "#memories")
            assert "Alice prefers dark mode in every editor" in table and "crm:acme" in table
            assert SCRIPT in table
            assert driver.execute_script("return window.__pwned === undefined") is True
            assert _no_alert(driver)
            driver.save_screenshot(str(tmp_path / "profile.png"))
            assert (tmp_path / "profile.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

            # search and read the explanation
            driver.find_element(By.ID, "tab-search").click()
            box = driver.find_element(By.ID, "query")
            box.send_keys("dark mode editor")
            driver.find_element(By.ID, "search-button").click()
            wait.until(ec.presence_of_element_located((By.ID, "results")))
            first = driver.find_element(By.CSS_SELECTOR, "li.result")
            assert "Alice prefers dark mode in every editor" in first.text
            why = first.find_element(By.CSS_SELECTOR, ".why-summary").text
            assert why.startswith("Found by") and "vector" in why
            channels = {row.get_attribute("data-channel")
                        for row in first.find_elements(By.CSS_SELECTOR, "tr.channel")}
            assert {"vector", "keyword"} <= channels
            assert "it shares words with the query (BM25)" in first.text

            # edit it: a new version, shown in its history; checked in the store
            first.find_element(By.CSS_SELECTOR, "a.memory-link").click()
            text = wait.until(ec.presence_of_element_located((By.ID, "edit-text")))
            text.clear()
            text.send_keys("Alice prefers light mode since her eye surgery")
            driver.find_element(By.ID, "edit-save").click()
            wait.until(ec.presence_of_element_located((By.ID, "notice")))
            assert _text(driver, "#memory-text") == \
                "Alice prefers light mode since her eye surgery"
            history = driver.find_elements(By.CSS_SELECTOR, "#history tbody tr")
            assert len(history) == 2 and "superseded" in history[0].text
            chain = _fresh(store).history("preference.ui_theme")
            assert [m.text for m in chain] == [
                "Alice prefers dark mode in every editor",
                "Alice prefers light mode since her eye surgery"]
            assert [m.status for m in chain] == ["superseded", "active"]

            # forget the city: gone from recall, in the browser and in the store
            city = seeded["city"]
            driver.get(f"{base}/memory?p=user%3Aalice&id={city.id}")
            driver.find_element(By.ID, "forget-button").click()
            wait.until(ec.text_to_be_present_in_element((By.ID, "memory-status"), "forgotten"))
            driver.get(f"{base}/search?p=user%3Aalice&q=where+does+alice+live"
                       "&contact=crm%3Aacme")
            assert "Alice lives in Lisbon" not in _text(driver, "main")
            again = _fresh(store)
            assert again.get(city.id).status == "forgotten"
            assert city.id not in {c.id for c in again.recall(
                "where does alice live", contact="crm:acme").candidates}

            # delete a session (after confirming): gone from the list and from the store
            driver.find_element(By.ID, "tab-sessions").click()
            driver.find_element(By.LINK_TEXT, "s1").click()
            assert "user wants a PDF itinerary" in _text(driver, "main")
            driver.find_element(By.ID, "delete-session-button").click()
            wait.until(ec.alert_is_present()).accept()
            wait.until(ec.presence_of_element_located((By.ID, "notice")))
            assert "Deleted session s1" in _text(driver, "#notice")
            assert "s1" not in {row.get_attribute("data-session") for row in
                                driver.find_elements(By.CSS_SELECTOR, "#sessions tr")}
            sessions = {s.session_id for s in list_sessions(AgentMemory(store), PROFILE)}
            assert sessions == {"s2"}
            left = _fresh(store)
            assert left.episodic.messages("s1") == [] and left.working.get_context("s1") == ""
            assert not any(m.session_id == "s1" for m in left.list(limit=500))

            # the hostile memory's own page: text, never run
            driver.get(f"{base}/memory?p=user%3Aalice&id={seeded['hostile'].id}")
            assert _text(driver, "#memory-text") == SCRIPT
            assert driver.execute_script("return window.__pwned === undefined") is True
            assert _no_alert(driver)
    finally:
        store.close()


def save_screenshot(path: Path = SCREENSHOT) -> Path:
    """Seed a store in a temporary folder, serve it and save the profile page as ``path``."""
    import tempfile

    from selenium.webdriver.common.by import By

    from langmem_edge.memory import AgentMemory

    with tempfile.TemporaryDirectory() as folder:
        store = _open_store(Path(folder))
        try:
            memory = AgentMemory(store)
            seed(memory)
            with serving(memory, token=None) as base, browser() as driver:
                driver.get(f"{base}/profile?p=user%3Aalice")
                driver.find_element(By.ID, "memories")
                path.parent.mkdir(parents=True, exist_ok=True)
                driver.save_screenshot(str(path))
        finally:
            store.close()
    return path


if __name__ == "__main__":
    if CHROMIUM is None or CHROMEDRIVER is None:
        sys.exit("needs chromium and chromium-driver (apt-get install -y chromium "
                 "chromium-driver)")
    sys.path.insert(0, str(ROOT))  # this checkout's package, not an installed one
    print(save_screenshot())
