"""Many Claude requests as one Message Batch (half price), for `ClaudeClient.create_each`.

Cached requests never leave the machine; a batch result that errored or expired falls back to
an ordinary call (with its retries), so one bad request cannot sink the others.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, cast

from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from anthropic.types.messages.batch_create_params import Request

from graphunified_query.core.providers.cost import Usage, price_usd
from graphunified_query.core.providers.llm_client import LLMError

if TYPE_CHECKING:
    from graphunified_query.core.providers.claude import ClaudeClient, ClaudeResponse

BATCH_DISCOUNT = 0.5


def create_batched(client: ClaudeClient, requests: list[dict[str, Any]]) -> list[ClaudeResponse | Exception]:
    """Each request's response or the `LLMError` that ended it, in request order."""
    responses: list[ClaudeResponse | Exception | None] = [client.cached(**kwargs) for kwargs in requests]
    pending = [i for i, response in enumerate(responses) if response is None]
    if pending:
        for i, response in _run_batch(
            client, {i: client.full_request(**requests[i]) for i in pending}
        ).items():
            responses[i] = response if response is not None else client._create_or_error(requests[i])
    return [r for r in responses if r is not None]


def _run_batch(client: ClaudeClient, full: dict[int, dict[str, Any]]) -> dict[int, ClaudeResponse | None]:
    estimate = sum(price_usd(Usage(len(str(r)) // 4, r["max_tokens"]), client.price) for r in full.values())
    client.ledger.reserve(estimate * BATCH_DISCOUNT)
    api = client.raw.messages.batches
    # `full_request` builds exactly the Messages API body; it is a plain dict because the same shape
    # also serves the OpenAI-compatible client and the cache key.
    requests = [
        Request(custom_id=f"r{i}", params=cast(MessageCreateParamsNonStreaming, r)) for i, r in full.items()
    ]
    batch = api.create(requests=requests)
    while batch.processing_status != "ended":
        time.sleep(client.settings.batch_poll_seconds)
        batch = api.retrieve(batch.id)
    results: dict[int, ClaudeResponse | None] = dict.fromkeys(full)
    for item in api.results(batch.id):
        index = int(item.custom_id[1:])
        if item.result.type != "succeeded":
            continue  # errored, canceled or expired: retried as an ordinary call by the caller
        try:
            results[index] = client.store(full[index], item.result.message, discount=BATCH_DISCOUNT)
        except LLMError:
            continue
    return results
