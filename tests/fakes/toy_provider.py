"""A toy LLM provider, the whole of it in one module: what adding a provider takes.

`ToyLLM` is a real `CachedLLMClient` (LLM cache, ledger, rate limits) whose "model" is a few
lines of deterministic Python: capitalised word pairs become entities, every other tool gets a
valid payload, and a text request gets an answer citing context [1]. Registering it is one line,
`register_llm("toy", "tests.fakes.toy_provider:build")`; every role (extraction, summaries,
reports, the global map, answers) then runs through it with no other change.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from typing import Any

from graphunified_query.core.providers.cost import Usage
from graphunified_query.core.providers.llm_cache import LLMCache
from graphunified_query.core.providers.llm_client import CachedLLMClient, ContentResponse
from graphunified_query.core.settings.model import ModelPrice, Settings

FREE = ModelPrice(input=0.0, output=0.0, cache_read=0.0, cache_write=0.0)
_NAMES = re.compile(r"\b[A-Z][a-z]+ [A-Z][a-z]+\b")
SENT: list[dict[str, Any]] = []  # every request that reached the "model" (not the cache), any instance


class ToyLLM(CachedLLMClient[ContentResponse]):
    provider_field = "toy"
    provider_name = "toy"

    def __init__(self, settings: Settings, *, cache: LLMCache | None) -> None:
        super().__init__(settings.llm, FREE, cache=cache, ledger=None, base_delay=0.0)

    def _send(self, request: dict[str, Any], prompt_tokens: int) -> ContentResponse:
        SENT.append(request)
        content, stop = _answer(request)
        usage = Usage(prompt_tokens, 10)
        self.ledger.record(usage, 0.0, cached=False)
        self._remember(request, {"content": content, "stop_reason": stop, "usage": usage.__dict__})
        return ContentResponse(content, stop, usage, cached=False)

    def _from_cache(self, entry: dict[str, Any]) -> ContentResponse:
        return ContentResponse(entry["content"], entry["stop_reason"], Usage(**entry["usage"]), cached=True)


def build(settings: Settings, *, cache: LLMCache | None, environ: Mapping[str, str]) -> ToyLLM:
    return ToyLLM(settings, cache=cache)


def _answer(request: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    last = request["messages"][-1]["content"]
    text = last if isinstance(last, str) else " ".join(str(b.get("text", "")) for b in last)
    tool = (request.get("tool_choice") or {}).get("name")
    if tool is None:
        return [{"type": "text", "text": "The toy model read the sources [1]."}], "end_turn"
    names = sorted(set(_NAMES.findall(text)))[:6]
    payload: dict[str, Any]
    if tool == "record_extraction":
        entities = [{"name": n, "type": "PERSON", "description": f"{n} appears in the text."} for n in names]
        pairs = itertools.pairwise(names)
        payload = {"entities": entities, "relationships": [{"source": a, "target": b} for a, b in pairs]}
    elif tool == "community_report":
        title = names[0] if names else "Community"
        payload = {
            "title": title,
            "summary": f"About {title}.",
            "rating": 5,
            "rating_explanation": "toy",
            "findings": [{"summary": title, "explanation": f"{title} is in the corpus."}],
        }
    elif tool == "map_points":
        payload = {"points": [{"description": n, "score": 50} for n in names[:2]]}
    else:
        payload = {}
    return [{"type": "tool_use", "id": "toy_0", "name": tool, "input": payload}], "tool_use"
