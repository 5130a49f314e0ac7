"""Extraction with Claude: structured tool output, per-record validation, gleaning, caching.

The long static instructions (with worked examples) carry `cache_control`, so every call after
the first pays the cached input rate for them. Each record is validated on its own: a malformed
one is dropped and counted, never the whole chunk. Gleaning follows Microsoft GraphRAG: the
conversation goes on with "MANY entities ... were missed" and the new records are merged.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from graphunified_assets.lib.extraction.claude_records import FoundRecords
from graphunified_assets.lib.extraction.records import ChunkExtraction, ChunkText
from graphunified_query.providers.claude import ClaudeClient, ClaudeResponse
from graphunified_query.providers.claude_batches import create_many

TOOL_NAME = "record_extraction"
_PROMPTS = Path(__file__).with_name("prompts")
_TOOL = json.loads((_PROMPTS / "extraction_tool.json").read_text(encoding="utf-8"))
_NUDGE = f"Call the {TOOL_NAME} tool with a JSON object holding entities, relationships and facts."
Message = dict[str, Any]


class ClaudeExtractor:
    """The `Extractor` for Claude; chunks run in parallel up to `llm.concurrency`."""

    name = "claude"

    def __init__(self, client: ClaudeClient, *, entity_types: Iterable[str], max_gleanings: int = 1) -> None:
        self.client = client
        self.max_gleanings = max_gleanings
        template = (_PROMPTS / "extract_system.md").read_text(encoding="utf-8")
        instructions = template.replace("{entity_types}", ", ".join(entity_types))
        self._system = [{"type": "text", "text": instructions, "cache_control": {"type": "ephemeral"}}]
        self._glean = (_PROMPTS / "glean.md").read_text(encoding="utf-8").strip()

    def extract(self, chunks: Sequence[ChunkText]) -> list[ChunkExtraction]:
        """All chunks advance turn by turn, so each turn is one batch (or one parallel wave)."""
        conversations: list[list[Message]] = [
            [{"role": "user", "content": f"Text:\n\n{c.text}"}] for c in chunks
        ]
        found = [FoundRecords() for _ in chunks]
        active = list(range(len(chunks)))
        for turn in range(self.max_gleanings + 1):
            still_active = []
            for i, response in zip(active, self._call_many(conversations, active, found), strict=True):
                payloads = _payloads(response)
                if not payloads:
                    found[i].failed_turns += 1  # no usable tool call even after the retry: move on
                    continue
                new_records = sum(found[i].add(p) for p in payloads)
                conversations[i] = [*conversations[i], *self._follow_up(response)]
                # A gleaning turn that found nothing new ends that chunk's gleaning early.
                if turn == 0 or new_records:
                    still_active.append(i)
            active = still_active
        return [f.result(c.chunk_id) for f, c in zip(found, chunks, strict=True)]

    def _call_many(
        self, conversations: list[list[Message]], active: list[int], found: list[FoundRecords]
    ) -> list[ClaudeResponse]:
        responses = self._create([conversations[i] for i in active], [found[i] for i in active])
        missed = [n for n, r in enumerate(responses) if not _payloads(r)]
        if missed:
            # One retry that shows Claude its miss (a different request, so the cache cannot replay it).
            retried = self._create(
                [[*conversations[active[n]], *_nudge(responses[n])] for n in missed],
                [found[active[n]] for n in missed],
            )
            for n, response in zip(missed, retried, strict=True):
                responses[n] = response
        return responses

    def _create(self, conversations: list[list[Message]], found: list[FoundRecords]) -> list[ClaudeResponse]:
        responses = create_many(self.client, [self._request(m) for m in conversations])
        for records, response in zip(found, responses, strict=True):
            records.count_call(response)
        return responses

    def _request(self, messages: list[Message]) -> dict[str, Any]:
        return {
            "system": self._system,
            "messages": messages,
            "tools": [_TOOL],
            "tool_choice": {"type": "tool", "name": TOOL_NAME},
        }

    def _follow_up(self, response: ClaudeResponse) -> list[Message]:
        """The assistant turn replayed, its tool calls answered, and the gleaning prompt."""
        results = [
            {"type": "tool_result", "tool_use_id": tool_id, "content": "Recorded."}
            for tool_id in _tool_use_ids(response)
        ]
        return [
            {"role": "assistant", "content": response.content},
            {"role": "user", "content": [*results, {"type": "text", "text": self._glean}]},
        ]


def _payloads(response: ClaudeResponse) -> list[dict[str, Any]]:
    """Every `record_extraction` input that is a JSON object (usually exactly one)."""
    return [
        block["input"]
        for block in response.content
        if block.get("type") == "tool_use"
        and block.get("name") == TOOL_NAME
        and isinstance(block.get("input"), dict)
    ]


def _tool_use_ids(response: ClaudeResponse) -> list[str]:
    return [str(b.get("id")) for b in response.content if b.get("type") == "tool_use"]


def _nudge(response: ClaudeResponse) -> list[Message]:
    """The failed turn and a reminder; every tool call in it gets its (error) result, as the API requires."""
    errors = [
        {
            "type": "tool_result",
            "tool_use_id": tool_id,
            "is_error": True,
            "content": "Input must be a JSON object.",
        }
        for tool_id in _tool_use_ids(response)
    ]
    replay = response.content or [{"type": "text", "text": "(no answer)"}]
    return [
        {"role": "assistant", "content": replay},
        {"role": "user", "content": [*errors, {"type": "text", "text": _NUDGE}]},
    ]
