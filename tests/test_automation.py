"""Automation: global assets rebuild once per batch of documents; the periodic refresh schedule."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from dagster._core.definitions.automation_tick_evaluation_context import build_run_requests

from graphunified_assets.defs.build import build_definitions
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.defs.schedules import NIGHTLY_REFRESH, refresh_schedule
from graphunified_query.core.settings.model import AutomationSettings, SettingsError

GLOBAL_ASSETS = {
    "entities",
    "relationships",
    "facts",
    "graph",
    "communities",
    "community_reports",
    "chunk_vectors",
    "graph_vectors",
    "bm25_index",
    "ppr_graph",
    "report_vectors",
    "chunk_similarity",
}
# The per-document tables the global assets read.
INPUTS = ("chunks", "chunk_embeddings", "extractions")


def _runs(defs: dg.Definitions, result: dg.EvaluateAutomationConditionsResult) -> list[dg.RunRequest]:
    """The runs the automation sensor would launch for this evaluation (its own grouping code)."""
    subsets = [r.true_subset for r in result.results if not r.true_subset.is_empty]
    return list(build_run_requests(subsets, defs.resolve_asset_graph(), None, emit_backfills=False))


def test_hundred_new_documents_request_one_global_rebuild(tmp_path: Path) -> None:
    defs = build_definitions(GraphUnifiedResource(home=str(tmp_path), input_dir=str(tmp_path)))
    keys = [f"doc-{i:03d}.md" for i in range(100)]
    with dg.DagsterInstance.ephemeral() as instance:  # in memory: 300 events in a second
        idle = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        assert idle.total_requested == 0  # an empty home starts nothing
        instance.add_dynamic_partitions("documents", keys)
        # One event per partition, as a ranged run (or 100 runs) records them.
        for asset in INPUTS:
            for key in keys:
                instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=asset, partition=key))

        result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=idle.cursor)
        requested = {r.key.to_user_string() for r in result.results if not r.true_subset.is_empty}
        assert requested >= GLOBAL_ASSETS
        assert not requested & {"documents", *INPUTS}  # per-document work is the sensor's
        (run,) = _runs(defs, result)  # one run rebuilds every global asset
        assert {k.to_user_string() for k in run.asset_selection or []} >= GLOBAL_ASSETS

        # Nothing new: the next tick requests nothing (no rebuild loop).
        quiet = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=result.cursor)
        assert quiet.total_requested == 0

        # One more document changes: again one rebuild, not one per asset or per document.
        changed = dg.AssetMaterialization(asset_key="extractions", partition=keys[0])
        instance.report_runless_asset_event(changed)
        again = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=quiet.cursor)
        assert len(_runs(defs, again)) == 1


def test_refresh_schedule_follows_settings(tmp_path: Path) -> None:
    (tmp_path / "settings.yaml").write_text(
        "automation:\n  refresh_cron: '30 2 * * 1-5'\n  refresh_timezone: Europe/Berlin\n"
    )
    defs = build_definitions(GraphUnifiedResource(home=str(tmp_path), input_dir=str(tmp_path)))
    schedule = defs.get_repository_def().get_schedule_def(NIGHTLY_REFRESH)
    assert schedule.cron_schedule == "30 2 * * 1-5"
    assert schedule.execution_timezone == "Europe/Berlin"
    assert schedule.job_name == "refresh_indexes"
    assert schedule.default_status == dg.DefaultScheduleStatus.STOPPED  # opt-in: a rebuild costs time
    with dg.instance_for_test() as instance:
        data = schedule.evaluate_tick(dg.build_schedule_context(instance=instance))
    (request,) = data.run_requests or []
    assert request.tags["graphunified/trigger"] == "schedule"
    enabled = refresh_schedule(AutomationSettings(refresh_enabled=True), {})
    assert enabled.default_status == dg.DefaultScheduleStatus.RUNNING


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        (AutomationSettings(refresh_cron="every night"), "automation.refresh_cron"),
        (AutomationSettings(refresh_timezone="Mars/Olympus"), "automation.refresh_timezone"),
    ],
)
def test_bad_schedule_settings_are_refused_by_name(settings: AutomationSettings, named: str) -> None:
    with pytest.raises(SettingsError, match=named):
        refresh_schedule(settings, {})
