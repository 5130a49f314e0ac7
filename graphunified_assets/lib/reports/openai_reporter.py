"""Community reports from a model behind an OpenAI-compatible server.

The Claude reporter's logic as is (the same tool schema, pydantic validation and one repair turn
with the validation error); the client translates the tool call to function calling or JSON mode
and repairs malformed arguments first. Only the generator name differs, so reports written by a
local model are never reused as if Claude had written them, and vice versa.
"""

from __future__ import annotations

from graphunified_assets.lib.reports.claude_reporter import ClaudeReporter
from graphunified_query.providers.openai_compatible import PROVIDER, OpenAICompatibleClient


class OpenAICompatibleReporter(ClaudeReporter):
    def __init__(self, client: OpenAICompatibleClient, *, max_tokens: int = 2000) -> None:
        super().__init__(client, max_tokens=max_tokens)  # type: ignore[arg-type]  # same interface
        self.name = f"{PROVIDER}:{client.settings.model}"
