"""A small tour of ChromaStore: put, semantic search with a filter, namespaces, TTL, persistence.

Runs offline with the packaged all-MiniLM-L6-v2 model:

    python examples/store_demo.py [--path ./demo-memory]
"""

from __future__ import annotations

import argparse
import tempfile

from langmem_edge import ChromaStore, default_embeddings


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", default=None, help="Chroma folder (default: a temp folder)")
    args = parser.parse_args(argv)
    path = args.path or tempfile.mkdtemp(prefix="langmem-edge-demo-")

    index = {"dims": 384, "embed": default_embeddings(), "fields": ["text"]}
    with ChromaStore.from_path(path, index=index) as store:
        alice = ("users", "alice")
        store.put(alice, "ui_theme", {"text": "Prefers dark mode in every app", "kind": "pref"})
        store.put(alice, "home", {"text": "Lives in Singapore since 2019", "kind": "fact"})
        store.put(alice, "diet", {"text": "Is allergic to peanuts", "kind": "fact"})
        store.put(("users", "bob"), "home", {"text": "Lives in Lisbon", "kind": "fact"})
        store.put(alice, "scratch", {"text": "temporary note"}, ttl=60)

        print(f"Chroma folder: {path}")
        for query in ("what colour scheme does alice like?", "where does she live?"):
            top = store.search(alice, query=query, limit=1)[0]
            print(f"search {query!r} -> {top.key}: {top.value['text']} (score {top.score:.3f})")
        facts = store.search(alice, query="food allergies", filter={"kind": "fact"}, limit=2)
        print("facts about food:", [r.value["text"] for r in facts])
        print("namespaces:", store.list_namespaces())

    with ChromaStore.from_path(path, index=index) as reopened:
        print("after reopening:", reopened.get(alice, "home").value["text"])


if __name__ == "__main__":
    main()
