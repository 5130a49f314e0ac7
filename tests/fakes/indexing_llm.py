"""An OpenAI-compatible responder that plays the LLM of a whole index build, and names each call's role.

`IndexingLLM` answers every request the pipeline sends (extraction, gleaning, repair, description
summary, community report) with a plausible reply built from the request itself: entities are the
passage's capitalized phrases, each described by its own sentence of the passage (so repeated
entities collect fragments of realistic length), relationships link neighbouring names with
LightRAG-style keywords, reports list the community's first entities. `role` classifies a request
body, so a test or `bench/llm_calls.py` counts calls per role from `FakeOpenAIServer.bodies`.
"""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any

from tests.fakes.openai_server import Reply, text, tool_call

ROLES = ("extraction", "gleaning", "repair", "summary", "report", "other")
_NAME = re.compile(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)*")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _tools(body: dict[str, Any]) -> list[str]:
    return [t.get("function", {}).get("name", "") for t in body.get("tools") or ()]


def role(body: dict[str, Any]) -> str:
    """What a chat-completions request asks for, from its tools and turns."""
    messages = body.get("messages", [])
    turns = [m for m in messages if m.get("role") != "system"]
    last = str(turns[-1].get("content") or "") if turns else ""
    repair = any(m.get("role") == "tool" and "Recorded." not in str(m.get("content")) for m in turns)
    if "record_extraction" in _tools(body):
        if repair:
            return "repair"
        return "gleaning" if len(turns) > 1 and "were missed" in last else "extraction"
    if "community_report" in _tools(body):
        return "repair" if repair else "report"
    if any("description fragments" in str(m.get("content")) for m in turns):
        return "summary"
    return "other"


class IndexingLLM:
    """The responder: ``FakeOpenAIServer(IndexingLLM())``; ``truncate`` chunks whose passage
    contains it answer their first turn cut off at max_tokens (finish_reason "length")."""

    def __init__(self, *, truncate: str | None = None) -> None:
        self.truncate = truncate

    def __call__(self, body: dict[str, Any]) -> Reply:
        kind = role(body)
        if kind in ("extraction", "repair") and "record_extraction" in _tools(body):
            passage = str(next(m for m in body["messages"] if m["role"] == "user")["content"])
            cut = self.truncate is not None and self.truncate in passage and kind == "extraction"
            return tool_call(
                "record_extraction", extraction(passage), finish_reason="length" if cut else None
            )
        if kind == "gleaning":
            return tool_call("record_extraction", {"entities": [], "relationships": [], "facts": []})
        if kind in ("report", "repair"):
            return tool_call("community_report", report(str(body["messages"][-1]["content"])))
        if kind == "summary":
            return text("A summary of the fragments, in one sentence.")
        return text("ok")


def extraction(passage: str) -> dict[str, Any]:
    """Records for a passage: its capitalized phrases, each described by the sentence it is in."""
    body = passage.removeprefix("Text:").strip()
    sentences = [s for s in _SENTENCE.split(" ".join(body.split())) if s]
    names = list(dict.fromkeys(n for n in _NAME.findall(body) if len(n) > 3))[:10]
    described = {n: next((s for s in sentences if n in s), n) for n in names}
    entities = [{"name": n, "type": "CONCEPT", "description": described[n]} for n in names]
    relationships = [
        {
            "source": a,
            "target": b,
            "type": "RELATED_TO",
            "description": f"{a} and {b}: {described[b]}",
            "strength": 5,
            "keywords": ["association", "history"],
        }
        for a, b in pairwise(names)
    ]
    facts = [{"subject": a, "predicate": "is related to", "object": b} for a, b in pairwise(names[:4])]
    return {"entities": entities, "relationships": relationships, "facts": facts}


def report(context: str) -> dict[str, Any]:
    names = list(dict.fromkeys(_NAME.findall(context)))[:3] or ["the community"]
    return {
        "title": " and ".join(names[:2]),
        "summary": f"A community around {', '.join(names)}.",
        "rating": 5,
        "rating_explanation": "Moderate.",
        "findings": [
            {"summary": f"About {n}", "explanation": f"{n} appears in the passages."} for n in names
        ],
    }


def calls_by_role(bodies: list[dict[str, Any]]) -> dict[str, int]:
    counts = dict.fromkeys(ROLES, 0)
    for body in bodies:
        counts[role(body)] += 1
    return counts
