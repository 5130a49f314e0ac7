"""The one repair loop (providers/structured.py) and the truncation salvage it relies on."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from graphunified_query.core.providers.cost import Usage
from graphunified_query.core.providers.json_repair import loads_lenient
from graphunified_query.core.providers.llm_client import ContentResponse
from graphunified_query.core.providers.structured import (
    call_structured,
    model_check,
    structured_each,
    tool_request,
)
from graphunified_query.core.settings.model import Settings
from tests.fakes import toy_provider

TOOL = {"name": "record_point", "description": "A point.", "input_schema": {"type": "object"}}


class Point(BaseModel):
    x: int
    y: int


class Scripted(toy_provider.ToyLLM):
    """The toy provider answering each request with the next scripted tool input."""

    def __init__(self, inputs: list[Any]) -> None:
        super().__init__(Settings(), cache=None)
        self.inputs: Iterator[Any] = iter(inputs)
        self.requests: list[dict[str, Any]] = []

    def _send(self, request: dict[str, Any], prompt_tokens: int) -> ContentResponse:
        self.requests.append(request)
        value = next(self.inputs)
        content = (
            [] if value is None else [{"type": "tool_use", "id": "t", "name": "record_point", "input": value}]
        )
        return ContentResponse(content, "tool_use", Usage(prompt_tokens, 5), cached=False)


def _ask(llm: Scripted, repairs: int = 1) -> Any:
    request = tool_request("Record a point.", [{"role": "user", "content": "1, 2"}], TOOL)
    return call_structured(llm, request, model_check(Point, "record_point", "Invalid point"), repairs=repairs)


def test_a_valid_answer_needs_no_repair() -> None:
    llm = Scripted([{"x": 1, "y": 2}])
    outcome = _ask(llm)
    assert outcome.ok and outcome.value == Point(x=1, y=2) and outcome.repairs == 0


def test_an_invalid_answer_is_repaired_once_with_the_problem_shown() -> None:
    llm = Scripted([{"x": 1}, {"x": 1, "y": 2}])
    outcome = _ask(llm)
    assert outcome.ok and outcome.value == Point(x=1, y=2) and outcome.repairs == 1
    repair = llm.requests[1]["messages"]
    assert repair[1]["role"] == "assistant"  # the failed turn replayed
    error = repair[2]["content"][0]
    assert error["type"] == "tool_result" and error["is_error"] and "y: Field required" in error["content"]


def test_the_repair_budget_bounds_the_calls_and_the_problem_is_kept() -> None:
    llm = Scripted([None, "not json", {"x": "a"}])
    outcome = _ask(llm, repairs=2)
    assert not outcome.ok and outcome.value is None and len(llm.requests) == 3
    assert outcome.problem.startswith("Invalid point: x:")
    assert len(outcome.responses) == 3  # every response is kept for usage accounting


def test_many_requests_advance_together_and_only_failures_are_repaired() -> None:
    llm = Scripted([{"x": 1, "y": 1}, {"x": 2}, {"x": 2, "y": 2}])
    check: Callable[[ContentResponse], Any] = model_check(Point, "record_point", "Invalid point")
    requests = [tool_request("s", [{"role": "user", "content": str(n)}], TOOL) for n in (1, 2)]
    first, second = structured_each(llm, requests, check, repairs=1)
    assert (first.repairs, second.repairs) == (0, 1) and first.ok and second.ok
    assert second.value == Point(x=2, y=2)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # one complete record, the next cut off: the complete ones are kept
        ('{"entities": [{"name": "A", "type": "B"}, {"name": "C', {"entities": [{"name": "A", "type": "B"}]}),
        # the first record cut in its description: its complete members are kept
        (
            '{"entities": [{"name": "A", "type": "B", "description": "long te',
            {"entities": [{"name": "A", "type": "B"}]},
        ),
    ],
)
def test_truncated_replies_keep_what_is_complete(text: str, expected: dict[str, Any]) -> None:
    assert loads_lenient(text) == expected
