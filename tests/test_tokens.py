"""Token estimate: each branch of DESIGN.md's table, its thresholds, and truncation."""

from __future__ import annotations

import math

import pytest

from langmem_edge.memory.core.tokens import (
    TRUNCATION_MARK,
    chars_per_token,
    estimate_tokens,
    truncate_to_tokens,
)


def test_prose_is_3_5_chars_per_token() -> None:
    text = "The quick brown fox jumps over the lazy dog near the river bank."
    assert chars_per_token(text) == 3.5
    assert estimate_tokens(text) == math.ceil(len(text) / 3.5)


def test_cjk_over_30_percent_is_1_5_chars_per_token() -> None:
    text = "我喜欢在周末去公园散步和看书"  # all CJK
    assert chars_per_token(text) == 1.5
    assert estimate_tokens(text) == math.ceil(len(text) / 1.5)
    mixed = "hello " + "日本語"  # 3 of 9 = 33 % CJK
    assert chars_per_token(mixed) == 1.5


def test_cjk_threshold_is_strict() -> None:
    exactly = "abcdefg" + "한국어"  # 3 of 10 = 30 %: not more than 30 %
    assert chars_per_token(exactly) == 3.5
    assert chars_per_token("abcdef" + "한국어") == 1.5  # 3 of 9


def test_json_punctuation_over_8_percent_is_3_chars_per_token() -> None:
    text = '{"name": "Ana", "tags": ["a", "b"], "age": 34}'
    assert chars_per_token(text) == 3.0
    assert estimate_tokens(text) == math.ceil(len(text) / 3.0)


def test_json_threshold_is_strict() -> None:
    exactly = "a" * 23 + "{}"  # 2 of 25 = 8 %: not more than 8 %
    assert chars_per_token(exactly) == 3.5
    assert chars_per_token("a" * 22 + "{}") == 3.0  # 2 of 24 > 8 %


def test_cjk_wins_over_json() -> None:
    text = '{"名前": "山田太郎"}'
    assert chars_per_token(text) == 1.5


def test_empty_is_zero_tokens() -> None:
    assert estimate_tokens("") == 0


def test_ratios_are_overridable() -> None:
    assert estimate_tokens("a" * 40, default_ratio=4.0) == 10


@pytest.mark.parametrize("text", ["word " * 200, "语言模型" * 50, '{"k": [1, 2]} ' * 40])
@pytest.mark.parametrize("budget", [1, 5, 37, 100])
def test_truncate_fits_the_budget(text: str, budget: int) -> None:
    cut, was_cut = truncate_to_tokens(text, budget)
    assert estimate_tokens(cut) <= budget
    assert was_cut
    assert cut == "" or cut.endswith(TRUNCATION_MARK) or cut == TRUNCATION_MARK.strip()
    if budget >= 37:
        assert len(cut) > len(TRUNCATION_MARK)  # something of the text is kept


def test_truncate_keeps_text_that_fits() -> None:
    assert truncate_to_tokens("short", 10) == ("short", False)
    assert truncate_to_tokens("short", 0) == ("", True)
