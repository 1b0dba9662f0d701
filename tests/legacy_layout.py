"""Turn a ``ChromaStore``'s collections back into the schema 4 layout (item rows in
``<prefix>-items`` with the constant 1-d vector), so tests can write older layouts with
today's code and open them again."""

from __future__ import annotations

from typing import Any

from langmem_edge._chroma import SCHEMA_KEY
from langmem_edge.store import layout
from langmem_edge.store.base import ChromaStore


def to_schema_4(store: ChromaStore) -> Any:
    """Copy ``store``'s item rows into ``<prefix>-items`` (schema 4), delete its rows
    collection, and return the new items collection. The store must not be used after."""
    client = store._client
    got = store._items.get(include=["metadatas", "documents"])
    items = client.create_collection(
        f"{store.collection_prefix}-items", embedding_function=None,
        metadata={"hnsw:space": "cosine", SCHEMA_KEY: layout.LEGACY_SCHEMA})
    if got["ids"]:
        items.add(ids=got["ids"], metadatas=got["metadatas"], documents=got["documents"],
                  embeddings=[layout.ITEM_VECTOR] * len(got["ids"]))
    client.delete_collection(store._items.name)
    store._vectors.modify(metadata={SCHEMA_KEY: layout.LEGACY_SCHEMA})
    return items
