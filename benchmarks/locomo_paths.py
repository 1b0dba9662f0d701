"""LoCoMo through the public API: the two user paths of issue 18 (used by ``locomo_cv.py``).

(a) ``ChromaStore.search(namespace, query=question, limit=10)`` on items as a user writes
    them: one namespace per conversation, one item per turn, ``text`` =
    ``"[<session date>] <speaker>: <text>"`` (+ ``" [shares <caption>]"``), ``context`` = the
    two turns before and after in the same session, both in ``index["fields"]``, the store
    opened with ``ranking="hybrid"`` and a :class:`HybridConfig`.
(b) ``profile.episodic.search(question, scope="all", limit=10)`` after
    ``Profile.ingest`` of each session's turns as messages (speaker A as ``user``, B as
    ``assistant``, the speaker's name as ``name``, the session date as ``timestamp``), on an
    ``AgentMemory`` over a ``ChromaStore`` (vector ranking, ``fields=["text"]``), no model.

Both read vectors through :class:`DiskCachedEmbeddings` (the ``/tmp`` cache of
``locomo.VectorCache``), so only texts never seen before are embedded.
"""

from __future__ import annotations

import re
import shutil
import statistics
import tempfile
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from langchain_core.embeddings import Embeddings
from locomo import Conversation, VectorCache, item_values, opaque_key

from langmem_edge.retrieval.config import DEFAULT_CHANNEL_DEPTH

RESULTS = 10
"""What a user asks for: ``limit=10`` (recall@5 reads the first five)."""


class DiskCachedEmbeddings(Embeddings):
    """LangChain ``Embeddings`` reading and filling a :class:`VectorCache`."""

    def __init__(self, cache: VectorCache) -> None:
        self.cache = cache

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Vectors of ``texts`` (cached on disk by model and text hash)."""
        return self.cache.get(texts).tolist() if texts else []

    def embed_query(self, text: str) -> list[float]:
        """Vector of one query."""
        return self.embed_documents([text])[0]


def _summary(rows: Sequence[tuple[int, float, float]]) -> dict[str, tuple[float, float]]:
    from locomo_cv import summarise

    return summarise(rows)


def store_values(conv: Conversation, *, context_style: str = "text") -> dict[str, dict[str, str]]:
    """Item values of path (a). ``context_style="documents"`` writes the neighbours' whole
    documents (date and speaker included) instead of their text (the default)."""
    values = item_values(conv, 2)
    if context_style == "text":
        return values
    turns = conv.turns
    for i, turn in enumerate(turns):
        near = [turns[j].document for j in range(max(0, i - 2), min(len(turns), i + 3))
                if j != i and turns[j].session == turn.session]
        if near:
            values[turn.dia_id]["context"] = " ".join(near)
    return values


def hybrid_config(*, rrf_k: float, vw: float, cw: float) -> dict[str, Any]:
    """The store's :class:`HybridConfig` for the harness's knobs (``rrf_k``, vector weight,
    context weight)."""
    return {"weights": {"vector": vw, "keyword": 1.0, "key": 1.5}, "rrf_k": rrf_k,
            "keyword": {"field_weights": {"context": cw}}}


def store_path(
    convs: Sequence[Conversation],
    vectors: VectorCache,
    configs: Mapping[str, Mapping[str, Any]],
    *,
    context_styles: Sequence[str] = ("text", "documents"),
    limits: Sequence[int] = (RESULTS, DEFAULT_CHANNEL_DEPTH),
) -> dict[str, Any]:
    """Path (a): ``store.search(limit=...)`` for each labelled store config, context style
    and limit (recall@k read from the first k of each result list)."""
    from langgraph.store.base import PutOp

    from langmem_edge.store import ChromaStore  # type: ignore[attr-defined]

    out: dict[str, Any] = {}
    embed = DiskCachedEmbeddings(vectors)
    for label, cfg in configs.items():
        for style in context_styles:
            folder = tempfile.mkdtemp(prefix="langmem-edge-locomo-cv-")
            try:
                store = ChromaStore.from_path(
                    folder, index={"dims": 384, "embed": embed, "fields": ["text", "context"]},
                    ranking="hybrid", hybrid=cfg)
                backs: dict[str, dict[str, str]] = {}
                for conv in convs:
                    values = store_values(conv, context_style=style)
                    store.batch([PutOp(conv.namespace, opaque_key(d), v)
                                 for d, v in values.items()])
                    backs[conv.sample_id] = {opaque_key(d): d for d in values}
                for limit in limits:
                    rows, times = [], []
                    for conv in convs:
                        for q in conv.questions:
                            start = time.perf_counter()
                            items = store.search(conv.namespace, query=q.text, limit=limit)
                            times.append(time.perf_counter() - start)
                            ranked = [backs[conv.sample_id][it.key] for it in items]
                            rows.append(_row(q.category, ranked, q.evidence))
                    name = f"{label}, context={style}, limit={limit}"
                    out[name] = {"summary": _summary(rows),
                                 "search_ms": 1000 * statistics.median(times)}
                    s = out[name]["summary"]["1-5"]
                    print(f"path (a) store.search, {name}: {s[0]:.3f} / {s[1]:.3f} "
                          f"(search p50 {out[name]['search_ms']:.1f} ms, query embedding "
                          "included)")
                store.close() if hasattr(store, "close") else None
            finally:
                shutil.rmtree(folder, ignore_errors=True)
    return out


def _row(category: int, ranked: Sequence[str], evidence: frozenset[str]
         ) -> tuple[int, float, float]:
    from locomo_cv import recall_row

    return recall_row(category, ranked, evidence)


_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m) on (\d{1,2}) (\w+),? (\d{4})", re.I)


def session_time(date: str) -> datetime | None:
    """``"1:56 pm on 8 May, 2023"`` as a datetime (None if it does not parse)."""
    m = _DATE.search(date)
    if not m:
        return None
    hour, minute, half, day, month, year = m.groups()
    h = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
    try:
        return datetime.strptime(f"{day} {month} {year} {h}:{minute}", "%d %B %Y %H:%M")
    except ValueError:
        return None


def conversation_messages(conv: Conversation) -> dict[int, list[dict[str, Any]]]:
    """Each session's turns as ``Profile.ingest`` messages, by session number."""
    speakers = list(dict.fromkeys(t.speaker for t in conv.turns))
    out: dict[int, list[dict[str, Any]]] = {}
    for t in conv.turns:
        text = t.text + (f" [shares {t.caption}]" if t.caption else "")
        msg: dict[str, Any] = {"role": "user" if t.speaker == speakers[0] else "assistant",
                               "content": text, "name": t.speaker}
        when = session_time(t.date)
        if when is not None:
            msg["timestamp"] = when.isoformat()
        out.setdefault(t.session, []).append(msg)
    return out


class BareTextStore:
    """Builds a ``BaseStore`` over ``inner`` that embeds what the tier embedded before
    ``memory/episodic/embedded.py``: message puts lose their ``index=`` list, so the store's
    own fields (``["text"]``: the bare message text) are embedded. The baseline of the
    before/after rows, measured in the same run."""

    @staticmethod
    def wrap(inner: Any) -> Any:
        """The wrapping store."""
        from langgraph.store.base import BaseStore, PutOp

        from langmem_edge.memory.episodic.embedded import MESSAGE_INDEX_FIELDS

        def bare(ops: Any) -> list[Any]:
            return [PutOp(op.namespace, op.key, op.value, index=None, ttl=op.ttl)
                    if isinstance(op, PutOp) and op.index == MESSAGE_INDEX_FIELDS else op
                    for op in ops]

        class _Bare(BaseStore):
            def batch(self, ops: Any) -> list[Any]:
                return inner.batch(bare(ops))

            async def abatch(self, ops: Any) -> list[Any]:
                return await inner.abatch(bare(ops))

        return _Bare()


def plain_store(inner: Any) -> Any:
    """``inner`` behind a plain ``BaseStore`` (batch and abatch only): no keyword channel, so
    recall ranks the messages in scope in process at every call (``hybrid-scan``)."""
    from langgraph.store.base import BaseStore

    class _Plain(BaseStore):
        def batch(self, ops: Any) -> list[Any]:
            return inner.batch(ops)

        async def abatch(self, ops: Any) -> list[Any]:
            return await inner.abatch(ops)

    return _Plain()


def ingest_cost(conv: Conversation, *, messages: int, rounds: int) -> dict[str, float]:
    """Seconds per message of ``add_messages`` into a fresh ``ChromaStore`` with the default
    model, uncached (every round's texts are new: a round tag is appended), for the bare-text
    baseline (:class:`BareTextStore`) and the tier as it is, interleaved round by round;
    medians of the rounds and their ratio."""
    from langmem_edge import AgentMemory
    from langmem_edge.embeddings import default_embeddings
    from langmem_edge.store import ChromaStore  # type: ignore[attr-defined]

    inner = default_embeddings().inner  # type: ignore[attr-defined]
    inner.embed_documents(["warm-up sentence"])
    sessions = conversation_messages(conv)
    flat = [m | {"session": s} for s, ms in sessions.items() for m in ms][:messages]
    times: dict[str, list[float]] = {"bare text (before)": [], "embedded fields (now)": []}
    for r in range(rounds):
        for label in times:
            folder = tempfile.mkdtemp(prefix="langmem-edge-locomo-ingest-")
            try:
                store = ChromaStore.from_path(folder, index={
                    "dims": 384, "embed": inner, "fields": ["text"]})
                used = BareTextStore.wrap(store) if label.startswith("bare") else store
                tier = AgentMemory(used).profile("p")._episodic()
                t0 = time.perf_counter()
                for s in sessions:
                    batch = [{k: v for k, v in m.items() if k != "session"}
                             | {"content": f"{m['content']} (round {r})"}
                             for m in flat if m["session"] == s]
                    if batch:
                        tier.add_messages(batch, f"session_{s}")
                times[label].append((time.perf_counter() - t0) / len(flat))
                store.close() if hasattr(store, "close") else None
            finally:
                shutil.rmtree(folder, ignore_errors=True)
    out = {label: statistics.median(v) for label, v in times.items()}
    ratio = out["embedded fields (now)"] / out["bare text (before)"]
    for label, v in out.items():
        print(f"ingest ({len(flat)} messages, median of {rounds} rounds): {label} "
              f"{1000 * v:.1f} ms a message")
    print(f"ingest: now / before {ratio:.2f}x")
    return out | {"ratio": ratio}


MODES = ("default", "hybrid-scan", "semantic", "keyword")
"""Path (b)'s modes: ``default`` (``recall_conversation``'s default on the ChromaStore:
hybrid, the store ranking the keyword side, ``memory/episodic/search.py``), ``hybrid-scan``
(through :func:`plain_store`: every message in scope read and analysed per call, with the
turns on both sides as context), ``semantic``, ``keyword``."""


def _percentile(times: Sequence[float], q: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def profile_path(
    convs: Sequence[Conversation], vectors: VectorCache, *, modes: Sequence[str] = MODES,
    extract: bool = True, bare_text: bool = False,
) -> dict[str, Any]:
    """Path (b): ``profile.episodic.search`` on ingested messages, in each mode
    (:data:`MODES`), all measured in this run over the same store. ``extract=False`` stores
    the messages with the profile's episodic tier's ``add_messages`` (no memory extraction:
    the same messages, much faster to write). Latency is per call, query embedding included;
    ``first_ms`` is the median over conversations of each profile's first call in the mode.
    ``bare_text`` embeds what the tier embedded before (:class:`BareTextStore`)."""
    from langmem_edge import AgentMemory
    from langmem_edge.memory.episodic.messages import message_id
    from langmem_edge.store import ChromaStore  # type: ignore[attr-defined]

    folder = tempfile.mkdtemp(prefix="langmem-edge-locomo-profile-")
    out: dict[str, Any] = {}
    try:
        store = ChromaStore.from_path(folder, index={
            "dims": 384, "embed": DiskCachedEmbeddings(vectors), "fields": ["text"]})
        store = BareTextStore.wrap(store) if bare_text else store
        memory = AgentMemory(store)
        scan = AgentMemory(plain_store(store))
        backs: dict[str, dict[str, str]] = {}
        start = time.perf_counter()
        for conv in convs:
            profile = memory.profile(conv.sample_id.replace("-", "_"))
            back: dict[str, str] = {}
            by_session = conversation_messages(conv)
            turns = {s: [t for t in conv.turns if t.session == s] for s in by_session}
            for s, messages in by_session.items():
                sid = f"session_{s}"
                if extract:
                    profile.ingest(messages, session_id=sid)
                else:
                    profile._episodic().add_messages(messages, sid)
                for t, m in zip(turns[s], messages, strict=True):
                    back.setdefault(message_id(sid, m["role"], m["content"]), t.dia_id)
            backs[conv.sample_id] = back
        print(f"path (b): ingest of {len(convs)} conversations took "
              f"{time.perf_counter() - start:.1f} s")
        for mode in modes:
            rows, times, firsts = [], [], []
            owner = scan if mode == "hybrid-scan" else memory
            for conv in convs:
                profile = owner.profile(conv.sample_id.replace("-", "_"))
                for i, q in enumerate(conv.questions):
                    kwargs: dict[str, Any] = {"scope": "all", "limit": RESULTS}
                    if mode in ("semantic", "keyword"):
                        kwargs["mode"] = mode
                    t0 = time.perf_counter()
                    found = profile.episodic.search(q.text, **kwargs)
                    (firsts if i == 0 else times).append(time.perf_counter() - t0)
                    ranked = [backs[conv.sample_id].get(m.id, "") for m in found]
                    rows.append(_row(q.category, ranked, q.evidence))
            mode = f"{mode}, bare text" if bare_text else mode
            out[mode] = {"summary": _summary(rows),
                         "recall_ms": 1000 * statistics.median(times),
                         "p95_ms": 1000 * _percentile(times, 0.95),
                         "first_ms": 1000 * statistics.median(firsts)}
            s = out[mode]["summary"]["1-5"]
            print(f"path (b) recall_conversation, mode={mode}: {s[0]:.3f} / {s[1]:.3f} "
                  f"(recall p50 {out[mode]['recall_ms']:.1f} ms, p95 "
                  f"{out[mode]['p95_ms']:.1f} ms, first call {out[mode]['first_ms']:.1f} ms; "
                  "query embedding included)")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return out


LATENCY_MODES = ("default", "hybrid-scan", "semantic", "default, bare text (before)",
                 "semantic, bare text (before)")
"""The modes :func:`interleaved_latency` times (``--latency-modes`` picks some)."""


def interleaved_latency(conv: Conversation, vectors: VectorCache, *, questions: int,
                        modes: Sequence[str] = LATENCY_MODES) -> dict[str, dict[str, float]]:
    """Path (b)'s latency with the modes interleaved question by question (``default``,
    ``hybrid-scan``, ``semantic`` in turn, on one conversation's first ``questions``
    questions), so every mode runs under the same machine load: p50 / p95 ms per mode and
    each mode's p50 over ``semantic``'s; the ``bare text`` modes run on a second store
    holding the same messages as the tier embedded them before (:class:`BareTextStore`).
    One call is made before timing (warm-up); ``modes`` picks
    which of :data:`LATENCY_MODES` run (``semantic`` always does: it is the baseline)."""
    from langmem_edge import AgentMemory
    from langmem_edge.store import ChromaStore  # type: ignore[attr-defined]

    folder = tempfile.mkdtemp(prefix="langmem-edge-locomo-latency-")
    try:
        store = ChromaStore.from_path(folder, index={
            "dims": 384, "embed": DiskCachedEmbeddings(vectors), "fields": ["text"]})
        name = conv.sample_id.replace("-", "_")
        bare_store = ChromaStore.from_path(f"{folder}/bare", index={
            "dims": 384, "embed": DiskCachedEmbeddings(vectors), "fields": ["text"]})
        indexed = AgentMemory(store).profile(name)
        scanned = AgentMemory(plain_store(store)).profile(name)
        bare = AgentMemory(BareTextStore.wrap(bare_store)).profile(name)
        calls = {"default": (indexed, {}), "hybrid-scan": (scanned, {}),
                 "semantic": (indexed, {"mode": "semantic"}),
                 "default, bare text (before)": (bare, {}),
                 "semantic, bare text (before)": (bare, {"mode": "semantic"})}
        calls = {mode: call for mode, call in calls.items()
                 if mode in modes or mode == "semantic"}
        with_bare = any(profile is bare for profile, _ in calls.values())
        for s, messages in conversation_messages(conv).items():
            indexed._episodic().add_messages(messages, f"session_{s}")
            if with_bare:
                bare._episodic().add_messages(messages, f"session_{s}")
        texts = [q.text for q in conv.questions][:questions]
        indexed.episodic.search(texts[0], scope="all")
        if with_bare:
            bare.episodic.search(texts[0], scope="all")
        times: dict[str, list[float]] = {mode: [] for mode in calls}
        for text in texts:
            for mode, (profile, extra) in calls.items():
                t0 = time.perf_counter()
                profile.episodic.search(text, scope="all", limit=RESULTS, **extra)
                times[mode].append(1000 * (time.perf_counter() - t0))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    base = statistics.median(times["semantic"])
    out = {mode: {"p50_ms": statistics.median(v), "p95_ms": _percentile(v, 0.95),
                  "vs_semantic": statistics.median(v) / base} for mode, v in times.items()}
    for mode, r in out.items():
        print(f"path (b) interleaved, mode={mode}: p50 {r['p50_ms']:.1f} ms, p95 "
              f"{r['p95_ms']:.1f} ms, {r['vs_semantic']:.2f}x semantic's p50")
    return out


def main(argv: Sequence[str] | None = None) -> None:
    """``python benchmarks/locomo_paths.py [PATH] [--store] [--profile]``: the user paths with
    ``CONVERSATION_HYBRID`` (and ``--rrf-k/--vw/--cw`` for a second store config)."""
    import argparse
    import json
    from pathlib import Path

    from locomo import DEFAULT_PATH, load

    from langmem_edge.retrieval import CONVERSATION_HYBRID

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--store", action="store_true")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--no-extract", action="store_true",
                        help="path (b) stores messages without memory extraction")
    parser.add_argument("--rrf-k", type=float)
    parser.add_argument("--vw", type=float, default=0.5)
    parser.add_argument("--cw", type=float, default=0.5)
    parser.add_argument("--styles", default="text,documents")
    parser.add_argument("--modes", default=",".join(MODES),
                        help="path (b)'s modes, comma-separated (default: all of MODES)")
    parser.add_argument("--latency", type=int, metavar="N",
                        help="path (b)'s modes interleaved on the first conversation's first "
                             "N questions (latency under the same load)")
    parser.add_argument("--latency-modes", default=",".join(LATENCY_MODES),
                        help="comma-separated modes --latency times (semantic always)")
    parser.add_argument("--bare-text", action="store_true",
                        help="path (b) also with what the tier embedded before (bare text), "
                             "same run")
    parser.add_argument("--ingest-cost", type=int, metavar="N",
                        help="seconds per message of ingesting the first conversation's first "
                             "N messages with the default model, uncached, before / now")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    convs = load(args.path)
    vectors = VectorCache()
    out: dict[str, Any] = {}
    if args.store:
        configs: dict[str, Mapping[str, Any]] = {"CONVERSATION_HYBRID": CONVERSATION_HYBRID}
        if args.rrf_k is not None:
            configs[f"rrf_k {args.rrf_k}, vector {args.vw}, context {args.cw}"] = (
                hybrid_config(rrf_k=args.rrf_k, vw=args.vw, cw=args.cw))
        out["store"] = store_path(convs, vectors, configs,
                                  context_styles=args.styles.split(","))
    if args.profile:
        if args.bare_text:
            out["profile, bare text"] = profile_path(
                convs, vectors, extract=not args.no_extract, modes=args.modes.split(","),
                bare_text=True)
        out["profile"] = profile_path(convs, vectors, extract=not args.no_extract,
                                      modes=args.modes.split(","))
    if args.ingest_cost:
        out["ingest"] = ingest_cost(convs[0], messages=args.ingest_cost, rounds=3)
    if args.latency:
        out["latency"] = interleaved_latency(convs[0], vectors, questions=args.latency,
                                             modes=args.latency_modes.split(","))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2, default=str))


if __name__ == "__main__":
    import os
    import sys
    from pathlib import Path

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
