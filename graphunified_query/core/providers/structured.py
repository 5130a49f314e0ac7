"""Structured answers from any `LLM`: one forced tool call, validated, repaired a bounded number of
times. The one repair loop of the project; every role that needs JSON goes through it.

A role supplies the tool (its ``input_schema`` is the JSON schema of the answer) and a `Check`
that validates the payload and says, in words the model can act on, what is wrong with it. A
payload with a problem goes back to the model as the tool's error result (and as text, which JSON
modes read), once per repair; what is still wrong after the last repair is the caller's to count
or drop. Requests of many items advance together, attempt by attempt, so a provider with batches
(`LLM.create_each`) sends each attempt of every item as one batch.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from graphunified_query.core.providers.llm import LLM
from graphunified_query.core.providers.llm_client import Blocks, ContentResponse

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
Message = dict[str, Any]
# response -> (value, problem); problem "" when the value is usable (most read `tool_payload`)
Check = Callable[[ContentResponse], tuple[T | None, str]]


@dataclass
class Structured(Generic[T]):
    """One item's outcome: its last value and problem, every response and request sent for it."""

    value: T | None = None
    problem: str = "no answer"
    responses: list[ContentResponse] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    error: Exception | None = None  # the `LLMError` that ended it after its retries

    @property
    def ok(self) -> bool:
        return self.error is None and not self.problem

    @property
    def repairs(self) -> int:
        return max(len(self.requests) - 1, 0)


def tool_request(
    system: str | Blocks, messages: list[Message], tool: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    """`create` arguments for a turn that must answer with a call of ``tool``."""
    return {
        "system": system,
        "messages": messages,
        "tools": [tool],
        "tool_choice": {"type": "tool", "name": tool["name"]},
        **extra,
    }


def tool_payload(response: ContentResponse, name: str) -> Any:
    """The input of the first call of ``name`` (a JSON string some gateways send is decoded);
    None when the model did not call it."""
    for block in response.content:
        if block.get("type") == "tool_use" and block.get("name") == name:
            value = block.get("input")
            if isinstance(value, str):
                try:
                    return json.loads(value)
                except json.JSONDecodeError:
                    return value
            return value
    return None


def tool_ids(content: Blocks) -> list[str]:
    return [str(b.get("id")) for b in content if b.get("type") == "tool_use"]


def repair_turn(content: Blocks, problem: str, reminder: str) -> list[Message]:
    """A failed turn replayed and what to do instead; every tool call in it gets ``problem`` as its
    error result, as the API requires, and an empty answer is replayed as a placeholder text."""
    errors = [
        {"type": "tool_result", "tool_use_id": tool_id, "is_error": True, "content": problem}
        for tool_id in tool_ids(content)
    ]
    replay = content or [{"type": "text", "text": "(no answer)"}]
    return [
        {"role": "assistant", "content": replay},
        {"role": "user", "content": [*errors, {"type": "text", "text": reminder}]},
    ]


def object_check(response: ContentResponse, name: str) -> tuple[dict[str, Any] | None, str]:
    """The least a structured answer must be: a call of tool ``name`` with a JSON object. The
    problem names what was wrong, for the repair turn and for the failure a caller reports."""
    payload = tool_payload(response, name)
    if isinstance(payload, dict):
        return payload, ""
    if not response.content:
        return None, f"The answer was an empty completion (no content blocks). Call the {name} tool."
    if payload is None:
        return None, (
            f"No {name} call (stop reason {response.stop_reason}). Call the {name} tool; "
            "do not answer in prose."
        )
    shown = str(payload)[:200]
    return None, (
        f"The answer held a malformed {name} input ({type(payload).__name__}, not a JSON object): "
        f"{shown!r}. Send one valid JSON object."
    )


def model_check(model: type[M], name: str, what: str) -> Check[M]:
    """A `Check` that validates the call of tool ``name`` as ``model``; problems start with
    ``what`` ("Invalid report") and list every field error."""

    def check(response: ContentResponse) -> tuple[M | None, str]:
        value, _ = object_check(response, name)
        if value is None:
            return None, f"{what}: no {name} tool call with a JSON object."
        try:
            return model.model_validate(value), ""
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}"
                for e in error.errors(include_url=False)
            )
            return None, f"{what}: {problems}."

    return check


def call_structured(
    llm: LLM, request: dict[str, Any], check: Check[T], *, repairs: int | None = None
) -> Structured[T]:
    """One structured answer (``request`` from `tool_request`) with up to ``repairs`` repair turns
    (default: the LLM's `repair_budget`)."""
    return structured_each(llm, [request], check, repairs=repairs)[0]


def structured_each(
    llm: LLM, requests: Sequence[dict[str, Any]], check: Check[T], *, repairs: int | None = None
) -> list[Structured[T]]:
    """Each request's outcome, in order; all requests advance attempt by attempt together."""
    budget = llm.repair_budget if repairs is None else repairs
    outcomes: list[Structured[T]] = [Structured() for _ in requests]
    current = list(requests)
    pending = list(range(len(requests)))
    for attempt in range(budget + 1):
        answers = llm.create_each([current[i] for i in pending])
        retry = []
        for i, answer in zip(pending, answers, strict=True):
            outcome = outcomes[i]
            outcome.requests.append(current[i])
            if isinstance(answer, Exception):
                outcome.error, outcome.problem = answer, str(answer)
                continue
            outcome.responses.append(answer)
            name = current[i]["tool_choice"]["name"]
            outcome.value, outcome.problem = check(answer)
            if outcome.problem and attempt < budget:
                # The repair is a different request, so the LLM cache cannot replay the failure.
                reminder = f"{outcome.problem} Call the {name} tool again with one valid JSON object."
                messages = [*requests[i]["messages"], *repair_turn(answer.content, outcome.problem, reminder)]
                current[i] = {**requests[i], "messages": messages}
                retry.append(i)
        pending = retry
        if not pending:
            break
    return outcomes
