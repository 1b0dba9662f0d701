"""The keyword channel's analyser: tokens, normalisation, stopwords, stemming."""

from __future__ import annotations

import pytest

from langmem_edge.errors import ConfigurationError
from langmem_edge.retrieval.keys import key_segments
from langmem_edge.retrieval.text import Analyzer, key_tokens, tokenize


def test_inflections_meet_and_stopwords_go() -> None:
    an = Analyzer()
    assert an.terms("She painted a sunrise") == ["paint", "sunris"]
    assert an.terms("painted") == an.terms("painting") == an.terms("paints")
    assert an.terms("What is the theme of it?") == ["theme"]


def test_query_with_no_usable_terms_is_empty() -> None:
    an = Analyzer()
    assert an.query_terms("what is it? ...!") == []
    assert an.query_terms("") == []


def test_unicode_case_folding_and_nfkc() -> None:
    an = Analyzer(language=None, stopwords=[])
    assert an.terms("STRASSE") == an.terms("straße")
    assert an.terms("Ｆｕｌｌｗｉｄｔｈ") == ["fullwidth"]  # full-width letters fold
    assert an.terms("Café") == ["café"]


def test_possessives_ordinals_padding_and_months() -> None:
    an = Analyzer()
    assert an.terms("Caroline's") == an.terms("Caroline")
    assert an.terms("the 8th of Sept") == an.terms("8 September")
    assert tokenize("D30:05") == ["d30", "5"]
    assert an.terms("2023-05-08") == ["2023", "5", "8"]
    assert tokenize("Don’t") == ["don't"]  # curly apostrophe kept inside the word


def test_cjk_runs_become_bigrams() -> None:
    assert tokenize("東京タワー") == ["東京", "京タ", "タワ", "ワー"]
    assert tokenize("猫") == ["猫"]
    assert tokenize("abc東京") == ["abc", "東京"]


def test_repeats_are_term_frequencies_but_query_terms_are_distinct() -> None:
    an = Analyzer()
    assert an.terms("dog dogs DOG") == ["dog", "dog", "dog"]
    assert an.query_terms("dog dogs DOG cat") == ["dog", "cat"]


def test_other_languages_and_no_stemming() -> None:
    fr = Analyzer(language="french")
    assert fr.terms("mangeaient") == fr.terms("mangeait")
    assert Analyzer(language=None).terms("running dogs") == ["running", "dogs"]
    assert Analyzer(language="english", stopwords=["dog"]).terms("the dog runs") == [
        "the",
        "run",
    ]


def test_unknown_language_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="klingon"):
        Analyzer(language="klingon")


def test_key_tokens_are_not_stemmed() -> None:
    assert key_tokens("What is the UI theme?") == ["ui", "theme"]
    assert key_tokens("running running") == ["running"]


def test_key_segments() -> None:
    assert key_segments("preference.ui_theme") == ["preference", "ui", "theme"]
    assert key_segments("user:Alice/address-home") == ["user", "alice", "address", "home"]
    assert key_segments("a..b__a") == ["a", "b"]
    assert key_segments("") == []
