"""The new-documents sensor adds, re-runs and deletes exactly the partitions that changed."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.defs.sensors import DOWNSTREAM_TABLES, new_documents_sensor
from graphunified_assets.lib.ingest.index_state import IndexState
from graphunified_assets.lib.ingest.sources import scan_input


def _tick(instance: dg.DagsterInstance, resource: GraphUnifiedResource) -> dg.SensorResult:
    context = dg.build_sensor_context(instance=instance, resources={"graphunified": resource})
    result = new_documents_sensor(context)
    assert isinstance(result, dg.SensorResult)
    return result


def test_sensor_requests_only_new_and_changed_documents(input_dir: Path, home: Path) -> None:
    resource = GraphUnifiedResource(home=str(home), input_dir=str(input_dir))
    with dg.instance_for_test() as instance:
        first = _tick(instance, resource)
        (add,) = first.dynamic_partitions_requests
        assert isinstance(add, dg.AddDynamicPartitionsRequest)
        assert sorted(add.partition_keys) == ["flood.txt", "mill.md", "people/thomas-hale.md"]
        (run,) = first.run_requests
        assert run.tags["dagster/asset_partition_range_start"] == "flood.txt"
        assert run.tags["dagster/asset_partition_range_end"] == "people/thomas-hale.md"
        assert run.run_config == {"loggers": {"console": {}}}  # console logs (JSON when configured)

        # Pretend the run finished: partitions exist and the documents are indexed.
        instance.add_dynamic_partitions("documents", list(add.partition_keys))
        state = IndexState(resource.layout.index_state)
        hashes = {k: d.content_hash for k, d in scan_input(input_dir).documents.items()}
        state.mark_indexed(hashes)
        for key in hashes:  # every stage's file written in order
            for table in ("documents", *DOWNSTREAM_TABLES):
                path = resource.layout.partition_path(table, key)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(b"")

        (input_dir / "mill.md").write_text("# Hale Mill\n\nRebuilt in 1895.\n")
        (input_dir / "flood.txt").unlink()
        second = _tick(instance, resource)
        requested = {r.job_name: r for r in second.run_requests}
        assert requested["index_documents"].tags["dagster/asset_partition_range_start"] == "mill.md"
        assert requested["index_documents"].tags["dagster/asset_partition_range_end"] == "mill.md"
        assert "refresh_indexes" in requested
        (delete,) = second.dynamic_partitions_requests
        assert isinstance(delete, dg.DeleteDynamicPartitionsRequest)
        assert list(delete.partition_keys) == ["flood.txt"]

        # The same pending work on the next tick yields the same run key: no duplicate run.
        third = _tick(instance, resource)
        keys = {r.run_key for r in third.run_requests}
        assert requested["index_documents"].run_key in keys


def test_a_large_update_fans_out_into_runs_of_at_most_n_documents(input_dir: Path, home: Path) -> None:
    settings = home / "settings.yaml"
    settings.write_text("automation:\n  max_documents_per_run: 2\n")
    resource = GraphUnifiedResource(home=str(home), input_dir=str(input_dir))
    with dg.instance_for_test() as instance:
        runs = _tick(instance, resource).run_requests
    start, end = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"
    ranges = [(r.tags[start], r.tags[end]) for r in runs]
    assert ranges == [("flood.txt", "mill.md"), ("people/thomas-hale.md", "people/thomas-hale.md")]
    assert len({r.run_key for r in runs}) == 2
