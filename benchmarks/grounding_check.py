"""What the grounding check drops, on facts people wrote down and on facts made up (issue 41).

    python benchmarks/grounding_check.py --locomo ../shared/datasets/locomo/locomo_dev.json

The extraction of a model-written memory runs
:func:`langmem_edge.memory.episodic.grounding.grounding_problem` on every candidate: a
name, number or quoted value the unit's messages do not state drops it. Two questions, both
measured here without a model:

- **True facts dropped by mistake.** LoCoMo's annotators wrote *observations* for every
  session ("Caroline attended an LGBTQ support group ...", with the dialog turn that says
  it). Each is a true fact, phrased as a memory would be. It is checked against its session's
  turns, rendered as the extraction shows them to the model (``date text``: role and date,
  not the speaker's name), with the speaker's name written "the user" as a model that only
  sees roles would write it (the other speaker's name is left: a model may only use it if
  it was said). Also against the evidence turns alone (a unit never smaller). A drop here is
  a false drop; its reason says which kind of specific.
- **Made-up facts caught.** Each observation that passes is changed three ways, each adding
  one thing nobody said in that session: a number (``The user is 37.``), a place mid-sentence
  (``... in Lisbon.``), and a name at the sentence's start (``Sam ...`` for ``The user ...``).
  A catch is a drop.

Both variants of the check run side by side on the same candidates: ``sentence_starts=True``
(a capitalised word that starts a sentence is checked unless it is a stopword; extraction
uses it for every fact type but instructions, skills and tasks, which start with a verb) and
``False`` (such words were skipped: "Portugal is where the user lives." passed). Exact
counts, no timing. The dataset's licence forbids committing it: the script takes its path.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from langmem_edge.memory.episodic.grounding import grounding_problem  # noqa: E402

DEFAULT_LOCOMO = Path(__file__).resolve().parents[2] / "shared/datasets/locomo/locomo_dev.json"
NAMES = ("Sam", "Priya", "Tomasz", "Aiko", "Rafael", "Ingrid")
"""Invented first names (the first one a session never mentions is used)."""
PLACES = ("Lisbon", "Portugal", "Winnipeg", "Osaka", "Nairobi", "Tasmania")
"""Invented places."""


def session_date(text: str) -> str:
    """``"1:56 pm on 8 May, 2023"`` as ``2023-05-08``."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").date().isoformat()


def as_memory(fact: str, speaker: str) -> str:
    """The observation as a model that sees roles, not names, would write it."""
    fact = re.sub(rf"^{re.escape(speaker)}'s\b", "The user's", fact)
    fact = re.sub(rf"^{re.escape(speaker)}\b", "The user", fact)
    fact = re.sub(rf"\b{re.escape(speaker)}'s\b", "the user's", fact)
    return re.sub(rf"\b{re.escape(speaker)}\b", "the user", fact)


def unsaid(candidates: tuple[str, ...], source: str) -> str:
    lowered = source.lower()
    return next(c for c in candidates if c.lower() not in lowered)


def reason_kind(problem: str | None) -> str:
    return "kept" if problem is None else problem.split(" ", 1)[0]


def cases(path: Path) -> list[dict[str, Any]]:
    """One case per observation: the memory text, its session's sources and its evidence's."""
    out = []
    for conv in json.loads(path.read_text()):
        talk, notes = conv["conversation"], conv["observation"]
        for name, facts_by_speaker in notes.items():
            number = name.split("_")[1]
            turns = talk.get(f"session_{number}") or []
            if not turns:
                continue
            date = session_date(talk[f"session_{number}_date_time"])
            by_id = {t["dia_id"]: f"{date} {t.get('text', '')}" for t in turns}
            session = list(by_id.values())
            for speaker, facts in facts_by_speaker.items():
                for fact, evidence in facts:
                    ids = re.findall(r"D\d+:\d+", str(evidence))
                    out.append({
                        "conv": conv["sample_id"], "memory": as_memory(fact, speaker),
                        "session": session,
                        "evidence": [by_id[i] for i in ids if i in by_id] or session,
                    })
    return out


def corrupted(memory: str, source: str) -> dict[str, str | None]:
    """The memory with one unsaid specific added, three ways (``None``: does not apply)."""
    numbers = {int(d) for d in re.findall(r"\d+", source)}
    age = next(n for n in range(37, 99) if n not in numbers)
    body = memory.rstrip(". ")
    start = None
    if memory.startswith("The user"):
        start = unsaid(NAMES, source) + memory[len("The user"):]
    return {"number": f"{body}. The user is {age}.",
            "place": f"{body} in {unsaid(PLACES, source)}.",
            "sentence start": start}


def run(path: Path) -> None:
    rows = cases(path)
    print(f"{len(rows)} observations in {len({r['conv'] for r in rows})} conversations")
    for strict in (False, True):
        print(f"\n## sentence_starts={strict}")
        for scope in ("session", "evidence"):
            reasons = Counter(reason_kind(grounding_problem(r["memory"], r[scope],
                                                            sentence_starts=strict))
                              for r in rows)
            dropped = len(rows) - reasons["kept"]
            detail = ", ".join(f"{k} {v}" for k, v in sorted(reasons.items()) if k != "kept")
            print(f"- true facts against the {scope}: {dropped} of {len(rows)} dropped "
                  f"({dropped / len(rows):.1%}; {detail or 'none'})")
        caught: Counter[str] = Counter()
        tried: Counter[str] = Counter()
        for r in rows:
            if grounding_problem(r["memory"], r["session"], sentence_starts=strict):
                continue  # only facts the check keeps can show a catch
            for kind, text in corrupted(r["memory"], "\n".join(r["session"])).items():
                if text is None:
                    continue
                tried[kind] += 1
                caught[kind] += grounding_problem(text, r["session"],
                                                  sentence_starts=strict) is not None
        for kind in tried:
            print(f"- made up, {kind}: {caught[kind]} of {tried[kind]} caught "
                  f"({caught[kind] / tried[kind]:.1%})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO,
                        help="locomo_dev.json (not in this repository: its licence)")
    run(parser.parse_args().locomo)


if __name__ == "__main__":
    main()
