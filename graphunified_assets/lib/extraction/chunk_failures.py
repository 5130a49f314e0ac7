"""A chunk whose extraction failed for good, and what that means for its document.

A document is only as good as all of its chunks: one chunk without an extraction would leave a
hole in the graph that nothing points at. So a failed chunk fails its document, which is kept
out of the `extractions` output and retried whole by the next run (finished calls are cached).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from graphunified_assets.lib.extraction.records import ChunkExtraction


@dataclass(frozen=True)
class ChunkFailure:
    chunk_id: str
    reason: str  # names the turn and the error; never a key
    partial: ChunkExtraction  # what earlier turns found: the old `extract` contract returns it
    error: Exception | None = None  # the call's error when it failed after its retries


def extractions_or_raise(outcomes: Sequence[ChunkExtraction | ChunkFailure]) -> list[ChunkExtraction]:
    """The `Extractor.extract` contract over `extract_each` outcomes: a call that failed for good
    raises its error; a chunk whose answers were unusable keeps what earlier turns found."""
    results = []
    for outcome in outcomes:
        if isinstance(outcome, ChunkFailure):
            if outcome.error is not None:
                raise outcome.error
            results.append(outcome.partial)
        else:
            results.append(outcome)
    return results


def document_failures(failures: Iterable[ChunkFailure], document_of: Mapping[str, str]) -> dict[str, str]:
    """document id -> reason naming its first failed chunk (and how many more failed)."""
    by_document: dict[str, list[ChunkFailure]] = {}
    for failure in failures:
        by_document.setdefault(document_of[failure.chunk_id], []).append(failure)
    reasons = {}
    for document_id, chunk_failures in by_document.items():
        first = chunk_failures[0]
        more = len(chunk_failures) - 1
        suffix = f" (and {more} more chunk(s) of this document)" if more else ""
        reasons[document_id] = f"chunk {first.chunk_id}: {first.reason}{suffix}"
    return reasons
