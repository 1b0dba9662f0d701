"""``from_path`` / ``from_url`` of the store and the saver take the constructor's keyword
options, typed (``Unpack`` of a ``TypedDict``), not an untyped ``**kwargs``: the TypedDict
lists exactly the constructor's keyword-only parameters."""

from __future__ import annotations

import inspect
from typing import Any, get_type_hints

import pytest

from langmem_edge import ChromaSaver, ChromaStore
from langmem_edge.checkpointers.options import ChromaSaverOptions
from langmem_edge.errors import ConfigurationError
from langmem_edge.store.base import ChromaStoreOptions


@pytest.mark.parametrize(("cls", "options"), [(ChromaStore, ChromaStoreOptions),
                                               (ChromaSaver, ChromaSaverOptions)])
def test_the_options_are_the_constructors_keywords(cls: Any, options: Any) -> None:
    keywords = [p.name for p in inspect.signature(cls.__init__).parameters.values()
                if p.kind is inspect.Parameter.KEYWORD_ONLY]
    assert list(options.__annotations__) == keywords
    assert set(get_type_hints(options)) == set(keywords)
    for factory in (cls.from_path, cls.from_url):
        kinds = {p.kind for p in inspect.signature(factory).parameters.values()}
        assert inspect.Parameter.VAR_KEYWORD in kinds  # typed by the TypedDict


def test_from_path_passes_the_options_on(tmp_path: Any) -> None:
    with ChromaStore.from_path(str(tmp_path / "a"), collection_prefix="opts",
                               ef_search=50) as store:
        assert store.ef_search == 50
    with pytest.raises(TypeError):
        ChromaStore.from_path(str(tmp_path / "b"), ef_serch=50)  # type: ignore[call-arg]
    with pytest.raises(ConfigurationError):
        ChromaStore.from_path(str(tmp_path / "c"), ef_search=0)
    with ChromaSaver.from_path(str(tmp_path / "d"), list_page_size=7) as saver:
        assert saver.list_page_size == 7
