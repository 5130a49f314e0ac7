"""One chunk's validated records across extraction and gleaning turns, deduplicated, with counters.

LLM output crosses a trust boundary: each record is validated alone, so a malformed one is
dropped and counted while the rest of the payload is kept.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from graphunified_assets.lib.extraction.records import (
    ChunkExtraction,
    ExtractedEntity,
    ExtractedFact,
    ExtractedRelationship,
)
from graphunified_query.core.providers.llm_client import ContentResponse

M = TypeVar("M", bound=BaseModel)


class FoundRecords:
    def __init__(self) -> None:
        self.entities: dict[tuple[str, str], ExtractedEntity] = {}  # (name, type)
        self.relationships: dict[tuple[str, str], ExtractedRelationship] = {}  # (source, target)
        self.facts: dict[tuple[str, str, str], ExtractedFact] = {}
        self.dropped = 0
        self.failed_turns = 0  # turns without a usable tool call, even after the repairs
        self.counters: dict[str, float] = dict.fromkeys(
            (
                "calls",
                "cached_calls",
                "input_tokens",
                "output_tokens",
                "cache_read_tokens",
                "cache_write_tokens",
                "repaired_outputs",
                "repair_turns",
            ),
            0.0,
        )

    def count_call(self, response: ContentResponse) -> None:
        if response.cached:
            self.counters["cached_calls"] += 1  # no tokens: served from the LLM cache, not billed
            return
        self.counters["calls"] += 1
        self.counters["repaired_outputs"] += getattr(response, "repaired", 0)  # salvaged malformed JSON
        for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
            self.counters[name] += getattr(response.usage, name)

    def add(self, payload: dict[str, Any]) -> int:
        """Merge one tool payload; returns how many records were new (first seen wins)."""
        before = len(self.entities) + len(self.relationships) + len(self.facts)
        for entity in self._valid(ExtractedEntity, payload.get("entities")):
            self.entities.setdefault((entity.name.casefold(), entity.type), entity)
        for rel in self._valid(ExtractedRelationship, payload.get("relationships")):
            self.relationships.setdefault((rel.source.casefold(), rel.target.casefold()), rel)
        for fact in self._valid(ExtractedFact, payload.get("facts")):
            key = (fact.subject.casefold(), fact.predicate.casefold(), fact.object.casefold())
            self.facts.setdefault(key, fact)
        return len(self.entities) + len(self.relationships) + len(self.facts) - before

    def _valid(self, model: type[M], records: object) -> list[M]:
        if records is None:
            return []
        if not isinstance(records, list):
            self.dropped += 1  # e.g. a string where a list belongs: one unusable record
            return []
        valid = []
        for record in records:
            try:
                valid.append(model.model_validate(record))
            except ValidationError:
                self.dropped += 1
        return valid

    def result(self, chunk_id: str) -> ChunkExtraction:
        names = {name for name, _ in self.entities}
        # An edge to an entity that was never extracted cannot be placed in the graph.
        kept = [r for r in self.relationships.values() if {r.source.casefold(), r.target.casefold()} <= names]
        dangling = len(self.relationships) - len(kept)
        return ChunkExtraction(
            chunk_id,
            tuple(self.entities.values()),
            tuple(kept),
            tuple(self.facts.values()),
            dropped_records=self.dropped + dangling + self.failed_turns,
            extra={**self.counters, "failed_turns": float(self.failed_turns)},
        )
