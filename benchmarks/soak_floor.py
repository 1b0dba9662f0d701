"""The growing soak against its floor: the same operations on raw Chroma, in one run
(thirty-fifth session, issue 34).

    python benchmarks/soak_floor.py [--ops 100000] [--every 10000] [--split]

Issue 34 asks the growing soak (``tests/reliability/test_soak.py``) to keep its seconds per
10,000 operations within 1.5x from the first 10,000 to the last, while its data grows from
nothing to ~2,500 store items, ~6,700 memory records and ~4,000 working notes. This asks how
much of the growth the database itself shows. Worlds take the same operations, drawn as
the soak draws them (:data:`WRITE_SHARE` writes; put, remember, working note; get, vector or
hybrid search, recall), each operation on every world, each world going first in turn:

* **ours**: the soak's own store and memory (its ``_Soak``: every cache bound lowered as the
  test lowers it), called as the soak calls them;
* **floor**: one raw Chroma collection in another folder (the same collection settings:
  cosine, ``ef_search``, sync threshold; planner statistics kept as the store keeps them), with
  the fewest calls a plain layout needs: a put, a working note: one ``upsert``; a ``get``: one
  ``get`` by id; a vector search of ``("soak",)``: one filtered ``query``; a hybrid search of a
  child namespace: one filtered ``query`` and one filtered ``get`` with ``$contains``; a
  remember: a ``get`` of the key's live record and one ``upsert`` of the new record and the
  superseded one; a recall: one ``query`` of the profile's live records (the vector channel
  alone: less work than a recall does, so a floor below the real one);
* **split** (``--split``): the floor with a collection for each profile (its memory records
  and working notes; store items stay in the shared collection), so a profile's reads walk
  none of the other profiles' rows.

Vectors are computed before the floors' clocks start (the fake embeddings cost next to
nothing). Printed every ``--every`` operations: each world's seconds for the block and the
median milliseconds of each kind of operation; at the end, each world's last block over its
first (the issue's ratio) and over its second.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]

from reliability.test_soak import HYBRID_SHARE, PROFILES, WORDS, WRITE_SHARE, _Soak  # noqa: E402

from langmem_edge import _chroma  # noqa: E402
from langmem_edge._sqlite_stats import PlannerStatistics  # noqa: E402
from langmem_edge.store.base import DEFAULT_EF_SEARCH  # noqa: E402


class Floor:
    """The soak's operations on one raw Chroma collection, the fewest calls each."""

    def __init__(self, folder: str, embed: Any) -> None:
        import chromadb

        self.client = chromadb.PersistentClient(path=folder)
        self.col = _chroma.open_collection(
            self.client, "floor", schema_version=1, call=lambda fn, **kw: fn(**kw),
            ef_search=DEFAULT_EF_SEARCH)
        self.stats = PlannerStatistics(folder)
        self.embed = embed
        self.serial = 0

    def vector(self, text: str) -> list[float]:
        return self.embed.embed_query(text)

    def put(self, ns: str, key: str, text: str, vec: list[float]) -> None:
        self.col.upsert(ids=[f"{ns}/{key}"], embeddings=[vec], documents=[text],
                        metadatas=[{"ns": ns, "p1": ns.split("/")[0], "kind": "item"}])
        self.stats.wrote(1)

    def get(self, ns: str, key: str) -> Any:
        return self.col.get(ids=[f"{ns}/{key}"], include=["documents", "metadatas"])

    def search(self, vec: list[float]) -> Any:
        return self.col.query(query_embeddings=[vec], n_results=5, where={"p1": "soak"},
                              include=["documents", "metadatas", "distances"])

    def hybrid(self, ns: str, word: str, vec: list[float]) -> Any:
        near = self.col.query(query_embeddings=[vec], n_results=5, where={"ns": ns},
                              include=["documents", "metadatas", "distances"])
        words = self.col.get(where={"ns": ns}, where_document={"$contains": word},
                             include=["documents", "metadatas"], limit=5)
        return near, words

    def remember(self, profile: str, key: str, text: str, vec: list[float]) -> None:
        old = self.col.get(where={"$and": [{"profile": profile}, {"key": key},
                                           {"live": True}]},
                           include=["metadatas", "embeddings", "documents"])
        self.serial += 1
        ids, vecs, docs, metas = [f"{profile}/m{self.serial}"], [vec], [text], [
            {"profile": profile, "key": key, "live": True, "kind": "memory"}]
        for i, e, d, m in zip(old["ids"], old["embeddings"], old["documents"],
                              old["metadatas"], strict=True):  # superseded: live False
            ids.append(i), vecs.append(e), docs.append(d), metas.append({**m, "live": False})
        self.col.upsert(ids=ids, embeddings=vecs, documents=docs, metadatas=metas)
        self.stats.wrote(1)

    def working(self, profile: str, thread: str, text: str, vec: list[float]) -> None:
        self.col.upsert(ids=[f"{profile}/working/{thread}"], embeddings=[vec],
                        documents=[text],
                        metadatas=[{"profile": profile, "thread": thread, "kind": "note"}])
        self.stats.wrote(1)

    def recall(self, profile: str, vec: list[float]) -> Any:
        return self.col.query(query_embeddings=[vec], n_results=5,
                              where={"$and": [{"profile": profile}, {"live": True}]},
                              include=["documents", "metadatas", "distances"])


class SplitFloor(Floor):
    """The floor with a collection of its own for each profile (memory records and working
    notes; store items stay in the shared one): a profile's reads filter nothing but ``live``
    and walk no other profile's rows (the user-per-collection strategy the Chroma cookbook
    lists for multi-tenancy)."""

    def __init__(self, folder: str, embed: Any) -> None:
        super().__init__(folder, embed)
        self.profiles: dict[str, Any] = {}

    def of(self, profile: str) -> Any:
        if profile not in self.profiles:
            self.profiles[profile] = _chroma.open_collection(
                self.client, f"profile-{profile}", schema_version=1,
                call=lambda fn, **kw: fn(**kw), ef_search=DEFAULT_EF_SEARCH)
        return self.profiles[profile]

    def remember(self, profile: str, key: str, text: str, vec: list[float]) -> None:
        col = self.of(profile)
        old = col.get(where={"$and": [{"key": key}, {"live": True}]},
                      include=["metadatas", "embeddings", "documents"])
        self.serial += 1
        ids, vecs, docs, metas = [f"m{self.serial}"], [vec], [text], [
            {"key": key, "live": True}]
        for i, e, d, m in zip(old["ids"], old["embeddings"], old["documents"],
                              old["metadatas"], strict=True):
            ids.append(i), vecs.append(e), docs.append(d), metas.append({**m, "live": False})
        col.upsert(ids=ids, embeddings=vecs, documents=docs, metadatas=metas)
        self.stats.wrote(1)

    def working(self, profile: str, thread: str, text: str, vec: list[float]) -> None:
        self.of(profile).upsert(ids=[f"working/{thread}"], embeddings=[vec], documents=[text],
                                metadatas=[{"thread": thread, "live": False}])
        self.stats.wrote(1)

    def recall(self, profile: str, vec: list[float]) -> Any:
        return self.of(profile).query(query_embeddings=[vec], n_results=5,
                                      where={"live": True},
                                      include=["documents", "metadatas", "distances"])


def draw(rng: random.Random) -> tuple[str, int, str]:
    """One operation as the growing soak draws it: (kind, profile number, word)."""
    profile = rng.randrange(PROFILES)
    word = f"w{rng.randrange(WORDS)}"
    if rng.random() < WRITE_SHARE:
        return rng.choice(["put", "remember", "working"]), profile, word
    op = rng.choice(["get", "search", "recall"])
    if op == "search" and rng.random() < HYBRID_SHARE:
        op = "hybrid_search"
    return op, profile, word


def ours(soak: _Soak, op: str, p: int, word: str) -> None:
    store, profile = soak.store, soak.memory.profile(f"user{p}")
    ns, key, thread = ("soak", word[:3]), f"topic.{word[:3]}", f"t{word[:3]}"
    if op == "put":
        store.put(ns, word, {"text": f"item {word} amber"})
    elif op == "remember":
        profile.remember(f"fact {word} cedar", key=key)
    elif op == "working":
        profile.working.set_context(thread, f"notes {word}")
    elif op == "get":
        store.get(ns, word)
    elif op == "hybrid_search":
        store.hybrid_search(ns, query=f"item {word}", limit=5)
    elif op == "search":
        store.search(("soak",), query=f"item {word}", limit=5)
    else:
        profile.recall(f"fact {word}", limit=5)


def floor(f: Floor, op: str, p: int, word: str, vec: list[float]) -> None:
    ns, profile = f"soak/{word[:3]}", f"user{p}"
    if op == "put":
        f.put(ns, word, f"item {word} amber", vec)
    elif op == "remember":
        f.remember(profile, f"topic.{word[:3]}", f"fact {word} cedar", vec)
    elif op == "working":
        f.working(profile, f"t{word[:3]}", f"notes {word}", vec)
    elif op == "get":
        f.get(ns, word)
    elif op == "hybrid_search":
        f.hybrid(ns, word, vec)
    elif op == "search":
        f.search(vec)
    else:
        f.recall(profile, vec)


def text_of(op: str, word: str) -> str:
    """The text whose vector the operation embeds (as ``ours`` would)."""
    return {"put": f"item {word} amber", "remember": f"fact {word} cedar",
            "working": f"notes {word}", "hybrid_search": f"item {word}",
            "search": f"item {word}", "recall": f"fact {word}"}.get(op, word)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ops", type=int, default=100_000)
    parser.add_argument("--every", type=int, default=10_000)
    parser.add_argument("--split", action="store_true",
                        help="a third world: the floor with a collection a profile")
    args = parser.parse_args()
    soak = _Soak(constant=False)
    floor_folder = soak.folder.rstrip("/") + "-floor"
    floors = {"floor": Floor(floor_folder, soak.cache)}
    if args.split:
        floors["split"] = SplitFloor(floor_folder + "-split", soak.cache)
    worlds = ["ours", *floors]
    f = floors["floor"]
    rng = random.Random(17)
    blocks: dict[str, list[float]] = {w: [] for w in worlds}
    spent = {w: 0.0 for w in worlds}
    times: dict[tuple[str, str], list[float]] = defaultdict(list)
    print(f"load {os.getloadavg()[0]:.2f}; ours in {soak.folder}, floor in {floor_folder}",
          flush=True)
    try:
        for n in range(1, args.ops + 1):
            op, p, word = draw(rng)
            vec = f.vector(text_of(op, word))
            order = worlds[n % len(worlds):] + worlds[:n % len(worlds)]  # each goes first
            for world in order:
                began = time.perf_counter()
                if world == "ours":
                    ours(soak, op, p, word)
                else:
                    floor(floors[world], op, p, word, vec)
                took = time.perf_counter() - began
                spent[world] += took
                times[(world, op)].append(took)
            if n % args.every == 0:
                line = [f"{n:>7} ops, load {os.getloadavg()[0]:.2f}"]
                for world in worlds:
                    blocks[world].append(spent[world])
                    spent[world] = 0.0
                    medians = ", ".join(
                        f"{op} {1000 * statistics.median(times[(world, op)]):.1f}"
                        for op in sorted({o for w, o in times if w == world}))
                    line.append(f"  {world}: {blocks[world][-1]:.1f} s ({medians})")
                times.clear()
                print("\n".join(line), flush=True)
    finally:
        soak.store.close()
    for world in worlds:
        b = blocks[world]
        if len(b) >= 2:
            print(f"{world}: seconds a block {', '.join(f'{s:.1f}' for s in b)}; last/first "
                  f"{b[-1] / b[0]:.2f}x, last/second {b[-1] / b[1]:.2f}x")
    print(f"folders kept (delete them): {soak.folder} {floor_folder}*")


if __name__ == "__main__":
    main()
