"""Child of ``ingest_bench.py --turns``: what a profile's writes cost, through the public API.

Run as ``python benchmarks/_write_costs.py BACKEND TURNS BULK`` with ``PYTHONPATH`` set to
the checkout to measure (only names every version since the memory rooms has are used:
``AgentMemory``, ``Profile.ingest``, ``Profile.remember``, ``ChromaStore.from_path``,
``default_embeddings``, ``FakeEmbeddings``), so the code before a change and after it run the
same measurement. Prints one JSON line:

* ``turn_ms``: p50 of a 2-message ``Profile.ingest`` (model-free: rule-based extraction),
  ``TURNS`` turns into one session, fake vectors (the store's and the tiers' work, not the
  model's);
* ``remember_ms``: p50 of a ``remember`` (5 keys in turn, so 4 in 5 supersede), fake vectors;
* ``bulk_rate`` / ``model_rate``: messages/s of ``Profile.ingest`` in batches of 500 (the
  per-call limit) of ``BULK`` distinct messages with the default model (cold cache), and of
  the model's own ``embed_documents`` on the same texts, measured just before;
* ``model_share``: the model's own time on exactly the texts the ingest embedded (recorded
  on their way to the model, embedded again afterwards in batches of 500) over the ingest's
  time: the share of a bulk ingest that is the model's, whatever each version embeds for a
  message (since the episodic tier embeds a message with its day, speaker and the two turns
  before it, a message is a longer text to the model); ``embedded_chars``: characters the
  ingest sent to the model per message;
* ``turn_calls`` / ``remember_calls``: Chroma collection calls (``get``, ``upsert``,
  ``update``, ``delete``, ``query``, ``add``, ``count``, counted on Chroma's own
  ``Collection`` class, so every version is counted the same way) of the median 2-message
  ingest and ``remember`` (0 on the memory backend).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from langgraph.store.memory import InMemoryStore  # noqa: E402

from langmem_edge import AgentMemory, ChromaStore, default_embeddings  # noqa: E402
from langmem_edge.testing import FakeEmbeddings  # noqa: E402

BATCH = 500
DIMS = 384


def open_store(backend: str, embed: Any, folder: str) -> Any:
    index = {"dims": DIMS, "embed": embed, "fields": ["text"]}
    if backend == "memory":
        return InMemoryStore(index=index)  # type: ignore[arg-type]
    return ChromaStore.from_path(folder, index=index)  # type: ignore[arg-type]


def timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def turn(i: int, tag: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"({tag}-{i}) I booked a flight to Lisbon, seat {i}."},
            {"role": "assistant", "content": f"({tag}-{i}) Noted: seat {i} to Lisbon."}]


CHROMA_CALLS = ("get", "upsert", "update", "delete", "query", "add", "count")
calls = [0]


def count_chroma_calls() -> None:
    """Count every call of Chroma's collection methods in :data:`calls`."""
    from chromadb.api.models.Collection import Collection

    def counted(method: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            calls[0] += 1
            return method(*args, **kwargs)
        return call

    for name in CHROMA_CALLS:
        setattr(Collection, name, counted(getattr(Collection, name)))


def counting(fn: Callable[[], Any]) -> tuple[float, int]:
    """Seconds ``fn`` took and the Chroma calls it made."""
    before = calls[0]
    return timed(fn), calls[0] - before


def per_call(backend: str, turns: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(backend, FakeEmbeddings(DIMS), folder)
        profile = AgentMemory(store).profile("user:bench")
        ingest, remember = [], []
        for i in range(turns):
            ingest.append(counting(lambda i=i: profile.ingest(turn(i, "t"), session_id="s1")))
            remember.append(counting(lambda i=i: profile.remember(
                f"fact number {i} about cedar trees", key=f"topic.{i % 5}")))
        close = getattr(store, "close", None)
        if close:
            close()
    return {"turn_ms": statistics.median(s for s, _ in ingest) * 1000,
            "remember_ms": statistics.median(s for s, _ in remember) * 1000,
            "turn_calls": statistics.median(n for _, n in ingest),
            "remember_calls": statistics.median(n for _, n in remember)}


class Recording:
    """The model, recording every text it is asked to embed."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.texts = inner, []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


def bulk(backend: str, n: int) -> dict[str, float]:
    msgs = [m for i in range(0, n, 2) for m in turn(i, f"b{os.getpid()}")][:n]
    texts = [m["content"] for m in msgs]
    cached = default_embeddings()
    inner = cached.inner  # type: ignore[attr-defined]
    inner.embed_documents(["warm-up sentence"])
    model_s = sum(timed(lambda i=i: inner.embed_documents(texts[i:i + BATCH]))
                  for i in range(0, n, BATCH))
    recording = Recording(inner)
    cached.inner = recording  # type: ignore[attr-defined]
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(backend, cached, folder)
        profile = AgentMemory(store).profile("user:bulk")
        tier_s = sum(timed(lambda i=i: profile.ingest(msgs[i:i + BATCH], session_id="bulk"))
                     for i in range(0, n, BATCH))
        close = getattr(store, "close", None)
        if close:
            close()
    sent = recording.texts
    own_s = sum(timed(lambda i=i: inner.embed_documents(sent[i:i + BATCH]))
                for i in range(0, len(sent), BATCH))
    return {"bulk_rate": n / tier_s, "model_rate": n / model_s, "model_share": own_s / tier_s,
            "embedded_chars": sum(map(len, sent)) / n}


def main() -> None:
    backend, turns, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    count_chroma_calls()
    costs = per_call(backend, turns)
    nan = float("nan")
    rates = bulk(backend, n) if n else {"bulk_rate": nan, "model_rate": nan,
                                         "model_share": nan, "embedded_chars": nan}
    print(json.dumps({**costs, **rates}))


if __name__ == "__main__":
    main()
