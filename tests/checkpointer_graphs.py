"""Small real graphs for the ChromaSaver graph tests (importable by a subprocess too)."""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt
from typing_extensions import TypedDict


class ChatState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    turns: int


def _think(state: ChatState) -> dict[str, Any]:
    last = state["messages"][-1].content
    return {"messages": [AIMessage(content=f"thinking about {last}")]}


def _answer(state: ChatState) -> dict[str, Any]:
    return {
        "messages": [AIMessage(content=f"answer #{state.get('turns', 0) + 1}")],
        "turns": state.get("turns", 0) + 1,
    }


def build_chat_graph(checkpointer: Any) -> Any:
    """START -> think -> answer -> END; each invoke adds two AI messages and a turn."""
    return (
        StateGraph(ChatState)
        .add_node("think", _think)
        .add_node("answer", _answer)
        .add_edge(START, "think")
        .add_edge("think", "answer")
        .add_edge("answer", END)
        .compile(checkpointer=checkpointer)
    )


def _ask_name(state: ChatState) -> dict[str, Any]:
    name = interrupt("What is your name?")
    return {"messages": [HumanMessage(content=f"My name is {name}")]}


def _greet(state: ChatState) -> dict[str, Any]:
    said = state["messages"][-1].content.removeprefix("My name is ")
    return {"messages": [AIMessage(content=f"Hello {said}")]}


def build_interrupt_graph(checkpointer: Any) -> Any:
    """START -> ask_name (interrupts for a name) -> greet -> END."""
    return (
        StateGraph(ChatState)
        .add_node("ask_name", _ask_name)
        .add_node("greet", _greet)
        .add_edge(START, "ask_name")
        .add_edge("ask_name", "greet")
        .add_edge("greet", END)
        .compile(checkpointer=checkpointer)
    )


def _concat(state: list, writes: list) -> list:
    out = list(state)
    for w in writes:
        out.extend(w if isinstance(w, list) else [w])
    return out


class DeltaState(TypedDict):
    items: Annotated[list, DeltaChannel(_concat, snapshot_frequency=3)]


def _echo(state: DeltaState) -> dict[str, Any]:
    return {"items": [f"seen {len(state['items'])}"]}


def build_delta_graph(checkpointer: Any) -> Any:
    """One node appending to a DeltaChannel list that snapshots every 3 updates."""
    return (
        StateGraph(DeltaState)
        .add_node("echo", _echo)
        .add_edge(START, "echo")
        .add_edge("echo", END)
        .compile(checkpointer=checkpointer)
    )


def contents(state_values: dict[str, Any]) -> list[str]:
    """Message contents of a chat state."""
    return [m.content for m in state_values.get("messages", [])]
