"""The `record_extraction` tool and the conversation turns around it, for every LLM extractor.

The one LLM extractor sends this tool; repair turns are `providers.structured`'s. The
blocks built here end up in requests, so in LLM cache keys: changing them re-asks every gleaning
and repair turn of an indexed corpus.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from graphunified_query.core.providers import structured

TOOL_NAME = "record_extraction"
TOOL = json.loads(Path(__file__).with_name("prompts").joinpath("extraction_tool.json").read_text("utf-8"))
Message = dict[str, Any]
Blocks = list[dict[str, Any]]


def tool_request(system: str | Blocks, messages: list[Message], temperature: float = 0.0) -> dict[str, Any]:
    """`create` arguments for one turn that must answer with a `record_extraction` call."""
    return structured.tool_request(system, messages, TOOL, temperature=temperature)


def tool_calls(content: Blocks) -> Blocks:
    """The answer's `record_extraction` calls, whatever their input."""
    return [b for b in content if b.get("type") == "tool_use" and b.get("name") == TOOL_NAME]


def follow_up(content: Blocks, glean: str) -> list[Message]:
    """A good turn replayed, each of its tool calls answered, and the gleaning prompt."""
    results = [
        {"type": "tool_result", "tool_use_id": tool_id, "content": "Recorded."}
        for tool_id in structured.tool_ids(content)
    ]
    return [
        {"role": "assistant", "content": content},
        {"role": "user", "content": [*results, {"type": "text", "text": glean}]},
    ]
