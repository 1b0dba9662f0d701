"""Extraction with any chat model, grounded in what was said (issue 41).

A model without native structured output is asked for JSON; a unit whose reply cannot be
parsed falls back to the rules; a candidate naming a name, number or quoted value nobody
said is dropped, counted with its reason.
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

import chromadb
import pytest
from episodic_helpers import scripted, system_text
from langchain_core.messages import BaseMessage
from langgraph.store.memory import InMemoryStore

from langmem_edge import ChromaStore
from langmem_edge.memory import AgentMemory
from langmem_edge.memory.episodic.grounding import grounding_problem, number_values
from langmem_edge.testing import FakeEmbeddings, ScriptedChatModel

SAID = "My name is Sam, I live in Lisbon and I have a dentist appointment on Friday."
TRUE = ["The user's name is Sam.", "The user lives in Lisbon.",
        "The user has a dentist appointment on Friday."]
INVENTED = {"The user is 25 years old.": "number '25'",
            "The user lives in Portugal.": "name 'Portugal'",
            "The user's street is Euzaiba.": "name 'Euzaiba'",
            "Portugal is where the user lives.": "name 'Portugal'"}
FAST = {"episodic": {"retry_wait_initial": 0.0, "retry_wait_max": 0.0}}


def _proposals() -> list[dict[str, Any]]:
    return [{"text": t, "fact_type": "identity", "message_numbers": [1]}
            for t in [*TRUE[:2], *INVENTED]] + [
        {"text": TRUE[2], "fact_type": "event", "message_numbers": [1]}]


def _profile(model: ScriptedChatModel, kind: str = "memory") -> Any:
    index = {"dims": 64, "embed": FakeEmbeddings(64), "fields": ["text"]}
    # ChromaStore applies a batch whole: the memories ride in the messages' write there
    store = (InMemoryStore(index=index) if kind == "memory"  # type: ignore[arg-type]
             else ChromaStore(chromadb.EphemeralClient(), index=index,  # type: ignore[arg-type]
                              collection_prefix=f"t{uuid.uuid4().hex[:8]}"))
    return AgentMemory(store, model=model, config=FAST).profile("p")


def _texts(result: Any) -> set[str]:
    return {m.text for m in result.memories_written}


# ---- the check itself -----------------------------------------------------------------------


@pytest.mark.parametrize(("text", "problem"), [
    *[(t, None) for t in TRUE],
    *[(t, why) for t, why in INVENTED.items()],
    ("User's name is Sam. Sam lives in Lisbon.", None),  # said, at a sentence start too
    ("The user lives in Lisbon. Euzaiba is the street.", "name 'Euzaiba'"),
    ("The user lives in Lisbon. They see a dentist on Friday.", None),  # a stopword starts
    ("The user's dentist is Dr Costa.", "name 'Dr'"),
    ('The user calls the dentist "the tooth man".', "quoted value 'the tooth man'"),
    ("The user has 2 appointments.", "number '2'"),
])
def test_grounding_of_the_issue_sentence(text: str, problem: str | None) -> None:
    found = grounding_problem(text, [SAID])
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


def test_grounding_reads_number_words_months_and_case() -> None:
    assert grounding_problem("The user is 25.", ["I'm twenty-five years old"]) is None
    assert grounding_problem("The user is 25.", ["I'm twenty five"]) is None
    assert grounding_problem("The user is 7.", ["I am seven"]) is None
    assert grounding_problem("The user is 26.", ["I'm twenty-five"]) is not None
    assert grounding_problem("The user moved on 2024-03-05.", ["2024 march 5: moved"]) is None
    assert grounding_problem("The user likes Lisbon's trams.", ["i like lisbon trams"]) is None
    assert grounding_problem('The user\'s password hint is "blue door".',
                             ["the hint is: Blue Door!"]) is None
    assert number_values("twenty-five, 3 and March, thirty") == {25, 3, 30}


# ---- extraction through Profile.ingest ------------------------------------------------------


@pytest.mark.parametrize("kind", ["memory", "chroma"])
def test_invented_facts_are_dropped_true_ones_written(caplog: pytest.LogCaptureFixture,
                                                      kind: str) -> None:
    model = scripted(lambda messages: _proposals())
    with caplog.at_level(logging.INFO, logger="langmem_edge.memory.episodic.extraction"):
        result = _profile(model, kind).ingest([{"role": "user", "content": SAID}],
                                              session_id="s")
    assert _texts(result) == set(TRUE)
    assert set(result.candidates_dropped) == set(INVENTED)
    for text, why in INVENTED.items():
        assert why in result.candidates_dropped[text]
        assert text in caplog.text
    assert result.extraction_fallbacks == 0
    # the model's own check never sees what was dropped before it
    checks = [str(c[-1].content) for c in model.calls
              if system_text(c).startswith("Check each")]
    assert checks and not any(json.dumps(t) in checks[0] for t in INVENTED)


class _NoStructuredOutput(ScriptedChatModel):
    """A chat model without native structured output (as ``ChatHuggingFace``): it can only
    reply in text."""

    def with_structured_output(self, schema: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("Pydantic schema is not supported for function calling")


def _json_replies(messages: list[BaseMessage]) -> str:
    system = system_text(messages)
    if system.startswith("You extract"):
        return "Here you go:\n```json\n" + json.dumps({"memories": _proposals()}) + "\n```"
    if system.startswith("Check each"):
        body = str(messages[-1].content).split("Candidates:\n", 1)[1]
        n = sum(1 for line in body.splitlines() if line[:1].isdigit())
        points = ("entity_identity", "object_identity", "location_context",
                  "temporal_accuracy", "organisational_context", "completeness",
                  "relational_context", "supported")
        return json.dumps({"checks": [{"number": i, **dict.fromkeys(points, True)}
                                      for i in range(1, n + 1)]})
    return "ok"


@pytest.mark.parametrize("kind", ["memory", "chroma"])
def test_model_without_structured_output_gets_its_memories_extracted(kind: str) -> None:
    model = _NoStructuredOutput(respond=_json_replies)
    result = _profile(model, kind).ingest([{"role": "user", "content": SAID}], session_id="s")
    assert _texts(result) == set(TRUE)
    assert set(result.candidates_dropped) == set(INVENTED)
    assert result.extraction_fallbacks == 0
    extraction = next(c for c in model.calls if system_text(c).startswith("You extract"))
    assert "JSON" in str(extraction[-1].content)  # the format instructions, in the prompt


def test_unparseable_replies_fall_back_to_the_rules(caplog: pytest.LogCaptureFixture) -> None:
    model = _NoStructuredOutput(respond=lambda messages: "Sure! Sam, Lisbon, Friday :)")
    with caplog.at_level(logging.WARNING, logger="langmem_edge.memory.episodic.extraction"):
        result = _profile(model).ingest([{"role": "user", "content": SAID}], session_id="s")
    assert result.extraction_fallbacks == 1
    assert {"The user's name is Sam.", "The user lives in Lisbon."} <= _texts(result)
    assert all("rule-based" in m.tags for m in result.memories_written)
    assert caplog.text.count("extracted by the rules instead") == 1
    calls = [system_text(c)[:11] for c in model.calls]
    # two attempts: the second repeated the first word for word, so no third
    assert calls.count("You extract") == 2
    assert "Check each " not in calls  # and no check


def test_a_model_that_varies_its_unparseable_reply_gets_every_attempt() -> None:
    replies = iter(f"Sure! attempt {i}" for i in range(10))
    model = _NoStructuredOutput(respond=lambda messages: next(replies))
    result = _profile(model).ingest([{"role": "user", "content": SAID}], session_id="s")
    assert result.extraction_fallbacks == 1
    calls = [system_text(c)[:11] for c in model.calls]
    assert calls.count("You extract") == 3  # the policy's three attempts


async def test_unparseable_replies_fall_back_to_the_rules_async() -> None:
    model = _NoStructuredOutput(respond=lambda messages: "not json")
    result = await _profile(model).aingest([{"role": "user", "content": SAID}],
                                           session_id="s")
    assert result.extraction_fallbacks == 1
    assert "The user lives in Lisbon." in _texts(result)


def test_an_echo_of_the_schema_is_no_answer_and_the_rules_take_the_unit() -> None:
    """SmolLM2-135M often replies with the format instructions' schema in a ```json fence;
    every field of ``ExtractedMemories`` has a default, so it would pass as "nothing to
    remember" and the unit's facts would be lost (seen in ``benchmarks/real_model.py``)."""
    echo = ('The output schema is:\n```json\n{"properties": {"memories": {"description": '
            '"The memories worth keeping", "type": "array"}}, "required": []}\n```')
    model = _NoStructuredOutput(respond=lambda messages: echo)
    result = _profile(model).ingest([{"role": "user", "content": SAID}], session_id="s")
    assert result.extraction_fallbacks == 1
    assert {"The user's name is Sam.", "The user lives in Lisbon."} <= _texts(result)
    empty = _NoStructuredOutput(respond=lambda messages: '{"memories": []}')
    nothing = _profile(empty).ingest([{"role": "user", "content": SAID}], session_id="s")
    assert (nothing.extraction_fallbacks, _texts(nothing)) == (0, set())  # a real "none"
