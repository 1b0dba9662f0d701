"""Model extraction: chunking, detail pass, structured output, the 8-point check, retries."""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from episodic_helpers import scripted, system_text
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from langmem_edge.errors import ExtractionError
from langmem_edge.memory.core.models import RetryPolicy, is_transient
from langmem_edge.memory.core.plans import run_async, run_sync
from langmem_edge.memory.episodic.extraction import (
    StoredMessage,
    chunk_messages,
    detail_windows,
    model_extraction_plan,
)
from langmem_edge.memory.episodic.tier import EpisodicConfig
from langmem_edge.testing import ScriptedChatModel

FAST = EpisodicConfig(retry_wait_initial=0.0, retry_wait_max=0.0)


def msgs(n: int, size: int = 20, said: str = "") -> list[StoredMessage]:
    """``n`` messages of ``size`` characters, each saying ``said`` (extraction keeps only
    what the messages say: the names and numbers of a scripted candidate must be in it)."""
    now = datetime(2024, 6, 1, tzinfo=UTC)
    return [
        StoredMessage(
            id=f"id{i}",
            session_id="s",
            role="user" if i % 2 == 0 else "assistant",
            content=f"{i:04d}{said}" + "x" * (size - 4 - len(said)),
            seq=i,
            ts=now,
        )
        for i in range(n)
    ]


def extract(
    model: Any, messages: list[StoredMessage], config: EpisodicConfig = FAST, **kw: Any
) -> Any:
    plan = model_extraction_plan(
        messages, model, config=config, source="turn", confidence=0.5, session_id="s", **kw
    )
    return run_sync(plan, policy=RetryPolicy.from_config(config))


def test_chunks_are_about_10000_chars_with_2_message_overlap() -> None:
    messages = msgs(40, size=1000)
    chunks = chunk_messages(messages, max_chars=10_000, overlap=2)
    assert all(sum(len(m.content) for m in c) <= 10_000 for c in chunks)
    assert [len(c) for c in chunks] == [10, 10, 10, 10, 8]
    for prev, nxt in zip(chunks, chunks[1:], strict=False):
        assert [m.seq for m in prev[-2:]] == [m.seq for m in nxt[:2]]
    assert {m.seq for c in chunks for m in c} == set(range(40))
    big = msgs(3, size=25_000)
    assert [len(c) for c in chunk_messages(big, max_chars=10_000, overlap=2)] == [1, 1, 1]


def test_detail_windows_only_from_9_messages() -> None:
    assert detail_windows(msgs(8), min_messages=9, size=8, overlap=2) == []
    windows = detail_windows(msgs(20), min_messages=9, size=8, overlap=2)
    assert [[m.seq for m in w][0] for w in windows] == [0, 6, 12]
    assert windows[-1][-1].seq == 19
    for prev, nxt in zip(windows, windows[1:], strict=False):
        assert [m.seq for m in prev[-2:]] == [m.seq for m in nxt[:2]]


def test_classification_and_check_drop_failing_candidates(caplog: pytest.LogCaptureFixture) -> None:
    def propose(messages: list[BaseMessage]) -> list[dict[str, Any]]:
        return [
            {
                "text": "The user moved to Berlin in 2023.",
                "fact_type": "event",
                "valid_from": "2023-04-01",
                "message_numbers": [1],
                "tags": ["Move"],
            },
            {
                "text": "The user prefers tea.",
                "fact_type": "preference",
                "key": "Preference.Drink!",
                "message_numbers": [2],
            },
            {
                "text": "The user moved to Munich in 2021.",
                "fact_type": "event",
                "message_numbers": [1],
            },
            {"text": "Always answer in German.", "fact_type": "instruction"},
            {"text": "Renew the passport.", "fact_type": "task", "message_numbers": [99]},
        ]

    model = scripted(propose, fail={"The user moved to Munich in 2021.": "temporal_accuracy"})
    said = " I moved to Berlin in 2023, not Munich in 2021; answer in German. "
    with caplog.at_level(logging.INFO, logger="langmem_edge.memory.episodic.extraction"):
        out = extract(model, msgs(3, size=80, said=said))
    assert [(m.text, m.kind, m.fact_type) for m in out] == [
        ("The user moved to Berlin in 2023.", "event", "event"),
        ("The user prefers tea.", "fact", "preference"),
        ("Always answer in German.", "instruction", "instruction"),
        ("Renew the passport.", "task", "task"),
    ]
    assert out[0].valid_from == datetime(2023, 4, 1, tzinfo=UTC)
    assert out[0].tags == ["move"] and out[0].source_message_ids == ["id0"]
    assert out[1].key == "preference.drink"
    assert out[2].source_message_ids == ["id0", "id1", "id2"]  # no citation: the whole unit
    assert all(m.confidence == 0.5 and m.source == "turn" for m in out)
    assert "Munich" in caplog.text and "temporal_accuracy" in caplog.text
    assert "temporal_accuracy is wrong" in caplog.text


def test_candidate_without_a_verdict_is_dropped() -> None:
    def respond(messages: list[BaseMessage]) -> Any:
        if system_text(messages).startswith("You extract"):
            return {
                "memories": [
                    {"text": "A", "fact_type": "identity"},
                    {"text": "B", "fact_type": "identity"},
                ]
            }
        return {
            "checks": [
                {
                    "number": 2,
                    **{
                        p: True
                        for p in (
                            "entity_identity",
                            "object_identity",
                            "location_context",
                            "temporal_accuracy",
                            "organisational_context",
                            "completeness",
                            "relational_context",
                            "supported",
                        )
                    },
                }
            ]
        }

    out = extract(ScriptedChatModel(respond=respond), msgs(2, said=" A B "))
    assert [m.text for m in out] == ["B"]


def test_detail_pass_runs_for_9_messages_and_tags_results() -> None:
    prompts: list[str] = []

    def propose(messages: list[BaseMessage]) -> list[dict[str, Any]]:
        prompts.append(system_text(messages))
        if "detail pass" in prompts[-1]:
            return [
                {
                    "text": "The laptop costs $1,299.",
                    "fact_type": "identity",
                    "message_numbers": [1],
                }
            ]
        return [{"text": "The user is shopping.", "fact_type": "event", "message_numbers": [1]}]

    said = " The laptop costs $1,299. "
    out = extract(scripted(propose), msgs(9, size=40, said=said))
    assert sum("detail pass" in p for p in prompts) == 2  # windows 0-7, 6-8
    assert sum("detail pass" not in p for p in prompts) == 1
    texts = {m.text: m for m in out}
    assert texts["The laptop costs $1,299."].tags == ["detail"]
    assert len(texts["The laptop costs $1,299."].source_message_ids) == 2  # merged duplicates
    assert len(extract(scripted(propose), msgs(8, size=40, said=said))) == 1  # none below 9


def test_kinds_and_max_items_filters() -> None:
    def propose(messages: list[BaseMessage]) -> list[dict[str, Any]]:
        return [{"text": f"t{i}", "fact_type": "task" if i % 2 else "decision"} for i in range(30)]

    said = " " + " ".join(map(str, range(30))) + " "
    out = extract(scripted(propose), msgs(2, size=100, said=said), kinds=frozenset({"fact"}),
                  max_items=10)
    assert len(out) == 10 and {m.kind for m in out} == {"fact"}


def test_at_most_4_calls_run_at_once() -> None:
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    def propose(messages: list[BaseMessage]) -> list[dict[str, Any]]:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.05)
        with lock:
            state["now"] -= 1
        return []

    extract(scripted(propose), msgs(100, size=1000), detail=False)  # 13 chunks
    assert 1 < state["peak"] <= 4


async def test_async_driver_bounds_concurrency_too() -> None:
    lock = threading.Lock()
    state = {"now": 0, "peak": 0, "calls": 0}

    def propose(messages: list[BaseMessage]) -> list[dict[str, Any]]:
        with lock:
            state["now"] += 1
            state["calls"] += 1
            mine = state["calls"]
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.05)
        with lock:
            state["now"] -= 1
        return [{"text": f"chunk fact {'abcdefghijklmnop'[mine - 1]}",
                 "fact_type": "identity"}]

    plan = model_extraction_plan(
        msgs(100, size=1000),
        scripted(propose),
        config=FAST,
        source="turn",
        confidence=0.5,
        session_id="s",
        detail=False,
    )
    out = await run_async(plan, policy=RetryPolicy.from_config(FAST))
    assert state["calls"] == 13 and len(out) == 13
    assert 1 < state["peak"] <= 4


def test_transient_errors_are_retried_then_succeed() -> None:
    attempts = {"n": 0}

    def propose(messages: list[BaseMessage]) -> list[dict[str, Any]]:
        attempts["n"] += 1
        if attempts["n"] < 3:
            raise TimeoutError("slow provider")
        return [{"text": "The user is Ana.", "fact_type": "identity"}]

    out = extract(scripted(propose), msgs(2, size=30, said=" I am Ana. "))
    assert attempts["n"] == 3 and [m.text for m in out] == ["The user is Ana."]


def test_transient_errors_outliving_retries_raise_extraction_error() -> None:
    attempts = {"n": 0}

    class RateLimitError(Exception):
        status_code = 429

    def propose(messages: list[BaseMessage]) -> list[dict[str, Any]]:
        attempts["n"] += 1
        raise RateLimitError("slow down")

    with pytest.raises(ExtractionError, match="RateLimitError") as info:
        extract(scripted(propose), msgs(2))
    assert attempts["n"] == 3
    assert isinstance(info.value.__cause__, RateLimitError)


def test_other_errors_are_not_retried() -> None:
    attempts = {"n": 0}

    def propose(messages: list[BaseMessage]) -> list[dict[str, Any]]:
        attempts["n"] += 1
        raise KeyError("bug")

    with pytest.raises(ExtractionError):
        extract(scripted(propose), msgs(2))
    assert attempts["n"] == 1


def test_missing_structured_output_is_retried_then_fails_without_a_fallback() -> None:
    model = ScriptedChatModel(responses=["I cannot do that."])  # never a tool call, no JSON
    with pytest.raises(ExtractionError, match="extract chunk 1/1.*OutputParserException"):
        extract(model, msgs(2))
    assert len(model.calls) == 2  # the second reply repeated the first: no third attempt


class _PlainChatModel(BaseChatModel):
    """A chat model without tool calling, so without ``with_structured_output``."""

    @property
    def _llm_type(self) -> str:
        return "plain"

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="{}"))])


def test_model_without_structured_output_support_is_asked_for_json() -> None:
    assert extract(_PlainChatModel(), msgs(2)) == []  # it answers "{}": no memories


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (TimeoutError(), True),
        (ConnectionError(), True),
        (ValueError(), False),
        (type("ServiceUnavailableError", (Exception,), {})(), True),
        (type("E", (Exception,), {"status_code": 503})(), True),
        (type("E", (Exception,), {"status_code": 400})(), False),
    ],
)
def test_is_transient(exc: BaseException, expected: bool) -> None:
    assert is_transient(exc) is expected
