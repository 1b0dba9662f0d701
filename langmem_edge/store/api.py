"""``BaseStore``'s public methods as ``ChromaStore`` exposes them: unchanged, except that a bad
namespace raises :class:`langmem_edge.errors.InvalidNamespaceError` (which has a ``.code``
and subclasses langgraph's ``InvalidNamespaceError``, so ``except`` clauses written for
langgraph keep working). langgraph checks labels in these methods before ``batch`` runs."""

from __future__ import annotations

from typing import Any, Literal

from langgraph.store.base import NOT_PROVIDED, Item, NamespacePath, NotProvided, SearchItem

from langmem_edge.store import layout

__all__ = ["NamespaceErrorsMixin"]


class NamespaceErrorsMixin:
    """Put first in ``ChromaStore``'s bases, before ``BaseStore``."""

    def get(
        self,
        namespace: tuple[str, ...],
        key: str,
        *,
        refresh_ttl: bool | None = None,
    ) -> Item | None:
        """``BaseStore.get``; a bad namespace raises our ``InvalidNamespaceError``."""
        with layout.namespace_errors(namespace):
            return super().get(namespace, key, refresh_ttl=refresh_ttl)  # type: ignore[misc]

    async def aget(
        self,
        namespace: tuple[str, ...],
        key: str,
        *,
        refresh_ttl: bool | None = None,
    ) -> Item | None:
        """``BaseStore.aget``; a bad namespace raises our ``InvalidNamespaceError``."""
        with layout.namespace_errors(namespace):
            return await super().aget(namespace, key, refresh_ttl=refresh_ttl)  # type: ignore[misc]

    def search(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
    ) -> list[SearchItem]:
        """``BaseStore.search``; a bad namespace raises our ``InvalidNamespaceError``."""
        with layout.namespace_errors(namespace_prefix):
            return super().search(
                namespace_prefix,
                query=query,
                filter=filter,
                limit=limit,
                offset=offset,
                refresh_ttl=refresh_ttl,
            )  # type: ignore[misc]

    async def asearch(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
    ) -> list[SearchItem]:
        """``BaseStore.asearch``; a bad namespace raises our ``InvalidNamespaceError``."""
        with layout.namespace_errors(namespace_prefix):
            return await super().asearch(
                namespace_prefix,
                query=query,
                filter=filter,
                limit=limit,
                offset=offset,
                refresh_ttl=refresh_ttl,
            )  # type: ignore[misc]

    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | None | NotProvided = NOT_PROVIDED,
    ) -> None:
        """``BaseStore.put``; a bad namespace raises our ``InvalidNamespaceError``."""
        with layout.namespace_errors(namespace):
            super().put(namespace, key, value, index, ttl=ttl)  # type: ignore[misc]

    async def aput(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | None | NotProvided = NOT_PROVIDED,
    ) -> None:
        """``BaseStore.aput``; a bad namespace raises our ``InvalidNamespaceError``."""
        with layout.namespace_errors(namespace):
            await super().aput(namespace, key, value, index, ttl=ttl)  # type: ignore[misc]

    def delete(
        self,
        namespace: tuple[str, ...],
        key: str,
    ) -> None:
        """``BaseStore.delete``; a bad namespace raises our ``InvalidNamespaceError``."""
        with layout.namespace_errors(namespace):
            super().delete(namespace, key)  # type: ignore[misc]

    async def adelete(
        self,
        namespace: tuple[str, ...],
        key: str,
    ) -> None:
        """``BaseStore.adelete``; a bad namespace raises our ``InvalidNamespaceError``."""
        with layout.namespace_errors(namespace):
            await super().adelete(namespace, key)  # type: ignore[misc]

    def list_namespaces(
        self,
        *,
        prefix: NamespacePath | None = None,
        suffix: NamespacePath | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """``BaseStore.list_namespaces``; a bad namespace raises our ``InvalidNamespaceError``."""
        with layout.namespace_errors(prefix, suffix, optional=True):
            return super().list_namespaces(
                prefix=prefix, suffix=suffix, max_depth=max_depth, limit=limit, offset=offset
            )  # type: ignore[misc]

    async def alist_namespaces(
        self,
        *,
        prefix: NamespacePath | None = None,
        suffix: NamespacePath | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """``BaseStore.alist_namespaces``; a bad namespace raises our ``InvalidNamespaceError``."""
        with layout.namespace_errors(prefix, suffix, optional=True):
            return await super().alist_namespaces(
                prefix=prefix, suffix=suffix, max_depth=max_depth, limit=limit, offset=offset
            )  # type: ignore[misc]
