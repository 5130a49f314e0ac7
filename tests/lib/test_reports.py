"""Community reports: extractive offline, Claude with repair, and reuse by content hash."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any, cast

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphunified_assets.lib.reports.build import FALLBACK_SUFFIX, build_reports, rows_by_id
from graphunified_assets.lib.reports.context import community_context
from graphunified_assets.lib.reports.extractive import ExtractiveReporter
from graphunified_assets.lib.reports.llm_reporter import LLMReporter, ReportError
from graphunified_query.core.providers.claude import ClaudeClient
from graphunified_query.core.settings.model import LLMSettings, Settings
from graphunified_query.core.tables import (
    COMMUNITIES_SCHEMA,
    COMMUNITY_REPORTS_SCHEMA,
    ENTITIES_SCHEMA,
    RELATIONSHIPS_SCHEMA,
)
from tests.fakes.anthropic_server import FakeAnthropicServer, text, tool_use

GOOD = {
    "title": "Hale Mill and the Hale family",
    "summary": "Thomas Hale founded the Hale Mill in 1862.",
    "rating": 7.5,
    "rating_explanation": "The mill recurs across the corpus.",
    "findings": [{"summary": "Founding", "explanation": "Thomas Hale founded the mill in 1862."}],
}

ENTITIES = pa.Table.from_pylist(
    [
        {
            "id": "e1",
            "human_readable_id": 1,
            "title": "Hale Mill",
            "type": "ORGANIZATION",
            "description": "A wool mill in Millbrook.",
            "text_unit_ids": ["c1"],
            "frequency": 1,
            "degree": 2,
            "merged_from": [],
        },
        {
            "id": "e2",
            "human_readable_id": 2,
            "title": "Thomas Hale",
            "type": "PERSON",
            "description": "Founder of the Hale Mill.",
            "text_unit_ids": ["c1"],
            "frequency": 1,
            "degree": 1,
            "merged_from": [],
        },
        {
            "id": "e3",
            "human_readable_id": 3,
            "title": "1862",
            "type": "DATE",
            "description": "",
            "text_unit_ids": ["c1"],
            "frequency": 1,
            "degree": 1,
            "merged_from": [],
        },
        {
            "id": "e4",
            "human_readable_id": 4,
            "title": "Kestrel Dam",
            "type": "LOCATION",
            "description": "A dam above Eastfold.",
            "text_unit_ids": ["c2"],
            "frequency": 1,
            "degree": 1,
            "merged_from": [],
        },
        {
            "id": "e5",
            "human_readable_id": 5,
            "title": "Arthur Penrose",
            "type": "PERSON",
            "description": "Engineer of the Kestrel Dam.",
            "text_unit_ids": ["c2"],
            "frequency": 1,
            "degree": 1,
            "merged_from": [],
        },
    ],
    schema=ENTITIES_SCHEMA,
)


def _relationship(rid: str, source: str, target: str, description: str) -> dict[str, Any]:
    titles = {r["id"]: r["title"] for r in ENTITIES.to_pylist()}
    return {
        "id": rid,
        "human_readable_id": 0,
        "source": titles[source],
        "target": titles[target],
        "description": description,
        "weight": 1.0,
        "combined_degree": 3,
        "text_unit_ids": ["c1"],
        "source_id": source,
        "target_id": target,
        "type": "RELATED",
    }


RELATIONSHIPS = pa.Table.from_pylist(
    [
        _relationship("r1", "e2", "e1", "Thomas Hale founded the Hale Mill."),
        _relationship("r2", "e1", "e3", "The mill opened in 1862."),
        _relationship("r3", "e5", "e4", "Arthur Penrose designed the Kestrel Dam."),
    ],
    schema=RELATIONSHIPS_SCHEMA,
)


def _communities(mill_description_hash: str = "h-mill") -> pa.Table:
    base = {"human_readable_id": 0, "parent": -1, "children": [], "text_unit_ids": [], "period": "2026-11-23"}
    return pa.Table.from_pylist(
        [
            {
                **base,
                "id": "k0",
                "community": 0,
                "level": 0,
                "title": "Community 0",
                "size": 3,
                "entity_ids": ["e1", "e2", "e3"],
                "relationship_ids": ["r1", "r2"],
                "content_hash": mill_description_hash,
            },
            {
                **base,
                "id": "k1",
                "community": 1,
                "level": 0,
                "title": "Community 1",
                "size": 2,
                "entity_ids": ["e4", "e5"],
                "relationship_ids": ["r3"],
                "content_hash": "h-dam",
            },
        ],
        schema=COMMUNITIES_SCHEMA,
    )


CHUNKS = {"c1": "Mills were common. The Hale Mill was founded in 1862 by Thomas Hale.", "c2": "Dams too."}


@pytest.fixture
def claude() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(lambda _: tool_use("community_report", GOOD)) as server:
        yield server


def _client(server: FakeAnthropicServer) -> ClaudeClient:
    settings = LLMSettings(base_url=server.base_url, max_retries=1, requests_per_minute=10_000)
    return ClaudeClient(settings, Settings().prices, api_key="test-key", base_delay=0.001)


def _inputs(reporter: Any = None) -> dict[str, Any]:
    """build_reports' tables and reporters: ``reporter`` (extractive by default), extractive fallback."""
    fallback = ExtractiveReporter(largest_community=3)
    return {
        "entities": ENTITIES,
        "relationships": RELATIONSHIPS,
        "reporter": reporter or fallback,
        "fallback": fallback,
    }


def test_extractive_report_names_central_entities_and_source_sentences() -> None:
    context = community_context(
        ["e1", "e2", "e3"],
        ["r1", "r2"],
        entities={r["id"]: r for r in ENTITIES.to_pylist()},
        relationships={r["id"]: r for r in RELATIONSHIPS.to_pylist()},
        sentences_of={"e1": ["The Hale Mill was founded in 1862 by Thomas Hale."]},
    )
    report = ExtractiveReporter(largest_community=3)(context, 3)
    assert report.title == "Hale Mill and Thomas Hale"  # most central first; the date names nothing
    assert "wool mill" in report.summary
    assert any(f.summary == "Thomas Hale — Hale Mill" for f in report.findings)
    assert report.rating == 10.0
    assert report.markdown().startswith("# Hale Mill and Thomas Hale\n")


def test_claude_report_is_validated_and_sent_with_a_cached_prompt(claude: FakeAnthropicServer) -> None:
    build = build_reports(
        _communities(),
        entities=ENTITIES,
        relationships=RELATIONSHIPS,
        reporter=LLMReporter(_client(claude)),
        fallback=ExtractiveReporter(largest_community=3),
        chunk_text=CHUNKS.get,
    )
    assert build.generated == 2 and build.failures == []
    rows = build.table.to_pylist()
    assert build.table.schema == COMMUNITY_REPORTS_SCHEMA
    assert rows[0]["title"] == GOOD["title"] and rows[0]["rank"] == 7.5
    assert rows[0]["findings"] == [
        {"explanation": "Thomas Hale founded the mill in 1862.", "summary": "Founding"}
    ]
    assert rows[0]["generator"] == "anthropic:claude-sonnet-4-5" and len(rows[0]["id"]) == 128
    body = next(b for b in claude.bodies if "Hale Mill" in b["messages"][0]["content"])
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["tool_choice"] == {"type": "tool", "name": "community_report"}
    assert "Thomas Hale,PERSON,Founder of the Hale Mill." in body["messages"][0]["content"]
    assert "The Hale Mill was founded in 1862 by Thomas Hale." in body["messages"][0]["content"]


def test_malformed_report_is_repaired_with_the_validation_error() -> None:
    malformed = {"title": "Hale Mill", "summary": "About the mill.", "rating": "very high", "findings": []}
    with FakeAnthropicServer() as server:
        server.enqueue(tool_use("community_report", malformed))
        server.enqueue(tool_use("community_report", GOOD))
        context = community_context(["e1"], [], entities={"e1": ENTITIES.to_pylist()[0]}, relationships={})
        report = LLMReporter(_client(server))(context, 1)
        assert report.title == GOOD["title"]
        repair = server.bodies[1]["messages"]
        assert repair[1]["role"] == "assistant"
        result = repair[2]["content"][0]
        assert result["type"] == "tool_result" and result["is_error"] is True
        assert "rating" in result["content"] and "findings" in result["content"]


def test_a_report_still_invalid_after_the_repair_is_an_error() -> None:
    with FakeAnthropicServer() as server:
        server.enqueue(text("I cannot help with that."))
        server.enqueue(text("Still no tool call."))
        with pytest.raises(ReportError, match="no community_report tool call"):
            LLMReporter(_client(server))(community_context([], [], entities={}, relationships={}), 0)
        assert len(server.requests) == 2


def test_unchanged_communities_reuse_their_reports(claude: FakeAnthropicServer) -> None:
    common = _inputs(LLMReporter(_client(claude)))
    fallback = common["fallback"]
    first = build_reports(_communities(), **common)
    assert len(claude.requests) == 2
    again = build_reports(_communities(), previous=first.table, **common)
    assert (again.generated, again.reused, len(claude.requests)) == (0, 2, 2)
    assert again.table.equals(first.table)
    changed = build_reports(_communities("h-mill-2"), previous=first.table, **common)
    assert (changed.generated, changed.reused, len(claude.requests)) == (1, 1, 3)
    # Another generator's reports are not reused: switching to Claude regenerates extractive ones.
    offline = build_reports(_communities(), **{**common, "reporter": fallback})
    switched = build_reports(_communities(), previous=offline.table, **common)
    assert switched.reused == 0


class _Unread:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the table was read ({name})")


def test_an_update_decodes_only_the_members_of_communities_it_rewrites() -> None:
    """Reused reports need no entity or relationship rows: an update of the 12.6K home spent
    7.5 s decoding all 317K relationships to write a handful of reports."""
    assert rows_by_id(RELATIONSHIPS, set()) == {}
    rows = rows_by_id(ENTITIES, {"e2", "e-none"})
    assert set(rows) == {"e2"} and rows["e2"] == next(r for r in ENTITIES.to_pylist() if r["id"] == "e2")
    common = _inputs()
    first = build_reports(_communities(), **common)
    # Unchanged communities: the entity and relationship tables are not touched at all.
    unread = cast(pa.Table, _Unread())
    again = build_reports(
        _communities(), previous=first.table, **{**common, "entities": unread, "relationships": unread}
    )
    assert again.table.equals(first.table) and again.generated == 0
    # One changed community: the same report as when every row was decoded.
    changed = build_reports(_communities("h-mill-2"), previous=first.table, **common)
    assert changed.generated == 1
    assert changed.table.equals(build_reports(_communities("h-mill-2"), **common).table)


def test_reports_written_under_an_older_schema_are_reused_as_the_current_one() -> None:
    """Reused reports are taken from the previous table column by column: one written before
    token_count existed, with its findings' fields in another order, still gives today's rows."""
    common = _inputs()
    first = build_reports(_communities(), **common).table
    finding = pa.struct([("summary", pa.string()), ("explanation", pa.string())])
    older = first.drop_columns(["token_count"])
    older = older.set_column(
        older.schema.get_field_index("findings"),
        pa.field("findings", pa.list_(finding)),
        pa.array(older.column("findings").to_pylist(), pa.list_(finding)),
    )
    again = build_reports(_communities(), previous=older, **common)
    assert again.reused == first.num_rows and again.table.equals(first)


def test_a_failing_report_falls_back_without_losing_the_others() -> None:
    def responder(body: dict[str, Any]) -> Any:
        if "Kestrel" in body["messages"][0]["content"]:
            return text("no tool call")
        return tool_use("community_report", GOOD)

    with FakeAnthropicServer(responder) as server:
        fallback = ExtractiveReporter(largest_community=3)
        build = build_reports(
            _communities(),
            entities=ENTITIES,
            relationships=RELATIONSHIPS,
            reporter=LLMReporter(_client(server)),
            fallback=fallback,
            concurrency=2,
        )
    rows = {r["community"]: r for r in build.table.to_pylist()}
    assert rows[0]["title"] == GOOD["title"]
    assert rows[1]["generator"] == "extractive" + FALLBACK_SUFFIX and "Kestrel Dam" in rows[1]["title"]
    assert len(build.failures) == 1 and "Community 1" in build.failures[0]
    # The next run tries Claude again for the fallback only; the good report is reused.
    with FakeAnthropicServer(lambda _: tool_use("community_report", GOOD)) as server:
        again = build_reports(
            _communities(),
            entities=ENTITIES,
            relationships=RELATIONSHIPS,
            reporter=LLMReporter(_client(server)),
            fallback=fallback,
            previous=build.table,
        )
        assert (again.generated, again.reused, len(server.requests)) == (1, 1, 1)
    assert {r["generator"] for r in again.table.to_pylist()} == {"anthropic:claude-sonnet-4-5"}


def test_a_community_with_little_to_condense_gets_the_extractive_report(claude: FakeAnthropicServer) -> None:
    # One LLM report per community, most of them a few entities, was 1.3-1.5 calls per chunk.
    common = {**_inputs(LLMReporter(_client(claude))), "chunk_text": CHUNKS.get}
    build_reports(_communities(), **common)  # 0: every community by the LLM
    shorter, longer = sorted(len(body["messages"][0]["content"]) // 4 for body in claude.bodies)
    assert shorter < longer
    build = build_reports(_communities(), condense_above_tokens=shorter, **common)
    assert len(claude.requests) == 3  # only the longer context went to the LLM
    assert sorted(r["generator"] for r in build.table.to_pylist()) == [
        "anthropic:claude-sonnet-4-5",
        "extractive",
    ]
    build_reports(_communities(), condense_above_tokens=longer, **common)
    assert len(claude.requests) == 3  # nothing longer than the budget: no call at all


def test_report_ids_are_unique_when_communities_share_a_report(claude: FakeAnthropicServer) -> None:
    """A parent whose one child holds all its members: the same members, content and report at
    two levels (and Claude, or its cache, answering one context alike). Ids used to repeat."""
    [mill, dam] = _communities().to_pylist()
    parent = {**mill, "id": "k2", "community": 2, "level": 1, "children": [0]}
    communities = pa.Table.from_pylist([mill, dam, parent], schema=COMMUNITIES_SCHEMA)
    common = _inputs(LLMReporter(_client(claude)))
    first = build_reports(communities, **common)
    ids = first.table.column("id").to_pylist()
    assert len(set(ids)) == 3
    again = build_reports(communities, previous=first.table, **common)
    assert again.reused == 3 and again.table.column("id").to_pylist() == ids  # stable


def _numbered(hashes: list[str], numbers: list[int]) -> pa.Table:
    """Communities alternating the two of `_communities`, with these content hashes and numbers."""
    templates = _communities().to_pylist()
    rows = [
        {**templates[i % 2], "id": f"k{i}", "community": n, "human_readable_id": n, "content_hash": h}
        for i, (h, n) in enumerate(zip(hashes, numbers, strict=True))
    ]
    return pa.Table.from_pylist(rows, schema=COMMUNITIES_SCHEMA)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=9), st.randoms(use_true_random=False))
def test_reused_and_written_reports_come_out_in_the_communities_order_as_a_full_build(
    changed: list[bool], rng: random.Random
) -> None:
    """Some communities changed and every one renumbered: reusing the unchanged reports gives the
    table a build with nothing to reuse gives."""
    common = _inputs()
    count = len(changed)
    first = build_reports(_numbered([f"h{i}" for i in range(count)], list(range(count))), **common)
    numbers = rng.sample(range(100), count)
    hashes = [f"h{i}-new" if c else f"h{i}" for i, c in enumerate(changed)]
    update = build_reports(_numbered(hashes, numbers), previous=first.table, **common)
    assert (update.generated, update.reused) == (sum(changed), count - sum(changed))
    assert update.table.equals(build_reports(_numbered(hashes, numbers), **common).table)
