"""The Dagster UI end to end: `dagster dev` on loopback, headless Chromium, runs launched the way
the UI launches them (its GraphQL API), the run page's live log, and screenshots."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest

from graphunified_assets.defs.jobs import INDEX_DOCUMENTS, REFRESH_INDEXES
from tests.conftest import SAMPLE_DOCS
from tests.ui.conftest import screenshot
from tests.ui.dagster_dev import (
    FINISHED,
    LOCATION,
    DagsterDev,
    cli_index,
    dagster_dev,
    duration,
    home_instance,
    last_run_seconds,
    wait,
)

DIALOG = "Join the Dagster community"
PIPELINE_ASSETS = ("documents", "chunks", "chunk_embeddings", "extractions", "entities", "chunk_vectors")
SENSORS = ("new_documents_sensor", "global_tables_automation")

pytestmark = [pytest.mark.browser, pytest.mark.first]


@pytest.fixture(scope="module")
def dev_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of the module's `dagster dev`: home/, input/ (SAMPLE_DOCS) and its log."""
    return tmp_path_factory.mktemp("dagster-dev")


@pytest.fixture(scope="module")
def server(dev_root: Path) -> Iterator[DagsterDev]:
    """`dagster dev` for a fresh home, one for this module's tests (each start costs a webserver's,
    a daemon's and a code server's imports); stopped by PID, checked to leave no process behind.
    What a user does first in the UI is done here: the watching sensors switched off, and the
    documents' partitions added."""
    inputs = dev_root / "input"
    inputs.mkdir()
    with dagster_dev(dev_root / "home", inputs, dev_root / "dagster-dev.log") as running:
        for sensor in SENSORS:
            running.set_sensor(sensor, running=False)
        _add_partitions(running, _write_inputs(inputs))
        yield running


def _write_inputs(inputs: Path) -> list[str]:
    for name, body in SAMPLE_DOCS.items():
        (inputs / name).parent.mkdir(parents=True, exist_ok=True)
        (inputs / name).write_text(body, encoding="utf-8")
    return sorted(SAMPLE_DOCS)


def _add_partitions(server: DagsterDev, keys: list[str]) -> None:
    """What the UI's "Add partition" does, per document."""
    for key in keys:
        added = server.graphql(
            """mutation($r: RepositorySelector!, $k: String!) {
                 addDynamicPartition(repositorySelector: $r, partitionsDefName: "documents", partitionKey: $k)
                 { __typename } }""",
            r=LOCATION,
            k=key,
        )
        assert added["addDynamicPartition"]["__typename"] == "AddDynamicPartitionSuccess", added


def _succeeded(server: DagsterDev, run_id: str, timeout: float) -> dict[str, Any]:
    run = server.wait_for_run(run_id, timeout)
    assert run["status"] == "SUCCESS", f"run {run_id} ended {run['status']}; see {server.log}"
    return run


def _page_text(browser: Any) -> str:
    return browser.execute_script("return document.body ? document.body.innerText : ''")


def _skip_dialog(browser: Any) -> None:
    """A first-visit newsletter dialog pops up a few seconds after the first page; skip it once."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and DIALOG not in _page_text(browser):
        time.sleep(0.5)

    def closed() -> bool:
        # Skip as often as it shows: on a loaded machine it can pop up after the 10 s above.
        for skip in browser.find_elements(By.XPATH, "//button[normalize-space()='Skip']"):
            with suppress(StaleElementReferenceException):
                skip.click()
        return DIALOG not in _page_text(browser)

    wait("the dialog to close", closed, 30)


def _open_asset_graph(browser: Any, url: str) -> str:
    """The global asset lineage with every group expanded (groups start collapsed); its text."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    browser.get(f"{url}/asset-groups")
    wait("the asset graph", lambda: "Global asset lineage" in _page_text(browser), 90)
    wait("the graph's group boxes", lambda: "ingest" in _page_text(browser), 60)
    if "documents" not in _page_text(browser):
        # Groups start collapsed; the graph menu's "Expand all groups" is Alt+E (the UI keeps it).
        ActionChains(browser).key_down(Keys.ALT).send_keys("e").key_up(Keys.ALT).perform()
    text = wait(
        "the pipeline's assets in the graph",
        lambda: all(a in (t := _page_text(browser)) for a in PIPELINE_ASSETS) and t,
        60,
    )
    _skip_dialog(browser)
    return text


def test_ui_single_document_run_streams_its_log_and_runs_like_the_cli(
    server: DagsterDev, browser: Any, tmp_path: Path, dev_root: Path
) -> None:
    browser.get(f"{server.url}/runs")
    _skip_dialog(browser)

    # One document from the UI, timed against the CLI indexing the same document, same machine.
    ui_run = _succeeded(server, server.launch(INDEX_DOCUMENTS, {"dagster/partition": "mill.md"}), 300)
    cli_inputs = tmp_path / "cli-input"
    cli_inputs.mkdir()
    (cli_inputs / "mill.md").write_text(SAMPLE_DOCS["mill.md"], encoding="utf-8")
    cli_index(tmp_path / "cli-home", cli_inputs)
    cli_seconds = last_run_seconds(tmp_path / "cli-home", INDEX_DOCUMENTS)
    ui = duration(ui_run)
    print(
        f"\none document: UI-launched run {ui['run_seconds']:.2f}s, CLI run {cli_seconds:.2f}s, "
        f"ratio {ui['run_seconds'] / cli_seconds:.2f} (created to end: {ui['created_to_end_seconds']:.2f}s)"
    )

    # The live log: the embedding step waits for the `models` pool (held here, as another run's
    # model calls would hold it), so the run is mid-way for as long as the page needs.
    holder = "browser-test-holds-the-models-pool"
    with home_instance(dev_root / "home") as instance:
        pools = instance.event_log_storage
        pools.initialize_concurrency_limit_to_default("models")  # dagster.yaml: one slot
        claim = pools.claim_concurrency_slot("models", holder, "hold")
        assert claim.is_claimed, claim
        try:
            run_id = server.launch(INDEX_DOCUMENTS, {"dagster/partition": "flood.txt"})
            browser.get(f"{server.url}/runs/{run_id}")
            wait(
                "the documents step's events on the run page",
                lambda: 'execution of step "documents"' in _page_text(browser),
                180,
                0.5,
            )
            assert server.run(run_id)["status"] not in FINISHED, "the run ended before its log showed"
            wait(
                "the chunks step's events",
                lambda: 'execution of step "chunks"' in _page_text(browser),
                60,
                0.5,
            )
            screenshot(browser, tmp_path, "run-page-live.png")
        finally:
            pools.free_concurrency_slot_for_step(holder, "hold")
    _succeeded(server, run_id, 300)


def test_ui_lists_assets_materializes_the_corpus_and_screenshots(
    server: DagsterDev, browser: Any, tmp_path: Path
) -> None:
    # After the single-document test in the same `dagster dev` (its run is timed on a fresh home).
    # The asset graph of the whole code location, as a user opens it.
    text = _open_asset_graph(browser, server.url)
    assert "community_reports" in text and "raw_documents" in text

    # Materialize the documents' partitions (the fixture added them), then the global assets —
    # with the job's own defaults, as the UI does.
    keys = sorted(SAMPLE_DOCS)
    tags = {"dagster/asset_partition_range_start": keys[0], "dagster/asset_partition_range_end": keys[-1]}
    _succeeded(server, server.launch(INDEX_DOCUMENTS, tags), 150)
    _succeeded(server, server.launch(REFRESH_INDEXES, {}), 150)

    # The graph again, now with materialized assets.
    _open_asset_graph(browser, server.url)
    time.sleep(3)  # let the layout settle before the picture
    assert DIALOG not in _page_text(browser)
    screenshot(browser, tmp_path, "asset-graph.png")
