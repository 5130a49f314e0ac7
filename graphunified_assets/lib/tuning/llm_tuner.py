"""The tuning conversation with any LLM: sampled passages in, a validated `Proposal` out.

Structured output through a forced tool call; an answer that does not validate gets one repair
turn that shows the model the validation error (`providers.structured`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from graphunified_assets.lib.tuning.proposal import Proposal
from graphunified_query.core.providers.llm import LLM
from graphunified_query.core.providers.structured import call_structured, model_check, tool_request

TOOL_NAME = "propose_extraction_setup"
_PROMPTS = Path(__file__).with_name("prompts")
_TOOL = json.loads((_PROMPTS / "propose_tool.json").read_text(encoding="utf-8"))
_SYSTEM = (_PROMPTS / "propose_system.md").read_text(encoding="utf-8")


class TuningError(RuntimeError):
    pass


def passages_message(texts: list[str]) -> str:
    blocks = [f'<passage id="{n}">\n{text.strip()}\n</passage>' for n, text in enumerate(texts, start=1)]
    return "Sampled passages:\n\n" + "\n\n".join(blocks)


def propose(llm: LLM, texts: list[str]) -> Proposal:
    messages: list[dict[str, Any]] = [{"role": "user", "content": passages_message(texts)}]
    outcome = call_structured(llm, tool_request(_SYSTEM, messages, _TOOL), check_proposal, repairs=1)
    if outcome.error is not None:
        raise outcome.error
    if outcome.value is None or outcome.problem:
        raise TuningError(
            f"{llm.label}'s tuning proposal was invalid twice ({outcome.problem}); run `tune` again"
        )
    return outcome.value


check_proposal = model_check(Proposal, TOOL_NAME, "Invalid")
