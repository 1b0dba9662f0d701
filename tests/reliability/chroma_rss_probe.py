"""RSS of a bare Chroma ``PersistentClient`` (no langmem_edge store) under one kind of operation.

Tells Chroma's own native memory apart from ours in the soak's RSS growth::

    python -m tests.reliability.chroma_rss_probe MODE OPERATIONS

``MODE``: ``same`` (upsert one of :data:`IDS` fixed ids, a new vector each time: the data
does not grow), ``grow`` (add a new id each time), ``replace`` (add a new id and delete the
oldest: as many rows, new ids, as the constant-data soak's ``remember`` then ``delete``),
``read`` (a vector query and a get). Prints the RSS in MB every :data:`SAMPLE_EVERY`
operations and at the end, and after each sample the RSS after glibc's ``malloc_trim(0)``
(what is in use).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import random
import sys
import tempfile

import chromadb
from chromadb.config import Settings

from .helpers import rss_mb

IDS = 500
"""Ids written before the run (and upserted again by ``same``)."""

DIMS = 64
"""Vector size (the suites' fake embeddings)."""

SAMPLE_EVERY = 1_000
"""Operations between two RSS samples."""

QUERY_RESULTS = 5
"""Neighbours a ``read`` query asks for."""


def main(mode: str, total: int) -> list[tuple[float, float]]:
    """Run ``total`` operations of ``mode``; the RSS samples (raw, after ``malloc_trim``)."""
    client = chromadb.PersistentClient(path=tempfile.mkdtemp(prefix="rel-rss-"),
                                       settings=Settings(anonymized_telemetry=False))
    col = client.create_collection("vectors", embedding_function=None)
    rng = random.Random(1)

    def vec() -> list[float]:
        return [rng.random() for _ in range(DIMS)]

    ids = [f"id{i}" for i in range(IDS)]
    col.upsert(ids=ids, embeddings=[vec() for _ in ids], documents=[f"doc {i}" for i in ids])
    samples = []
    libc = ctypes.CDLL(ctypes.util.find_library("c"))

    def sample() -> None:
        raw = round(rss_mb(), 1)
        libc.malloc_trim(0)
        samples.append((raw, round(rss_mb(), 1)))

    for n in range(total):
        if n % SAMPLE_EVERY == 0:
            sample()
        if mode == "same":
            col.upsert(ids=[ids[n % IDS]], embeddings=[vec()], documents=[f"doc {n}"])
        elif mode == "grow":
            col.add(ids=[f"new{n}"], embeddings=[vec()], documents=[f"doc {n}"])
        elif mode == "replace":
            col.add(ids=[f"new{n}"], embeddings=[vec()], documents=[f"doc {n}"])
            col.delete(ids=[ids[n] if n < IDS else f"new{n - IDS}"])
        else:
            col.query(query_embeddings=[vec()], n_results=QUERY_RESULTS)
            col.get(ids=[ids[n % IDS]])
    sample()
    return samples


if __name__ == "__main__":
    mode, total = sys.argv[1], int(sys.argv[2])
    if mode not in ("same", "grow", "replace", "read"):
        raise SystemExit(f"mode must be same, grow, replace or read, got {mode!r}")
    print(mode, total, main(mode, total))
