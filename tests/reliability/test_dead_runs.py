"""A run whose process was killed is marked failed by the next `index`, and its pool slot freed.

Before: `kill -9` of `dagster dev` during a sensor run left the run STARTED for ever, holding the
home's only run slot and its `llm` pool slot; `index` refused ("Dagster run ... is updating")
until every run was cancelled by hand. Here a real run is started in a child process, claims the
`llm` pool, and the child is killed with SIGKILL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import dagster as dg
import pytest

from graphunified_assets.cli.main import main
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.ops.home_lock import HomeLocked, refuse_foreign_runs
from graphunified_assets.ops.indexing import prepare_instance

CHILD = textwrap.dedent(
    """
    import time
    import dagster as dg

    @dg.op(pool="llm")
    def wait() -> None:
        time.sleep(600)

    @dg.job
    def sleepy() -> None:
        wait()

    sleepy.execute_in_process(instance=dg.DagsterInstance.get())
    """
)


def _instance(home: Path) -> dg.DagsterInstance:
    return prepare_instance(GraphUnifiedResource(home=str(home), input_dir=str(home / "input")))


def _started_run(instance: dg.DagsterInstance, child: subprocess.Popen[bytes]) -> dg.DagsterRun:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert child.poll() is None, "the child run ended by itself"
        runs = instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
        if runs and instance.event_log_storage.get_concurrency_run_ids():
            return runs[0]
        time.sleep(0.5)
    raise AssertionError("the child's run did not start within 120 s")


def test_a_killed_run_is_failed_and_its_pool_slot_freed(home: Path) -> None:
    instance = _instance(home)
    environ = {**os.environ, "DAGSTER_HOME": str(home / "dagster")}
    child = subprocess.Popen([sys.executable, "-c", CHILD], env=environ)
    try:
        run = _started_run(instance, child)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    assert run.run_id in instance.event_log_storage.get_concurrency_run_ids()
    assert refuse_foreign_runs(instance, home) == [run.run_id]  # refused with HomeLocked before
    assert instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.FAILURE
    assert run.run_id not in instance.event_log_storage.get_concurrency_run_ids()


def test_index_recovers_by_itself_after_a_killed_run(
    home: Path, input_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    instance = _instance(home)
    environ = {**os.environ, "DAGSTER_HOME": str(home / "dagster")}
    child = subprocess.Popen([sys.executable, "-c", CHILD], env=environ)
    try:
        run = _started_run(instance, child)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    assert main(["index", "--input", str(input_dir), "--home", str(home)]) == 0  # no hand, no hang
    assert f"marked Dagster run {run.run_id} as failed" in capsys.readouterr().out
    assert "3 documents searchable" in _status_out(home, input_dir, capsys)


def _status_out(home: Path, input_dir: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["status", "--home", str(home), "--input", str(input_dir)]) == 0
    return capsys.readouterr().out


def test_a_run_queued_with_no_daemon_is_failed_and_a_live_one_still_refuses(home: Path) -> None:
    instance = _instance(home)

    # NOT_STARTED: a QUEUED run needs a code location origin; both take the same path (dead_runs.QUEUED).
    queued = instance.add_run(
        dg.DagsterRun(job_name="index_documents", status=dg.DagsterRunStatus.NOT_STARTED)
    )
    assert refuse_foreign_runs(instance, home) == [queued.run_id]
    assert instance.get_run_by_id(queued.run_id).status == dg.DagsterRunStatus.FAILURE
    environ = {**os.environ, "DAGSTER_HOME": str(home / "dagster")}
    child = subprocess.Popen([sys.executable, "-c", CHILD], env=environ)
    try:
        _started_run(instance, child)
        with pytest.raises(HomeLocked, match="is updating"):  # alive: still waited for
            refuse_foreign_runs(instance, home)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()


def test_a_home_made_before_run_monitoring_gains_it_and_keeps_its_own_settings(home: Path) -> None:
    config = home / "dagster" / "dagster.yaml"
    config.parent.mkdir(parents=True)
    mine = "telemetry:\n  enabled: false\nconcurrency:\n  runs:\n    max_concurrent_runs: 2  # mine\n"
    config.write_text(mine, encoding="utf-8")
    instance = _instance(home)
    _instance(home)  # a second `index`: added once
    text = config.read_text(encoding="utf-8")
    assert text.startswith(mine) and text.count("run_monitoring:") == 1
    assert instance.run_monitoring_enabled and instance.get_settings("run_monitoring")["enabled"] is True
