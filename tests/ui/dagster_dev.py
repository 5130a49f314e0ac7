"""`dagster dev` for one data home, driven the way the UI drives it: its GraphQL API.

Shared by the browser test and bench/dagster_path.py, so both measure the same launch path.
Started through scripts/launch.py (so SIGTERM stops it) in its own process group, on a free
loopback port; stopping checks that no process of the group is left behind.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
INSTANCE_TEMPLATE = ROOT / "dagster.yaml"
LOCATION = {"repositoryLocationName": "graphunified", "repositoryName": "__repository__"}
FINISHED = {"SUCCESS", "FAILURE", "CANCELED"}
RUN_FIELDS = "runId status creationTime startTime endTime"


class DagsterDevError(RuntimeError):
    """`dagster dev` did not answer, a run did not finish, or processes were left behind."""


@dataclass
class DagsterDev:
    process: subprocess.Popen[bytes]
    url: str
    log: Path

    def graphql(self, query: str, **variables: Any) -> dict[str, Any]:
        body = json.dumps({"query": query, "variables": variables}).encode()
        request = urllib.request.Request(
            f"{self.url}/graphql", body, {"Content-Type": "application/json"}, method="POST"
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            answer = json.loads(response.read())
        if "errors" in answer:
            raise DagsterDevError(f"GraphQL errors: {answer['errors']}")
        return answer["data"]

    def launch(self, job: str, tags: dict[str, str], run_config: dict[str, Any] | None = None) -> str:
        """A run of ``job`` as the UI's Materialize / Launchpad starts it; its run id."""
        data = self.graphql(
            """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) {
                 __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } } }""",
            p={
                "selector": {**LOCATION, "jobName": job},
                "runConfigData": run_config or {},
                "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in tags.items()]},
            },
        )
        launched = data["launchRun"]
        if launched["__typename"] != "LaunchRunSuccess":
            raise DagsterDevError(f"launching {job} failed: {launched}")
        return launched["run"]["runId"]

    def run(self, run_id: str) -> dict[str, Any]:
        data = self.graphql(
            f"query($id: ID!) {{ runOrError(runId: $id) {{ ... on Run {{ {RUN_FIELDS} }} }} }}", id=run_id
        )
        return data["runOrError"]

    def runs(self, tags: dict[str, str]) -> list[dict[str, Any]]:
        data = self.graphql(
            f"""query($f: RunsFilter) {{ runsOrError(filter: $f) {{
                 ... on Runs {{ results {{ {RUN_FIELDS} }} }} }} }}""",
            f={"tags": [{"key": k, "value": v} for k, v in tags.items()]},
        )
        return data["runsOrError"]["results"]

    def wait_for_run(self, run_id: str, timeout: float) -> dict[str, Any]:
        """The finished run's record; an error if it does not finish in time."""
        return wait(f"run {run_id}", lambda: (r := self.run(run_id))["status"] in FINISHED and r, timeout, 1)

    def set_sensor(self, name: str, *, running: bool) -> None:
        selector = {**LOCATION, "sensorName": name}
        if running:
            self.graphql(
                "mutation($s: SensorSelector!) { startSensor(sensorSelector: $s) { __typename } }", s=selector
            )
            return
        data = self.graphql(
            "query($s: SensorSelector!) { sensorOrError(sensorSelector: $s) { ... on Sensor { id } } }",
            s=selector,
        )
        self.graphql(
            "mutation($id: String) { stopSensor(id: $id) { __typename } }", id=data["sensorOrError"]["id"]
        )


def wait(what: str, ready: Callable[[], Any], timeout: float, every: float = 1.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = ready()
        if value:
            return value
        time.sleep(every)
    raise DagsterDevError(f"timed out after {timeout:.0f}s waiting for {what}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@contextmanager
def dagster_dev(
    home: Path, inputs: Path, log: Path, extra_env: dict[str, str] | None = None
) -> Iterator[DagsterDev]:
    """`dagster dev` for ``home`` watching ``inputs``; stopped by PID when the block ends."""
    (home / "dagster").mkdir(parents=True, exist_ok=True)
    if not (home / "dagster" / "dagster.yaml").exists():
        shutil.copyfile(INSTANCE_TEMPLATE, home / "dagster" / "dagster.yaml")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env |= {
        "DAGSTER_HOME": str(home / "dagster"),
        "GRAPHUNIFIED_HOME": str(home),
        "GRAPHUNIFIED_INPUT": str(inputs),
        "PYTHONPATH": str(ROOT),
        **(extra_env or {}),
    }
    dagster = Path(sys.executable).parent / "dagster"
    launch, workspace = str(ROOT / "scripts" / "launch.py"), str(ROOT / "workspace.yaml")
    command = [sys.executable, launch, str(dagster), "dev", "-w", workspace]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*command, "-h", "127.0.0.1", "-p", str(port)],
            cwd=home / "dagster",  # as `make ui`: beside the template dagster.yaml, Dagster warns
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: webserver, daemon and code server
        )
    server = DagsterDev(process, f"http://127.0.0.1:{port}", log)
    try:
        wait("dagster dev's /server_info", lambda: _answers(f"{server.url}/server_info"), 180)
        yield server
    finally:
        _stop(process, log)


def _stop(process: subprocess.Popen[bytes], log: Path) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        raise DagsterDevError(f"dagster dev ignored SIGTERM; log: {log.read_text()[-2000:]}") from None
    deadline = time.monotonic() + 30
    while _group_alive(process.pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    if _group_alive(process.pid):
        os.killpg(process.pid, signal.SIGKILL)
        raise DagsterDevError("dagster dev left processes running after SIGTERM")


def cli_index(home: Path, inputs: Path, *, refresh: bool = False) -> float:
    """`python -m graphunified_assets index` in its own process (the CLI side of a comparison)."""
    command = [
        sys.executable,
        "-m",
        "graphunified_assets",
        "index",
        "--input",
        str(inputs),
        "--home",
        str(home),
    ]
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"} | {"PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    subprocess.run([*command, *(["--refresh"] if refresh else [])], check=True, env=env, capture_output=True)
    return round(time.perf_counter() - started, 2)


@contextmanager
def home_instance(home: Path) -> Iterator[Any]:
    """The Dagster instance of a data home, opened from another process. DAGSTER_HOME is set while
    it is open: the pooled event log (dagster.yaml) finds its folder through it."""
    import dagster as dg

    before = os.environ.get("DAGSTER_HOME")
    os.environ["DAGSTER_HOME"] = str(home / "dagster")
    try:
        with dg.DagsterInstance.from_config(str(home / "dagster")) as instance:
            yield instance
    finally:
        if before is None:
            os.environ.pop("DAGSTER_HOME", None)
        else:
            os.environ["DAGSTER_HOME"] = before


def last_run_seconds(home: Path, job: str) -> float:
    """Start-to-end time of the newest run of ``job`` in a home's Dagster instance."""
    import dagster as dg

    with home_instance(home) as instance:
        run = instance.get_runs(dg.RunsFilter(job_name=job), limit=1)[0]
        record = instance.get_run_record_by_id(run.run_id)
        if record is None or not (record.start_time and record.end_time):
            raise DagsterDevError(f"run {run.run_id} of {job} in {home} has no start or end time")
        return round(record.end_time - record.start_time, 2)


def duration(run: dict[str, Any]) -> dict[str, float]:
    """A finished run's own time (start to end) and the time from its creation (queue, process start)."""
    return {
        "run_seconds": round(run["endTime"] - run["startTime"], 2),
        "created_to_end_seconds": round(run["endTime"] - run["creationTime"], 2),
    }
