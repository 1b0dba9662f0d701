"""Prose or paste: which lines of a message are written to be read, and a recall query made
from a long message.

Chat messages of a coding or operations agent carry pastes: a log, a stack trace, a code
excerpt, an HTML fragment. Those lines are the worst material for two jobs of memory:

- a **fact** is a sentence or two a person said; a line of code, markup or log is never one
  (extraction skips such lines: :func:`is_code_line`);
- a **recall query** made from the whole message is dominated by the paste: the vector
  channel reads only the first ~256 word pieces of its text (all-MiniLM-L6-v2), the BM25
  channel weighs every log token as much as the user's words, and a message over the query
  limit (10,000 characters) cannot be a query at all (:func:`recall_query`).

:func:`is_code_line` is a rule, not a model. A line counts as code, markup or log when:

- it sits inside a fenced block (````` ``` ````` or ``~~~``), fences included
  (:func:`prose_lines` tracks them);
- it starts with markup (``<div``, ``</p>``, ``<!--``, ``<?xml``), a shell or REPL prompt
  (``$ ``, ``>>> ``, ``PS C:\\>``), or a comment/preprocessor mark (``//``, ``#include``,
  ``/*``, ``*/``); or is indented by a tab or four spaces or more;
- it looks like a log record: starts with a timestamp (``2024-05-01 12:00:03``,
  ``[12:00:03]``), a level (``INFO``, ``ERROR:``, ``[WARN]`` ...), a stack frame
  (``File "x.py", line 3``, ``at com.x.Y(Y.java:12)``) or ``Traceback``;
- it starts with a code keyword followed by code (``def f(``, ``import x``,
  ``return x;``, ``const x =``, ``SELECT * FROM``), or ends with ``{``, ``;`` or ``=>``; or
- its characters are code-like: more than 12 % of its non-space characters are in
  ``{}[]()<>;=$|\\":_`` with fewer than 60 % of its tokens plain words, or more than 30 %
  are.

Anything else is prose. The rule errs towards prose: a sentence that quotes ``foo()`` once
stays prose, and so does a line of one or two words unless it is mostly symbols.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = [
    "QUERY_HEAD_SHARE",
    "QUERY_SEPARATOR",
    "is_code_line",
    "prose_lines",
    "recall_query",
]

QUERY_HEAD_SHARE = 0.75
"""Share of the query limit given to the head of a text still too long after the pastes are
left out (the rest goes to its tail)."""
QUERY_SEPARATOR = " [...] "
"""What joins the head and the tail of a cut query."""

_FENCE = re.compile(r"^\s*(?:```|~~~)")
_MARKUP = re.compile(r"^\s*<(?:[A-Za-z][\w:-]*(?:[\s/>]|$)|/[A-Za-z]|!--|!DOCTYPE|\?xml)")
_PROMPT = re.compile(r"^\s*(?:\$ |> \S|>>> |\.\.\. |PS [A-Z]:\\|[\w.-]+@[\w.-]+:\S*\$ )")
_COMMENT = re.compile(r"^\s*(?://|/\*|\*/|#include\b|#define\b|#!|--\s)")
_INDENTED = re.compile(r"^(?:\t| {4,})\S")
_TIMESTAMP = re.compile(
    r"^\s*\[?(?:\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}|\d{1,2}:\d{2}:\d{2}|"
    r"\d{4}/\d{2}/\d{2} \d{1,2}:\d{2}|[A-Z][a-z]{2} +\d{1,2} \d{2}:\d{2}:\d{2})")
_LEVEL = re.compile(r"^\s*\[?(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|FATAL|CRITICAL|"
                    r"SEVERE|PANIC)\b[\]:|\s-]")
_FRAME = re.compile(r"^\s*(?:File \"[^\"]+\", line \d+|at [\w$.<>]+\(.*\)|Traceback \(most recent"
                    r"|Caused by: |\w+(?:\.\w+)*(?:Error|Exception): )")
_KEYWORD = re.compile(
    r"^\s*(?:(?:async\s+)?def \w+\s*\(|class \w+\s*[(:{<]|import [\w.]+(?: as \w+)?;?\s*$|"
    r"from [\w.]+ import |return\b.*[;)\]}]\s*$|(?:const|let|var) \w+\s*=|function\s*\w*\s*\(|"
    r"(?:public|private|protected|static)\s+[\w<>\[\], ]+\(|if\s*\(.*\)\s*\{|for\s*\(|"
    r"while\s*\(|(?:SELECT|INSERT INTO|UPDATE|DELETE FROM|CREATE TABLE)\s|"
    r"@[\w.]+(?:\(.*\))?\s*$|[\w.]+\(.*\)\s*;?\s*$|[}\])]+[;,]?\s*$|\w+\s*[+\-*/]?=\s*\S.*;\s*$)")
_ENDS_CODE = re.compile(r"(?:[{;]|=>)\s*$")
_SYMBOLS = frozenset("{}[]()<>;=$|\\\":_")
_WORD = re.compile(r"^[A-Za-z\u00C0-\u024F][a-z\u00E0-\u024F'’-]*[.,!?:;]?$")


def is_code_line(line: str) -> bool:
    """Whether ``line`` (outside any fence) looks like code, markup or a log record (see the
    module docstring for the rule). Blank lines are not code."""
    text = line.rstrip()
    if not text.strip():
        return False
    if (_FENCE.match(text) or _MARKUP.match(text) or _PROMPT.match(text)
            or _COMMENT.match(text) or _INDENTED.match(text) or _TIMESTAMP.match(text)
            or _LEVEL.match(text) or _FRAME.match(text)):
        return True
    if _KEYWORD.match(text) or _ENDS_CODE.search(text):
        return True
    tokens = text.split()
    chars = [c for c in text if not c.isspace()]
    symbols = sum(c in _SYMBOLS for c in chars) / len(chars)
    words = sum(bool(_WORD.match(t)) for t in tokens) / len(tokens)
    if len(tokens) < 3:  # too few words to judge by their share
        return symbols > 0.30
    return symbols > 0.30 or (symbols > 0.12 and words < 0.6)


def _lines(text: str) -> Iterator[tuple[str, bool]]:
    """Each line of ``text`` with whether it is prose (fenced blocks are never)."""
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            yield line, False
            continue
        yield line, not fenced and not is_code_line(line)


def prose_lines(text: str) -> list[str]:
    """The lines of ``text`` that are prose: not in a fenced block, not code, markup or log
    (:func:`is_code_line`), not blank; in order, stripped."""
    return [line.strip() for line, prose in _lines(text) if prose and line.strip()]


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")


def _head_tail(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    if max_chars <= len(QUERY_SEPARATOR) + 2:
        return text[:max_chars]
    room = max_chars - len(QUERY_SEPARATOR)
    head = int(room * QUERY_HEAD_SHARE)
    tail = room - head
    return text[:head].rstrip() + QUERY_SEPARATOR + text[len(text) - tail:].lstrip()


def recall_query(text: str, max_chars: int) -> str:
    """A recall query made from a user message, at most ``max_chars`` characters.

    A message that fits ``max_chars`` and has no code, markup or log line is returned as it
    is. Otherwise:

    1. the pastes are left out: only :func:`prose_lines` are kept (a message that is *only*
       paste keeps its text, so the query is never empty);
    2. the question sentences (ending in ``?``) come first, then the other sentences, each
       group in the message's order: the vector channel reads only the first ~256 word
       pieces of the query, and the question is what the user wants answered;
    3. a text still over ``max_chars`` keeps its head (:data:`QUERY_HEAD_SHARE`, 75 %) and
       its tail, joined by :data:`QUERY_SEPARATOR`: the ask of a long message is most often
       at its start or its end.

    Whitespace runs are folded to one space. Pure: no I/O, the same text gives the same query.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be >= 1, got {max_chars}")
    marked = list(_lines(text))
    if len(text) <= max_chars and all(prose for line, prose in marked if line.strip()):
        return text
    prose = [line.strip() for line, keep in marked if keep and line.strip()]
    if not prose:
        return _head_tail(" ".join(text.split()), max_chars)
    sentences = [s for line in prose for s in _SENTENCE_END.split(line) if s.strip()]
    questions = [s for s in sentences if s.rstrip().endswith("?")]
    others = [s for s in sentences if not s.rstrip().endswith("?")]
    query = " ".join(" ".join([*questions, *others]).split())
    return _head_tail(query, max_chars)
