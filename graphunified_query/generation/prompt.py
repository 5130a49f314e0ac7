"""The answer prompt: static instructions (cacheable), numbered contexts, the "don't know" convention."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from importlib import resources

from graphunified_query.results import RetrievalResult

# The prompt asks for exactly this sentence when the contexts do not support an answer, so both
# generators can say it and callers can detect it.
DONT_KNOW = "I don't know based on the provided sources."
UNKNOWN_SOURCE = "unknown source"


@cache
def answer_instructions() -> str:
    """The static system text: identical on every call, so Claude's prompt cache can reuse it."""
    return (resources.files("graphunified_query") / "prompts" / "answer.md").read_text(encoding="utf-8")


def citation(result: RetrievalResult) -> str:
    return f"[Source: {result.source or UNKNOWN_SOURCE}]"


def format_contexts(results: Sequence[RetrievalResult]) -> str:
    """``[1] (Source: file > section)`` and the text, contexts separated by blank lines."""
    return "\n\n".join(
        f"[{n}] (Source: {r.source or UNKNOWN_SOURCE})\n{r.text.strip()}" for n, r in enumerate(results, 1)
    )


def user_message(question: str, results: Sequence[RetrievalResult]) -> str:
    """The per-question part of the prompt: contexts first, the question last."""
    return f"Contexts:\n\n{format_contexts(results)}\n\nQuestion: {question.strip()}"


def says_dont_know(answer: str) -> bool:
    """True when an answer opens with the agreed "don't know" sentence (any case or apostrophe)."""
    return _normalize(answer).startswith(_normalize(DONT_KNOW).rstrip("."))


def _normalize(text: str) -> str:
    return " ".join(text.replace("’", "'").lower().split())
