"""The code location loads, and every asset carries what the UI and the pools rely on."""

from __future__ import annotations

import dagster as dg

from graphunified_assets.definitions import defs


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


def test_every_asset_has_a_group_and_a_description() -> None:
    graph = defs.get_repository_def().asset_graph
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert node.group_name != "default", key
        assert node.description, key


def test_per_document_assets_share_partitions_and_batch_backfills() -> None:
    graph = defs.get_repository_def().asset_graph
    for name in ("documents", "chunks", "chunk_embeddings"):
        node = graph.get(dg.AssetKey(name))
        assert isinstance(node.partitions_def, dg.DynamicPartitionsDefinition)
        assert node.backfill_policy is not None and node.backfill_policy.max_partitions_per_run >= 1000
