"""Community reports with any LLM: tool output validated with pydantic, repaired once on error.

A malformed report (missing field, rating "high", no tool call) goes back to the model with the
validation error as the tool result (`providers.structured`), which fixes nearly every case for
the price of one call; a report that is still invalid raises `ReportError` and the caller falls
back to the extractive one. The reporter is named after the LLM that wrote it, so reports written
by a local model are never reused as if Claude had written them, and vice versa.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from graphunified_assets.lib.reports.context import CommunityContext
from graphunified_assets.lib.reports.model import Report
from graphunified_query.core.providers.llm import LLM
from graphunified_query.core.providers.structured import call_structured, model_check, tool_request

_PROMPTS = Path(__file__).with_name("prompts")
_TOOL = json.loads((_PROMPTS / "community_report_tool.json").read_text(encoding="utf-8"))
TOOL_NAME = _TOOL["name"]


class ReportError(RuntimeError):
    """The LLM did not produce a valid report, even after being shown the error."""


class LLMReporter:
    def __init__(self, client: LLM, *, max_tokens: int = 2000) -> None:
        self.client = client
        self.max_tokens = max_tokens
        self.name = client.label
        instructions = (_PROMPTS / "community_report.md").read_text(encoding="utf-8")
        self._system = [{"type": "text", "text": instructions, "cache_control": {"type": "ephemeral"}}]

    def __call__(self, context: CommunityContext, size: int) -> Report:
        messages: list[dict[str, Any]] = [{"role": "user", "content": context.as_text()}]
        request = tool_request(self._system, messages, _TOOL, max_tokens=self.max_tokens)
        outcome = call_structured(self.client, request, check_report, repairs=1)
        if outcome.error is not None:
            raise outcome.error
        if outcome.value is None or outcome.problem:
            raise ReportError(f"invalid community report after one repair: {outcome.problem}")
        return outcome.value


check_report = model_check(Report, TOOL_NAME, "Invalid report")
