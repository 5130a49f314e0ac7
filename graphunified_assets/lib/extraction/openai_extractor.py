"""Extraction with a model behind an OpenAI-compatible server (Ollama, vLLM, llama.cpp).

The same prompts, tool schema, per-record validation and gleaning as the Claude extractor
(`FoundRecords` keeps valid records and counts dropped ones). Small local models get malformed
output wrong far more often, so the repair loop is more explicit: arguments the client could not
repair, a missing tool call, or a payload whose every record fails validation goes back to the
model with the exact problem as the tool result, up to `max_repairs` times per turn.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pydantic import BaseModel, ValidationError

from graphunified_assets.lib.extraction.chunk_failures import ChunkFailure, extractions_or_raise
from graphunified_assets.lib.extraction.claude_records import FoundRecords
from graphunified_assets.lib.extraction.records import (
    ChunkExtraction,
    ChunkText,
    ExtractedEntity,
    ExtractedFact,
    ExtractedRelationship,
)
from graphunified_assets.lib.extraction.tool_turns import (
    TOOL_NAME,
    Message,
    follow_up,
    rejected,
    tool_calls,
    tool_request,
)
from graphunified_assets.lib.extraction.tuned_prompts import ExtractionPrompts, packaged_prompts
from graphunified_query.providers.llm_client import LLMError
from graphunified_query.providers.openai_compatible import LLMResponse, OpenAICompatibleClient

_RECORDS: dict[str, type[BaseModel]] = {
    "entities": ExtractedEntity,
    "relationships": ExtractedRelationship,
    "facts": ExtractedFact,
}
_MAX_PROBLEMS = 3  # validation errors quoted back to the model; more only lengthens the prompt


class OpenAICompatibleExtractor:
    """The `Extractor` for OpenAI-compatible servers; chunks run in parallel up to `llm.concurrency`."""

    def __init__(
        self,
        client: OpenAICompatibleClient,
        *,
        entity_types: Iterable[str],
        max_gleanings: int = 1,
        max_repairs: int = 2,
        prompts: ExtractionPrompts | None = None,  # tuned prompts (tuned_prompts.py); None: packaged
    ) -> None:
        self.client = client
        self.name = f"openai_compatible:{client.settings.model}"
        self.max_gleanings = max_gleanings
        self.max_repairs = max_repairs
        prompts = prompts if prompts is not None else packaged_prompts(entity_types)
        self._system, self._glean = prompts.system, prompts.glean

    def extract(self, chunks: Sequence[ChunkText]) -> list[ChunkExtraction]:
        """Every chunk's records; a call that failed for good raises its `LLMError`."""
        return extractions_or_raise(self.extract_each(chunks))

    def extract_each(self, chunks: Sequence[ChunkText]) -> list[ChunkExtraction | ChunkFailure]:
        """Each chunk's records, or why it failed (as `ClaudeExtractor.extract_each`): a call that
        failed after its retries, or a turn with no usable payload even after the repairs, whose
        answers are dropped from the LLM cache so the next run asks again."""
        with ThreadPoolExecutor(max_workers=self.client.settings.concurrency) as pool:
            return list(pool.map(self._extract_one, chunks))

    def _extract_one(self, chunk: ChunkText) -> ChunkExtraction | ChunkFailure:
        found = FoundRecords()
        for name in ("repaired_outputs", "repair_turns"):
            found.counters[name] = 0.0
        messages: list[Message] = [{"role": "user", "content": f"Text:\n\n{chunk.text}"}]
        for turn in range(self.max_gleanings + 1):
            try:
                response, payload, problem, sent = self._turn(messages, found)
            except LLMError as error:
                return ChunkFailure(
                    chunk.chunk_id, f"turn {turn}: {error}", found.result(chunk.chunk_id), error
                )
            if payload is None:
                found.failed_turns += 1
                for request in sent:
                    self.client.forget(**request)
                reason = (
                    f"turn {turn}: no usable {TOOL_NAME} call after {self.max_repairs} repair(s): {problem}"
                )
                return ChunkFailure(chunk.chunk_id, reason, found.result(chunk.chunk_id))
            new_records = found.add(payload)
            # A gleaning turn that found nothing new ends the gleaning early.
            if turn == self.max_gleanings or (turn > 0 and not new_records):
                break
            messages = [*messages, *follow_up(response.content, self._glean)]
        return found.result(chunk.chunk_id)

    def _turn(
        self, messages: list[Message], found: FoundRecords
    ) -> tuple[LLMResponse, dict[str, Any] | None, str, list[dict[str, Any]]]:
        """One extraction turn with up to `max_repairs` repair calls: the last response, its
        payload (None if unusable), the problem left ("" if none) and the requests sent."""
        attempt_messages = messages
        sent: list[dict[str, Any]] = []
        for attempt in range(self.max_repairs + 1):
            request = tool_request(self._system, attempt_messages)
            sent.append(request)
            response = self.client.create(**request)
            found.count_call(response)
            found.counters["repaired_outputs"] += response.repaired
            payload, problem = check_payload(response)
            if not problem or attempt == self.max_repairs:
                # Out of repairs: a payload whose records all fail still goes to FoundRecords,
                # which drops and counts them; no payload at all is a failed turn.
                return response, payload, problem, sent
            found.counters["repair_turns"] += 1
            # The failed turn stays out of the kept conversation: gleaning replays only good turns.
            # The problem goes back as the tool's error result, and as text for JSON mode.
            attempt_messages = [*messages, *rejected(response.content, problem, problem)]
        raise AssertionError("unreachable")


def check_payload(response: LLMResponse) -> tuple[dict[str, Any] | None, str]:
    """The tool payload and what is wrong with it ("" when it is usable)."""
    calls = tool_calls(response.content)
    if not calls:
        return None, f"No {TOOL_NAME} call. Call the {TOOL_NAME} tool; do not answer in prose."
    payload = calls[0].get("input")
    if not isinstance(payload, dict):
        shown = str(payload)[:200]
        return None, f"The arguments were not a JSON object (got {shown!r}). Send one valid JSON object."
    problems: list[str] = []
    records = valid = 0
    for key, model in _RECORDS.items():
        items = payload.get(key)
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
        return payload, "Invalid records: " + "; ".join(
            problems[:_MAX_PROBLEMS]
        ) + ". Fix them and call again."
    return payload, ""
