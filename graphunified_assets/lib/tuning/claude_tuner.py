"""The tuning conversation with Claude: sampled passages in, a validated `Proposal` out.

Structured output through a forced tool call; an answer that does not validate gets one retry
that shows Claude the validation error (a different request, so the LLM cache cannot replay it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from graphunified_assets.lib.tuning.proposal import Proposal
from graphunified_query.providers.claude import ClaudeClient, ClaudeResponse

TOOL_NAME = "propose_extraction_setup"
_PROMPTS = Path(__file__).with_name("prompts")
_TOOL = json.loads((_PROMPTS / "propose_tool.json").read_text(encoding="utf-8"))
_SYSTEM = (_PROMPTS / "propose_system.md").read_text(encoding="utf-8")


class TuningError(RuntimeError):
    pass


def passages_message(texts: list[str]) -> str:
    blocks = [f'<passage id="{n}">\n{text.strip()}\n</passage>' for n, text in enumerate(texts, start=1)]
    return "Sampled passages:\n\n" + "\n\n".join(blocks)


def propose_with_claude(client: ClaudeClient, texts: list[str]) -> Proposal:
    messages: list[dict[str, Any]] = [{"role": "user", "content": passages_message(texts)}]
    problem = ""
    for _ in range(2):
        response = client.create(
            system=_SYSTEM, messages=messages, tools=[_TOOL], tool_choice={"type": "tool", "name": TOOL_NAME}
        )
        payload = response.tool_input(TOOL_NAME)
        try:
            if not isinstance(payload, dict):
                raise TypeError(f"no {TOOL_NAME} call with a JSON object")
            return Proposal.model_validate(payload)
        except (ValidationError, TypeError) as error:
            problem = _describe(error)
            messages = [*messages, *_retry(response, problem)]
    raise TuningError(f"Claude's tuning proposal was invalid twice ({problem}); run `tune` again")


def _describe(error: Exception) -> str:
    if isinstance(error, ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors(include_url=False)
        )
    return str(error)


def _retry(response: ClaudeResponse, problem: str) -> list[dict[str, Any]]:
    ids = [str(b.get("id")) for b in response.content if b.get("type") == "tool_use"]
    results = [
        {"type": "tool_result", "tool_use_id": i, "is_error": True, "content": f"Invalid: {problem}"}
        for i in ids
    ]
    reminder = {"type": "text", "text": f"Call {TOOL_NAME} again with every field valid ({problem})."}
    return [
        {"role": "assistant", "content": response.content or [{"type": "text", "text": "(no answer)"}]},
        {"role": "user", "content": [*results, reminder]},
    ]
