"""Hybrid recall of raw messages: the store's vector ranking fused with BM25 over each
message and its neighbours (what ``recall_conversation(mode="hybrid")``, the default, does).

Pure functions, no store calls: the tier hands over the messages in scope (its scan) and the
store's vector hits, and gets back the fused ranking.

Why neighbours: on LoCoMo (``benchmarks/locomo_cv.py``) a question usually paraphrases what
the *conversation* was about around the turn that answers it, not the turn itself. Each
message is scored with a ``context`` field holding the text of the
``context_turns`` messages before and after it in the same session (by ``seq``), at
``context_weight`` of a word of its own. The context is built at recall time from the scan,
so it needs no extra writes, follows deletions at once and never re-embeds anything. Each
message's speaker (``name``) and its day (``"8 May 2023"`` from ``ts``) are keyword fields
too, so "what did Caroline say in May 2023" matches the message itself.

Fusion is weighted reciprocal rank fusion (:func:`~langmem_edge.retrieval.fusion.rrf_fuse`)
of the keyword and vector channels, with the knobs cross-validated on LoCoMo
(``docs/retrieval.md``). Without vector scores (a store with no index) the keyword ranking
is the result.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from langgraph.store.base import Item

from langmem_edge.memory.config import EpisodicConfig
from langmem_edge.memory.core.plans import Plan, ready, run_sync
from langmem_edge.retrieval.bm25 import rank_fields
from langmem_edge.retrieval.fusion import rrf_fuse, rrf_term
from langmem_edge.retrieval.text import Analyzer, default_analyzer

__all__ = [
    "ALONE_CHARS",
    "context_window",
    "cut_off",
    "cut_off_keys",
    "fuse_messages",
    "hybrid_ranking",
    "hybrid_ranking_plan",
    "keyword_only_ranking",
    "message_fields",
    "message_day",
    "message_keyword_ranking",
    "stands_alone",
    "temporal_ranking",
    "time_words",
]

ALONE_CHARS = 500
"""A message at least this long (in characters: about half the default embedding model's
window of 256 word pieces) stands alone: it is embedded as it is, its keyword side has no
context, and it lends none to the messages around it but ends theirs
(:func:`context_window`: what lies beyond it is another exchange), in the vector side
(:mod:`.embedded`) as in the keyword side (:func:`message_fields`, and the rows' fields).

In hybrid recall its vector rank weighs ``recall_alone_vector_weight`` instead of
``recall_vector_weight``, and it is no seed of the second keyword round (its words would
swamp the query). The vector rank of a shorter message cut off from its neighbours by long
ones (:func:`cut_off`) weighs the same: the weight of 0.5 was cross-validated where BM25 sees
a turn with its neighbours. Every LoCoMo turn is shorter (at most 446 characters)
and every LoCoMo session longer than one turn, where the weights were cross-validated, so
none of this changes LoCoMo's ranking (issue 40; docs/retrieval.md)."""

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")
"""Month names the temporal channel reads in a query (capitalised: lower-case "may" is the
verb)."""
_TIME_WORD = re.compile(r"\b(" + "|".join(MONTHS) + r"|(?:19|20)\d\d)\b")


def time_words(text: str) -> frozenset[str]:
    """Capitalised month names and four-digit years in ``text``
    (``"in May 2023"`` -> ``{"May", "2023"}``)."""
    return frozenset(_TIME_WORD.findall(text))


def temporal_ranking(
    query: str, days: Mapping[str, str], ranked: Sequence[tuple[str, float]]
) -> list[tuple[str, float]]:
    """The temporal channel: ``ranked`` (the keyword ranking) kept to the messages whose day
    (``days``: key -> ``"8 May 2023"``) carries every month and year the query names; empty
    when the query names none."""
    words = time_words(query)
    if not words:
        return []
    return [(k, s) for k, s in ranked if words <= time_words(days.get(k, ""))]


def context_window(texts: Sequence[str], i: int, turns: int, *, after: bool = True
                   ) -> list[int]:
    """Positions of the messages that lend ``texts[i]`` its context: up to ``turns`` before
    it (and after it, with ``after``), nearest first on each side, stopping at a message
    that stands alone (it lends nothing, and the turns beyond it belong to another
    exchange); none when ``texts[i]`` stands alone itself."""
    if stands_alone(texts[i]):
        return []
    out: list[int] = []
    for step in ((-1, 1) if after else (-1,)):
        for d in range(1, turns + 1):
            j = i + step * d
            if not 0 <= j < len(texts):
                break
            if stands_alone(texts[j]):
                break
            out.append(j)
    return sorted(out)


def cut_off(texts: Sequence[str], i: int, turns: int) -> bool:
    """Whether ``texts[i]``, a message that does not stand alone, lost its keyword context to
    long messages: it has a neighbour, but every one within ``turns`` stands alone or lies
    past one (:func:`context_window`). Its keyword side is BM25 over its own words, and its
    vector rank weighs as a long message's does."""
    return (turns > 0 and len(texts) > 1 and not stands_alone(texts[i])
            and not context_window(texts, i, turns))


def stands_alone(text: str) -> bool:
    """Whether a message of ``text`` stands alone: at least :data:`ALONE_CHARS` characters."""
    return len(text) >= ALONE_CHARS


def message_day(ts: str | None) -> str:
    """A message's day from its ISO ``ts`` (``"8 May 2023"``); empty when unknown."""
    if not ts:
        return ""
    try:
        when = datetime.fromisoformat(ts)
    except ValueError:
        return ""
    return f"{when.day} {when.strftime('%B')} {when.year}"


def message_fields(docs: Sequence[Item], *, context_turns: int) -> dict[str, dict[str, str]]:
    """Each message's keyword fields by key: ``text``, ``context`` (the text of up to
    ``context_turns`` messages each side in the same session, by ``seq``), ``name`` and
    ``date`` where known. A message that stands alone (:func:`stands_alone`) has no
    ``context``, lends none to its neighbours and ends theirs (:func:`context_window`), as in
    what is embedded (:mod:`.embedded`)."""
    out: dict[str, dict[str, str]] = {}
    for items in _sessions(docs):
        texts = [str(it.value.get("text", "")) for it in items]
        for i, it in enumerate(items):
            fields = {"text": texts[i]}
            near = [texts[j] for j in context_window(texts, i, context_turns)]
            if near:
                fields["context"] = " ".join(near)
            if it.value.get("name"):
                fields["name"] = str(it.value["name"])
            day = message_day(it.value.get("ts"))
            if day:
                fields["date"] = day
            out[it.key] = fields
    return out


def cut_off_keys(docs: Sequence[Item], *, context_turns: int) -> set[str]:
    """The keys of the messages in ``docs`` that :func:`cut_off` says lost their context."""
    out: set[str] = set()
    for items in _sessions(docs):
        texts = [str(it.value.get("text", "")) for it in items]
        out.update(it.key for i, it in enumerate(items) if cut_off(texts, i, context_turns))
    return out


def _sessions(docs: Sequence[Item]) -> list[list[Item]]:
    """``docs`` by session, each in ``seq`` order."""
    sessions: dict[str, list[Item]] = {}
    for d in docs:
        sessions.setdefault(str(d.value.get("session_id", "")), []).append(d)
    return [sorted(items, key=lambda it: (int(it.value.get("seq", 0)), it.key))
            for items in sessions.values()]


def message_keyword_ranking(
    query: str,
    fields: Mapping[str, Mapping[str, str]],
    *,
    analyzer: Analyzer,
    field_weights: Mapping[str, float],
    k1: float,
    b: float,
    limit: int | None = None,
) -> list[tuple[str, float]]:
    """BM25F ranking of the messages (``key -> fields``) for ``query``, best first."""
    docs = {key: {name: analyzer.terms(text) for name, text in parts.items()}
            for key, parts in fields.items()}
    return [(h.id, h.score) for h in rank_fields(docs, analyzer.query_terms(query), k1=k1, b=b,
                                                  field_weights=field_weights, limit=limit)]


def keyword_only_ranking(query: str, docs: Sequence[Item], *, k1: float, b: float,
                         limit: int) -> list[tuple[Item, float]]:
    """``mode="keyword"``: Okapi BM25 over each message's own ``text`` alone (no neighbours,
    no speaker or day), best first, ties to the later message; messages matching no query
    term are left out."""
    analyzer = default_analyzer()
    hits = rank_fields({str(i): {"text": analyzer.terms(d.value["text"])}
                        for i, d in enumerate(docs)}, analyzer.query_terms(query), k1=k1, b=b)
    ranked = sorted(((docs[int(h.id)], h.score) for h in hits),
                    key=lambda p: (-p[1], -int(p[0].value["seq"])))
    return ranked[:limit]


def fuse_messages(
    keyword: Sequence[tuple[str, float]],
    vector: Sequence[tuple[str, float]],
    *,
    vector_weight: float,
    rrf_k: float,
    limit: int,
    temporal: Sequence[tuple[str, float]] = (),
    temporal_weight: float = 0.0,
    second: Sequence[tuple[str, float]] = (),
    second_weight: float = 0.0,
    alone: Callable[[str], bool] | None = None,
    alone_vector_weight: float | None = None,
) -> list[tuple[str, float]]:
    """Weighted RRF of the keyword (weight 1), vector, temporal and second-round rankings:
    ``(key, fused score)``. The vector rank of a message that ``alone`` says stands alone
    weighs ``alone_vector_weight`` (None: ``vector_weight`` like the others)."""
    hits = rrf_fuse({"keyword": keyword, "vector": vector, "temporal": temporal,
                     "second": second},
                    weights={"keyword": 1.0, "vector": vector_weight if vector else 0.0,
                             "temporal": temporal_weight if temporal else 0.0,
                             "second": second_weight if second else 0.0},
                    rrf_k=rrf_k, limit=None)
    fused = [(h.id, h.score) for h in hits]
    if alone is not None and alone_vector_weight is not None and (
            alone_vector_weight != vector_weight):
        extra: dict[str, float] = {}
        for h in hits:
            rank = h.channels["vector"].rank
            if rank is not None and alone(h.id):
                extra[h.id] = rrf_term(alone_vector_weight - vector_weight, rank, rrf_k=rrf_k)
        # stable: equal scores keep rrf_fuse's tie-break order
        fused = sorted(((k, s + extra.get(k, 0.0)) for k, s in fused), key=lambda p: -p[1])
    return fused[:limit]


def hybrid_ranking_plan(
    query: str,
    *,
    keyword: Sequence[tuple[str, float]],
    vector: Sequence[tuple[str, float]],
    days: Mapping[str, str],
    text: Callable[[str], str],
    rank: Callable[[str], Plan[Sequence[tuple[str, float]]]],
    config: EpisodicConfig,
    limit: int,
    alone: Callable[[str], bool] | None = None,
    bare: Callable[[str], bool] | None = None,
) -> Plan[list[tuple[str, float]]]:
    """Hybrid recall's ranking, ``(key, fused score)`` best first.

    Round one fuses the ``keyword`` and ``vector`` rankings of ``query`` (and the temporal
    channel, when weighted). Round two, when ``config.recall_second_round_weight`` is not 0,
    asks the keyword side (``rank``: query -> a plan of its ranking, the same fields and
    filters) for the query plus the ``text`` of round one's best
    ``recall_second_round_seeds`` messages (those that do not stand alone; none: no second
    round), and fuses that ranking in with the first round's channels: a question whose
    answer spans two turns ("what did X do after Y?") finds the second through the words of
    the first.

    ``alone`` says which messages stand alone (the tier: at least :data:`ALONE_CHARS`
    characters, :func:`stands_alone`): they are no seeds, and their vector rank weighs
    ``config.recall_alone_vector_weight``. None: no message does. ``bare`` (None:
    ``alone``) says whose vector rank weighs that instead: the tier adds the messages
    :func:`cut_off` from their context.
    """
    cfg = config
    temporal = temporal_ranking(query, days, keyword) if cfg.recall_temporal_weight else []

    def fuse(second: Sequence[tuple[str, float]] = ()) -> list[tuple[str, float]]:
        return fuse_messages(keyword, vector, vector_weight=cfg.recall_vector_weight,
                             rrf_k=cfg.recall_rrf_k, limit=limit, temporal=temporal,
                             temporal_weight=cfg.recall_temporal_weight, second=second,
                             second_weight=cfg.recall_second_round_weight,
                             alone=alone if bare is None else bare,
                             alone_vector_weight=cfg.recall_alone_vector_weight)

    first = fuse()
    if not cfg.recall_second_round_weight or not first:
        return first
    seeds = [text(k) for k, _ in first[:cfg.recall_second_round_seeds]
             if alone is None or not alone(k)]  # a long message's words would swamp the query
    if not seeds:
        return first
    return fuse((yield from rank(" ".join([query, *seeds]))))


def hybrid_ranking(query: str, *, rank: Callable[[str], Sequence[tuple[str, float]]],
                   **kwargs: Any) -> list[tuple[str, float]]:
    """:func:`hybrid_ranking_plan` with a keyword side that ranks in process (``rank``:
    query -> ranking); the other arguments are its."""
    return run_sync(hybrid_ranking_plan(query, rank=lambda q: ready(rank(q)), **kwargs))
