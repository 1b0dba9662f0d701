"""Turn a ``ChromaStore``'s collections back into older layouts, so tests can write them with
today's code and open them again: schema 7 (a scalar ``f:<path>`` field per string leaf,
:func:`to_schema_7`), schema 5 (the row's value and bookkeeping in its metadata,
:func:`to_schema_5`) and schema 4 (item rows in ``<prefix>-items`` with the constant 1-d
vector, :func:`to_schema_4`)."""

from __future__ import annotations

import json
from typing import Any

from langgraph.store.base import PutOp

from langmem_edge._chroma import SCHEMA_KEY, split_labels
from langmem_edge.embeddings import text_hash
from langmem_edge.store import filters, layout
from langmem_edge.store.base import ChromaStore


def schema_7_metadata(meta: dict[str, Any]) -> dict[str, Any]:
    """A row's metadata as schema 7 stored it: each entry of the strings list as its own
    ``f:<path>`` field."""
    out = {k: v for k, v in meta.items() if k != filters.STRINGS_FIELD}
    for entry in meta.get(filters.STRINGS_FIELD) or []:
        path, _, text = entry.partition(filters.ENTRY_SEPARATOR)
        out[filters.LEGACY_FILTER_FIELD_PREFIX + path] = text
    return out


def to_schema_7(store: ChromaStore) -> None:
    """Rewrite ``store``'s item rows as schema 7 and mark its rows collection so. The store
    must not be used after."""
    got = store._items.get(include=["metadatas"])
    for iid, meta in zip(got["ids"], got["metadatas"], strict=True):
        if filters.STRINGS_FIELD in meta:  # update merges: the list is removed by None
            store._items.update(ids=[iid], metadatas=[{**schema_7_metadata(meta),
                                                       filters.STRINGS_FIELD: None}])
    meta = {k: v for k, v in (store._items.metadata or {}).items() if not k.startswith("hnsw:")}
    store._items.modify(metadata={**meta, SCHEMA_KEY: 7})


def schema_5_rows(got: dict[str, Any]) -> dict[str, Any]:
    """A ``get`` result of schema 6 rows (metadatas and documents included) as schema 5 stored
    them: the document's ``"m"`` fields back in the metadata, the keyword document alone."""
    metas, docs = [], []
    for meta, doc in zip(got["metadatas"], got["documents"], strict=True):
        data = json.loads(doc)
        row = data.pop("m")
        row.pop(layout.FILTER_KEYS, None)
        metas.append({**schema_7_metadata(meta), **row})
        docs.append(json.dumps(data, ensure_ascii=False, separators=(",", ":")))
    return {**got, "metadatas": metas, "documents": docs}


def to_schema_5(store: ChromaStore) -> None:
    """Rewrite ``store``'s item rows as schema 5 and mark its rows collection so. The store
    must not be used after."""
    got = schema_5_rows(store._items.get(include=["metadatas", "documents", "embeddings"]))
    if got["ids"]:
        store._items.upsert(ids=got["ids"], metadatas=got["metadatas"],
                            documents=got["documents"], embeddings=list(got["embeddings"]))
    meta = {k: v for k, v in (store._items.metadata or {}).items() if not k.startswith("hnsw:")}
    store._items.modify(metadata={**meta, SCHEMA_KEY: 5})


def to_schema_4(store: ChromaStore) -> Any:
    """Copy ``store``'s item rows into ``<prefix>-items`` (schema 4), with each item's first
    vector back in ``<prefix>-vectors`` as row ``j == 0``; delete its rows collection; return
    the new items collection. The store must not be used after."""
    client = store._client
    got = schema_5_rows(store._items.get(include=["metadatas", "documents", "embeddings"]))
    firsts = [(iid, meta, emb) for iid, meta, emb in zip(
        got["ids"], got["metadatas"], got["embeddings"], strict=True) if meta["nv"]]
    if firsts:
        metas = []
        for _, meta, _ in firsts:
            namespace = split_labels(meta["ns"])
            path, _, text = store._texts(PutOp(namespace, meta["k"], json.loads(meta["v"])))[0][0]
            metas.append(layout.vector_metadata(namespace, meta["k"], path, text_hash(text)))
        store._vectors.add(ids=[layout.vector_id(i, str(m["vg"]), 0) for i, m, _ in firsts],
                           embeddings=[list(e) for _, _, e in firsts], metadatas=metas)
    items = client.create_collection(
        f"{store.collection_prefix}-items", embedding_function=None,
        metadata={"hnsw:space": "cosine", SCHEMA_KEY: layout.LEGACY_SCHEMA})
    if got["ids"]:
        items.add(ids=got["ids"], metadatas=got["metadatas"], documents=got["documents"],
                  embeddings=[layout.ITEM_VECTOR] * len(got["ids"]))
    client.delete_collection(store._items.name)
    store._vectors.modify(metadata={SCHEMA_KEY: layout.LEGACY_SCHEMA})
    return items
