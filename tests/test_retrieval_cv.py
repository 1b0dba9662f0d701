"""The LoCoMo cross-validation harness: folds, scoring and signals on a tiny synthetic set."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def cv():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location("locomo_cv", ROOT / "benchmarks" / "locomo_cv.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["locomo_cv"] = module
    spec.loader.exec_module(module)
    return module


def test_folds_leave_each_conversation_out_once(cv) -> None:  # type: ignore[no-untyped-def]
    fs = cv.folds(["a", "b", "c"])
    assert fs == [(["b", "c"], "a"), (["a", "c"], "b"), (["a", "b"], "c")]


def test_recall_and_summary(cv) -> None:  # type: ignore[no-untyped-def]
    ranked = ["x", "e1", "y", "z", "w", "v", "e2", "u", "t", "s"]
    assert cv.recall_row(1, ranked, frozenset({"e1", "e2"})) == (1, 0.5, 1.0)
    assert cv.recall_row(2, ranked, frozenset({"nope"})) == (2, 0.0, 0.0)
    summary = cv.summarise([(1, 0.5, 1.0), (2, 0.0, 0.0), (2, 1.0, 1.0)])
    assert summary["1-5"] == pytest.approx((0.5, 2 / 3))
    assert summary["cat1"] == (0.5, 1.0) and summary["cat2"] == (0.5, 0.5)


def test_cross_validation_never_scores_a_choice_on_its_own_fold(cv) -> None:  # type: ignore[no-untyped-def]
    # "spiky" wins in-sample thanks to conversation a; the fold holding a out must not
    # credit it there, so the held-out mean falls below the in-sample figure.
    table: dict[tuple[str, str], float] = {
        ("steady", "a"): 0.6, ("steady", "b"): 0.6, ("steady", "c"): 0.6,
        ("spiky", "a"): 1.0, ("spiky", "b"): 0.3, ("spiky", "c"): 0.9,
    }
    grid = [{"name": "steady"}, {"name": "spiky"}]

    def evaluate(cfg: Any, cid: str) -> list[tuple[int, float, float]]:
        v = table[(cfg["name"], cid)]
        return [(1, v, v)]

    res = cv.cross_validate(grid, evaluate, ["a", "b", "c"])
    # in-sample: spiky (mean 0.733) beats steady (0.6)
    assert res.best["name"] == "spiky"
    assert res.in_sample["1-5"][0] == pytest.approx((1.0 + 0.3 + 0.9) / 3)
    # held out a: train b, c -> spiky 0.6 vs steady 0.6: tie, the earlier (steady) -> 0.6
    # held out b: train a, c -> spiky -> 0.3; held out c: train a, b -> spiky 0.65 -> 0.9
    assert [res.chosen[c]["name"] for c in "abc"] == ["steady", "spiky", "spiky"]
    assert res.held_out["1-5"][0] == pytest.approx((0.6 + 0.3 + 0.9) / 3)
    assert res.held_out["1-5"][0] < res.in_sample["1-5"][0]


def test_cross_validate_rejects_empty_grids(cv) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="non-empty grid"):
        cv.cross_validate([], lambda c, i: [], ["a"])


def test_product_grid(cv) -> None:  # type: ignore[no-untyped-def]
    assert cv.product_grid(a=(1, 2), b=("x",)) == [{"a": 1, "b": "x"}, {"a": 2, "b": "x"}]


def _sample() -> list[dict[str, Any]]:
    turns = [
        {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a puppy named Rex."},
        {"speaker": "Bo", "dia_id": "D1:2", "text": "What breed is he?"},
        {"speaker": "Ann", "dia_id": "D1:3", "text": "A beagle, very loud."},
        {"speaker": "Bo", "dia_id": "D1:4", "text": "I ran a marathon in Paris."},
    ]
    qa = [{"question": "What is the name of Ann's puppy?", "answer": "Rex",
           "evidence": ["D1:1"], "category": 4},
          {"question": "Which city did Bo run a marathon in?", "answer": "Paris",
           "evidence": ["D1:4"], "category": 1}]
    return [{"sample_id": f"conv-{n}",
             "conversation": {"speaker_a": "Ann", "speaker_b": "Bo",
                              "session_1_date_time": "1:00 pm on 8 May, 2023",
                              "session_1": turns},
             "qa": qa} for n in range(3)]


def test_channels_and_fused_rankings_on_synthetic_data(cv, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "mini.json"
    path.write_text(json.dumps(_sample()))
    convs = cv.load(path)
    ch = cv.Channels(convs[0], None)  # no vectors: keyword-only rankings
    assert cv.channel_only(ch, 0, "keyword", {"cw": 0.5})[0] == "D1:1"
    fused = cv.fused_ranking(ch, 1, {"rrf_k": 10.0, "vw": 0.0, "cw": 0.5, "pw": 0.5})
    assert fused[0] == "D1:4"
    split = cv.fused_ranking(ch, 0, {"rrf_k": 10.0, "cw": 0.5, "sw": 0.5, "dw": 0.5})
    assert split[0] == "D1:1"
    channels = {c.sample_id: cv.Channels(c, None) for c in convs}
    res = cv.cross_validate([{"rrf_k": 10.0, "cw": 0.5}], cv.evaluator(channels, "fused"),
                            list(channels))
    assert res.held_out["1-5"] == (1.0, 1.0) == res.in_sample["1-5"]
    fields = cv.keyword_fields(convs[0], split=True)["D1:2"]
    assert fields["speaker"] == "Bo" and fields["date"] == "1:00 pm on 8 May, 2023"
    assert fields["context"].startswith("I adopted a puppy named Rex.")
