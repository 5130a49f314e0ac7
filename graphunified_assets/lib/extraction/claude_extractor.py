"""Extraction with Claude: structured tool output, per-record validation, gleaning, caching.

The long static instructions carry `cache_control`, so every chunk after the first pays the
cached input rate for them. Each record is validated on its own: a malformed one is dropped and
counted, never the whole chunk.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
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
from graphunified_query.providers.claude_batches import create_many

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
        """All chunks advance turn by turn, so each turn is one batch (or one parallel wave)."""
        conversations = [[{"role": "user", "content": f"Text:\n\n{c.text}"}] for c in chunks]
        found = [_Found() for _ in chunks]
        active = list(range(len(chunks)))
        for turn in range(self.max_gleanings + 1):
            responses = self._call_many([conversations[i] for i in active])
            still_active = []
            for i, response in zip(active, responses, strict=True):
                payload = response.tool_input(TOOL_NAME)
                if not isinstance(payload, dict):
                    found[i].dropped += 1  # no usable tool call even after the retry: count it, move on
                    continue
                found[i].add(payload)
                tool_id = next(b["id"] for b in response.content if b.get("type") == "tool_use")
                conversations[i] = [
                    *conversations[i],
                    {"role": "assistant", "content": response.content},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": tool_id, "content": "Recorded."},
                        {"type": "text", "text": self._glean},
                    ]},
                ]  # fmt: skip
                still_active.append(i)
            active = still_active if turn < self.max_gleanings else []
        return [f.result(c.chunk_id) for f, c in zip(found, chunks, strict=True)]

    def _call_many(self, conversations: list[list[dict[str, Any]]]) -> list[ClaudeResponse]:
        responses = create_many(self.client, [self._request(m) for m in conversations])
        missed = [i for i, r in enumerate(responses) if not isinstance(r.tool_input(TOOL_NAME), dict)]
        if missed:
            # One retry with an explicit nudge (a different request, so the cache cannot replay the miss).
            nudge = {"role": "user", "content": f"Call the {TOOL_NAME} tool with a JSON object as its input."}
            replies = [{"role": "assistant", "content": responses[i].content or "-"} for i in missed]
            retried = create_many(
                self.client,
                [
                    self._request([*conversations[i], reply, nudge])
                    for i, reply in zip(missed, replies, strict=True)
                ],
            )
            for i, response in zip(missed, retried, strict=True):
                responses[i] = response
        return responses

    def _request(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "system": self._system,
            "messages": messages,
            "tools": [_TOOL],
            "tool_choice": {"type": "tool", "name": TOOL_NAME},
        }


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
