"""Extraction with any LLM: structured tool output, per-record validation, repair, gleaning.

The long static instructions (with worked examples) carry `cache_control`, so with Claude every
call after the first pays the cached input rate for them (other providers ignore the mark). Each
record is validated on its own: a malformed one is dropped and counted, never the whole chunk. A
turn whose payload is unusable (no tool call, not a JSON object, every record invalid) goes back to
the model with the exact problem, up to the LLM's `repair_budget` times (`providers.structured`).
Gleaning follows Microsoft GraphRAG's prompt: the conversation goes on with "MANY entities ...
were missed" and the new records are merged. It runs only for a chunk whose last reply hit
`llm.max_tokens` (cut off, so certainly incomplete): asking every chunk again made gleaning half of
all indexing calls (2.84 calls per chunk with a local server, against 2.0 for GraphRAG, LightRAG
and nano-graphrag; `bench/llm_calls.py`), and a reply that ended on its own has said what it
found. All chunks advance turn by turn, so with Message Batches each turn of a whole corpus is one
batch.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from graphunified_assets.lib.extraction.chunk_failures import ChunkFailure, extractions_or_raise
from graphunified_assets.lib.extraction.found_records import FoundRecords
from graphunified_assets.lib.extraction.records import (
    ChunkExtraction,
    ChunkText,
    ExtractedEntity,
    ExtractedFact,
    ExtractedRelationship,
)
from graphunified_assets.lib.extraction.tool_turns import TOOL_NAME, Message, follow_up, tool_request
from graphunified_assets.lib.extraction.tuned_prompts import ExtractionPrompts, packaged_prompts
from graphunified_query.core.providers.llm import LLM
from graphunified_query.core.providers.llm_client import ContentResponse
from graphunified_query.core.providers.structured import object_check, structured_each

_RECORDS: dict[str, type[BaseModel]] = {
    "entities": ExtractedEntity,
    "relationships": ExtractedRelationship,
    "facts": ExtractedFact,
}
_MAX_PROBLEMS = 3  # validation errors quoted back to the model; more only lengthens the prompt


class LLMExtractor:
    """The `Extractor` for every LLM provider; chunks run in parallel up to `llm.concurrency`."""

    def __init__(
        self,
        llm: LLM,
        *,
        entity_types: Iterable[str],
        max_gleanings: int = 1,
        temperature: float = 0.0,  # llm.temperature
        max_repairs: int | None = None,  # None: the LLM's repair_budget
        prompts: ExtractionPrompts | None = None,  # tuned prompts (tuned_prompts.py); None: packaged
    ) -> None:
        self.client = llm
        self.name = llm.label
        self.max_gleanings = max_gleanings
        self.temperature = temperature
        self.max_repairs = llm.repair_budget if max_repairs is None else max_repairs
        prompts = prompts if prompts is not None else packaged_prompts(entity_types)
        self._system = [{"type": "text", "text": prompts.system, "cache_control": {"type": "ephemeral"}}]
        self._glean = prompts.glean

    def extract(self, chunks: Sequence[ChunkText]) -> list[ChunkExtraction]:
        """Every chunk's records; a call that failed for good raises its `LLMError`."""
        return extractions_or_raise(self.extract_each(chunks))

    def extract_each(self, chunks: Sequence[ChunkText]) -> list[ChunkExtraction | ChunkFailure]:
        """Each chunk's records, or why it failed; one chunk failing never stops the others.

        A chunk fails when a call fails after its retries, or when a turn (gleaning included)
        yields no usable payload even after the repairs; its unusable answers are dropped from
        the LLM cache, so the next run asks again while every good answer is served from it.
        """
        conversations: list[list[Message]] = [
            [{"role": "user", "content": f"Text:\n\n{c.text}"}] for c in chunks
        ]
        found = [FoundRecords() for _ in chunks]
        failed: dict[int, tuple[str, Exception | None]] = {}
        active = list(range(len(chunks)))
        for turn in range(self.max_gleanings + 1):
            requests = [tool_request(self._system, conversations[i], self.temperature) for i in active]
            outcomes = structured_each(self.client, requests, check_payload, repairs=self.max_repairs)
            still_active = []
            for i, outcome in zip(active, outcomes, strict=True):
                for response in outcome.responses:
                    found[i].count_call(response)
                found[i].counters["repair_turns"] += outcome.repairs
                if outcome.error is not None:
                    failed[i] = (f"turn {turn}: {outcome.error}", outcome.error)
                    continue
                if outcome.value is None:
                    found[i].failed_turns += 1
                    failed[i] = (
                        f"turn {turn}: no usable {TOOL_NAME} call after {outcome.repairs} repair(s): "
                        f"{outcome.problem}",
                        None,
                    )
                    for request in outcome.requests:
                        self.client.forget(**request)
                    continue
                # Out of repairs, a payload whose records all fail still goes to FoundRecords,
                # which drops and counts them. Gleaning replays only the good turn.
                new_records = found[i].add(outcome.value)
                conversations[i] = [*conversations[i], *follow_up(outcome.responses[-1].content, self._glean)]
                # Another turn only after a reply cut off at max_tokens that still found something.
                if truncated(outcome.responses[-1]) and (turn == 0 or new_records):
                    still_active.append(i)
            active = still_active
        results: list[ChunkExtraction | ChunkFailure] = []
        for i, (records, chunk) in enumerate(zip(found, chunks, strict=True)):
            result = records.result(chunk.chunk_id)
            if i in failed:
                reason, error = failed[i]
                results.append(ChunkFailure(chunk.chunk_id, reason, result, error))
            else:
                results.append(result)
        return results


def truncated(response: ContentResponse) -> bool:
    """The reply stopped at max_tokens (OpenAI's finish_reason "length"): it had more to record."""
    return response.stop_reason == "max_tokens"


def check_payload(response: ContentResponse) -> tuple[dict[str, Any] | None, str]:
    """The payload and what is wrong with it ("" when usable): a payload with some valid records
    is usable (the invalid ones are dropped and counted); one with none is sent back."""
    value, problem = object_check(response, TOOL_NAME)
    if value is None:
        return None, problem
    problems: list[str] = []
    records = valid = 0
    for key, model in _RECORDS.items():
        items = value.get(key)
        if items is None:
            continue
        if not isinstance(items, list):
            problems.append(f"{key}: must be a list of objects, not {type(items).__name__}")
            continue
        for n, item in enumerate(items):
            records += 1
            try:
                model.model_validate(item)
                valid += 1
            except ValidationError as error:
                first = error.errors(include_url=False)[0]
                field = ".".join(str(p) for p in first["loc"]) or "record"
                problems.append(f"{key}[{n}].{field}: {first['msg']}")
    if (records and not valid) or (problems and not records):
        return value, "Invalid records: " + "; ".join(problems[:_MAX_PROBLEMS]) + ". Fix them."
    return value, ""
