"""LightRAG's dual-level keywords on the sample corpus: relationships carry high-level keywords,
the question splits into low- and high-level ones (offline and with Claude), `global` mode finds
relationships by their keywords, and every entry point shows what was used."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from graphunified_query.cli import main
from graphunified_query.core.providers.claude import ClaudeClient
from graphunified_query.core.providers.llm_cache import LLMCache
from graphunified_query.core.settings.model import LLMSettings
from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.strategies.keyword_match import KeywordIndex
from graphunified_query.strategies.query_keywords import query_keywords
from tests.fakes.anthropic_server import FakeAnthropicServer, tool_use

THEME_QUESTION = "What do the documents say about the cheese trade?"


@pytest.fixture(scope="module")
def sample(sample_home: Path) -> QueryEngine:
    return QueryEngine.open(sample_home, environ={})


def test_the_sample_relationships_carry_their_sentences_themes(sample: QueryEngine) -> None:
    relationships = sample.snapshot.relationships
    keyed = [r for r in relationships if r["keywords"]]
    assert len(keyed) >= len(relationships) // 2  # most sentences have a theme noun
    for rel in keyed:
        names = {w.lower() for w in f"{rel['source']} {rel['target']}".split()}
        assert not names & {w for k in rel["keywords"] for w in k.split()}, rel


def test_the_query_splits_named_entities_low_and_theme_nouns_high() -> None:
    split = query_keywords("Which textile mills did Thomas Hale build near the River Harrow?")
    assert split.low_level == ("Thomas Hale", "the River Harrow") or split.low_level == (
        "Thomas Hale",
        "River Harrow",
    )
    assert split.high_level == ("textile mills",)


def _with_keywords(engine: QueryEngine, keywords: dict[int, list[str]]) -> QueryEngine:
    """The engine over a snapshot whose relationship rows carry the given keywords."""
    rows = tuple(
        {**rel, "keywords": keywords.get(i, [])} for i, rel in enumerate(engine.snapshot.relationships)
    )
    snapshot = dataclasses.replace(engine.snapshot, relationships=rows, extras={})
    return QueryEngine(snapshot, engine.settings, engine.embedder)


def _relationship_order(engine: QueryEngine, **params: Any) -> list[str]:
    retrieval, _ = engine.retrieve(THEME_QUESTION, "lightrag", top_k=10, mode="global", **params)
    return [r.text for r in retrieval.results if r.kind == "relationship"]


def test_global_mode_ranks_a_relationship_by_its_keywords(sample: QueryEngine) -> None:
    unkeyed = _relationship_order(sample, dual_keywords=True, keyword_weight=0.0)
    texts = [
        f"{r['source']} -> {r['target']} ({r['type']}): {r['description']}"
        for r in sample.snapshot.relationships
    ]
    # The relationship the question's embedding likes least among those it returns.
    last = texts.index(unkeyed[-1])
    engine = _with_keywords(sample, {last: ["cheese trade", "dairy"]})
    keyed = _relationship_order(engine, dual_keywords=True)
    assert keyed[0] == texts[last] and unkeyed[0] != texts[last]
    retrieval, meta = engine.retrieve(THEME_QUESTION, "lightrag", top_k=10, mode="global", dual_keywords=True)
    first = next(r for r in retrieval.results if r.kind == "relationship")
    assert first.metadata["keywords"] == ["cheese trade", "dairy"]  # shown on the context
    assert meta["retrieval_keywords"]["high_level"] == ["documents", "cheese trade"]
    assert "high-level keywords [documents, cheese trade]" in meta["retrieval_explain"]


def test_keyword_index_weights_rare_words_and_matches_plurals() -> None:
    index = KeywordIndex.of(
        [
            {"keywords": ["flood damage"]},
            {"keywords": ["history"]},
            {"keywords": ["history", "floods"]},
            {"keywords": ["local history"]},
        ]
    )
    shares = index.shares(["flood history"])
    assert max(shares, key=shares.__getitem__) == 2 and shares[2] == pytest.approx(1.0)
    assert shares[0] > shares[1]  # "flood" is rarer than "history"
    assert index.shares(["cheese"]) == {}


def test_claude_splits_the_question_once_and_the_answer_is_cached(
    sample: QueryEngine, tmp_path: Path
) -> None:
    def respond(body: dict[str, Any]) -> Any:
        assert body["tools"][0]["name"] == "record_query_keywords"
        split = {"low_level_keywords": ["Thomas Hale"], "high_level_keywords": ["Founding", "textile trade"]}
        return tool_use("record_query_keywords", split)

    with FakeAnthropicServer(respond) as server:
        llm = LLMSettings(base_url=server.base_url, max_retries=1, requests_per_minute=10_000)
        client = ClaudeClient(
            llm, sample.settings.prices, api_key="test-key", cache=LLMCache(tmp_path / "llm.sqlite")
        )
        claude = QueryEngine(sample.snapshot, sample.settings, sample.embedder, llm=client)
        question = "Who founded the Hale Mill?"
        _, meta = claude.retrieve(question, "lightrag", top_k=5, mode="hybrid", dual_keywords=True)
        claude.retrieve(question, "lightrag", top_k=5, mode="hybrid", dual_keywords=True)
        calls = len(server.requests)
    assert meta["retrieval_keywords"] == {
        "low_level": ["Thomas Hale"],
        "high_level": ["founding", "textile trade"],
    }
    assert meta["retrieval_keywords_from"].startswith("anthropic:")
    assert "low-level keywords [Thomas Hale]" in meta["retrieval_explain"]
    assert calls == 1  # the second identical question came from the LLM cache


def test_cli_ask_takes_the_keyword_params_and_explains_them(
    sample_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["ask", "Who founded the Hale Mill?", "--home", str(sample_home), "--strategy", "lightrag"]
    argv += ["--retrieve-only", "--param", "dual_keywords=true", "--param", "keyword_weight=0.8"]
    assert main(argv) == 0
    human = capsys.readouterr().out
    assert "lightrag hybrid (offline keywords): entities matched on low-level keywords [Hale Mill]" in human
    assert main([*argv, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["metadata"]["retrieval_keywords"]["low_level"] == ["Hale Mill"]
    assert main([*argv[:-1], "1.5"]) != 0  # keyword_weight is a share: the params model checks it
