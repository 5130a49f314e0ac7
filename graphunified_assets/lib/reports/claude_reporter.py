"""Community reports with Claude: tool output validated with pydantic, repaired once on error.

A malformed report (missing field, rating "high", no tool call) goes back to Claude with the
validation error as the tool result, which fixes nearly every case for the price of one call;
a report that is still invalid raises `ReportError` and the caller falls back to the extractive one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from graphunified_assets.lib.reports.context import CommunityContext
from graphunified_assets.lib.reports.model import Report
from graphunified_query.providers.claude import ClaudeClient, ClaudeResponse

_PROMPTS = Path(__file__).with_name("prompts")
_TOOL = json.loads((_PROMPTS / "community_report_tool.json").read_text(encoding="utf-8"))
TOOL_NAME = _TOOL["name"]


class ReportError(RuntimeError):
    """Claude did not produce a valid report, even after being shown the error."""


class ClaudeReporter:
    def __init__(self, client: ClaudeClient, *, max_tokens: int = 2000) -> None:
        self.client = client
        self.max_tokens = max_tokens
        self.name = f"claude:{client.settings.model}"
        instructions = (_PROMPTS / "community_report.md").read_text(encoding="utf-8")
        self._system = [{"type": "text", "text": instructions, "cache_control": {"type": "ephemeral"}}]

    def __call__(self, context: CommunityContext, size: int) -> Report:
        messages: list[dict[str, Any]] = [{"role": "user", "content": context.as_text()}]
        response = self._call(messages)
        report, problem = _parse(response)
        if report is not None:
            return report
        messages += _repair_turn(response, problem)
        report, problem = _parse(self._call(messages))
        if report is None:
            raise ReportError(f"invalid community report after one repair: {problem}")
        return report

    def _call(self, messages: list[dict[str, Any]]) -> ClaudeResponse:
        return self.client.create(
            system=self._system,
            messages=messages,
            tools=[_TOOL],
            tool_choice={"type": "tool", "name": TOOL_NAME},
            max_tokens=self.max_tokens,
        )


def _parse(response: ClaudeResponse) -> tuple[Report | None, str]:
    payload = _payload(response)
    if payload is None:
        return None, f"no {TOOL_NAME} tool call with a JSON object"
    try:
        return Report.model_validate(payload), ""
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'report'}: {e['msg']}"
            for e in error.errors(include_url=False)
        )
        return None, problems


def _payload(response: ClaudeResponse) -> dict[str, Any] | None:
    for block in response.content:
        if block.get("type") == "tool_use" and block.get("name") == TOOL_NAME:
            value = block.get("input")
            if isinstance(value, str):  # some gateways pass the arguments as a JSON string
                try:
                    value = json.loads(value)
                except json.JSONDecodeError:
                    return None
            return value if isinstance(value, dict) else None
    return None


def _repair_turn(response: ClaudeResponse, problem: str) -> list[dict[str, Any]]:
    tool_ids = [str(b.get("id")) for b in response.content if b.get("type") == "tool_use"]
    results = [
        {"type": "tool_result", "tool_use_id": i, "is_error": True, "content": f"Invalid report: {problem}"}
        for i in tool_ids
    ]
    nudge = f"Call {TOOL_NAME} again with every required field valid. Problems: {problem}"
    return [
        {"role": "assistant", "content": response.content or [{"type": "text", "text": "(no answer)"}]},
        {"role": "user", "content": [*results, {"type": "text", "text": nudge}]},
    ]
