"""Per-chunk extractions become resolved entities, weighted relationships and facts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graphunified_assets.lib.extraction.llm_summarizer import LLMSummarizer
from graphunified_assets.lib.extraction.plain_text import plain_text
from graphunified_assets.lib.graph import graph_elements, graph_rows
from graphunified_assets.lib.graph.graph_elements import build_graph_elements
from graphunified_query.core.providers.claude import ClaudeClient
from graphunified_query.core.settings.model import LLMSettings, Settings
from tests.fakes.anthropic_server import FakeAnthropicServer, text


def _entity(name: str, type_: str, description: str = "") -> dict[str, Any]:
    return {"name": name, "type": type_, "description": description or f"{name} is mentioned."}


ROWS = [
    {
        "chunk_id": "c1",
        "entities": [_entity("Thomas Hale", "PERSON"), _entity("Hale Mill", "ORGANIZATION")],
        "relationships": [
            {
                "source": "Thomas Hale",
                "target": "Hale Mill",
                "type": "FOUNDED",
                "description": "He founded it.",
                "strength": 2.0,
            }
        ],
        "facts": [{"subject": "Thomas Hale", "predicate": "founded", "object": "Hale Mill"}],
    },
    {
        "chunk_id": "c2",
        "entities": [
            _entity("Hale", "PERSON"),
            _entity("Hale Mill", "ORGANIZATION"),
            _entity("Jordan", "LOCATION"),
        ],
        "relationships": [
            {
                "source": "Hale Mill",
                "target": "Hale",
                "type": "RELATED_TO",
                "description": "Owned by Hale.",
                "strength": 1.0,
            },
            {
                "source": "Hale",
                "target": "Nobody Known",
                "type": "RELATED_TO",
                "description": "",
                "strength": 1.0,
            },
        ],
        "facts": [{"subject": "Thomas Hale", "predicate": "founded", "object": "Hale Mill"}],
    },
]


def test_mentions_resolve_and_edges_aggregate() -> None:
    elements = build_graph_elements(ROWS, summarize_above=4)
    entities = {row["title"]: row for row in elements.entities.to_pylist()}
    hale = entities["Thomas Hale"]
    assert hale["merged_from"] == ["Hale"]
    assert hale["text_unit_ids"] == ["c1", "c2"] and hale["frequency"] == 2
    assert entities["Hale Mill"]["type"] == "ORGANIZATION"
    (edge,) = elements.relationships.to_pylist()  # the edge to an unknown entity is dropped
    assert {edge["source"], edge["target"]} == {"Thomas Hale", "Hale Mill"}
    assert edge["weight"] == 3.0
    assert edge["text_unit_ids"] == ["c1", "c2"]
    assert edge["type"] == "FOUNDED"
    assert edge["combined_degree"] == 2
    assert hale["degree"] == 1 and entities["Jordan"]["degree"] == 0
    (fact,) = elements.facts.to_pylist()
    assert fact["text"] == "Thomas Hale founded Hale Mill"
    assert fact["chunk_ids"] == ["c1", "c2"]
    assert fact["subject_id"] == hale["id"] and fact["object_id"] == entities["Hale Mill"]["id"]


def test_ids_do_not_depend_on_input_order() -> None:
    forward = build_graph_elements(ROWS, summarize_above=4)
    backward = build_graph_elements(list(reversed(ROWS)), summarize_above=4)
    assert sorted(forward.entities.column("id").to_pylist()) == sorted(
        backward.entities.column("id").to_pylist()
    )
    assert forward.relationships.column("id").to_pylist() == backward.relationships.column("id").to_pylist()


def test_facts_that_read_alike_keep_their_own_ids() -> None:
    """Two triples whose words join into one text are two facts: ids hash the triple, so the
    table's ids stay unique (a duplicate stopped the 12.6K build's fact index)."""
    rows = [
        {**ROWS[0], "facts": [{"subject": "Rudolph", "predicate": "was", "object": "elected King"}]},
        {**ROWS[1], "facts": [{"subject": "Rudolph", "predicate": "was elected", "object": "King"}]},
    ]
    facts = build_graph_elements(rows, summarize_above=4).facts.to_pylist()
    assert [f["text"] for f in facts] == ["Rudolph was elected King"] * 2
    assert len({f["id"] for f in facts}) == 2
    assert sorted(f["chunk_ids"] for f in facts) == [["c1"], ["c2"]]


def test_markdown_markup_is_hidden_from_the_extractor() -> None:
    text = (
        "# Hale Mill\n\nFounded by [Thomas Hale](../people/thomas-hale.md) in **1862**.\n\n"
        "| a | b |\n|---|---|\n| x | y |\n"
    )
    plain = plain_text(text)
    assert "thomas-hale.md" not in plain and "**" not in plain and "|" not in plain
    assert "Hale Mill." in plain and "Founded by Thomas Hale in 1862." in plain
    assert "x, y." in plain


def test_many_fragments_are_summarized_by_the_given_summarizer() -> None:
    rows = [
        {"chunk_id": f"c{i}", "entities": [_entity("Hale Mill", "ORGANIZATION", f"Fact number {i}.")],
         "relationships": [], "facts": []}
        for i in range(6)
    ]  # fmt: skip
    calls: list[tuple[str, list[str]]] = []

    def summarize(name: str, fragments: list[str]) -> str:
        calls.append((name, fragments))
        return "One summary."

    elements = build_graph_elements(rows, summarize_above=4, summarize=summarize)
    assert elements.entities.column("description").to_pylist() == ["One summary."]
    assert calls == [("Hale Mill", [f"Fact number {i}." for i in range(6)])]
    few = build_graph_elements(rows[:3], summarize_above=4, summarize=summarize)
    assert few.entities.column("description").to_pylist() == [
        "Fact number 0.\nFact number 1.\nFact number 2."
    ]
    assert len(calls) == 1


def test_extractive_summaries_embed_all_their_sentences_in_one_batch() -> None:
    rows = [
        {"chunk_id": f"c{i}", "entities": [_entity(name, "ORGANIZATION", f"{name} recalls {topic}.")],
         "relationships": [], "facts": []}
        for i, topic in enumerate(("floods", "looms", "strikes", "fires", "owners", "wages"))
        for name in ("Hale Mill", "Whitlock Observatory", "Harrow Railway")
    ]  # fmt: skip
    calls: list[list[str]] = []

    def embed(texts: list[str]) -> np.ndarray:
        calls.append(texts)
        # Unrelated texts get unrelated unit vectors, so no two names look alike.
        vectors = np.array([np.random.default_rng(sum(map(ord, t))).normal(size=16) for t in texts])
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    elements = build_graph_elements(rows, summarize_above=4, embed=embed)
    descriptions = elements.entities.column("description").to_pylist()
    assert len(descriptions) == 3 and all(d.count("recalls") == 3 for d in descriptions)
    # One call resolves names, one embeds every summary sentence; none per entity.
    assert len(calls) == 2 and len(calls[1]) == 18


def test_a_document_runs_texts_cover_everything_the_graph_stage_embeds() -> None:
    # Spacing variants of a name, several sentences per description, an edge seen in many chunks.
    rows = [
        {
            "chunk_id": f"c{i}",
            "entities": [
                _entity("Hale Mill", "ORGANIZATION", f"Hale Mill recalls {topic}. It stood {i} years."),
                _entity("Thomas Hale", "PERSON", f"Thomas Hale knew {topic}."),
                _entity(" Ada  Whitlock" if i % 2 else "Ada Whitlock", "PERSON"),
                _entity("Harrow Railway", "ORGANIZATION"),
            ],
            "relationships": [
                {
                    "source": "Thomas Hale",
                    "target": "Hale Mill",
                    "type": "FOUNDED",
                    "description": f"He founded it after the {topic}. It grew.",
                    "strength": 1.0,
                }
            ],
            "facts": [],
        }
        for i, topic in enumerate(("floods", "looms", "strikes", "fires", "owners", "wages"))
    ]
    asked: set[str] = set()

    def embed(texts: list[str]) -> np.ndarray:
        asked.update(texts)
        vectors = np.array([np.random.default_rng(sum(map(ord, t))).normal(size=16) for t in texts])
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    build_graph_elements(rows, summarize_above=2, embed=embed)
    named, sentences = graph_elements.texts_to_embed(rows, sentences_too=True)
    names = {"Hale Mill", "Thomas Hale", "Ada Whitlock", "Harrow Railway"}
    assert set(named) == names
    assert {"It grew.", "Thomas Hale knew wages."} <= set(sentences)
    assert names | {"It grew.", "Thomas Hale knew wages."} <= asked
    assert asked <= set(named) | set(sentences)
    # With LLM summaries no sentence is ranked by its vector: the names alone.
    assert graph_elements.texts_to_embed(rows, sentences_too=False) == (named, [])


def test_claude_summarizer_over_the_wire(tmp_path: Path) -> None:
    with FakeAnthropicServer(lambda _: text("Hale Mill is a wool mill in Millbrook.")) as server:
        client = ClaudeClient(LLMSettings(base_url=server.base_url), Settings().prices, api_key="test-key")
        summary = LLMSummarizer(client)("Hale Mill", ["A wool mill.", "It stands in Millbrook."])
    assert summary == "Hale Mill is a wool mill in Millbrook."
    prompt = server.bodies[0]["messages"][0]["content"]
    assert '"Hale Mill"' in prompt and "- A wool mill." in prompt and "- It stands in Millbrook." in prompt


def test_a_short_description_is_joined_without_a_summary_call() -> None:
    fragments = ["A wool mill.", "It stands in Millbrook."]
    with FakeAnthropicServer(lambda _: text("Hale Mill is a wool mill in Millbrook.")) as server:
        client = ClaudeClient(LLMSettings(base_url=server.base_url), Settings().prices, api_key="test-key")
        budget = len("\n".join(fragments)) // 4
        assert LLMSummarizer(client, above_tokens=budget)("Hale Mill", fragments) == "\n".join(fragments)
        assert server.requests == []  # within the token budget: joined, no call
        longer = LLMSummarizer(client, above_tokens=budget - 1)("Hale Mill", fragments)
        assert longer == "Hale Mill is a wool mill in Millbrook." and len(server.requests) == 1


def test_each_table_is_made_as_the_sink_reads_it_a_slice_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The step writes each table while it is made: a table's rows are made only as the sink
    asks for its batches, and the next table only after the sink took the last one."""
    monkeypatch.setattr(graph_rows, "TABLE_SLICE", 2)
    rows = [
        {
            "chunk_id": f"c{i}",
            "entities": [_entity(f"Person Number{i}", "PERSON"), _entity(f"Place Number{i}", "LOCATION")],
            "relationships": [
                {
                    "source": f"Person Number{i}",
                    "target": f"Place Number{i}",
                    "type": "LIVED_IN",
                    "description": f"Lived there {i}.",
                    "strength": 1.0,
                }
            ],
            "facts": [],
        }
        for i in range(5)
    ]
    summarized: list[str] = []

    def summarize(name: str, fragments: list[str]) -> str:
        summarized.append(name)
        return "Summary."

    seen: list[tuple[str, int, int]] = []  # (table, rows it handed over so far, summaries made)

    def sink(name: str, schema: Any, batches: Any) -> None:
        handed = 0
        for batch in batches:
            handed += batch.num_rows
            seen.append((name, handed, len(summarized)))

    merges = graph_elements.write_graph_elements(rows, sink, summarize_above=0, summarize=summarize)
    assert merges["normalized"] == 0
    assert [(name, handed) for name, handed, _ in seen] == [
        *[("entities", n) for n in (2, 4, 6, 8, 10)],
        *[("relationships", n) for n in (2, 4, 5)],
    ]  # no facts: no batch
    # Every row is summarized as it is made: a batch handed over has made only its own rows.
    assert [made for _, _, made in seen[:5]] == [2, 4, 6, 8, 10]
    assert [made for _, _, made in seen[5:8]] == [12, 14, 15]
