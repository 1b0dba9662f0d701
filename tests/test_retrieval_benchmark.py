"""The LoCoMo benchmark's data handling, on synthetic data (the data set is never copied)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def locomo():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("locomo_bench", ROOT / "benchmarks" / "locomo.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["locomo_bench"] = module
    spec.loader.exec_module(module)
    return module


def sample() -> list[dict]:  # type: ignore[type-arg]
    turns1 = [
        {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a puppy."},
        {"speaker": "Bo", "dia_id": "D1:2", "text": "Cute!", "blip_caption": "a small dog",
         "img_url": "x"},
        {"speaker": "Ann", "dia_id": "D1:3", "text": "His name is Rex."},
    ]
    turns2 = [{"speaker": "Bo", "dia_id": "D2:1", "text": "I ran a marathon."}]
    return [{
        "sample_id": "conv-x",
        "conversation": {"speaker_a": "Ann", "speaker_b": "Bo",
                         "session_1_date_time": "1:00 pm on 8 May, 2023", "session_1": turns1,
                         "session_2_date_time": "2:00 pm on 9 May, 2023", "session_2": turns2},
        "qa": [
            {"question": "q1", "answer": "a", "evidence": ["D1:1; D2:01"], "category": 1},
            {"question": "q2", "answer": "a", "evidence": ["D:1:3", "D9:9"], "category": 2},
            {"question": "q3", "answer": "a", "evidence": [], "category": 3},
            {"question": "q4", "adversarial_answer": "a", "evidence": ["D7:1"], "category": 5},
        ],
    }]


def test_load_cleans_evidence_and_builds_documents(locomo, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "mini.json"
    path.write_text(json.dumps(sample()))
    (conv,) = locomo.load(path)
    assert [q.evidence for q in conv.questions] == [
        frozenset({"D1:1", "D2:1"}),
        frozenset({"D1:3"}),
    ]
    assert conv.skipped == 2
    assert conv.turns[1].document == "[1:00 pm on 8 May, 2023] Bo: Cute! [shares a small dog]"
    values = locomo.item_values(conv, 1)
    assert values["D1:2"]["context"] == "I adopted a puppy. His name is Rex."
    assert "context" not in values["D2:1"]  # neighbours never cross sessions
    assert locomo.opaque_key("D12:3") == "d12t3"
    assert locomo.score(["D1:1", "X"], frozenset({"D1:1", "D2:1"})) == (0.5, 0.5, 1.0)
