"""A run carries its home: a step writes to the home its run was launched for, never to the home
of the process (a Celery worker, a step pod) that happens to execute it."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from graphunified_assets.defs.build import build_definitions
from graphunified_assets.defs.executors import executor_from_env
from graphunified_assets.defs.jobs import INDEX_DOCUMENTS
from graphunified_assets.defs.partitions import DOCUMENTS_PARTITIONS
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.defs.sensors import partition_range_tags
from graphunified_assets.ops.run_home import (
    HOME_ID_FILE,
    HOME_ID_TAG,
    HOME_TAG,
    WrongHome,
    celery_queue,
    home_id,
    home_tags,
    run_home,
)
from graphunified_query.core.artifacts import CHUNKS, DOCUMENTS, EXTRACTIONS
from graphunified_query.core.home_input import record_input
from graphunified_query.core.layout import HomeLayout

KEY = "mill.md"


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def _homes(tmp_path: Path, input_dir: Path) -> tuple[Path, Path]:
    """Home A (the worker's environment) and home B (the run's), B recording its input folder."""
    a, b = tmp_path / "home-a", tmp_path / "home-b"
    a.mkdir()
    b.mkdir()
    record_input(HomeLayout.at(b), input_dir)
    return a, b


def _run_on_worker_of(
    a: Path, tags: dict[str, str], input_dir: Path | None = None
) -> dg.ExecuteInProcessResult:
    """One document's index run executed by a code location loaded for home ``a``."""
    worker = build_definitions(
        GraphUnifiedResource(home=str(a), input_dir=str(input_dir) if input_dir else None)
    )
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(DOCUMENTS_PARTITIONS, [KEY])
        return worker.resolve_job_def(INDEX_DOCUMENTS).execute_in_process(
            instance=instance, tags={**partition_range_tags(KEY, KEY), **tags}, raise_on_error=False
        )


def test_a_run_for_home_b_on_a_worker_of_home_a_writes_to_b_only(tmp_path: Path, input_dir: Path) -> None:
    a, b = _homes(tmp_path, input_dir)
    before = _files(a)
    # The worker's environment names its own input folder too: it is home A's, not the run's.
    result = _run_on_worker_of(a, home_tags(HomeLayout.at(b)), input_dir=tmp_path)
    assert result.success, [e.message for e in result.all_events if e.is_failure]
    assert _files(a) == before  # nothing of A touched
    for table in (DOCUMENTS, CHUNKS, EXTRACTIONS):
        assert HomeLayout.at(b).partition_path(table, KEY).exists()


def test_a_step_on_another_home_at_the_runs_path_fails_before_writing(
    tmp_path: Path, input_dir: Path
) -> None:
    a, b = _homes(tmp_path, input_dir)
    tags = home_tags(HomeLayout.at(b))
    (b / HOME_ID_FILE).write_text("another-volume", encoding="utf-8")  # a different home mounted there
    before_a, before_b = _files(a), _files(b)
    result = _run_on_worker_of(a, tags)
    assert not result.success
    (failure,) = {e.message for e in result.all_events if e.is_step_failure} or {""}
    assert f"is for home {b.resolve()} (id {tags[HOME_ID_TAG]})" in (
        failure + "".join(str(e.event_specific_data) for e in result.all_events if e.is_failure)
    )
    assert _files(a) == before_a
    assert _files(b) == before_b


def test_an_untagged_run_of_another_homes_instance_is_refused(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for home in (a, b):
        home.mkdir()
        home_id(HomeLayout.at(home))
    with pytest.raises(WrongHome, match=f"instance belongs to home {b.resolve()}"):
        run_home({}, str(a), str(b / "dagster"))
    # Its own instance, or one outside any home (tests, a k8s DAGSTER_HOME): the configured home.
    assert run_home({}, str(a), str(a / "dagster")).home == a.resolve()
    assert run_home({}, str(a), str(tmp_path / "elsewhere")).home == a.resolve()
    assert run_home({HOME_TAG: str(b)}, str(a), None).home == b.resolve()


def test_home_ids_are_made_once_and_queues_differ_per_home(tmp_path: Path) -> None:
    layout = HomeLayout.at(tmp_path / "h")
    assert home_id(layout) is None  # no folder: nothing made
    layout.home.mkdir()
    first = home_id(layout)
    assert first is not None and home_id(layout) == first and home_id(layout, create=False) == first
    assert celery_queue(tmp_path / "h") == celery_queue(str(tmp_path / "h" / "."))
    assert celery_queue(tmp_path / "h") != celery_queue(tmp_path / "g")


@dg.op
def _step() -> None:
    """Nothing: the test is about the run's tags, set before any step."""


def tiny_job(home: str) -> dg.JobDefinition:
    """A one-step job with the code location's executor for ``home`` (reconstructable by name)."""
    return dg.JobDefinition(
        graph_def=dg.GraphDefinition(name="tiny", node_defs=[_step]),
        executor_def=executor_from_env({}, home=HomeLayout.at(home)),
    )


def test_a_run_launched_without_its_home_is_tagged_with_the_code_locations_before_its_steps(
    tmp_path: Path,
) -> None:
    # As the UI's Materialize and asset backfills launch runs: no tags but Dagster's own.
    home = tmp_path / "home"
    home.mkdir()
    job = dg.build_reconstructable_job(__name__, tiny_job.__name__, (str(home),))
    other = HomeLayout.at(tmp_path / "other")
    with dg.instance_for_test() as instance:
        with dg.execute_job(job, instance=instance) as untagged:
            assert untagged.success
        with dg.execute_job(job, instance=instance, tags={HOME_TAG: str(other.home)}) as tagged:
            assert tagged.success
        stamped = instance.get_run_by_id(untagged.run_id)
        kept = instance.get_run_by_id(tagged.run_id)
    assert stamped is not None and kept is not None
    assert stamped.tags[HOME_TAG] == str(home.resolve())
    assert stamped.tags[HOME_ID_TAG] == home_id(HomeLayout.at(home), create=False)
    assert kept.tags[HOME_TAG] == str(other.home)  # a launcher's tag is never replaced
