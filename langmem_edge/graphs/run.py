"""Whose memory a graph run uses: :class:`RunResolver` and :class:`MemoryRun`.

Every node and middleware hook of :mod:`langmem_edge.graphs` starts here.

- **The memory**: the ``AgentMemory`` given to the node or middleware, or else one made over
  the graph's store (``runtime.store``, set by ``compile(store=...)`` / ``create_agent(store=
  ...)``), with the ``model`` given (``None``: model-free). One ``AgentMemory`` is kept per
  store, so its per-profile indexes are reused from call to call.
- **The profile, the contact and the thread**: the run's context first (``context={
  "profile": ..., "contact": ..., "thread_id": ...}``: a :class:`~langmem_edge.tools.
  MemoryContext` mapping or any object with those attributes), then ``config["configurable"]``
  (the thread also from ``configurable["thread_id"]``, where langgraph puts it), the same
  lookup the memory tools use.

**No profile, no memory**: a run with no profile (or with neither a memory nor a graph store)
resolves to ``None``, and every hook then does nothing: the run goes on exactly as without
the middleware, it never fails because of memory. That is rarely what was meant (a context
``{"user": "alice"}`` instead of ``{"profile": "alice"}``), so the first such run of the
process logs a WARNING naming the keys looked for and the keys the run had; with
``strict=True`` it raises :class:`~langmem_edge.errors.ConfigurationError` instead. A profile
that is not a string (``{"profile": 42}``) is always refused with ``InvalidInputError``:
it would otherwise become a profile named ``"42"``.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.config import get_config
from langgraph.store.base import BaseStore

from langmem_edge._lru import LRU
from langmem_edge.errors import ConfigurationError, InvalidInputError
from langmem_edge.memory import AgentMemory, Profile
from langmem_edge.memory.working import ThreadState
from langmem_edge.tools import run_value

__all__ = ["MAX_HANDOFFS", "MemoryRun", "RunResolver", "ThreadStateHandoff"]

MAX_HANDOFFS = 1024
"""Thread states a :class:`ThreadStateHandoff` keeps waiting for their model call (the oldest
is dropped: a run that stopped before its first model call never takes its own)."""

logger = logging.getLogger(__name__)

_warned_no_profile = threading.Event()
"""Set once this process has warned of a run without a profile (the warning is once a
process, not once a middleware: a service builds many)."""


@dataclass(frozen=True)
class MemoryRun:
    """What one graph run remembers with: the profile, its contact and its thread."""

    memory: AgentMemory
    profile: Profile
    contact: str | None
    thread: str | None


def current_config() -> dict[str, Any]:
    """The run's config (empty outside a runnable context: a hook invoked by hand)."""
    try:
        return dict(get_config())
    except RuntimeError:  # called outside a runnable context (a hook invoked by hand)
        return {}


class RunResolver:
    """Resolves a run's :class:`MemoryRun` (see the module docstring).

    Args:
        memory: The memory to use; ``None``: one over the graph's store.
        model: The chat model of a memory made over the graph's store (extraction,
            summaries); ignored when ``memory`` is given (it has its own).
        strict: Raise ``ConfigurationError`` for a run without a profile instead of running
            it without memory (and warning once a process). Default ``False``.
    """

    def __init__(self, memory: AgentMemory | None = None, *,
                 model: BaseChatModel | None = None, strict: bool = False) -> None:
        if memory is not None and not isinstance(memory, AgentMemory):
            raise ConfigurationError(
                f"memory must be an AgentMemory or None, got {type(memory).__name__}")
        if not isinstance(strict, bool):
            raise ConfigurationError(f"strict must be True or False, got {strict!r}")
        self.memory = memory
        self.model = model
        self.strict = strict
        self._by_store: weakref.WeakKeyDictionary[BaseStore, AgentMemory] = (
            weakref.WeakKeyDictionary())
        self._lock = threading.Lock()

    def memory_for(self, store: BaseStore | None) -> AgentMemory | None:
        """The memory for a run on ``store``: the one given, else one per store."""
        if self.memory is not None:
            return self.memory
        if store is None:
            return None
        with self._lock:
            memory = self._by_store.get(store)
            if memory is None:
                memory = self._by_store[store] = AgentMemory(store, model=self.model)
            return memory

    def resolve(self, runtime: Any) -> MemoryRun | None:
        """The run's memory, profile, contact and thread, or ``None`` when it has no profile
        or no memory (the hooks then do nothing)."""
        memory = self.memory_for(getattr(runtime, "store", None))
        config = current_config()
        context = getattr(runtime, "context", None)
        name = run_value(context, config, "profile")
        if name is not None and not isinstance(name, str):
            raise InvalidInputError(
                f"the run's profile must be a string, got {type(name).__name__} {name!r}")
        if memory is None or name is None:
            self._skipped(context, config, "no profile" if memory is not None
                          else "no memory and no graph store")
            return None
        thread = run_value(context, config, "thread_id")
        if thread is None:
            info = getattr(runtime, "execution_info", None)
            thread = getattr(info, "thread_id", None)
        return MemoryRun(memory=memory, profile=memory.profile(name),
                         contact=run_value(context, config, "contact"),
                         thread=None if thread is None else str(thread))


    def _skipped(self, context: Any, config: dict[str, Any], why: str) -> None:
        """Raise (strict) or warn once a process that a run goes on without memory."""
        if isinstance(context, Mapping):
            had = f"context keys {sorted(map(str, context))}"
        else:
            had = "no context" if context is None else f"context {type(context).__name__}"
        configurable = sorted(map(str, (config.get("configurable") or {})))
        message = (f"memory is off for this run ({why}): looked for 'profile' in the run's "
                   f"context, then in config['configurable']; found {had} and configurable "
                   f"keys {configurable}. Pass context={{'profile': ...}}")
        if self.strict:
            raise ConfigurationError(message)
        if not _warned_no_profile.is_set():
            _warned_no_profile.set()
            logger.warning("%s (warned once a process; strict=True raises instead)", message)


HandoffKey = tuple[int, tuple[str, ...], str, str, str]


class ThreadStateHandoff:
    """A thread's working state (notes, task, turn record) as turn resume's ``before_agent``
    read it, handed to the same turn's first model call: one working-tier read a reply
    instead of two.

    Keyed by the memory (its store object and namespace), profile, thread and the id of the
    turn's user message, so only that turn's model call finds it; taken once (a later model
    call of the turn reads again: the turn's tools may have written since). Only a read that
    found no unfinished turn is handed over (a resumed turn changes the state). Thread-safe.
    """

    def __init__(self) -> None:
        self._states: LRU[HandoffKey, ThreadState] = LRU(MAX_HANDOFFS)

    @staticmethod
    def _key(memory: AgentMemory, profile: str, thread: str, message_id: str) -> HandoffKey:
        return (id(memory.store), tuple(memory.namespace), profile, thread, message_id)

    def put(self, memory: AgentMemory, profile: str, thread: str, message_id: str | None,
            state: ThreadState) -> None:
        """Hand ``state`` to the model call of the turn whose user message is ``message_id``
        (nothing without an id)."""
        if message_id is not None:
            self._states.put(self._key(memory, profile, thread, message_id), state)

    def take(self, memory: AgentMemory, profile: str, thread: str, message_id: str | None
             ) -> ThreadState | None:
        """The state handed to this turn's model call, once; ``None`` when there is none."""
        if message_id is None:
            return None
        return self._states.pop(self._key(memory, profile, thread, message_id))
