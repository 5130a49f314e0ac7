"""Benchmark: the extraction pass, offline (spaCy) and Claude (against the loopback server).

    python bench/extraction.py [--corpus ../shared/eval/musique/corpus.jsonl] [--limit 600]

Offline: chunks/s and entities, relationships and facts per chunk on real passages.
Claude: calls and tokens per 1K input tokens of text, with a realistic tool payload size
(no network: the loopback server speaks the Messages API wire format).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.fakes

from eval_data import EVAL_ROOT

from graphunified_assets.lib.extraction.llm_extractor import LLMExtractor
from graphunified_assets.lib.extraction.offline_extractor import OfflineExtractor
from graphunified_assets.lib.extraction.records import ChunkText
from graphunified_assets.lib.extraction.tool_turns import TOOL_NAME
from graphunified_query.core.providers.claude import ClaudeClient
from graphunified_query.core.providers.llm_cache import LLMCache
from graphunified_query.core.settings.model import LLMSettings, Settings
from tests.fakes.anthropic_server import FakeAnthropicServer, tool_use

DEFAULT_CORPUS = EVAL_ROOT / "musique/corpus.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--limit", type=int, default=600)
    args = parser.parse_args()
    records = [json.loads(line) for line in args.corpus.read_text().splitlines()[: args.limit]]
    chunks = [ChunkText(r["id"], f"{r['title']}\n{r['text']}") for r in records]
    print(json.dumps({"offline": offline(chunks), "claude_loopback": claude(chunks[:100])}, indent=2))


def offline(chunks: list[ChunkText]) -> dict[str, Any]:
    extractor = OfflineExtractor(entity_types=Settings().extraction.entity_types)
    extractor.extract(chunks[:5])  # load the model outside the timing
    started = time.perf_counter()
    results = extractor.extract(chunks)
    seconds = time.perf_counter() - started
    n = len(results)
    return {
        "chunks": n,
        "chunks_per_second": round(n / seconds, 1),
        "entities_per_chunk": round(sum(len(r.entities) for r in results) / n, 2),
        "relationships_per_chunk": round(sum(len(r.relationships) for r in results) / n, 2),
        "facts_per_chunk": round(sum(len(r.facts) for r in results) / n, 2),
    }


def _realistic_payload(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Entities from the chunk's capitalized phrases; relationships and facts between neighbours."""
    message = body["messages"][0]["content"]
    names = list(dict.fromkeys(re.findall(r"[A-Z][a-z]+(?: [A-Z][a-z]+)*", message)))[:12]
    entities = [
        {"name": n, "type": "CONCEPT", "description": f"{n} as described in the passage."} for n in names
    ]
    pairs = list(pairwise(names))
    relationships = [
        {
            "source": a,
            "target": b,
            "type": "RELATED_TO",
            "description": f"{a} is related to {b}.",
            "strength": 5,
        }
        for a, b in pairs
    ]
    facts = [{"subject": a, "predicate": "is related to", "object": b} for a, b in pairs[:5]]
    return tool_use(TOOL_NAME, {"entities": entities, "relationships": relationships, "facts": facts})


def claude(chunks: list[ChunkText]) -> dict[str, Any]:
    settings = Settings()
    text_tokens = sum(len(c.text) for c in chunks) / 4
    with FakeAnthropicServer(_realistic_payload) as server, tempfile.TemporaryDirectory() as tmp:
        llm = LLMSettings(base_url=server.base_url, requests_per_minute=100_000, tokens_per_minute=10**9)
        client = ClaudeClient(
            llm, settings.prices, api_key="test-key", cache=LLMCache(Path(tmp) / "c.sqlite")
        )
        extractor = LLMExtractor(client, entity_types=settings.extraction.entity_types, max_gleanings=1)
        started = time.perf_counter()
        extractor.extract(chunks)
        seconds = time.perf_counter() - started
        usage, calls = client.ledger.usage, client.ledger.calls
        extractor.extract(chunks)  # a rerun: every call from the cache
        per_k = 1000 / text_tokens
        return {
            "chunks": len(chunks),
            "gleanings": 1,
            "calls_per_1k_text_tokens": round(calls * per_k, 2),
            "input_tokens_per_1k_text_tokens": round(usage.input_tokens * per_k),
            "output_tokens_per_1k_text_tokens": round(usage.output_tokens * per_k),
            "usd_per_1k_text_tokens_sonnet": round(client.ledger.dollars * per_k, 5),
            "client_overhead_ms_per_call": round(seconds * 1000 / calls, 2),
            "rerun_calls": client.ledger.calls - calls,
            "rerun_cached_calls": client.ledger.cached_calls,
        }


if __name__ == "__main__":
    main()
