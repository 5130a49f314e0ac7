"""Many Claude requests at once: the Message Batches API (half price) or parallel calls.

Cached requests never leave the machine; a batch result that errored or expired falls back to
an ordinary call (with its retries), so one bad request cannot sink the others.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from graphunified_query.providers.claude import ClaudeClient, ClaudeResponse, LLMError
from graphunified_query.providers.cost import Usage, price_usd

BATCH_DISCOUNT = 0.5


def create_many(client: ClaudeClient, requests: list[dict[str, Any]]) -> list[ClaudeResponse]:
    """Responses in request order; each request holds `create`'s keyword arguments.

    The first request that fails for good raises its `LLMError` (after every other has finished,
    so their answers are cached); `create_each` hands back each failure instead.
    """
    outcomes = create_each(client, requests)
    for outcome in outcomes:
        if isinstance(outcome, LLMError):
            raise outcome
    return [o for o in outcomes if isinstance(o, ClaudeResponse)]


def create_each(client: ClaudeClient, requests: list[dict[str, Any]]) -> list[ClaudeResponse | LLMError]:
    """Each request's response, or the `LLMError` that ended it after its retries, in request order.

    One request failing for good never stops the others. A `BudgetExceeded` still stops them all:
    that is the run's limit, not one request's fault.
    """
    if not client.settings.use_batches:
        with ThreadPoolExecutor(max_workers=client.settings.concurrency) as pool:
            return list(pool.map(lambda kwargs: _create(client, kwargs), requests))
    responses: list[ClaudeResponse | LLMError | None] = [client.cached(**kwargs) for kwargs in requests]
    pending = [i for i, response in enumerate(responses) if response is None]
    if pending:
        for i, response in _run_batch(
            client, {i: client.full_request(**requests[i]) for i in pending}
        ).items():
            responses[i] = response if response is not None else _create(client, requests[i])
    return [r for r in responses if r is not None]


def _create(client: ClaudeClient, kwargs: dict[str, Any]) -> ClaudeResponse | LLMError:
    try:
        return client.create(**kwargs)
    except LLMError as error:
        return error


def _run_batch(client: ClaudeClient, full: dict[int, dict[str, Any]]) -> dict[int, ClaudeResponse | None]:
    estimate = sum(price_usd(Usage(len(str(r)) // 4, r["max_tokens"]), client.price) for r in full.values())
    client.ledger.reserve(estimate * BATCH_DISCOUNT)
    api = client.raw.messages.batches
    batch = api.create(requests=[{"custom_id": f"r{i}", "params": r} for i, r in full.items()])
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
