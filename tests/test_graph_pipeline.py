"""The graph stage through Dagster: reports follow their communities, deletion leaves no orphans."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.ops.indexing import index
from graphunified_query.core.indexes.bm25 import BM25Index
from graphunified_query.core.indexes.manifest import read_manifest
from graphunified_query.core.indexes.ppr_graph import PPRGraph
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.providers import count_tokens
from graphunified_query.core.tables import METADATA, TIMESTAMP
from tests.fakes.anthropic_server import FakeAnthropicServer, cooccurrence_extraction, tool_use
from tests.fakes.voyage_server import FakeVoyageServer

# Which names each fake extraction finds, and which of them it relates pairwise.
NAMES = {
    "Thomas Hale": "PERSON",
    "Hale Mill": "ORGANIZATION",
    "River Harrow": "LOCATION",
    "Eastfold": "LOCATION",
    "Ada Whitlock": "PERSON",
    "Whitlock Observatory": "ORGANIZATION",
    "Castle Hill": "LOCATION",
}


def _report(context: str) -> dict[str, Any]:
    first = next(line.split(",")[1] for line in context.splitlines()[2:] if line[:1].isdigit())
    return {
        "title": f"About {first}",
        "summary": f"A community around {first}.",
        "rating": 5,
        "rating_explanation": "Fixture.",
        "findings": [{"summary": first, "explanation": "From the fixture."}],
    }


def _respond(body: dict[str, Any]) -> Any:
    tool = body["tools"][0]["name"]
    content = body["messages"][0]["content"]
    if tool == "community_report":
        return tool_use(tool, _report(content))
    return tool_use(tool, cooccurrence_extraction(content, NAMES))


@pytest.fixture
def servers(home: Path) -> Iterator[tuple[FakeAnthropicServer, FakeVoyageServer]]:
    with FakeAnthropicServer(_respond) as claude, FakeVoyageServer() as voyage:
        (home / "settings.yaml").write_text(
            f"embedding:\n  provider: voyage\n  voyage_base_url: {voyage.base_url}\n"
            f"llm:\n  base_url: {claude.base_url}\n  max_gleanings: 0\n"
            "  summarize_above_tokens: 0\n"  # every community by the LLM, however small
        )
        yield claude, voyage


def _resource(home: Path, input_dir: Path) -> GraphUnifiedResource:
    return GraphUnifiedResource(
        home=str(home), input_dir=str(input_dir), voyage_api_key="test-key", anthropic_api_key="test-key"
    )


def _report_calls(claude: FakeAnthropicServer) -> list[str]:
    return [b["messages"][0]["content"] for b in claude.bodies if b["tools"][0]["name"] == "community_report"]


def test_adding_a_document_regenerates_only_the_reports_it_touched(
    home: Path, input_dir: Path, servers: tuple[FakeAnthropicServer, FakeVoyageServer]
) -> None:
    claude, _ = servers
    resource = _resource(home, input_dir)
    index(resource, echo=lambda _: None)
    layout = HomeLayout.at(home)
    first = pq.read_table(layout.table_path("community_reports")).to_pylist()
    assert first and len(_report_calls(claude)) == len(first)
    assert all(r["generator"] == "anthropic:claude-sonnet-4-5" for r in first)
    assert all(r["token_count"] == count_tokens(r["full_content"]) > 0 for r in first)
    _assert_the_architectures_columns(layout, input_dir)

    (input_dir / "observatory.md").write_text(
        "# Whitlock Observatory\n\nAda Whitlock founded the Whitlock Observatory on Castle Hill.\n"
    )
    before = len(_report_calls(claude))
    index(resource, echo=lambda _: None)
    new_calls = _report_calls(claude)[before:]
    assert len(new_calls) == 1 and "Ada Whitlock" in new_calls[0]  # only the new community's report
    second = pq.read_table(layout.table_path("community_reports")).to_pylist()
    assert len(second) == len(first) + 1
    assert {r["content_hash"] for r in first} <= {r["content_hash"] for r in second}
    # A reused report keeps the time it was written; the new one is stamped by this run.
    written = {r["content_hash"]: r["indexed_at"] for r in first}
    assert sorted(
        r["indexed_at"] > max(written.values()) for r in second if r["content_hash"] not in written
    ) == [True]
    assert all(r["indexed_at"] == written[r["content_hash"]] for r in second if r["content_hash"] in written)


def _assert_the_architectures_columns(layout: HomeLayout, input_dir: Path) -> None:
    """Every table the architecture lists has `indexed_at` on each row; documents carry their
    file's own modification time, its name, and their fields as a typed map."""
    tables = (
        "documents",
        "text_units",
        "entities",
        "relationships",
        "facts",
        "communities",
        "community_reports",
    )
    for name in tables:
        files = sorted(layout.partition_dir(name).glob("*.parquet")) or [layout.table_path(name)]
        for path in files:
            stamps = pq.read_table(path, columns=["indexed_at"]).column("indexed_at")
            assert stamps.type == TIMESTAMP and stamps.null_count == 0, path
    documents = pa.concat_tables(
        pq.read_table(p) for p in sorted(layout.partition_dir("documents").glob("*.parquet"))
    )
    assert documents.schema.field("metadata").type == METADATA
    for row in documents.to_pylist():
        source = input_dir / row["source_path"]
        assert row["created_at"] == datetime.fromtimestamp(source.stat().st_mtime, UTC), row["id"]
        assert row["filename"] == source.name


def test_deleting_a_document_leaves_no_orphans_and_the_checks_pass(
    home: Path, input_dir: Path, servers: tuple[FakeAnthropicServer, FakeVoyageServer]
) -> None:
    resource = _resource(home, input_dir)
    (input_dir / "observatory.md").write_text(
        "# Whitlock Observatory\n\nAda Whitlock founded the Whitlock Observatory on Castle Hill.\n"
    )
    index(resource, echo=lambda _: None)
    layout = HomeLayout.at(home)
    titles = set(pq.read_table(layout.table_path("entities")).column("title").to_pylist())
    assert {"Ada Whitlock", "Castle Hill"} <= titles
    (input_dir / "observatory.md").unlink()
    index(resource, echo=lambda _: None)

    entities = pq.read_table(layout.table_path("entities")).to_pylist()
    assert not {"Ada Whitlock", "Whitlock Observatory", "Castle Hill"} & {e["title"] for e in entities}
    chunk_ids = set(BM25Index.load(layout.index_path("bm25")).ids)
    assert all(set(e["text_unit_ids"]) <= chunk_ids for e in entities)
    entity_ids = {e["id"] for e in entities}
    for community in pq.read_table(layout.table_path("communities")).to_pylist():
        assert set(community["entity_ids"]) <= entity_ids
    reports = pq.read_table(layout.table_path("community_reports")).to_pylist()
    assert not any("Whitlock" in r["title"] for r in reports)
    graph = PPRGraph.load(layout.index_path("ppr_graph.npz"))
    assert set(graph.node_ids) == entity_ids | chunk_ids
    manifest = read_manifest(layout.index_path("ppr_graph.npz"))
    assert manifest is not None and set(manifest["built_from"]) == {
        "graph_edges",
        "entities",
        "chunk_vectors",
    }

    instance = dg.DagsterInstance.get()
    evaluated = 0
    for asset in ("entities", "relationships", "facts", "communities", "report_vectors"):
        for record in instance.event_log_storage.get_latest_asset_check_execution_by_key(
            [dg.AssetCheckKey(dg.AssetKey(asset), name) for name in _check_names(asset)]
        ).values():
            evaluation = record.event.dagster_event.event_specific_data  # type: ignore[union-attr]
            assert evaluation.passed, f"{asset}: {evaluation.check_name} failed: {evaluation.metadata}"
            evaluated += 1
    assert evaluated == 5


def _check_names(asset: str) -> list[str]:
    return {
        "entities": ["entities_have_live_sources"],
        "relationships": ["relationships_are_anchored"],
        "facts": ["facts_have_live_sources"],
        "communities": ["community_hierarchy_is_consistent"],
        "report_vectors": ["vector_indexes_match_tables"],
    }[asset]


def test_claude_relationship_keywords_reach_the_relationships_table_and_its_metadata(
    home: Path, input_dir: Path, servers: tuple[FakeAnthropicServer, FakeVoyageServer]
) -> None:
    claude, _ = servers
    index(_resource(home, input_dir), echo=lambda _: None)
    extraction = next(b for b in claude.bodies if b["tools"][0]["name"] == "record_extraction")
    schema = extraction["tools"][0]["input_schema"]["properties"]["relationships"]["items"]
    assert "keywords" in schema["required"] and "keywords" in extraction["system"][0]["text"]
    relationships = pq.read_table(HomeLayout.at(home).table_path("relationships")).to_pylist()
    assert relationships and all(r["keywords"] == ["shared mention"] for r in relationships)
    instance = dg.DagsterInstance.get()
    event = instance.get_latest_materialization_event(dg.AssetKey("relationships"))
    assert event is not None and event.asset_materialization is not None
    metadata = event.asset_materialization.metadata
    assert metadata["with_keywords"].value == len(relationships)
    assert "shared mention" in str(metadata["top_keywords"].value)


def test_refresh_rebuilds_the_global_stage_without_new_model_calls(
    home: Path, input_dir: Path, servers: tuple[FakeAnthropicServer, FakeVoyageServer]
) -> None:
    claude, _ = servers
    resource = _resource(home, input_dir)
    index(resource, echo=lambda _: None)
    calls = len(claude.bodies)
    assert index(resource, echo=lambda _: None).runs == 0  # nothing changed: nothing runs
    refreshed = index(resource, echo=lambda _: None, refresh=True)
    assert refreshed.runs == 1 and not refreshed.plan.pending
    assert len(claude.bodies) == calls  # same communities, same hashes: every report reused


def test_a_missing_vector_index_is_rebuilt_by_a_plain_index_run(
    home: Path, input_dir: Path, servers: tuple[FakeAnthropicServer, FakeVoyageServer]
) -> None:
    resource = _resource(home, input_dir)
    index(resource, echo=lambda _: None)
    lost = HomeLayout.at(home).lancedb / "entity_vectors.lance"
    shutil.rmtree(lost)  # what the query side's error tells the user to fix with `index`
    assert index(resource, echo=lambda _: None).runs == 1
    assert lost.exists()
