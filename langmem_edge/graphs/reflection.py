"""The reflection and consolidation subgraphs: compiled LangGraph graphs over an AgentMemory.

::

    graph = create_reflection_graph(memory)                 # model-free: the rules
    graph.invoke({"profile": "user:alice"})                 # {"profile", "reflections": [...]}

    parent = StateGraph(MyState)                            # MyState has the same keys
    parent.add_node("reflect", create_reflection_graph(memory, model=chat_model))

Each is one node that runs ``AgentMemory.reflect`` / ``AgentMemory.consolidate`` (sync for
``invoke``, async for ``ainvoke``: the same plan either way) and returns what it wrote as
JSON-friendly dicts, so a checkpointer can save the state. Input keys (all optional):
``profile`` (one profile; absent or ``None``: ``config["configurable"]["profile"]``, and
without that every profile) and ``now`` (ISO time or epoch
seconds: the clock a reflection's window ends at and consolidation's 30 days are counted on).

``model=None`` uses the memory's own model (``AgentMemory(model=...)``); a memory without one
runs the documented model-free rules. Scheduling (a LangGraph Platform cron, or a plain cron
line) is in ``docs/reflective.md``.
"""

from __future__ import annotations

from typing import Any, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from langmem_edge.errors import ConfigurationError
from langmem_edge.memory import AgentMemory

__all__ = [
    "ConsolidationState",
    "ReflectionState",
    "create_consolidation_graph",
    "create_reflection_graph",
]


class ReflectionState(TypedDict, total=False):
    """State of the reflection graph."""

    profile: str | None
    """The profile to reflect on; absent or ``None``: every profile."""
    now: str | float | None
    """End of the window (ISO time or epoch seconds); default now."""
    reflections: list[dict[str, Any]]
    """Output: one ``ReflectionResult`` per profile (``reflection`` is ``None`` where the
    window held nothing new)."""


class ConsolidationState(TypedDict, total=False):
    """State of the consolidation graph."""

    profile: str | None
    """The profile to consolidate; absent or ``None``: every profile."""
    now: str | float | None
    """The clock the 30-day decay is counted on; default now."""
    consolidation: dict[str, Any]
    """Output: the ``ConsolidationReport``."""


def _dump(results: Any) -> list[dict[str, Any]]:
    return [r.model_dump(mode="json") | {"written": r.written} for r in results]


def _report(report: Any) -> dict[str, Any]:
    return report.model_dump(mode="json") | {"changed": report.changed}


def _profile(state: Any, config: RunnableConfig) -> str | None:
    """The state's ``profile``, else ``config["configurable"]["profile"]``, else ``None``."""
    profile = state.get("profile")
    if profile is None:
        profile = (config.get("configurable") or {}).get("profile")
    return profile if profile is None else str(profile)


def _check(memory: Any, model: Any) -> None:
    if not isinstance(memory, AgentMemory):
        raise ConfigurationError(f"memory must be an AgentMemory, got {type(memory).__name__}")
    if model is not None and not isinstance(model, BaseChatModel):
        raise ConfigurationError(
            f"model must be a BaseChatModel or None, got {type(model).__name__}")


def create_reflection_graph(memory: AgentMemory, model: BaseChatModel | None = None
                            ) -> CompiledStateGraph[Any, Any, Any, Any]:
    """A compiled graph of one node, ``reflect``: reviews each profile's activity since its
    last reflection and writes a reflection, goal updates and learnings (``docs/
    reflective.md``). Usable alone or as a node of a parent graph."""
    _check(memory, model)

    def reflect(state: ReflectionState, config: RunnableConfig) -> ReflectionState:
        return {"reflections": _dump(memory.reflect(_profile(state, config), model=model,
                                                    now=state.get("now")))}

    async def areflect(state: ReflectionState, config: RunnableConfig) -> ReflectionState:
        return {"reflections": _dump(await memory.areflect(
            _profile(state, config), model=model, now=state.get("now")))}

    builder = StateGraph(ReflectionState)
    builder.add_node("reflect", RunnableLambda(reflect, afunc=areflect, name="reflect"))
    builder.add_edge(START, "reflect")
    builder.add_edge("reflect", END)
    return builder.compile(name="reflection")


def create_consolidation_graph(memory: AgentMemory, model: BaseChatModel | None = None
                               ) -> CompiledStateGraph[Any, Any, Any, Any]:
    """A compiled graph of one node, ``consolidate``: one consolidation pass (decay, merge
    near-duplicates, supersede the members) over a profile or all. Usable alone or as a node
    of a parent graph."""
    _check(memory, model)

    def consolidate(state: ConsolidationState, config: RunnableConfig) -> ConsolidationState:
        return {"consolidation": _report(memory.consolidate(
            _profile(state, config), model=model, now=state.get("now")))}

    async def aconsolidate(state: ConsolidationState, config: RunnableConfig
                           ) -> ConsolidationState:
        return {"consolidation": _report(await memory.aconsolidate(
            _profile(state, config), model=model, now=state.get("now")))}

    builder = StateGraph(ConsolidationState)
    builder.add_node("consolidate", RunnableLambda(consolidate, afunc=aconsolidate,
                                                   name="consolidate"))
    builder.add_edge(START, "consolidate")
    builder.add_edge("consolidate", END)
    return builder.compile(name="consolidation")
