"""Relative dates in a recall query, anchored on a reference date.

``"what did I do last week?"`` with ``reference_date=2024-05-15`` (a Wednesday) means the
window Monday 2024-05-06 to Monday 2024-05-13. :func:`find_window` recognises (English):

* ``today``, ``yesterday``, ``tomorrow``, ``the day before yesterday``
* ``this|last|next week|month|year`` (weeks start on Monday), ``last weekend``
* ``N days|weeks|months|years ago`` (digits or one..twelve, ``a``)
* ``past|last N days|weeks|months`` and ``recently`` / ``lately`` (the past 14 days)
* ``last|on <weekday>`` (the most recent such day before the reference date)

The window feeds the temporal recall channel (memories whose ``valid_from`` falls inside);
it never filters the other channels.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

__all__ = ["DateWindow", "find_window", "iso_to_epoch"]

def iso_to_epoch(value: str | None, default: float = math.inf) -> float:
    """Epoch seconds of an ISO-8601 timestamp (``default`` when missing)."""
    if not value:
        return default
    return datetime.fromisoformat(value).timestamp()


RECENT_DAYS = 14
"""``recently`` / ``lately`` mean the past 14 days."""

_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple": 2,
    "few": 3,
}
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_NUM = r"(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|couple|few)"
_UNIT = r"(day|week|month|year)s?"


@dataclass(frozen=True)
class DateWindow:
    """``[start, end)`` in UTC, and the phrase that produced it."""

    start: datetime
    end: datetime
    phrase: str

    def contains(self, ts: float) -> bool:
        """Whether epoch seconds ``ts`` fall inside."""
        return self.start.timestamp() <= ts < self.end.timestamp()


def _day(ref: datetime) -> datetime:
    return ref.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_start(ref: datetime, offset: int) -> datetime:
    index = ref.year * 12 + (ref.month - 1) + offset
    return ref.replace(year=index // 12, month=index % 12 + 1, day=1, hour=0, minute=0,
                       second=0, microsecond=0)


def _shift(ref: datetime, unit: str, n: int) -> tuple[datetime, datetime]:
    """The window of the ``unit`` that lies ``n`` units before the one holding ``ref``."""
    day = _day(ref)
    if unit == "day":
        start = day - timedelta(days=n)
        return start, start + timedelta(days=1)
    if unit == "week":
        start = day - timedelta(days=day.weekday()) - timedelta(weeks=n)
        return start, start + timedelta(weeks=1)
    if unit == "month":
        return _month_start(ref, -n), _month_start(ref, -n + 1)
    start = day.replace(year=ref.year - n, month=1, day=1)
    return start, start.replace(year=start.year + 1)


def _number(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word]


def find_window(query: str, reference: datetime) -> DateWindow | None:
    """The first relative date expression in ``query``, as a window around ``reference``."""
    ref = reference if reference.tzinfo else reference.replace(tzinfo=UTC)
    ref = ref.astimezone(UTC)
    q = query.lower()

    m = re.search(rf"\b{_NUM}\s+{_UNIT}\s+ago\b", q)
    if m:
        n, unit = _number(m.group(1)), m.group(2)
        if unit in ("day",):
            start, end = _shift(ref, "day", n)
        else:
            # "3 weeks ago": the moment 3 weeks back, give or take half a unit
            span = {"week": timedelta(weeks=1), "month": timedelta(days=30),
                    "year": timedelta(days=365)}[unit]
            center = ref - span * n
            start, end = _day(center - span / 2), _day(center + span / 2) + timedelta(days=1)
        return DateWindow(start, end, m.group(0))

    m = re.search(rf"\b(?:past|last|previous)\s+{_NUM}\s+{_UNIT}\b", q)
    if m:
        n, unit = _number(m.group(1)), m.group(2)
        days = {"day": 1, "week": 7, "month": 30, "year": 365}[unit] * n
        return DateWindow(_day(ref) - timedelta(days=days - 1), _day(ref) + timedelta(days=1),
                          m.group(0))

    m = re.search(r"\b(the day before yesterday|yesterday|today|tonight|tomorrow)\b", q)
    if m:
        n = {"the day before yesterday": 2, "yesterday": 1, "today": 0, "tonight": 0,
             "tomorrow": -1}[m.group(1)]
        start, end = _shift(ref, "day", n)
        return DateWindow(start, end, m.group(0))

    m = re.search(r"\blast\s+weekend\b", q)
    if m:
        day = _day(ref)
        saturday = day - timedelta(days=(day.weekday() - 5) % 7 or 7)
        return DateWindow(saturday, saturday + timedelta(days=2), m.group(0))

    m = re.search(r"\b(this|last|previous|next)\s+(week|month|year)\b", q)
    if m:
        n = {"this": 0, "last": 1, "previous": 1, "next": -1}[m.group(1)]
        start, end = _shift(ref, m.group(2), n)
        return DateWindow(start, end, m.group(0))

    m = re.search(r"\b(?:last|on|this past)\s+(" + "|".join(_WEEKDAYS) + r")\b", q)
    if m:
        day = _day(ref)
        back = (day.weekday() - _WEEKDAYS.index(m.group(1))) % 7 or 7
        start = day - timedelta(days=back)
        return DateWindow(start, start + timedelta(days=1), m.group(0))

    m = re.search(r"\b(recently|lately|these days)\b", q)
    if m:
        return DateWindow(_day(ref) - timedelta(days=RECENT_DAYS - 1),
                          _day(ref) + timedelta(days=1), m.group(0))
    return None
