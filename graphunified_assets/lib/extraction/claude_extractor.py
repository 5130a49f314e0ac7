"""Extraction with Claude: structured tool output, per-record validation, gleaning, caching.

The long static instructions (with worked examples) carry `cache_control`, so every call after
the first pays the cached input rate for them. Each record is validated on its own: a malformed
one is dropped and counted, never the whole chunk. Gleaning follows Microsoft GraphRAG: the
conversation goes on with "MANY entities ... were missed" and the new records are merged.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from graphunified_assets.lib.extraction.chunk_failures import ChunkFailure, extractions_or_raise
from graphunified_assets.lib.extraction.claude_records import FoundRecords
from graphunified_assets.lib.extraction.records import ChunkExtraction, ChunkText
from graphunified_assets.lib.extraction.tool_turns import (
    TOOL_NAME,
    Message,
    follow_up,
    rejected,
    tool_calls,
    tool_request,
)
from graphunified_assets.lib.extraction.tuned_prompts import ExtractionPrompts, packaged_prompts
from graphunified_query.providers.claude import ClaudeClient, ClaudeResponse, LLMError
from graphunified_query.providers.claude_batches import create_each

_NUDGE = f"Call the {TOOL_NAME} tool with a JSON object holding entities, relationships and facts."


class ClaudeExtractor:
    """The `Extractor` for Claude; chunks run in parallel up to `llm.concurrency`."""

    name = "claude"

    def __init__(
        self,
        client: ClaudeClient,
        *,
        entity_types: Iterable[str],
        max_gleanings: int = 1,
        prompts: ExtractionPrompts | None = None,  # tuned prompts (tuned_prompts.py); None: packaged
    ) -> None:
        self.client = client
        self.max_gleanings = max_gleanings
        prompts = prompts if prompts is not None else packaged_prompts(entity_types)
        self._system = [{"type": "text", "text": prompts.system, "cache_control": {"type": "ephemeral"}}]
        self._glean = prompts.glean

    def extract(self, chunks: Sequence[ChunkText]) -> list[ChunkExtraction]:
        """Every chunk's records; a call that failed for good raises its `LLMError`.

        A chunk Claude answered without a usable tool call, even after the retry, keeps what it
        had and counts the turn in ``failed_turns``; `extract_each` reports it as a failure instead.
        """
        return extractions_or_raise(self.extract_each(chunks))

    def extract_each(self, chunks: Sequence[ChunkText]) -> list[ChunkExtraction | ChunkFailure]:
        """Each chunk's records, or why it failed; one chunk failing never stops the others.

        All chunks advance turn by turn, so each turn is one batch (or one parallel wave). A chunk
        fails when a call fails after its retries, or when a turn (gleaning included) yields no
        usable tool call even after the retry; the unusable answers are dropped from the LLM
        cache, so the next run asks again while every good answer is served from the cache.
        """
        conversations: list[list[Message]] = [
            [{"role": "user", "content": f"Text:\n\n{c.text}"}] for c in chunks
        ]
        found = [FoundRecords() for _ in chunks]
        failed: dict[int, tuple[str, Exception | None]] = {}
        active = list(range(len(chunks)))
        for turn in range(self.max_gleanings + 1):
            still_active = []
            for i, (outcome, sent) in zip(active, self._call_many(conversations, active, found), strict=True):
                if isinstance(outcome, LLMError):
                    failed[i] = (f"turn {turn}: {outcome}", outcome)
                    continue
                payloads = _payloads(outcome)
                if not payloads:
                    found[i].failed_turns += 1  # no usable tool call even after the retry
                    failed[i] = (f"turn {turn}: {_unusable(outcome)}, also after one retry", None)
                    for request in sent:
                        self.client.forget(**request)
                    continue
                new_records = sum(found[i].add(p) for p in payloads)
                conversations[i] = [*conversations[i], *follow_up(outcome.content, self._glean)]
                # A gleaning turn that found nothing new ends that chunk's gleaning early.
                if turn == 0 or new_records:
                    still_active.append(i)
            active = still_active
        outcomes: list[ChunkExtraction | ChunkFailure] = []
        for i, (records, chunk) in enumerate(zip(found, chunks, strict=True)):
            result = records.result(chunk.chunk_id)
            if i in failed:
                reason, error = failed[i]
                outcomes.append(ChunkFailure(chunk.chunk_id, reason, result, error))
            else:
                outcomes.append(result)
        return outcomes

    def _call_many(
        self, conversations: list[list[Message]], active: list[int], found: list[FoundRecords]
    ) -> list[tuple[ClaudeResponse | LLMError, list[dict[str, Any]]]]:
        """Per active chunk: the answer (or the error that ended it) and the requests sent for it."""
        requests = [self._request(conversations[i]) for i in active]
        responses = self._create(requests, [found[i] for i in active])
        sent = [[request] for request in requests]
        missed = [
            (n, r) for n, r in enumerate(responses) if isinstance(r, ClaudeResponse) and not _payloads(r)
        ]
        if missed:
            # One retry that shows Claude its miss (a different request, so the cache cannot replay it).
            retries = [self._request([*conversations[active[n]], *_nudge(r)]) for n, r in missed]
            retried = self._create(retries, [found[active[n]] for n, _ in missed])
            for (n, _), request, response in zip(missed, retries, retried, strict=True):
                responses[n] = response
                sent[n].append(request)
        return list(zip(responses, sent, strict=True))

    def _create(
        self, requests: list[dict[str, Any]], found: list[FoundRecords]
    ) -> list[ClaudeResponse | LLMError]:
        responses = create_each(self.client, requests)
        for records, response in zip(found, responses, strict=True):
            if isinstance(response, ClaudeResponse):
                records.count_call(response)
        return responses

    def _request(self, messages: list[Message]) -> dict[str, Any]:
        return tool_request(self._system, messages)


def _payloads(response: ClaudeResponse) -> list[dict[str, Any]]:
    """Every `record_extraction` input that is a JSON object (usually exactly one)."""
    return [block["input"] for block in tool_calls(response.content) if isinstance(block.get("input"), dict)]


def _unusable(response: ClaudeResponse) -> str:
    """What was wrong with an answer that held no usable tool call."""
    if not response.content:
        return "empty completion (no content blocks)"
    if calls := tool_calls(response.content):
        return f"malformed {TOOL_NAME} input ({type(calls[0].get('input')).__name__}, not a JSON object)"
    return f"no {TOOL_NAME} tool call (stop reason {response.stop_reason})"


def _nudge(response: ClaudeResponse) -> list[Message]:
    """The failed turn and a reminder to call the tool with a JSON object."""
    return rejected(response.content, "Input must be a JSON object.", _NUDGE)
