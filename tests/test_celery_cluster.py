"""The Celery deployment, run for real: Redis as broker, PostgreSQL as run storage, and
`graphunified worker` processes on 127.0.0.1, building the sample through them as `index` does.

One build serves every check (the servers, the workers and `dagster dev` are shared): home B is
built by its two workers while one of them has its step process killed mid-step, and home A, the
in-process reference, is built at the same time with a worker of its own listening on the same
broker. Then `dagster dev` for B: a file dropped in B's input folder is indexed by the sensor's run
and the automatic refresh run, both on B's workers, and a run launched as the UI's "Materialize"
button does carries B's home. A's files and A's worker are untouched by all of B's runs.

Runs by default where Debian's redis-server and PostgreSQL are installed (`make deploy-deps`).
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from graphunified_assets.defs.jobs import INDEX_DOCUMENTS
from graphunified_assets.ops.run_home import HOME_ID_TAG, HOME_TAG
from tests.cluster_services import (
    Cluster,
    ask,
    missing_services,
    postgres_server,
    redis_server,
    retrieved_contexts,
    started,
    tables,
)
from tests.conftest import SAMPLE_DOCS
from tests.ui.dagster_dev import FINISHED, LOCATION, DagsterDev, dagster_dev, wait

ROOT = Path(__file__).resolve().parent.parent
QUESTION = "Who founded the Hale Mill?"
NEW_DOCUMENT = "lighthouse.md"
NEW_TEXT = "# Carrow Lighthouse\n\nThe Carrow Lighthouse was built by Ada Penrose in 1871 on Gull Point.\n"
NEW_QUESTION = "Who built the Carrow Lighthouse?"

pytestmark = [
    pytest.mark.skipif(missing_services() is not None, reason=missing_services() or ""),
    pytest.mark.first,
]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("cluster")
    with started(redis_server(root / "redis"), postgres_server()) as (broker, postgres):
        cluster = Cluster(broker, postgres, root, [])
        try:
            yield cluster
        finally:
            cluster.stop_workers()


def _copy_sample(folder: Path) -> Path:
    for name, text in SAMPLE_DOCS.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _snapshot(home: Path) -> dict[str, str]:
    """Every file of a home but its run history, by content."""
    return {
        str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(home.rglob("*"))
        if p.is_file() and "dagster" not in p.relative_to(home).parts
    }


def _finished(process: subprocess.Popen[str], timeout: float = 600) -> tuple[int, str]:
    out, _ = process.communicate(timeout=timeout)
    return process.returncode, out


@dataclass
class Built:
    home_a: Path
    home_b: Path
    inputs_b: Path
    a_files: dict[str, str]
    killed: tuple[int, str]  # the build whose step process was killed: exit status, output
    rerun: tuple[int, str]
    tables: tuple[dict[str, int], dict[str, int]]  # A's, B's
    contexts: tuple[str, str]


def _first_step(cluster: Cluster, building: subprocess.Popen[str]) -> int | None:
    """The worker of B's (1 or 2) that was handed a step; an error when A's worker was instead."""
    assert not cluster.received(0), f"home A's worker took a step of home B's:\n{cluster.log(0)[-3000:]}"
    assert building.poll() is None, f"`index` ended before any step ran:\n{building.communicate()[0][-3000:]}"
    return next((worker for worker in (1, 2) if cluster.received(worker)), None)


@pytest.fixture(scope="module")
def built(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Built:
    """Home B built by its two workers, one of them losing its step process mid-step (then `index`
    again, as a user would); home A, the reference, built in process meanwhile."""
    home_a = cluster.root / "a"
    home_a.mkdir()
    home_b = cluster.home("b")
    inputs_a = _copy_sample(tmp_path_factory.mktemp("input-a"))
    inputs_b = _copy_sample(tmp_path_factory.mktemp("input-b"))
    cluster.start_workers([home_a, home_b, home_b])  # worker 0 serves A; 1 and 2 serve B
    building = cluster.index(home_b, inputs_b)
    reference = cluster.index(home_a, inputs_a, executor="in_process")
    try:
        # The first of B's workers handed a step: its step process dies as an OOM kill would end it.
        victim = wait("a step on a worker of B's", lambda: _first_step(cluster, building), 600, 0.05)
        pool = str(cluster.workers[victim].pid)
        children = subprocess.run(["pgrep", "-P", pool], capture_output=True, text=True)
        assert children.stdout.split(), f"worker {victim} has no pool process"
        for pid in children.stdout.split():
            os.kill(int(pid), signal.SIGKILL)
        killed = _finished(building)
        status, out = _finished(reference)
    finally:
        for process in (building, reference):  # a failed wait leaves no build running
            if process.poll() is None:
                process.kill()
                process.wait()
    assert status == 0, out[-3000:]
    rerun = _finished(cluster.index(home_b, inputs_b))
    assert rerun[0] == 0, f"`index` after the killed build failed:\n{killed[1][-2000:]}\n{rerun[1][-3000:]}"
    asked = ask(home_a, QUESTION), ask(home_b, QUESTION)
    contexts = retrieved_contexts(asked[0]), retrieved_contexts(asked[1])
    return Built(
        home_a,
        home_b,
        inputs_b,
        a_files=_snapshot(home_a),  # after its `ask`, which caches query-side snapshots in the home
        killed=killed,
        rerun=rerun,
        tables=(tables(home_a), tables(home_b)),
        contexts=contexts,
    )


def test_a_worker_killed_mid_step_leaves_a_run_that_ends_and_a_rerun_that_completes(built: Built) -> None:
    status, out = built.killed
    # The run completed (the step redelivered) or failed with a message, never hung or crashed.
    assert status in (0, 1), out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    assert built.rerun[0] == 0  # (checked by the fixture, with the output)


def test_two_workers_build_the_same_tables_and_answer_as_in_process(cluster: Cluster, built: Built) -> None:
    assert cluster.received(1) and cluster.received(2)  # B's steps spread over its two workers
    assert built.tables[1] == built.tables[0]
    assert built.contexts[1] == built.contexts[0]


def _runs(server: DagsterDev, since: float) -> list[dict[str, Any]]:
    data = server.graphql(
        "{ runsOrError { ... on Runs { results { runId jobName status creationTime tags { key value } } } } }"
    )
    runs = [r for r in data["runsOrError"]["results"] if r["creationTime"] >= since]
    failed = [r for r in runs if r["status"] in FINISHED - {"SUCCESS"}]
    assert not failed, f"runs {failed} did not succeed; see {server.log}"
    return runs


def _tags(run: dict[str, Any]) -> dict[str, str]:
    return {t["key"]: t["value"] for t in run["tags"]}


@dataclass
class Dev:
    server: DagsterDev
    started: float  # when it started: the runs created since are its own
    received: int  # steps B's workers had been handed before


@pytest.fixture(scope="module")
def dev(cluster: Cluster, built: Built, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dev]:
    """`dagster dev` for home B, with B's worker environment; a new file is in B's input folder
    before it starts, so the sensor's first tick finds it."""
    (built.inputs_b / NEW_DOCUMENT).write_text(NEW_TEXT, encoding="utf-8")
    log = tmp_path_factory.mktemp("dev") / "dagster-dev.log"
    environ = cluster.environ(built.home_b)
    extra = {k: environ[k] for k in ("GRAPHUNIFIED_EXECUTOR", "CELERY_BROKER_URL", "DAGSTER_PG_PASSWORD")}
    started, received = time.time(), cluster.received(1, 2)
    with dagster_dev(built.home_b, built.inputs_b, log, extra_env=extra) as server:
        yield Dev(server, started, received)


@pytest.fixture(scope="module")
def sensor_path(dev: Dev) -> tuple[dict[str, Any], dict[str, Any]]:
    """The sensor's document run and the automatic refresh run after it, both succeeded."""

    def done() -> tuple[dict[str, Any], dict[str, Any]] | None:
        runs = sorted(_runs(dev.server, dev.started), key=lambda r: r["creationTime"])
        documents = [r for r in runs if r["jobName"] == INDEX_DOCUMENTS]
        refresh = [r for r in runs if documents and r["creationTime"] > documents[0]["creationTime"]]
        if refresh and all(r["status"] == "SUCCESS" for r in runs):
            return documents[0], refresh[0]
        return None

    return wait("the sensor's document run and the refresh after it", done, 420, 0.5)


def test_a_dropped_file_is_indexed_by_the_sensor_and_refreshed_on_the_workers(
    cluster: Cluster, built: Built, dev: Dev, sensor_path: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    documents, refresh = sensor_path
    assert _tags(documents)["dagster/sensor_name"] == "new_documents_sensor"
    assert _tags(refresh)["dagster/sensor_name"] == "global_tables_automation"
    for run in sensor_path:
        assert _tags(run)[HOME_TAG] == str(built.home_b), run
    assert cluster.received(1, 2) > dev.received  # their steps ran on B's workers
    assert "Ada Penrose" in retrieved_contexts(ask(built.home_b, NEW_QUESTION))


def test_a_ui_materialize_run_carries_its_home_to_the_workers(
    cluster: Cluster, built: Built, dev: Dev, sensor_path: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    # What the asset graph's "Materialize" button sends: Dagster's implicit asset job, no home tag.
    before = cluster.received(1, 2)
    launched = dev.server.graphql(
        """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) {
             __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } } }""",
        p={
            "selector": {
                **LOCATION,
                "jobName": "__ASSET_JOB",
                "assetSelection": [{"path": ["remote_snapshot"]}],
                "assetCheckSelection": [],
            },
            "runConfigData": {},
            "executionMetadata": {"tags": []},
        },
    )["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    run_id = launched["run"]["runId"]
    assert dev.server.wait_for_run(run_id, 240)["status"] == "SUCCESS", dev.server.log
    (run,) = [r for r in _runs(dev.server, dev.started) if r["runId"] == run_id]
    tags = _tags(run)
    assert tags[HOME_TAG] == str(built.home_b)
    assert tags[HOME_ID_TAG] == (built.home_b / "home.id").read_text(encoding="utf-8").strip()
    assert cluster.received(1, 2) > before  # its step ran on B's workers


def test_a_second_home_on_the_same_broker_is_left_alone(
    cluster: Cluster, built: Built, sensor_path: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    """Last: after all of B's runs (the CLI's, the sensor's, the automation's, the UI's)."""
    # Not one file of A changed by B's runs, though A's worker listened on the same broker...
    assert _snapshot(built.home_a) == built.a_files
    # ...and no step of B's reached it.
    assert cluster.received(0) == 0, cluster.log(0)[-3000:]
