"""Reading a request's parameters (the profile, numbers, choices) and offset paging, with
errors that name the parameter and what it allows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from starlette.requests import Request

from langmem_edge.errors import InvalidInputError, NotFoundError
from langmem_edge.memory import AgentMemory, Profile

__all__ = [
    "DEFAULT_PAGE",
    "MAX_PAGE",
    "OffsetPage",
    "choice",
    "integer",
    "memory_of",
    "offset_page",
    "profile_of",
    "require",
    "text",
]

DEFAULT_PAGE = 50
"""Rows a page shows unless ``limit`` says otherwise."""

MAX_PAGE = 500
"""Most rows one page shows (a list page of the memory API holds at most 500)."""

T = TypeVar("T")


def memory_of(request: Request) -> AgentMemory:
    """The ``AgentMemory`` the app inspects."""
    memory: AgentMemory = request.app.state.memory
    return memory


def text(params: Mapping[str, str], name: str, default: str = "") -> str:
    """A text parameter, stripped (``default`` when absent)."""
    value = params.get(name)
    return default if value is None else value.strip()


def require(params: Mapping[str, str], name: str, what: str) -> str:
    """A parameter that must be given; :class:`InvalidInputError` naming it otherwise."""
    value = text(params, name)
    if not value:
        raise InvalidInputError(f"the parameter {name!r} ({what}) is missing")
    return value


def integer(params: Mapping[str, str], name: str, default: int, *, low: int = 0,
            high: int | None = None) -> int:
    """An integer parameter in ``[low, high]``; :class:`InvalidInputError` otherwise."""
    raw = text(params, name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInputError(f"{name} must be a whole number, got {raw!r}") from None
    if value < low or (high is not None and value > high):
        allowed = f"{low}-{high}" if high is not None else f">= {low}"
        raise InvalidInputError(f"{name} must be {allowed}, got {value}")
    return value


def choice(params: Mapping[str, str], name: str, allowed: Sequence[str], default: str) -> str:
    """A parameter that is one of ``allowed``; :class:`InvalidInputError` otherwise."""
    value = text(params, name, default)
    if value not in allowed:
        raise InvalidInputError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
    return value


async def profile_of(request: Request, *, must_exist: bool = False) -> Profile:
    """The profile named by the ``p`` query parameter. ``must_exist``: a name no profile has
    is :class:`NotFoundError` (pages that only read say so instead of showing nothing)."""
    name = require(request.query_params, "p", "the profile name")
    memory = memory_of(request)
    if must_exist and name not in await memory.alist_profiles():
        raise NotFoundError(f"no profile {name!r} in this store (the profiles page lists "
                            "them)")
    return memory.profile(name)


@dataclass(frozen=True)
class OffsetPage(Generic[T]):
    """One page of a list held whole (profiles, sessions, threads, reflections)."""

    items: list[T]
    offset: int
    limit: int
    total: int

    @property
    def prev_offset(self) -> int | None:
        """The previous page's offset, or ``None`` on the first."""
        return max(0, self.offset - self.limit) if self.offset > 0 else None

    @property
    def next_offset(self) -> int | None:
        """The next page's offset, or ``None`` on the last."""
        return self.offset + self.limit if self.offset + self.limit < self.total else None


def offset_page(request: Request, rows: Sequence[T], *, default: int = DEFAULT_PAGE
                ) -> OffsetPage[T]:
    """The page of ``rows`` that ``offset`` and ``limit`` of the request ask for."""
    limit = integer(request.query_params, "limit", default, low=1, high=MAX_PAGE)
    offset = integer(request.query_params, "offset", 0)
    return OffsetPage(items=list(rows[offset: offset + limit]), offset=offset, limit=limit,
                      total=len(rows))
