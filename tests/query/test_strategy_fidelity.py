"""Each strategy does visibly what it exists for, on the sample corpus, offline and with Claude:
global search lists the collection's themes, local search shows its neighbourhood, the extractive
answer covers every part of a question."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from graphunified_query.core.providers.claude import ClaudeClient
from graphunified_query.core.settings.model import LLMSettings
from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.generation.extractive import question_parts
from graphunified_query.strategies.mixing import mix_shares
from graphunified_query.strategies.query_keywords import query_keywords
from graphunified_query.strategies.results import RetrievalResult
from tests.fakes.anthropic_server import FakeAnthropicServer, text, tool_use

CORPUS_QUESTIONS = (
    "What are the main topics of these documents?",
    "Summarize the key topics across all documents.",
)
_REPORT = re.compile(r"\[Source: (Community \d+ report: [^\]]+)\]")


@pytest.fixture(scope="module")
def sample(sample_home: Path) -> QueryEngine:
    return QueryEngine.open(sample_home, environ={})


@pytest.mark.parametrize("question", CORPUS_QUESTIONS)
def test_a_corpus_wide_question_lists_the_themes_offline(sample: QueryEngine, question: str) -> None:
    response = sample.ask(question)
    assert response.strategy == "graphrag_global"
    assert response.metadata["retrieval_selection"] == "corpus"
    reports = [c for c in response.contexts if c.kind == "community_report"]
    assert len({c.source for c in reports}) >= 3
    answer = response.answer or ""
    assert "don't know" not in answer and response.metadata["supported"]
    cited = set(_REPORT.findall(answer))
    assert len(cited) >= 2 and cited <= {c.source for c in reports}
    # each theme is also cited to the passages its report was written from
    assert all("(from " in line for line in answer.splitlines()[1:])


def test_corpus_wide_selection_takes_the_top_level_by_rating_then_size(sample: QueryEngine) -> None:
    retrieval, _ = sample.retrieve(CORPUS_QUESTIONS[0], "graphrag_global", top_k=20)
    reports = sample.snapshot.reports
    top = sorted(
        (r for r in reports if r["level"] == 0), key=lambda r: (-float(r["rank"]), -int(r["size"] or 0))
    )
    expected = [r["community"] for r in top[:5]]
    assert list(dict.fromkeys(c.metadata["community"] for c in retrieval.results)) == expected


def test_a_specific_question_keeps_similarity_selection(sample: QueryEngine) -> None:
    _, meta = sample.retrieve("What happened in the Great Flood of 1894?", "graphrag_global")
    assert meta["retrieval_selection"] == "similarity"


def test_a_corpus_wide_question_lists_the_themes_with_claude(sample: QueryEngine) -> None:
    def respond(body: dict[str, Any]) -> Any:
        if body.get("tools") and body["tools"][0]["name"] == "map_points":
            report = body["messages"][0]["content"]
            if "Hale Mill" in report:  # one report yields a point; the others "nothing relevant"
                return tool_use("map_points", {"points": [{"description": "A wool mill.", "score": 70}]})
            return tool_use("map_points", {"points": [{"description": "Nothing.", "score": 0}]})
        # The reduce: a model that cites the first three sources it was given.
        prompt = body["messages"][0]["content"]
        sources = list(dict.fromkeys(re.findall(r"\(Source: (Community [^)]+)\)", prompt)))[:3]
        return text("Themes: " + " ".join(f"a theme [Source: {s}]." for s in sources))

    with FakeAnthropicServer(respond) as server:
        llm = LLMSettings(base_url=server.base_url, max_retries=1, requests_per_minute=10_000)
        client = ClaudeClient(llm, sample.settings.prices, api_key="test-key", base_delay=0.001)
        claude = QueryEngine(sample.snapshot, sample.settings, sample.embedder, llm=client)
        response = claude.ask(CORPUS_QUESTIONS[0])
    assert response.metadata["retrieval_map"].startswith("anthropic:")  # the LLM's label
    reports = {c.source for c in response.contexts if c.kind == "community_report"}
    assert len(reports) >= 3 and "A wool mill." in [c.text for c in response.contexts]
    assert len(set(_REPORT.findall(response.answer or ""))) >= 2
    assert "don't know" not in (response.answer or "")


def _kinds_and_texts(engine: QueryEngine, **params: Any) -> list[tuple[str, str]]:
    retrieval, _ = engine.retrieve("Who is Thomas Hale?", "graphrag_local", top_k=10, **params)
    return [(r.kind, r.text) for r in retrieval.results]


def test_local_search_shows_relationships_and_its_neighbourhood(sample: QueryEngine) -> None:
    near, far = _kinds_and_texts(sample, max_hops=0), _kinds_and_texts(sample, max_hops=2)
    assert {k for k, _ in far} == {"chunk", "entity", "relationship"}
    assert near != far
    # The strategy's own contexts (link expansion, on by default, competes for the same places).
    retrieval, _ = sample.retrieve(
        "Who is Thomas Hale?", "graphrag_local", top_k=10, max_hops=2, link_expansion=False
    )
    assert any(r.metadata.get("hop", 0) > 0 for r in retrieval.results)


def test_local_search_proportions_are_configurable_and_checked(sample: QueryEngine) -> None:
    only_chunks = _kinds_and_texts(sample, chunk_prop=1.0, entity_prop=0.0, relationship_prop=0.0)
    assert {k for k, _ in only_chunks} == {"chunk"}
    with pytest.raises(ValueError, match="chunk_prop, entity_prop and relationship_prop"):
        _kinds_and_texts(sample, chunk_prop=0.8, entity_prop=0.3)


def test_the_demo_answer_names_the_founder_and_the_flood(sample: QueryEngine) -> None:
    response = sample.ask("Who founded the Hale Mill, and what happened to it in the flood of 1894?")
    answer = response.answer or ""
    assert "Thomas Hale" in answer and "1894" in answer and "[Source:" in answer
    assert '"the flood of 1894"' in response.metadata["router_reason"]  # the whole span is quoted


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        (
            "Who founded the Hale Mill, and what happened to it in the flood of 1894?",
            ["Who founded the Hale Mill", "what happened to it in the flood of 1894?"],
        ),
        ("When was the dam built? Who designed it?", ["When was the dam built", "Who designed it?"]),
        ("Who owned the mill, which stood on the river?", ["Who owned the mill, which stood on the river?"]),
        ("Who and what?", ["Who and what?"]),
    ],
)
def test_question_parts(question: str, parts: list[str]) -> None:
    assert question_parts(question) == parts


@pytest.mark.parametrize(
    ("question", "low", "high"),
    [
        ("Who is the director of film Jump for Glory?", ["Jump for Glory"], ["director", "film"]),
        (
            "What is the relationship between Thomas Hale and the River Harrow?",
            ["Thomas Hale", "River Harrow"],
            ["relationship"],
        ),
        ("What are the main themes of flood management?", [], ["main themes", "flood management"]),
    ],
)
def test_a_query_splits_into_low_and_high_level_keywords(
    question: str, low: list[str], high: list[str]
) -> None:
    assert query_keywords(question).as_dict() == {"low_level": low, "high_level": high}


def test_lightrag_matches_entities_on_names_and_relationships_on_themes(sample: QueryEngine) -> None:
    question = "How did the flood damage affect the mill owned by Thomas Hale?"
    local, local_meta = sample.retrieve(question, "lightrag", top_k=10, mode="local", dual_keywords=True)
    assert local_meta["retrieval_keywords"]["low_level"] == ["Thomas Hale"]
    unkeyed, _ = sample.retrieve(question, "lightrag", top_k=10, mode="local")  # off by default
    named = [r.entities for r in local.results if r.kind == "entity"]
    # matched on the name: Thomas Hale comes before what the whole question resembles
    assert ("Thomas Hale",) in named[:2] and named != [
        r.entities for r in unkeyed.results if r.kind == "entity"
    ]
    keyed, keyed_meta = sample.retrieve(question, "lightrag", top_k=10, mode="global", dual_keywords=True)
    whole, whole_meta = sample.retrieve(question, "lightrag", top_k=10, mode="global", dual_keywords=False)
    assert keyed_meta["retrieval_keywords"]["high_level"] and "retrieval_keywords" not in whole_meta
    assert [r.text for r in keyed.results] != [r.text for r in whole.results]
    # The thematic layer is global mode's default (it raised the sample's recall there).
    default, default_meta = sample.retrieve(question, "lightrag", top_k=10, mode="global")
    assert [r.text for r in default.results] == [r.text for r in keyed.results]
    assert default_meta["retrieval_keywords"] == keyed_meta["retrieval_keywords"]


def _results(kind: str, scores: list[float]) -> list[RetrievalResult]:
    return [RetrievalResult(text=f"{kind} {s}", score=s, source=kind, kind=kind) for s in scores]  # type: ignore[arg-type]


def test_mix_shares_gives_each_kind_its_share_and_passes_unused_slots_on() -> None:
    shares = {"chunk": 0.5, "entity": 0.25, "relationship": 0.25}
    groups = {
        "chunk": _results("chunk", [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]),
        "entity": _results("entity", [0.95, 0.94, 0.93, 0.92]),
        "relationship": _results("relationship", [0.1, 0.05, 0.01]),
    }
    kinds = [r.kind for r in mix_shares(groups, shares, 8)]
    # 8 slots: 4 chunks, 2 entities, 2 relationships, however low the relationships score
    assert kinds.count("chunk") == 4 and kinds.count("entity") == 2 and kinds.count("relationship") == 2
    groups["relationship"] = []  # their two slots go to the best of the rest: the entities
    kinds = [r.kind for r in mix_shares(groups, shares, 8)]
    assert kinds.count("entity") == 4 and kinds.count("chunk") == 4
