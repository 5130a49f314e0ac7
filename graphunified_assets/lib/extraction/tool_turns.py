"""The `record_extraction` tool and the conversation turns around it, for every LLM extractor.

Claude and OpenAI-compatible extraction send the same tool and replay turns the same way. The
blocks built here end up in requests, so in LLM cache keys: changing them re-asks every gleaning
and repair turn of an indexed corpus.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TOOL_NAME = "record_extraction"
TOOL = json.loads(Path(__file__).with_name("prompts").joinpath("extraction_tool.json").read_text("utf-8"))
Message = dict[str, Any]
Blocks = list[dict[str, Any]]


def tool_request(system: str | Blocks, messages: list[Message]) -> dict[str, Any]:
    """`create` arguments for one turn that must answer with a `record_extraction` call."""
    return {
        "system": system,
        "messages": messages,
        "tools": [TOOL],
        "tool_choice": {"type": "tool", "name": TOOL_NAME},
    }


def tool_calls(content: Blocks) -> Blocks:
    """The answer's `record_extraction` calls, whatever their input."""
    return [b for b in content if b.get("type") == "tool_use" and b.get("name") == TOOL_NAME]


def follow_up(content: Blocks, glean: str) -> list[Message]:
    """A good turn replayed, each of its tool calls answered, and the gleaning prompt."""
    results = [
        {"type": "tool_result", "tool_use_id": tool_id, "content": "Recorded."}
        for tool_id in _tool_ids(content)
    ]
    return [
        {"role": "assistant", "content": content},
        {"role": "user", "content": [*results, {"type": "text", "text": glean}]},
    ]


def rejected(content: Blocks, error: str, reminder: str) -> list[Message]:
    """A failed turn replayed and what to do instead; every tool call in it gets ``error`` as its
    result, as the API requires, and an empty answer is replayed as a placeholder text block."""
    errors = [
        {"type": "tool_result", "tool_use_id": tool_id, "is_error": True, "content": error}
        for tool_id in _tool_ids(content)
    ]
    replay = content or [{"type": "text", "text": "(no answer)"}]
    return [
        {"role": "assistant", "content": replay},
        {"role": "user", "content": [*errors, {"type": "text", "text": reminder}]},
    ]


def _tool_ids(content: Blocks) -> list[str]:
    return [str(b.get("id")) for b in content if b.get("type") == "tool_use"]
