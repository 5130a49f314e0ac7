"""Extraction with Claude: structured tool output, per-record validation, gleaning, caching.

The long static instructions carry `cache_control`, so every chunk after the first pays the
cached input rate for them. Each record is validated on its own: a malformed one is dropped and
counted, never the whole chunk.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from graphunified_assets.lib.extraction.records import (
    ChunkExtraction,
    ChunkText,
    ExtractedEntity,
    ExtractedFact,
    ExtractedRelationship,
)
from graphunified_query.providers.claude import ClaudeClient, ClaudeResponse

M = TypeVar("M", bound=BaseModel)
TOOL_NAME = "record_extraction"
_PROMPTS = Path(__file__).with_name("prompts")
_TOOL = json.loads((_PROMPTS / "extraction_tool.json").read_text())


class ClaudeExtractor:
    name = "claude"

    def __init__(self, client: ClaudeClient, *, entity_types: Iterable[str], max_gleanings: int = 1) -> None:
        self.client = client
        self.max_gleanings = max_gleanings
        template = (_PROMPTS / "extract_system.md").read_text()
        instructions = template.format(entity_types=", ".join(entity_types))
        self._system = [{"type": "text", "text": instructions, "cache_control": {"type": "ephemeral"}}]
        self._glean = (_PROMPTS / "glean.md").read_text()

    def extract(self, chunks: Sequence[ChunkText]) -> list[ChunkExtraction]:
        with ThreadPoolExecutor(max_workers=self.client.settings.concurrency) as pool:
            return list(pool.map(self._extract_one, chunks))

    def _extract_one(self, chunk: ChunkText) -> ChunkExtraction:
        messages: list[dict[str, Any]] = [{"role": "user", "content": f"Text:\n\n{chunk.text}"}]
        found = _Found()
        for turn in range(self.max_gleanings + 1):
            response = self._call(messages)
            payload = response.tool_input(TOOL_NAME)
            if not isinstance(payload, dict):
                found.dropped += 1  # no usable tool call even after the retry: count it, move on
                break
            found.add(payload)
            if turn < self.max_gleanings:
                tool_id = next(b["id"] for b in response.content if b.get("type") == "tool_use")
                messages += [
                    {"role": "assistant", "content": response.content},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": tool_id, "content": "Recorded."},
                        {"type": "text", "text": self._glean},
                    ]},
                ]  # fmt: skip
        return found.result(chunk.chunk_id)

    def _call(self, messages: list[dict[str, Any]]) -> ClaudeResponse:
        response = self._create(messages)
        if isinstance(response.tool_input(TOOL_NAME), dict):
            return response
        # One retry with an explicit nudge (a different request, so the cache cannot replay the miss).
        nudge = {"role": "user", "content": f"Call the {TOOL_NAME} tool with a JSON object as its input."}
        return self._create([*messages, {"role": "assistant", "content": response.content or "-"}, nudge])

    def _create(self, messages: list[dict[str, Any]]) -> ClaudeResponse:
        return self.client.create(
            system=self._system,
            messages=messages,
            tools=[_TOOL],
            tool_choice={"type": "tool", "name": TOOL_NAME},
        )


class _Found:
    """Validated records of one chunk across gleaning turns, deduplicated."""

    def __init__(self) -> None:
        self.entities: dict[tuple[str, str], ExtractedEntity] = {}
        self.relationships: dict[tuple[str, str, str], ExtractedRelationship] = {}
        self.facts: dict[tuple[str, str, str], ExtractedFact] = {}
        self.dropped = 0

    def add(self, payload: dict[str, Any]) -> None:
        for entity in self._valid(ExtractedEntity, payload.get("entities")):
            self.entities.setdefault((entity.name.lower(), entity.type), entity)
        for rel in self._valid(ExtractedRelationship, payload.get("relationships")):
            self.relationships.setdefault((rel.source.lower(), rel.target.lower(), rel.type), rel)
        for fact in self._valid(ExtractedFact, payload.get("facts")):
            self.facts.setdefault((fact.subject.lower(), fact.predicate.lower(), fact.object.lower()), fact)

    def _valid(self, model: type[M], records: object) -> list[M]:
        if not isinstance(records, list):
            self.dropped += records is not None
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
        kept = [r for r in self.relationships.values() if {r.source.lower(), r.target.lower()} <= names]
        dangling = len(self.relationships) - len(kept)
        return ChunkExtraction(
            chunk_id,
            tuple(self.entities.values()),
            tuple(kept),
            tuple(self.facts.values()),
            dropped_records=self.dropped + dangling,
        )
