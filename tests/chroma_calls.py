"""Counting the Chroma calls a ``ChromaStore`` makes, for the tests that bound them."""

from __future__ import annotations

from typing import Any


class Calls:
    """Every Chroma call ``store`` makes from now on, by method name (:attr:`names`) and,
    with ``keep_kwargs``, each call's keyword arguments (:attr:`kwargs`: held, so not for
    long runs); :meth:`before` runs a function once, just before the first call of a
    method."""

    def __init__(self, store: Any, *, keep_kwargs: bool = False) -> None:
        self.names: list[str] = []
        self.kwargs: list[dict[str, Any]] = []
        self.keep_kwargs = keep_kwargs
        self.hooks: dict[str, Any] = {}
        self.store = store
        self.inner = inner = store._call

        def counted(fn: Any, *args: Any, **kwargs: Any) -> Any:
            hook = self.hooks.pop(fn.__name__, None)
            if hook is not None:
                hook()
            self.names.append(fn.__name__)
            if self.keep_kwargs:
                self.kwargs.append(kwargs)
            return inner(fn, *args, **kwargs)

        store._call = counted

    def before(self, name: str, fn: Any) -> None:
        self.hooks[name] = fn

    def stop(self) -> None:
        """Stop counting (the store calls Chroma as before)."""
        self.store._call = self.inner
