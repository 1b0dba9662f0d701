"""Model-free fallbacks of the episodic tier: rule-based extraction, extractive summaries.

Rule-based extraction (:func:`rule_based_memories`)
---------------------------------------------------
Reads **user** messages only, sentence by sentence, prose lines only (a line of code, markup
or log, or inside a fenced block, is never read:
:func:`~langmem_edge.retrieval.shape.prose_lines`), skipping questions (except "remind me
to ...") and hypotheticals ("if ...", "what if ...", "suppose ...", "imagine ..."). It catches:

- identity: "my name is Ana" (key ``identity.name``), "call me Sam"
  (``identity.preferred_name``), "I'm 34 years old" (``identity.age``), "I live in / moved to
  Lisbon" (``identity.location``), "I'm from Porto" (``identity.hometown``), "I work at/for
  Acme" (``identity.employer``), "I work as a nurse" / "my job is ..." (``identity.occupation``),
  "my pronouns are they/them", "I speak Portuguese", "I'm allergic to peanuts";
- preferences: "I love / like / enjoy / prefer / adore X", "I hate / dislike / can't stand /
  don't like X", "I'd rather X", "my favourite Y is X" (``preference.favorite_y``), diets
  ("I'm vegetarian", ``preference.diet``);
- relationships: "my wife is Maria", "my sister Anna ...", "Tom is my boss" (unique relations
  such as partner, parents and boss get a ``relationship.<relation>`` key);
- instructions: sentences that start with "always"/"never", or carry a lasting marker ("from
  now on", "going forward", "by default", "in future", "every time", "whenever") and speak to
  the assistant ("you", or an imperative); a reply language gets ``instruction.language``;
- decisions: "I decided to ...", "we've decided on ...", "let's go with ...";
- events with dates: a sentence with a date (ISO, "March 3, 2024", "3rd of March",
  "yesterday", "today", "tomorrow", "2 days ago", "in 3 weeks", weekdays, "next week", "in
  2019") that is about the user (I/my/we) or names an occasion (meeting, flight, birthday,
  ...). ISO dates, month-and-day dates, yesterday/today/tomorrow and "N days/weeks ago/in N
  days/weeks" are resolved against the message's timestamp into ``valid_from``; the others are
  kept as a ``date:<expression>`` tag;
- tasks: "I need to / have to / must / should / plan to ...", "remind me to ...", "TODO: ...".

It misses: anything not said in the first person by the user (facts the assistant states,
facts about third parties beyond the relationship patterns), paraphrase and implication ("it's
too bright" as a theme preference), coreference ("she" for a name said earlier), negations
and past states beyond the literal patterns ("I used to live in Paris" yields nothing),
sarcasm, non-English text, multi-sentence facts, and dates such as "the week after Easter".
Texts are rewritten to the third person by simple pronoun substitution, so grammar can be
rough ("the user's mom").

A candidate over ``max_fact_chars`` (``EpisodicConfig``, 500) characters, or with a line of
code, markup or log, is dropped (:func:`~.extraction.fact_shape_problem`): a fact is a
sentence or two.

The offline check (:func:`supported`): every content word of a candidate, except the template
words the rules add ("user", "wants", ...), must appear (stemmed) in the messages it came from.
Rule candidates pass by construction unless a rule rewrote a word; the check is what keeps a
future rule honest.

Extractive summary (:func:`extractive_summary`): sentences scored by the summed frequency of
their content words in the range (divided by the square root of their length), plus a bonus
for numbers and capitalised words; the best are kept up to the token budget and shown in
conversation order with their role.

"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from langmem_edge.memory.config.tiers import DEFAULT_MAX_FACT_CHARS
from langmem_edge.memory.core.tokens import estimate_tokens
from langmem_edge.memory.episodic.extraction import (
    ExtractedMemory,
    StoredMessage,
    dedupe_memories,
    fact_shape_problem,
    kind_of,
)
from langmem_edge.retrieval.shape import prose_lines
from langmem_edge.retrieval.text import ENGLISH_STOPWORDS, default_analyzer

__all__ = [
    "STOPWORDS",
    "analyze",
    "extractive_summary",
    "rule_based_memories",
    "supported",
]

logger = logging.getLogger(__name__)

STOPWORDS = ENGLISH_STOPWORDS
"""English stop words dropped by :func:`analyze` (the package's one list)."""


def analyze(text: str) -> list[str]:
    """Index terms of ``text``: the package's one analyser
    (:func:`langmem_edge.retrieval.text.default_analyzer`: normalised words, CJK runs as
    bigrams, stop words dropped, Snowball-stemmed)."""
    return default_analyzer().terms(text)


_TEMPLATE = frozenset(analyze(
    "user assistant wants want needs need dislikes decided chose called name favourite favorite "
    "works "
    "instruction relationship"
))


def supported(text: str, sources: Iterable[str], *, ignore: Iterable[str] = _TEMPLATE) -> bool:
    """Whether every content word of ``text`` (stemmed, minus ``ignore``) occurs in ``sources``."""
    needed = set(analyze(text)) - set(ignore)
    have: set[str] = set()
    for source in sources:
        have.update(analyze(source))
    return needed <= have


# --------------------------------------------------------------------------------------------
# Rule-based extraction
# --------------------------------------------------------------------------------------------

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_HYPOTHETICAL = re.compile(r"^(?:if|what if|suppose|imagine|would|maybe if|hypothetically)\b",
                           re.I)
_CLIP = re.compile(r"\s+(?:and i|but|because|so that|so|which|who|although|though|when|since|"
                   r"as long as|unless)\b.*$", re.I)
_SPAN = r"(?:[^.!?\n;]|(?<=\d)\.(?=\d)){1,80}"
_NAME = r"[A-Z][\w'-]*(?: [A-Z][\w'-]*){0,2}"
_I_AM = r"I(?:'m|’m| am)"
_MONTHS = (r"january|february|march|april|may|june|july|august|september|october|november|"
           r"december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec")
_WEEKDAYS = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
                 "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
_NUM = r"\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten"
_DATE = re.compile(
    rf"\b(?:(?P<iso>\d{{4}}-\d{{2}}-\d{{2}})"
    rf"|(?P<md_m>{_MONTHS})\.? (?P<md_d>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,? (?P<md_y>\d{{4}}))?"
    rf"|(?P<dm_d>\d{{1,2}})(?:st|nd|rd|th)? (?:of )?(?P<dm_m>{_MONTHS})\b(?:,? (?P<dm_y>\d{{4}}))?"
    rf"|(?P<rel>yesterday|today|tonight|tomorrow)"
    rf"|(?P<ago_n>{_NUM}) (?P<ago_u>days?|weeks?) ago"
    rf"|in (?P<in_n>{_NUM}) (?P<in_u>days?|weeks?)"
    rf"|(?:last|next|this|on|by|until) (?:{_WEEKDAYS}|week|weekend|month|year)"
    rf"|(?:in|since|back in) (?:{_MONTHS}|\d{{4}})"
    rf")\b",
    re.I,
)
_OCCASION = re.compile(r"\b(?:meeting|appointment|flight|trip|party|wedding|birthday|interview|"
                       r"deadline|conference|launch|release|exam|concert|vacation|holiday|"
                       r"surgery|dinner|lunch|anniversary|graduation|move|visit)\b", re.I)
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'll|I'd|my|we|we're|we've|our)\b", re.I)
_MONTH_NUM = {name: i for i, names in enumerate(
    [("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"), ("may",),
     ("jun", "june"), ("jul", "july"), ("aug", "august"), ("sep", "sept", "september"),
     ("oct", "october"), ("nov", "november"), ("dec", "december")], start=1) for name in names}

_UNIQUE_RELATIONS = {"wife", "husband", "partner", "girlfriend", "boyfriend", "fiance",
                     "fiancee", "mother", "father", "mom", "mum", "dad", "boss", "manager"}
_RELATIONS = (r"wife|husband|partner|girlfriend|boyfriend|fianc[eé]e?|son|daughter|kid|child|"
              r"mother|father|mom|mum|dad|brother|sister|grandmother|grandfather|grandma|grandpa|"
              r"aunt|uncle|cousin|boss|manager|colleague|coworker|co-worker|best friend|friend|"
              r"roommate|flatmate|neighbou?r|dog|cat|puppy|kitten|pet|teacher|doctor|therapist")
_LANGUAGES = (r"english|french|german|spanish|portuguese|italian|dutch|polish|russian|"
              r"ukrainian|chinese|mandarin|japanese|korean|arabic|hindi|turkish|swedish")
_THIRD = {"i": "the user", "i'm": "the user is", "i’m": "the user is", "i've": "the user has",
          "i'll": "the user will", "i'd": "the user would", "me": "the user", "my": "the user's",
          "mine": "the user's", "myself": "the user"}
_VERB_FIX = {"the user am": "the user is", "the user have": "the user has",
             "the user do": "the user does", "the user don't": "the user doesn't"}
_THIRD_RE = re.compile(r"\b(?:i'm|i’m|i've|i'll|i'd|i|me|my|mine|myself)\b", re.I)
_NOT_PREFERENCE = re.compile(r"^(?:it|that|this|those|these|your|the idea|how|what|when|where|"
                             r"to know|to think|to say|to ask|to see|you|him|her|them)\b", re.I)
_NOT_TASK = re.compile(r"^(?:know|understand|ask|tell you|see|think|say|admit)\b", re.I)
_VERB3 = {"love": "loves", "like": "likes", "enjoy": "enjoys", "prefer": "prefers",
          "adore": "adores"}


def _third_person(text: str) -> str:
    out = _THIRD_RE.sub(lambda m: _THIRD[m.group(0).lower()], text)
    for wrong, right in _VERB_FIX.items():
        out = re.sub(rf"\b{wrong}\b", right, out, flags=re.I)
    return out


def _clip(span: str) -> str:
    return _CLIP.sub("", span).strip(" ,:-\"'")


def _sentence(text: str) -> str:
    text = text.strip().rstrip(".!,;: ")
    return (text[:1].upper() + text[1:] + ".") if text else ""


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:40]


def _resolve_date(match: re.Match[str], ts: datetime) -> datetime | None:
    day = ts.replace(hour=0, minute=0, second=0, microsecond=0)
    try:
        if match.group("iso"):
            return datetime.fromisoformat(match.group("iso")).replace(tzinfo=ts.tzinfo)
        for m, d, y in (("md_m", "md_d", "md_y"), ("dm_m", "dm_d", "dm_y")):
            if match.group(m):
                year = int(match.group(y)) if match.group(y) else ts.year
                month = _MONTH_NUM[match.group(m).lower()]
                return day.replace(year=year, month=month, day=int(match.group(d)))
    except ValueError:
        return None
    rel = (match.group("rel") or "").lower()
    if rel:
        return day + timedelta(days={"yesterday": -1, "tomorrow": 1}.get(rel, 0))
    for n, unit, sign in (("ago_n", "ago_u", -1), ("in_n", "in_u", 1)):
        if match.group(n):
            raw = match.group(n).lower()
            count = int(raw) if raw.isdigit() else _NUMBER_WORDS[raw]
            per = 7 if match.group(unit).lower().startswith("week") else 1
            return day + timedelta(days=sign * count * per)
    return None


_Rule = tuple[str, str | None, str]  # (text, key, fact_type)

_EVENT_MIN_WORDS = 3
"""Content words (date included) a dated sentence needs to count as an event."""


def _identity_and_preferences(s: str) -> list[_Rule]:
    found: list[_Rule] = []
    if m := re.search(rf"\b(?i:my name is) ({_NAME})", s):
        found.append((f"The user's name is {m.group(1)}.", "identity.name", "identity"))
    if m := re.search(rf"\b(?i:call me) ({_NAME})", s):
        found.append((f"The user wants to be called {m.group(1)}.", "identity.preferred_name",
                      "identity"))
    if m := re.search(rf"\b{_I_AM} (\d{{1,3}}) years? old\b", s, re.I):
        found.append((f"The user is {m.group(1)} years old.", "identity.age", "identity"))
    if m := re.search(rf"\bI (?:now )?(?:live|am living|'m living) in ({_SPAN})", s, re.I):
        found.append((_sentence(f"The user lives in {_clip(m.group(1))}"), "identity.location",
                      "identity"))
    if m := re.search(rf"\bI(?:'ve| have)? (?:just |recently )?moved to ({_SPAN})", s, re.I):
        found.append((_sentence(f"The user moved to {_clip(m.group(1))}"), "identity.location",
                      "identity"))
    if m := re.search(rf"\b{_I_AM} (?:originally )?from ({_SPAN})", s, re.I):
        found.append((_sentence(f"The user is from {_clip(m.group(1))}"), "identity.hometown",
                      "identity"))
    if m := re.search(rf"\bI work (?:at|for) ({_SPAN})", s, re.I):
        found.append((_sentence(f"The user works at {_clip(m.group(1))}"), "identity.employer",
                      "identity"))
    if m := re.search(rf"\b(?:I work as|my job is|I'm working as) (?:an? )?({_SPAN})", s, re.I):
        found.append((_sentence(f"The user works as {_clip(m.group(1))}"),
                      "identity.occupation", "identity"))
    if m := re.search(r"\bmy pronouns are ([\w/]+)", s, re.I):
        found.append((f"The user's pronouns are {m.group(1)}.", "identity.pronouns", "identity"))
    if m := re.search(rf"\bI speak ({_SPAN})", s, re.I):
        found.append((_sentence(f"The user speaks {_clip(m.group(1))}"), None, "identity"))
    if m := re.search(rf"\b{_I_AM} allergic to ({_SPAN})", s, re.I):
        found.append((_sentence(f"The user is allergic to {_clip(m.group(1))}"), None,
                      "identity"))
    if m := re.search(rf"\b{_I_AM} (?:an? )?(vegetarian|vegan|pescatarian|lactose[- ]intolerant|"
                      r"gluten[- ]free|teetotal)\b", s, re.I):
        found.append((f"The user is {m.group(1).lower()}.", "preference.diet", "preference"))
    if m := re.search(r"\bmy (?:all[- ]time )?favou?rite ([a-z][a-z -]{0,30}?) (?:is|are) "
                      rf"({_SPAN})", s, re.I):
        what = m.group(1).strip()
        found.append((_sentence(f"The user's favourite {what} is {_clip(m.group(2))}"),
                      f"preference.favorite_{_slug(what)}", "preference"))
    if m := re.search(rf"\bI (?:really |absolutely |also |just |do |still )?"
                      rf"(love|like|enjoy|prefer|adore) ({_SPAN})", s, re.I):
        obj = _clip(m.group(2))
        if obj and not _NOT_PREFERENCE.match(obj):
            verb = _VERB3[m.group(1).lower()]
            found.append((_sentence(f"The user {verb} {_third_person(obj)}"), None,
                          "preference"))
    if m := re.search(r"\bI (?:really |absolutely |just )?(hate|dislike|can't stand|cannot stand|"
                      rf"don't like|do not like|don't enjoy|do not enjoy) ({_SPAN})", s, re.I):
        obj = _clip(m.group(2))
        if obj and not _NOT_PREFERENCE.match(obj):
            found.append((_sentence(f"The user dislikes {_third_person(obj)}"), None,
                          "preference"))
    if m := re.search(rf"\bI(?:'d| would) rather ({_SPAN})", s, re.I):
        found.append((_sentence(f"The user would rather {_third_person(_clip(m.group(1)))}"),
                      None, "preference"))
    return found


def _relationships(s: str) -> list[_Rule]:
    found: list[tuple[str, str]] = []
    patterns = (
        rf"\b[Mm]y ((?i:{_RELATIONS}))(?:'s name)? (?:is|'s) (?:called |named )?({_NAME})",
        rf"\b[Mm]y ((?i:{_RELATIONS})),? ({_NAME})\b",
    )
    for pattern in patterns:
        for m in re.finditer(pattern, s):
            found.append((m.group(1).lower(), m.group(2)))
    for m in re.finditer(rf"\b({_NAME}) is my ((?i:{_RELATIONS}))\b", s):
        found.append((m.group(2).lower(), m.group(1)))
    rules: list[_Rule] = []
    for relation, name in dict.fromkeys(found):
        if name.split()[0] in {"I", "The", "A", "An", "It", "This", "That", "He", "She"}:
            continue
        key = f"relationship.{_slug(relation)}" if relation in _UNIQUE_RELATIONS else None
        rules.append((f"The user's {relation} is {name}.", key, "relationship"))
    return rules


_LASTING = re.compile(r"\b(?:always|never|from now on|going forward|in (?:the )?future|"
                      r"by default|every time|whenever|each time)\b", re.I)
_IMPERATIVE = re.compile(r"^(?:please |and )?(?:always|never|don't|do not|use|reply|respond|"
                         r"answer|write|keep|call|speak|format|avoid|remember|make sure|stop|be|"
                         r"include|add|show|give|send|tell|address|refer|sign|mention)\b", re.I)


def _instructions_and_decisions(s: str) -> list[_Rule]:
    found: list[_Rule] = []
    starts = re.match(r"^(?:please )?(?:always|never)\b", s, re.I)
    rest = re.sub(r"^(?:from now on|going forward|in (?:the )?future|by default)[,\s]+", "", s,
                  flags=re.I)
    lasting = _LASTING.search(s) and (re.search(r"\byou(?:r)?\b", s, re.I)
                                      or _IMPERATIVE.match(rest))
    if (starts or lasting) and not re.match(r"^never mind\b", s, re.I):
        body = re.sub(r"\bplease\s+", "", s.strip(), flags=re.I)
        body = re.sub(r"\byou\b", "the assistant", _third_person(body), flags=re.I)
        lang = re.search(rf"\b(?:in|into) ({_LANGUAGES})\b", s, re.I)
        key = "instruction.language" if lang and re.search(
            r"\b(?:reply|respond|answer|write|speak|talk)", s, re.I) else None
        found.append((_sentence(body), key, "instruction"))
    if m := re.search(rf"\b(?:I|we)(?:'ve| have)? decided ((?:to|that|on) {_SPAN})", s, re.I):
        found.append((_sentence(f"The user decided {_third_person(_clip(m.group(1)))}"), None,
                      "decision"))
    if m := re.search(rf"\blet's go with ({_SPAN})", s, re.I):
        found.append((_sentence(f"The user chose {_third_person(_clip(m.group(1)))}"), None,
                      "decision"))
    return found


_TASK = re.compile(r"\b(?:I need to|I have to|I've got to|I got to|I must|I gotta|I should|"
                   r"I plan to|I'm planning to|I am planning to|remind me to|"
                   rf"don't let me forget to|I must not forget to)\s+({_SPAN})", re.I)


def _task(s: str) -> _Rule | None:
    m = _TASK.search(s) or re.match(r"^(?:todo|to do|to-do)\s*:?\s*(.+)$", s, re.I)
    if not m:
        return None
    what = _clip(m.group(1))
    if not what or _NOT_TASK.match(what):
        return None
    return (_sentence(f"The user needs to {_third_person(what)}"), None, "task")


def _memories_of(msg: StoredMessage, sentence: str, *, question: bool) -> list[
        tuple[_Rule, datetime | None, list[str]]]:
    out: list[tuple[_Rule, datetime | None, list[str]]] = []
    date = _DATE.search(sentence)
    when = _resolve_date(date, msg.ts) if date else None
    date_tags = [] if date is None or when is not None else [f"date:{date.group(0).lower()}"]
    task = _task(sentence)
    if question:
        if task and re.search(r"\bremind me\b", sentence, re.I):
            out.append((task, when, date_tags))
        return out
    rules = [*_identity_and_preferences(sentence), *_relationships(sentence),
             *_instructions_and_decisions(sentence)]
    out.extend((rule, None, []) for rule in rules)
    if task:
        out.append((task, when, date_tags))
    elif (date and (_FIRST_PERSON.search(sentence) or _OCCASION.search(sentence))
          and len(analyze(sentence)) >= _EVENT_MIN_WORDS
          and not any(r[2] == "instruction" for r in rules)):
        out.append(((_sentence(_third_person(sentence)), None, "event"), when, date_tags))
    return out


def rule_based_memories(
    messages: Sequence[StoredMessage],
    *,
    source: str,
    confidence: float,
    session_id: str | None,
    kinds: frozenset[str] | None = None,
    max_items: int | None = None,
    max_fact_chars: int = DEFAULT_MAX_FACT_CHARS,
) -> list[ExtractedMemory]:
    """Extract memories from the prose lines of user messages by rule (see the module
    docstring), each checked with :func:`supported` against its message and
    :func:`~.extraction.fact_shape_problem` (``max_fact_chars``); failing candidates are
    dropped and logged."""
    memories: list[ExtractedMemory] = []
    for msg in messages:
        if msg.role != "user":
            continue
        for raw in (s for line in prose_lines(msg.content) for s in _SENTENCE.split(line)):
            sentence = raw.strip()
            if not sentence or _HYPOTHETICAL.match(sentence):
                continue
            question = sentence.endswith("?")
            for (text, key, fact_type), when, tags in _memories_of(msg, sentence,
                                                                   question=question):
                kind = kind_of(fact_type)
                if kinds is not None and kind not in kinds:
                    continue
                if not supported(text, [msg.content]):
                    logger.info("dropped rule candidate %r: words not in message %s", text,
                                msg.id)
                    continue
                problem = fact_shape_problem(text, max_fact_chars)
                if problem is not None:
                    logger.info("dropped rule candidate %.80r: %s", text, problem)
                    continue
                memories.append(ExtractedMemory(
                    text=text, kind=kind, fact_type=fact_type,  # type: ignore[arg-type]
                    key=key, confidence=confidence, source=source, session_id=session_id,
                    source_message_ids=[msg.id], valid_from=when,
                    tags=["rule-based", *tags]))
    result = dedupe_memories(memories)
    return result[:max_items] if max_items is not None else result


# --------------------------------------------------------------------------------------------
# Extractive summary
# --------------------------------------------------------------------------------------------

_SALIENT = re.compile(r"\b(?:\d[\d.,:/-]*|[A-Z][a-z]+)\b")


def extractive_summary(
    messages: Sequence[StoredMessage], *, max_tokens: int, **ratios: float
) -> str:
    """A summary made of the range's most salient sentences, in order, within ``max_tokens``
    (estimated with :func:`~langmem_edge.memory.tokens.estimate_tokens`)."""
    sentences: list[tuple[int, str, str, list[str]]] = []
    for msg in messages:
        for raw in _SENTENCE.split(msg.content):
            text = raw.strip()
            if text:
                sentences.append((len(sentences), msg.role, text, analyze(text)))
    if not sentences or max_tokens <= 0:
        return ""
    freq = Counter(w for *_, words in sentences for w in set(words))

    def score(item: tuple[int, str, str, list[str]]) -> float:
        _, _, text, words = item
        base = sum(freq[w] for w in set(words)) / math.sqrt(len(words) or 1)
        return base + 0.5 * len(_SALIENT.findall(text[1:]))

    chosen: list[tuple[int, str, str]] = []
    used = 0
    for index, role, text, _words in sorted(sentences, key=lambda s: (-score(s), s[0])):
        cost = estimate_tokens(f"{role}: {text} ", **ratios)
        if used + cost > max_tokens:
            continue
        chosen.append((index, role, text))
        used += cost
    chosen.sort()
    return " ".join(f"{role}: {text}" for _, role, text in chosen)
