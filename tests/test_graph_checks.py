"""The graph's asset checks fail, with the right counts, on tables that break their invariants."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphunified_assets.defs.build import build_definitions
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.ops.indexing import index
from graphunified_query.core.indexes.report_points import point_count, report_points

CHECKS = {
    "entities": "entities_have_live_sources",
    "relationships": "relationships_are_anchored",
    "facts": "facts_have_live_sources",
    "communities": "community_hierarchy_is_consistent",
    "report_vectors": "vector_indexes_match_tables",
}
Rows = list[dict[str, Any]]


def _evaluate(resource: GraphUnifiedResource) -> dict[str, dg.AssetCheckEvaluation]:
    keys = [dg.AssetCheckKey(dg.AssetKey(asset), name) for asset, name in CHECKS.items()]
    defs = build_definitions(resource)
    job = dg.define_asset_job("graph_checks", selection=dg.AssetSelection.checks(*keys))
    result = (
        dg.Definitions.merge(defs, dg.Definitions(jobs=[job]))
        .resolve_job_def("graph_checks")
        .execute_in_process(instance=dg.DagsterInstance.get())
    )
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def _rewrite(path: Path, change: Callable[[Rows], Rows]) -> None:
    table = pq.read_table(path)
    pq.write_table(pa.Table.from_pylist(change(table.to_pylist()), schema=table.schema), path)


@pytest.mark.slow
def test_each_check_counts_what_is_broken(home: Path, input_dir: Path) -> None:
    resource = GraphUnifiedResource(home=str(home), input_dir=str(input_dir))
    index(resource, echo=lambda _: None)
    assert all(e.passed for e in _evaluate(resource).values())
    layout = resource.layout

    def entities(rows: Rows) -> Rows:
        rows[0]["text_unit_ids"] = []  # an orphan
        rows[1]["text_unit_ids"] = [*rows[1]["text_unit_ids"], "chunk-gone", "chunk-gone"]
        return rows

    def relationships(rows: Rows) -> Rows:
        rows[0]["source_id"] = "ent-gone"
        rows[1]["text_unit_ids"] = []
        rows[2]["text_unit_ids"] = ["chunk-gone"]
        return rows

    def facts(rows: Rows) -> Rows:
        rows[0]["chunk_ids"] = []
        rows[1]["chunk_ids"] = [*rows[1]["chunk_ids"], "chunk-gone", "chunk-gone-too"]
        return rows

    def communities(rows: Rows) -> Rows:
        rows[0]["parent"] = max(r["community"] for r in rows) + 1  # a parent that does not exist
        rows[-1]["size"] += 1
        return rows

    def reports(rows: Rows) -> Rows:
        report = next(r for r in rows if r["findings"] or r["summary"])
        if report["findings"]:  # one point fewer than its stored vectors
            report["findings"] = report["findings"][1:]
        else:
            report["summary"] = ""
        return rows

    for table, change in [
        ("entities", entities),
        ("relationships", relationships),
        ("facts", facts),
        ("communities", communities),
        ("community_reports", reports),
    ]:
        _rewrite(layout.table_path(table), change)
    found = _evaluate(resource)

    assert not any(e.passed for e in found.values())
    metadata = {name: {k: v.value for k, v in e.metadata.items()} for name, e in found.items()}
    entity_counts = metadata["entities_have_live_sources"]
    assert (entity_counts["orphans"], entity_counts["missing_text_units"]) == (1, 1)
    assert (
        metadata["relationships_are_anchored"]["missing_endpoints"],
        metadata["relationships_are_anchored"]["unsourced"],
        metadata["relationships_are_anchored"]["missing_text_units"],
    ) == (1, 1, 1)
    assert metadata["facts_have_live_sources"]["unsourced"] == 2
    problems = str(metadata["community_hierarchy_is_consistent"]["problems"])
    assert "does not list it" in problems and "members do not match the entities table" in problems
    assert metadata["vector_indexes_match_tables"]["mismatched"] == "report_point_vectors"


_TEXT = st.one_of(st.none(), st.text(alphabet=" ab\n", max_size=4))
_FINDINGS = st.one_of(
    st.none(), st.lists(st.fixed_dictionaries({"summary": _TEXT, "explanation": _TEXT}), max_size=3)
)


@given(st.lists(st.fixed_dictionaries({"summary": _TEXT, "findings": _FINDINGS}), max_size=6))
def test_point_count_counts_the_points_report_points_makes(reports: Rows) -> None:
    schema = pa.schema(
        [
            ("summary", pa.string()),
            ("findings", pa.list_(pa.struct([("summary", pa.string()), ("explanation", pa.string())]))),
        ]
    )
    table = pa.Table.from_pylist(reports, schema=schema)
    assert point_count(table) == sum(len(report_points(r)) for r in reports)
