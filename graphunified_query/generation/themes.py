"""The offline answer to a question about the whole collection: its main themes, one per report.

Global search marks the report points it selected for such a question (``selection: corpus``).
Matching sentences against the question would find none (a corpus-wide question resembles no
particular sentence), so each report's best point is listed instead, cited to its report and to
the passages the report was written from.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from graphunified_query.generation.prompt import citation
from graphunified_query.strategies.results import RetrievalResult

CORPUS_SELECTION = "corpus"  # graphrag_global's metadata["selection"] for a corpus-wide question
MAX_THEME_CHARS = 300  # one theme is a line, not the whole report
MAX_CHUNK_SOURCES = 3
MIN_WORDS = 3  # a shorter "sentence" in an offline report is a heading run into the text
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"“])")


def lists_themes(contexts: Sequence[RetrievalResult]) -> bool:
    return any(c.metadata.get("selection") == CORPUS_SELECTION for c in contexts)


def compose_themes(contexts: Sequence[RetrievalResult]) -> str:
    """One numbered line per report (its first point), in the retriever's order."""
    lines: list[str] = []
    seen: set[str] = set()
    for context in contexts:
        if context.metadata.get("selection") != CORPUS_SELECTION or context.source in seen:
            continue
        seen.add(context.source)
        title = context.metadata.get("report_title") or context.source
        sources = list(context.metadata.get("source_chunks") or [])[:MAX_CHUNK_SOURCES]
        drawn = f" (from {'; '.join(sources)})" if sources else ""
        lines.append(f"{len(lines) + 1}. {title}: {_gist(context.text)} {citation(context)}{drawn}")
    return "The main themes across the collection:\n" + "\n".join(lines)


def _gist(text: str) -> str:
    """The point's opening sentences, up to MAX_THEME_CHARS, without heading fragments ("Hale Mill.")."""
    kept = ""
    for sentence in _SENTENCE_END.split(" ".join(text.split())):
        if len(sentence.split()) < MIN_WORDS:
            continue
        if kept and len(kept) + len(sentence) + 1 > MAX_THEME_CHARS:
            break
        kept = f"{kept} {sentence}".strip()
    kept = kept or " ".join(text.split())
    return kept if len(kept) <= MAX_THEME_CHARS else kept[: MAX_THEME_CHARS - 1].rstrip() + "…"
