"""Recorded Claude extractions of the gold documents, replayed by turn (first call, then gleaning).

`tests/fixtures/extraction_gold/claude_responses/<doc>.json` holds what a good Claude extraction
of that document returns, mistakes included; a loopback Messages API server answers with it, so
the real `LLMExtractor` code path (requests, validation, gleaning, merging) is what gets scored.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from graphunified_assets.lib.extraction.gold import DEFAULT_GOLD, DOCS_DIR
from graphunified_assets.lib.extraction.tool_turns import TOOL_NAME

RESPONSES_DIR = "claude_responses"
Content = list[dict[str, Any]]
_EMPTY: dict[str, list[Any]] = {"entities": [], "relationships": [], "facts": []}


def recorded_responder(gold_folder: Path = DEFAULT_GOLD) -> Callable[[dict[str, Any]], Content]:
    """request body -> content blocks: the recording of the document whose title opens the chunk."""
    by_title: dict[str, dict[str, Any]] = {}
    for path in sorted((gold_folder / RESPONSES_DIR).glob("*.json")):
        recording = json.loads(path.read_text(encoding="utf-8"))
        doc = gold_folder / DOCS_DIR / recording["document"]
        title = doc.read_text(encoding="utf-8").splitlines()[0].lstrip("# ").strip()
        by_title[title] = recording

    def respond(body: dict[str, Any]) -> Content:
        first = str(body["messages"][0]["content"])
        recording = next((r for t, r in by_title.items() if t in first), None)
        turn = len(body["messages"]) // 2  # 0: extraction, 1: first gleaning
        payload = _EMPTY
        if recording is not None and turn < 2:
            payload = recording["extraction" if turn == 0 else "gleaning"]
        return [{"type": "tool_use", "name": TOOL_NAME, "input": payload}]

    return respond
