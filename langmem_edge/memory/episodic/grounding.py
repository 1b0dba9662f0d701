"""The grounding check: a model-free test that what a candidate memory asserts was said.

A model may propose a memory nobody stated (an age, a country, a street); asking the same
model whether its candidate is supported does not catch it, since a weak model agrees with
itself. :func:`grounding_problem` is the check extraction runs on every model candidate
before anything else: every *specific* of the candidate must occur in the messages it was
extracted from (the unit's messages, their dates included, as the model saw them):

- **names**: capitalised words ("Lisbon", "Friday", "Acme"; at a sentence start too, unless a
  stopword: "Portugal is where the user lives." is checked, "They ..." is not; extraction
  skips sentence starts for instructions and tasks, whose first word is a verb: "Renew the
  passport."), compared case-insensitively, possessive ``'s`` dropped, as the word or its
  Snowball stem;
- **numbers**: digit runs ("25", "2023-04-01" is 2023, 4 and 1), compared as values, found
  in the messages as digits, as number words ("twenty-five", "twenty five", "a dozen" is not),
  as a month name (March is 3) or in a message's date;
- **quoted values**: text in double quotes, or in single quotes set off by spaces, found as a
  phrase (case and punctuation ignored).

"The user", "user's", "the assistant" and the pronoun "I" are never names: the messages say
"I" and "my" where a memory says "the user".

Measured on LoCoMo's 1,210 annotated observations of the five development conversations, as a
memory would phrase them (``benchmarks/grounding_check.py``): 10 true facts dropped against
their session's messages (0.8 %: names the annotators knew from other sessions, a weekday
resolved from "last week", a title said differently), and every made-up number, place and
sentence-start name caught (1,200 / 1,200 / 1,165).

It cannot see: a wrong relation between words that were all said ("Sam lives in Lisbon" from
"Sam visited; I live in Lisbon"), a negation lost ("likes" for "doesn't like"), lowercase
inventions ("the user is a doctor" when nobody said doctor: :func:`.rules.supported`, which
checks every content word, is too strict for a model's paraphrase), spelled-out numbers in
the candidate ("twenty" is not checked), and it drops by mistake a date the model resolved
from a relative expression ("next Friday" written as "2024-06-07") and a name the model
normalised ("NYC" written "New York").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from langmem_edge.retrieval.text import ENGLISH_STOPWORDS, default_analyzer

__all__ = ["grounding_problem", "number_values"]

_UNITS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * i for i, w in enumerate(
    "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if w != "_"}
_MONTHS = {m: i for i, names in enumerate(
    [("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"), ("may",),
     ("jun", "june"), ("jul", "july"), ("aug", "august"), ("sep", "sept", "september"),
     ("oct", "october"), ("nov", "november"), ("dec", "december")], start=1) for m in names}
_WORD = re.compile(r"[^\W\d_][\w'’-]*|\d+")
_DIGITS = re.compile(r"\d+")
_NAME = re.compile(r"\b[A-Z][\w'’-]*")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n)[\"'“‘(\[]*$")
_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”|(?:(?<=\s)|^)'([^']+)'(?=[\s.,;:!?]|$)")
_NOT_NAMES = frozenset({"i", "user", "assistant"})


def _possessive(word: str) -> str:
    return re.sub(r"['’]s?$", "", word.lower())


def number_values(text: str) -> set[int]:
    """Every number ``text`` states: digit runs, number words ("twenty-five", "twenty five",
    "seven"), and month names as their number."""
    values = {int(d) for d in _DIGITS.findall(text)}
    words = re.findall(r"[a-z]+", text.lower())
    after_tens = False  # "five" of "twenty-five" is not a five
    for i, word in enumerate(words):
        if word in _UNITS and not after_tens:
            values.add(_UNITS[word])
        after_tens = False
        if word in _TENS:
            unit = _UNITS.get(words[i + 1], 0) if i + 1 < len(words) else 0
            after_tens = 0 < unit < 10
            values.add(_TENS[word] + (unit if after_tens else 0))
        if word in _MONTHS:
            values.add(_MONTHS[word])
    return values


def _phrase(text: str) -> str:
    return " ".join(w.lower() for w in _WORD.findall(text))


def grounding_problem(text: str, sources: Iterable[str], *,
                      sentence_starts: bool = True) -> str | None:
    """Why ``text`` is not grounded in ``sources`` (the first name, number or quoted value of
    it that no source states), or ``None`` when everything it names was said (see the module
    docstring for what counts). ``sentence_starts=False`` skips every capitalised word that
    starts a sentence (the check before ``benchmarks/grounding_check.py`` measured both)."""
    source = "\n".join(sources)
    words = {_possessive(w) for w in _WORD.findall(source)}
    stems = set(default_analyzer().terms(source))
    for match in _NAME.finditer(text):
        name = _possessive(match.group(0))
        if _SENTENCE_START.search(text[:match.start()]) and (
                not sentence_starts or name in ENGLISH_STOPWORDS):
            continue
        if name in _NOT_NAMES or name in words:
            continue
        terms = default_analyzer().terms(name)
        if not terms or not set(terms) <= stems:
            return f"name {match.group(0)!r} is not in the messages"
    numbers = number_values(source)
    for digits in _DIGITS.findall(text):
        if int(digits) not in numbers:
            return f"number {digits!r} is not in the messages"
    phrase = f" {_phrase(source)} "
    for match in _QUOTED.finditer(text):
        quoted = _phrase(next(g for g in match.groups() if g is not None))
        if quoted and f" {quoted} " not in phrase:
            return f"quoted value {quoted!r} is not in the messages"
    return None
