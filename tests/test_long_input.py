"""Long input everywhere (issue 40): a pasted log does not turn recall off or poison the
background job, extraction never writes a paste as a fact, ``ingest`` cuts an over-long
message to fit instead of refusing the session, and a job that fails the same way every
time is set aside after one try."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from episodic_helpers import scripted
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from langmem_edge import AgentMemory, ChromaStore
from langmem_edge.errors import LimitExceededError
from langmem_edge.graphs import create_memory_agent
from langmem_edge.graphs.background import BackgroundExecutor
from langmem_edge.graphs.recall import BLOCK_OPEN
from langmem_edge.memory.core.tokens import TRUNCATION_MARK
from langmem_edge.memory.episodic.messages import message_id
from langmem_edge.retrieval.shape import is_code_line, prose_lines, recall_query
from langmem_edge.testing import FakeEmbeddings, ScriptedChatModel

INDEX = {"dims": 64, "embed": FakeEmbeddings(64), "fields": ["text"]}
CTX = {"profile": "user:sam"}
FACT = "My favourite colour is teal."
QUESTION = "By the way, what is my favourite colour? I want the error page in it."


def paste_message() -> str:
    """A user message of ~14,000 characters: a line of prose, a log, a code excerpt, one
    long minified JSON line (no sentence break in 8,000 characters, saying "my" and
    "today"), and the question at the end."""
    log = "\n".join(
        f"2025-03-0{1 + i % 9} 12:{i % 60:02d}:03,120 ERROR [worker-{i % 7}] upload.pool - "
        f"connection to redis://cache:6379 refused (attempt {i})" for i in range(50))
    code = "\n".join([
        "def handler(request):",
        "    payload = json.loads(request.body)",
        "    for item in payload['items']:",
        "        queue.put(item, timeout=5)",
        "    return Response(status=202)",
    ] * 10)
    blob = json.dumps([{"id": i, "note": f"my job {i} failed today", "retry": True,
                        "queue": "uploads"} for i in range(100)], separators=(",", ":"))
    text = (f"I keep getting this since the deploy. Here is the log:\n{log}\n```python\n{code}"
            f"\n```\nand the job dump:\n{blob}\n{QUESTION}")
    assert 13_000 < len(text) < 16_000, len(text)
    return text


# -- the pure parts ------------------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    '<div id="emailHelp" class="form-text">We\'ll never share your email.</div>',
    "2024-05-01 12:00:03,120 ERROR [main] db.pool - connection refused",
    'ERROR: relation "users" does not exist',
    '  File "/app/server.py", line 42, in handler',
    "Traceback (most recent call last):",
    "    return self._send(request)",
    "def handler(request):", "import os", "const app = express();", "}",
    "SELECT * FROM users WHERE id = 3;", "$ npm run build",
    '{"level":"error","msg":"timeout","ts":1714567890}', '@app.route("/")',
])
def test_code_markup_and_log_lines_are_told_from_prose(line: str) -> None:
    assert is_code_line(line)


@pytest.mark.parametrize("line", [
    "I keep getting this error when I start the server, can you help?",
    "My favourite colour is teal.", "Thanks!", "Yes", "Thanks (really)",
    "Use f() instead of g() here, please.", "Always reply in Portuguese from now on.",
    "Here is the log (from prod):", "import the csv and tell me what is wrong",
    "class starts at 9 tomorrow", 'He said "yes": fine.',
])
def test_prose_lines_stay_prose(line: str) -> None:
    assert not is_code_line(line)


def test_a_short_prose_message_is_its_own_query() -> None:
    assert recall_query(QUESTION, 10_000) == QUESTION
    assert recall_query("  What?\n\nWhy not?  ", 100) == "  What?\n\nWhy not?  "


def test_a_long_paste_becomes_its_prose_with_the_question_first() -> None:
    query = recall_query(paste_message(), 10_000)
    assert query.startswith("By the way, what is my favourite colour?")
    assert "I keep getting this since the deploy." in query
    assert "redis://" not in query and "def handler" not in query and '"id"' not in query
    assert len(query) < 300


def test_a_query_over_the_limit_keeps_its_head_and_tail() -> None:
    text = " ".join(f"word{i}" for i in range(5_000))  # prose, 38,890 characters
    query = recall_query(text, 1_000)
    assert len(query) <= 1_000
    assert query.startswith("word0 word1") and query.endswith("word4998 word4999")
    assert " [...] " in query


def test_a_message_that_is_only_paste_is_still_a_query_within_the_limit() -> None:
    code = "\n".join(f"x{i} = compute(a, b);" for i in range(2_000))
    query = recall_query(code, 500)
    assert 0 < len(query) <= 500 and query.startswith("x0 = compute")
    assert prose_lines(code) == []


# -- the 14k paste through the agent ------------------------------------------------------------


@pytest.fixture(params=["memory", "chroma"])
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Any]:
    if request.param == "memory":
        yield InMemoryStore(index=INDEX)
        return
    chroma = ChromaStore.from_path(str(tmp_path / "store"), index=INDEX)
    yield chroma
    chroma.close()


def cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def test_a_pasted_log_is_recalled_on_and_extracted_without_a_failure(
        store: Any, caplog: pytest.LogCaptureFixture) -> None:
    model = ScriptedChatModel(responses=["ok"])
    agent = create_memory_agent(model, memory=AgentMemory(store), checkpointer=InMemorySaver(),
                                background=BackgroundExecutor({"delay_seconds": 0}))
    mw = agent.memory_middleware
    agent.invoke({"messages": [("user", FACT)]}, cfg("t0"), context=CTX)
    mw.flush()
    with caplog.at_level(logging.WARNING):
        agent.invoke({"messages": [("user", paste_message())]}, cfg("t1"), context=CTX)
        stats = mw.close()
    shown = [str(m.content) for m in model.calls[-1] if str(m.content).startswith(BLOCK_OPEN)]
    assert len(shown) == 1 and "teal" in shown[0]  # recall happened on the long message
    assert not [r for r in caplog.records if "left out of the model call" in r.getMessage()]
    assert (stats.failed, stats.retried, stats.set_aside, stats.completed) == (0, 0, 0, 2)
    profile = AgentMemory(store).profile("user:sam")
    texts = [m.text for m in profile.list(limit=500)]
    assert "The user's favourite colour is teal." in texts
    assert max(len(t) for t in texts) <= 2_000
    said = profile.episodic.search("upload.pool", mode="keyword", scope="all")
    assert [m.session_id for m in said] == ["t1"]  # the paste itself stays a message


# -- extraction never writes a paste --------------------------------------------------------------


def test_rule_extraction_keeps_markup_and_long_lines_out_of_memory() -> None:
    p = AgentMemory(InMemoryStore(index=INDEX)).profile("dev")
    html = '<div id="emailHelp" class="form-text">Never share your email with anyone.</div>'
    long_line = "Today " + "my cat kept chasing the red laser around the flat, " * 20
    out = p.ingest([{"role": "user", "content": f"Always use tabs.\n{html}\n{long_line}"}],
                   session_id="s1")
    texts = [m.text for m in out.memories_written]
    assert texts == ["Always use tabs."]


def test_model_extraction_drops_candidates_over_the_fact_size() -> None:
    long = "The user pasted " + "a very long log line, " * 40
    model = scripted(lambda msgs: [
        {"text": "The user works at Acme.", "fact_type": "identity", "message_numbers": [1]},
        {"text": long, "fact_type": "event", "message_numbers": [1]},
        {"text": "<div class=\"x\">always on</div>", "fact_type": "instruction",
         "message_numbers": [1]}])
    memory = AgentMemory(InMemoryStore(index=INDEX), model=model,
                         config={"verification": {"enabled": False}})
    out = memory.profile("dev").ingest([{"role": "user", "content": "I work at Acme."}],
                                       session_id="s1")
    assert [m.text for m in out.memories_written] == ["The user works at Acme."]
    assert memory.config.episodic.max_fact_chars == 500


# -- ingest cuts to fit -----------------------------------------------------------------------


def long_session() -> list[dict[str, str]]:
    msgs = [{"role": "user" if i % 2 == 0 else "assistant",
             "content": f"Message {i} of the session, about step {i}."} for i in range(70)]
    msgs[55] = {"role": "assistant", "content": "Here is the whole file:\n" + "x = 1\n" * 8_847}
    assert len(msgs[55]["content"].encode()) == 53_106
    return msgs


def test_a_session_with_a_53_kb_message_is_ingested_whole_the_long_one_cut_and_marked() -> None:
    store = InMemoryStore(index=INDEX)
    p = AgentMemory(store).profile("user:sam")
    msgs = long_session()
    out = p.ingest(msgs, session_id="conv-1")
    assert out.messages_added == 70
    limit = p._episodic_config.max_message_bytes
    cut = msgs[55]["content"].encode()[:limit - len(TRUNCATION_MARK)].decode() + TRUNCATION_MARK
    assert out.messages_cut == [message_id("conv-1", "assistant", cut)]
    stored = p.episodic.messages("conv-1", limit=100)
    assert [m.content for m in stored[:55]] == [m["content"] for m in msgs[:55]]
    assert stored[55].content == cut and len(cut.encode()) == limit
    assert stored[55].content.endswith(" [...]")
    again = p.ingest(msgs, session_id="conv-1")  # the id is the cut text's: nothing added
    assert (again.messages_added, again.messages_cut) == (0, [])
    assert len(p.episodic.messages("conv-1", limit=100)) == 70


def test_strict_ingest_refuses_the_long_message_and_writes_nothing() -> None:
    p = AgentMemory(InMemoryStore(index=INDEX)).profile("user:sam")
    with pytest.raises(LimitExceededError, match="message 55 .*53106 bytes.*Nothing was written"):
        p.ingest(long_session(), session_id="conv-1", strict=True)
    assert p.episodic.messages("conv-1", limit=100) == []


# -- a job that cannot succeed is set aside -----------------------------------------------------


def test_a_job_failing_on_bad_input_is_set_aside_after_one_try(
        caplog: pytest.LogCaptureFixture) -> None:
    tries: list[str] = []

    def bad() -> None:
        tries.append("bad")
        raise LimitExceededError("text is 15,076 characters; at most 10,000")

    def flaky() -> None:
        tries.append("flaky")
        if tries.count("flaky") < 2:
            raise OSError("connection reset")

    executor = BackgroundExecutor({"delay_seconds": 0, "retry_wait_initial": 0,
                                   "retry_wait_max": 0})
    with caplog.at_level(logging.WARNING):
        executor.submit("user:sam/t1", bad)
        executor.submit("user:sam/t2", flaky)
        stats = executor.close()
    assert tries.count("bad") == 1 and tries.count("flaky") == 2
    assert (stats.set_aside, stats.failed, stats.retried, stats.completed) == (1, 0, 1, 1)
    logged = [r for r in caplog.records if "user:sam/t1" in r.getMessage()]
    assert len(logged) == 1 and "15,076" in logged[0].getMessage()
    (entry,) = executor.set_aside()
    assert entry.key == "user:sam/t1" and isinstance(entry.error, LimitExceededError)
    assert entry.job is bad


def test_the_rest_of_a_turn_lands_when_one_batch_is_refused() -> None:
    store = InMemoryStore(index=INDEX)
    memory = AgentMemory(store, config={"episodic": {"max_messages_per_call": 2}})
    profile = memory.profile("user:sam")
    real = profile.ingest
    calls = threading.Event()

    def ingest(batch: list[dict[str, Any]], **kw: Any) -> Any:
        if any("poison" in m["content"] for m in batch):
            calls.set()
            raise LimitExceededError("a limit no retry can mend")
        return real(batch, **kw)

    profile.ingest = ingest  # type: ignore[method-assign]
    from langmem_edge.graphs.extraction import TurnExtractor
    from langmem_edge.graphs.run import MemoryRun

    executor = BackgroundExecutor({"delay_seconds": 0})
    extractor = TurnExtractor(executor)
    run = MemoryRun(memory=memory, profile=profile, thread="t1", contact=None)
    messages: list[BaseMessage] = []
    from langchain_core.messages import AIMessage, HumanMessage
    for i, text in enumerate(["poison one", "poison two", FACT, "noted"]):
        messages.append((HumanMessage if i % 2 == 0 else AIMessage)(content=text, id=f"m{i}"))
    extractor.submit(run, messages)
    stats = executor.close()
    assert calls.is_set()
    assert (stats.set_aside, stats.failed, stats.retried) == (1, 0, 0)
    assert [m.content for m in profile.episodic.messages("t1", limit=10)] == [FACT, "noted"]
