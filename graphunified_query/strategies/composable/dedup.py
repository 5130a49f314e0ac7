"""Merging result lists from several retrievers into one list of distinct contexts.

Two results are the same context when they are the same chunk (``chunk_id``), or, for graph
elements and reports, the same kind with the same text (whitespace and case aside). The merged
candidate keeps the copy its source scored higher and remembers every source's score.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from graphunified_query.strategies.results import RetrievalResult


def dedup_key(result: RetrievalResult) -> tuple[str, str]:
    if result.kind == "chunk" and result.chunk_id:
        return ("chunk", result.chunk_id)
    return (result.kind, " ".join(result.text.split()).casefold())


@dataclass
class Candidate:
    result: RetrievalResult  # the copy kept: the higher-scored one
    scores: dict[str, float] = field(default_factory=dict)  # source label -> its score

    @property
    def sources(self) -> list[str]:
        return list(self.scores)

    def finish(self, score: float, **metadata: Any) -> RetrievalResult:
        """The kept copy with its combined score, and its sources recorded in metadata."""
        merged = {
            **self.result.metadata,
            "sources": self.sources,
            "source_scores": {label: round(s, 6) for label, s in self.scores.items()},
            **metadata,
        }
        return replace(self.result, score=float(score), metadata=MappingProxyType(merged))


def collect(sides: Sequence[tuple[str, Sequence[RetrievalResult]]]) -> list[Candidate]:
    """Distinct contexts in order of first appearance (side by side, each side in its own order)."""
    merged: dict[tuple[str, str], Candidate] = {}
    for label, results in sides:
        for result in results:
            key = dedup_key(result)
            candidate = merged.get(key)
            if candidate is None:
                merged[key] = Candidate(result, {label: result.score})
                continue
            if result.score > candidate.result.score:
                candidate.result = result
            candidate.scores[label] = max(candidate.scores.get(label, result.score), result.score)
    return list(merged.values())
