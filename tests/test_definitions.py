"""The code location loads, and every asset carries what the UI and the pools rely on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg

from graphunified_assets.definitions import defs
from graphunified_assets.defs.catalog import FLOW, OWNERS

ROOT = Path(__file__).resolve().parent.parent


def test_definitions_load_with_assets_jobs_sensor_and_checks() -> None:
    repo = defs.get_repository_def()
    keys = {key.to_user_string() for key in repo.asset_graph.get_all_asset_keys()}
    assert {"documents", "chunks", "chunk_embeddings", "chunk_vectors"} <= keys
    assert repo.has_job("index_documents") and repo.has_job("refresh_indexes")
    assert repo.has_sensor_def("new_documents_sensor")
    # Declarative automation must run without anyone switching it on in the UI.
    automation = repo.get_sensor_def("global_tables_automation")
    assert automation.default_status == dg.DefaultSensorStatus.RUNNING
    checks = {key.name for key in repo.asset_graph.asset_check_keys}
    assert {"vectors_match_chunks", "one_embedding_model", "community_hierarchy_is_consistent"} <= checks
    # The periodic refresh exists but is opt-in: a full global rebuild costs time.
    schedule = repo.get_schedule_def("nightly_refresh")
    assert schedule.job_name == "refresh_indexes"
    assert schedule.default_status == dg.DefaultScheduleStatus.STOPPED


def test_every_asset_has_a_group_a_kind_a_description_and_an_owner() -> None:
    graph = defs.get_repository_def().asset_graph
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert node.group_name in FLOW, key
        assert node.description, key
        assert node.kinds, key
        assert list(node.owners) == OWNERS, key


def test_every_sensor_and_schedule_has_a_description_and_an_owner() -> None:
    repo = defs.get_repository_def()
    for definition in [*repo.sensor_defs, *repo.schedule_defs]:
        assert definition.description, definition.name
        owners = list(definition.owners or []) or [definition.metadata.get("owners").value]
        assert owners == OWNERS, definition.name


def test_groups_follow_the_data_flow_without_cycles() -> None:
    # Every dependency points forward (or within a group) in ingest → … → publish, so no two
    # groups depend on each other.
    graph = defs.get_repository_def().asset_graph
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        for parent in node.parent_keys:
            upstream = graph.get(parent).group_name
            assert FLOW.index(upstream) <= FLOW.index(node.group_name), f"{parent} → {key}"


def test_definitions_load_with_warnings_as_errors(tmp_path: Path) -> None:
    # A fresh interpreter: this process imported the definitions already (and pytest's settings
    # hide some warnings); any warning at load (beta, deprecation, ours or Dagster's) fails it.
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env |= {"GRAPHUNIFIED_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT)}
    env.pop("GRAPHUNIFIED_EXECUTOR", None)
    code = (
        "from graphunified_assets.definitions import defs\n"
        "repo = defs.get_repository_def()\n"
        "repo.get_all_jobs(); repo.asset_graph.get_all_asset_keys()\n"
    )
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]


def test_per_document_assets_share_partitions_and_batch_backfills() -> None:
    graph = defs.get_repository_def().asset_graph
    for name in ("documents", "chunks", "chunk_embeddings"):
        node = graph.get(dg.AssetKey(name))
        assert isinstance(node.partitions_def, dg.DynamicPartitionsDefinition)
        assert node.backfill_policy is not None and node.backfill_policy.max_partitions_per_run >= 1000
