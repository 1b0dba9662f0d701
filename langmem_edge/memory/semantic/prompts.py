"""The prompts recall sends a model: a hypothetical answer (HyDE) and the answer itself."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

__all__ = ["answer_messages", "hyde_messages"]


def hyde_messages(query: str, reference: datetime) -> list[BaseMessage]:
    """The prompt asking for a hypothetical answer (HyDE)."""
    return [
        SystemMessage(content="Write one or two sentences that a personal memory note "
                              "answering the question would contain. Invent plausible "
                              "details; do not say you do not know."),
        HumanMessage(content=f"Today is {reference.date().isoformat()}.\nQuestion: {query}"),
    ]


def answer_messages(query: str, texts: Sequence[str], reference: datetime) -> list[BaseMessage]:
    """The prompt asking for an answer from the candidates alone."""
    listing = "\n".join(f"{i}. {t}" for i, t in enumerate(texts, start=1))
    return [
        SystemMessage(content="Answer the question using only the memories listed. If they "
                              "do not contain the answer, say that you do not know. Be brief."),
        HumanMessage(content=f"Today is {reference.date().isoformat()}.\nMemories:\n{listing}"
                             f"\n\nQuestion: {query}"),
    ]
