"""The Dagster UI end to end: `dagster dev` on loopback, headless Chromium, a materialization of
the sample corpus launched the way the UI launches it (its GraphQL API), and a screenshot."""

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import SAMPLE_DOCS

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
SCREENSHOT_COPY = ROOT / "docs" / "screenshots" / "asset-graph.png"
LOCATION = {"repositoryLocationName": "graphunified", "repositoryName": "__repository__"}
DIALOG = "Join the Dagster community"
PIPELINE_ASSETS = ("documents", "chunks", "chunk_embeddings", "extractions", "entities", "chunk_vectors")

pytestmark = pytest.mark.browser


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
        with urllib.request.urlopen(request, timeout=30) as response:
            answer = json.loads(response.read())
        assert "errors" not in answer, answer["errors"]
        return answer["data"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait(what: str, ready: Callable[[], Any], timeout: float, every: float = 1.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = ready()
        if value:
            return value
        time.sleep(every)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}")


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


@pytest.fixture
def dagster_dev(tmp_path: Path) -> Iterator[DagsterDev]:
    """`dagster dev` for a fresh home, started so SIGTERM stops it (scripts/launch.py), in its own
    process group; stopped by PID and checked to leave no process behind."""
    home, inputs = tmp_path / "home", tmp_path / "input"
    (home / "dagster").mkdir(parents=True)
    inputs.mkdir()
    shutil.copyfile(ROOT / "graphunified_assets" / "dagster.yaml", home / "dagster" / "dagster.yaml")
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env |= {
        "DAGSTER_HOME": str(home / "dagster"),
        "GRAPHUNIFIED_HOME": str(home),
        "GRAPHUNIFIED_INPUT": str(inputs),
    }
    log = tmp_path / "dagster-dev.log"
    dagster = Path(sys.executable).parent / "dagster"
    command = [sys.executable, "scripts/launch.py", str(dagster), "dev", "-w", "workspace.yaml"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*command, "-h", "127.0.0.1", "-p", str(port)],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: webserver, daemon and code server
        )
    server = DagsterDev(process, f"http://127.0.0.1:{port}", log)
    try:
        _wait("dagster dev's /server_info", lambda: _answers(f"{server.url}/server_info"), 120)
        yield server
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            pytest.fail(f"dagster dev ignored SIGTERM; log: {log.read_text()[-2000:]}")
        deadline = time.monotonic() + 30
        while _group_alive(process.pid) and time.monotonic() < deadline:
            time.sleep(0.5)
        leftover = _group_alive(process.pid)
        if leftover:
            os.killpg(process.pid, signal.SIGKILL)
        assert not leftover, "dagster dev left processes running after SIGTERM"


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.fail("Debian's chromium and chromium-driver are missing: run `make browser-deps` as root")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1600,1100",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
    ):
        options.add_argument(flag)
    # An explicit driver path: Selenium Manager never looks for (or downloads) a browser.
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def _stop_sensor(server: DagsterDev, name: str) -> None:
    data = server.graphql(
        "query($s: SensorSelector!) { sensorOrError(sensorSelector: $s) { ... on Sensor { id } } }",
        s={**LOCATION, "sensorName": name},
    )
    stopped = server.graphql(
        "mutation($id: String) { stopSensor(id: $id) { __typename } }", id=data["sensorOrError"]["id"]
    )
    assert stopped["stopSensor"]["__typename"] == "StopSensorMutationResult", stopped


def _launch(server: DagsterDev, job: str, tags: dict[str, str]) -> str:
    data = server.graphql(
        """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) {
             __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } } }""",
        p={
            "selector": {**LOCATION, "jobName": job},
            # deploy/'s multiprocess config: step processes fork from a preloaded server.
            "runConfigData": yaml.safe_load((ROOT / "deploy/multiprocess/run_config.yaml").read_text()),
            "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in tags.items()]},
        },
    )
    launched = data["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    return launched["run"]["runId"]


def _run_status(server: DagsterDev, run_id: str) -> str:
    data = server.graphql("query($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }", id=run_id)
    return data["runOrError"]["status"]


def _wait_for_success(server: DagsterDev, run_id: str, timeout: float) -> None:
    def finished() -> str | None:
        status = _run_status(server, run_id)
        return status if status in {"SUCCESS", "FAILURE", "CANCELED"} else None

    status = _wait(f"run {run_id}", finished, timeout, every=2)
    assert status == "SUCCESS", f"run {run_id} ended {status}; see {server.log}"


def _page_text(browser: Any) -> str:
    return browser.execute_script("return document.body ? document.body.innerText : ''")


def _open_asset_graph(browser: Any, url: str) -> str:
    """The global asset lineage with every group expanded (groups start collapsed); its text."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser.get(f"{url}/asset-groups")
    _wait("the asset graph", lambda: "Global asset lineage" in _page_text(browser), 90)
    _wait("the graph's group boxes", lambda: "ingest" in _page_text(browser), 60)
    if "documents" not in _page_text(browser):
        # Groups start collapsed; the graph menu's "Expand all groups" is Alt+E (the UI keeps it).
        ActionChains(browser).key_down(Keys.ALT).send_keys("e").key_up(Keys.ALT).perform()
    text = _wait(
        "the pipeline's assets in the graph",
        lambda: all(a in (t := _page_text(browser)) for a in PIPELINE_ASSETS) and t,
        60,
    )
    # A first-visit newsletter dialog pops up a few seconds after the page; skip it once.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and DIALOG not in _page_text(browser):
        time.sleep(0.5)
    for skip in browser.find_elements(By.XPATH, "//button[normalize-space()='Skip']"):
        skip.click()
    _wait("the dialog to close", lambda: DIALOG not in _page_text(browser), 10)
    return text


def test_ui_lists_assets_materializes_the_corpus_and_screenshots(
    dagster_dev: DagsterDev, browser: Any, tmp_path: Path
) -> None:
    server = dagster_dev
    # The asset graph of the whole code location, as a user opens it.
    text = _open_asset_graph(browser, server.url)
    assert "community_reports" in text and "raw_documents" in text

    # What a user does in the UI: switch the watching sensors off, add the documents' partitions
    # ("Add partition"), materialize them, then the global assets.
    for sensor in ("new_documents_sensor", "global_tables_automation"):
        _stop_sensor(server, sensor)
    inputs = tmp_path / "input"
    for name, body in SAMPLE_DOCS.items():
        (inputs / name).parent.mkdir(parents=True, exist_ok=True)
        (inputs / name).write_text(body, encoding="utf-8")
    keys = sorted(SAMPLE_DOCS)
    for key in keys:
        added = server.graphql(
            """mutation($r: RepositorySelector!, $k: String!) {
                 addDynamicPartition(repositorySelector: $r, partitionsDefName: "documents", partitionKey: $k)
                 { __typename } }""",
            r=LOCATION,
            k=key,
        )
        assert added["addDynamicPartition"]["__typename"] == "AddDynamicPartitionSuccess", added
    documents_run = _launch(
        server,
        "index_documents",
        {"dagster/asset_partition_range_start": keys[0], "dagster/asset_partition_range_end": keys[-1]},
    )
    _wait_for_success(server, documents_run, 150)
    refresh_run = _launch(server, "refresh_indexes", {})
    _wait_for_success(server, refresh_run, 150)

    # The graph again, now with materialized assets; the screenshot goes with the test's files
    # and, as the README's picture, into docs/screenshots.
    _open_asset_graph(browser, server.url)
    time.sleep(3)  # let the layout settle before the picture
    assert DIALOG not in _page_text(browser)
    shot = tmp_path / "asset-graph.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 20_000
    SCREENSHOT_COPY.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, SCREENSHOT_COPY)
