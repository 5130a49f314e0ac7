"""The answer prompt: static instructions (cacheable), delimited contexts, the "don't know" convention."""

from __future__ import annotations

import re
from collections.abc import Sequence

from graphunified_query.core.risk import LOW, decode_flag
from graphunified_query.generation.templates import ANSWER, prompt_template
from graphunified_query.strategies.results import RetrievalResult

# The prompt asks for exactly this sentence when the contexts do not support an answer, so both
# generators can say it and callers can detect it.
DONT_KNOW = "I don't know based on the provided sources."
UNKNOWN_SOURCE = "unknown source"
# A context must not be able to close its own markers and speak outside them (see safety.md).
_MARKER_LOOKALIKE = re.compile(r"<<<(?=\s*(?:END\s+)?CONTEXT\b)", re.IGNORECASE)


def answer_instructions(template: str = ANSWER) -> str:
    """The static system text: identical on every call, so Claude's prompt cache can reuse it."""
    return prompt_template(template).system


def citation(result: RetrievalResult) -> str:
    return f"[Source: {result.source or UNKNOWN_SOURCE}]"


def format_contexts(results: Sequence[RetrievalResult]) -> str:
    """``[1] (Source: file > section)`` and the text, contexts separated by blank lines."""
    return "\n\n".join(
        f"[{n}] (Source: {r.source or UNKNOWN_SOURCE})\n{r.text.strip()}" for n, r in enumerate(results, 1)
    )


def delimited_contexts(results: Sequence[RetrievalResult]) -> str:
    """The contexts as the answer prompt shows them: each label (with its risk, when flagged),
    then the text between ``<<<CONTEXT n>>>`` and ``<<<END CONTEXT n>>>`` markers."""
    return "\n\n".join(
        f"[{n}] (Source: {_defused(r.source or UNKNOWN_SOURCE)}){risk_mark(r)}\n"
        f"<<<CONTEXT {n}>>>\n{_defused(r.text.strip())}\n<<<END CONTEXT {n}>>>"
        for n, r in enumerate(results, 1)
    )


def risk_mark(result: RetrievalResult) -> str:
    """`` (Risk: high: prompt_injection)`` for a context shown despite its flags, else ""."""
    level = result.metadata.get("risk_level", LOW)
    if level == LOW:
        return ""
    names = sorted({decode_flag(f)[0] for f in result.metadata.get("risk_flags", ())})
    return f" (Risk: {level}: {', '.join(names)})" if names else f" (Risk: {level})"


def user_message(question: str, results: Sequence[RetrievalResult], template: str = ANSWER) -> str:
    """The per-question part of the prompt: contexts first, the question last."""
    return prompt_template(template).user_message(question, delimited_contexts(results))


def _defused(text: str) -> str:
    return _MARKER_LOOKALIKE.sub("‹‹‹", text)


def says_dont_know(answer: str) -> bool:
    """True when an answer opens with the agreed "don't know" sentence (any case or apostrophe)."""
    return _normalize(answer).startswith(_normalize(DONT_KNOW).rstrip("."))


def _normalize(text: str) -> str:
    return " ".join(text.replace("’", "'").lower().split())
