"""The web page of `serve` in headless Chromium, on the sample corpus: ask, compare two strategies,
the evidence graph, the API docs; nothing requested from another origin; passage markup shown as
text; and the Eval tab on a home `eval` measured. Screenshots go to docs/screenshots/web-*.png
(docs/querying.md shows them)."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pytest

from graphunified_query.cli import main
from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.server.app import create_app
from tests.query.conftest import OFFLINE_SETTINGS, index_offline
from tests.serving import serving
from tests.ui.conftest import ROOT, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.first]
EVAL_SET = ROOT / "tests" / "fixtures" / "eval_tiny"
T = TypeVar("T")
QUESTION = "Who founded the Hale Mill?"
# A passage whose markup would run if the page inserted it as HTML.
HOSTILE = (
    "# Mallory Vane\n\nMallory Vane kept the wage ledger of the Hale Mill. In its margin she wrote "
    "<script>window.__injected = 'script'</script> and <img src=\"x\" onerror=\"window.__injected = 'img'\"> "
    "beside the wages of 1894.\n"
)


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`serve`'s app on data/sample (plus the hostile passage), indexed offline."""
    root = tmp_path_factory.mktemp("web-page")
    corpus = root / "input"
    shutil.copytree(ROOT / "data" / "sample", corpus)
    (corpus / "people" / "mallory-vane.md").write_text(HOSTILE, encoding="utf-8")
    (root / "home").mkdir()
    home = index_offline(corpus, root / "home")
    with serving(create_app(QueryEngine.open(home, environ={}))) as (host, port):
        yield f"http://{host}:{port}"


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(URL, home) of a home that `eval` built and measured (eval_tiny, offline), served."""
    home = tmp_path_factory.mktemp("web-eval") / "home"
    home.mkdir()
    (home / "settings.yaml").write_text(OFFLINE_SETTINGS, encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DAGSTER_HOME", str(home / "dagster"))
        patch.delenv("ANTHROPIC_API_KEY", raising=False)
        patch.delenv("VOYAGE_API_KEY", raising=False)
        assert main(["eval", str(EVAL_SET), "--home", str(home)]) == 0
    with serving(create_app(QueryEngine.open(home, environ={}))) as (host, port):
        yield f"http://{host}:{port}", home


def until(what: str, probe: Callable[[], T | None], browser: Any, timeout: float = 120) -> T:
    """``probe()`` once it is truthy; else the page's text in the failure."""
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        found = WebDriverWait(browser, timeout, poll_frequency=0.2).until(lambda _: probe())
        assert found  # WebDriverWait returns only a truthy value
        return found
    except Exception as error:
        text = browser.execute_script("return document.body ? document.body.innerText : ''")
        raise AssertionError(f"waited {timeout} s for {what}; the page shows:\n{text[:2000]}") from error


def test_ask_compare_graph_and_docs(base_url: str, browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    browser.set_window_size(1400, 900)
    requests: dict[str, str] = {}
    blocked: dict[str, str] = {}

    def record() -> None:  # the performance log is drained by each read
        for entry in browser.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            params = message["params"]
            if message["method"] == "Network.requestWillBeSent":
                requests[params["requestId"]] = params["request"]["url"]
            elif message["method"] == "Network.loadingFailed" and params.get("blockedReason"):
                blocked[params["requestId"]] = params["blockedReason"]

    # Ask: the routed answer, the router's reason, numbered sources with their passages.
    browser.get(f"{base_url}/#ask")
    options = until(
        "the strategies", lambda: browser.find_elements(By.CSS_SELECTOR, "#ask-strategy option"), browser
    )
    strategies = json.loads(
        browser.execute_script("return JSON.stringify(state.strategies.map(s => s.name))")
    )
    assert [o.get_attribute("value") for o in options] == ["auto", *strategies]  # derived from /strategies
    browser.find_element(By.ID, "ask-question").send_keys(QUESTION)
    browser.find_element(By.CSS_SELECTOR, "#ask-form button").click()
    sources = until(
        "the sources", lambda: browser.find_elements(By.CSS_SELECTOR, "#ask-result .source"), browser
    )
    result = browser.find_element(By.ID, "ask-result")
    assert "Thomas Hale" in result.find_element(By.CLASS_NAME, "answer").text
    assert result.find_element(By.CLASS_NAME, "chosen-strategy").text in strategies
    assert result.find_element(By.CLASS_NAME, "router-reason").text.startswith("— ")
    heads = [s.find_element(By.CLASS_NAME, "source-head").text for s in sources]
    assert all(h.startswith(f"[{n}] ") and "score " in h for n, h in enumerate(heads, start=1)), heads
    assert any("hale-mill.md" in h for h in heads) and sources[0].find_element(By.CLASS_NAME, "passage").text
    screenshot(browser, tmp_path, "web-ask.png")

    # Compare two strategies side by side: figures, contexts, the passages they share.
    browser.find_element(By.CSS_SELECTOR, '#tabs a[data-tab="compare"]').click()
    for box in browser.find_elements(By.CSS_SELECTOR, "#compare-strategies input"):
        if box.is_selected() != (box.get_attribute("value") in ("hybrid", "lightrag")):
            box.click()
    browser.find_element(By.ID, "compare-question").send_keys(QUESTION)
    browser.find_element(By.CSS_SELECTOR, "#compare-form button").click()
    status = until(
        "both columns",
        lambda: re.match(
            r"2 strategies answered; (\d+) passage", browser.find_element(By.ID, "compare-status").text
        ),
        browser,
    )
    columns = browser.find_elements(By.CSS_SELECTOR, "#compare-result .column")
    assert [c.get_attribute("data-strategy") for c in columns] == ["hybrid", "lightrag"]
    shared = int(status.group(1))
    assert shared >= 1  # both find the Hale Mill's own page
    for column, other in zip(columns, ("lightrag", "hybrid"), strict=True):
        figures = column.find_element(By.CLASS_NAME, "figures").text
        assert all(f in figures for f in ("latency", "tokens", "cost", "contexts")), figures
        marked = column.find_elements(By.CSS_SELECTOR, ".card.shared")
        assert len(marked) >= shared and all(f"also in {other}" in m.text for m in marked)
    browser.execute_script("document.getElementById('compare-status').scrollIntoView()")
    screenshot(browser, tmp_path, "web-compare.png")

    # The evidence graph of lightrag's contexts: entities and relationships, one context picked.
    columns[1].find_element(By.CLASS_NAME, "open-graph").click()
    summary = until(
        "the graph",
        lambda: re.match(r"(\d+) entities, (\d+) relationships", _text(browser, "graph-summary")),
        browser,
    )
    drawn = browser.execute_script("return [evidenceGraph.nodes().length, evidenceGraph.edges().length]")
    assert drawn == [int(summary.group(1)), int(summary.group(2))] and drawn[0] > 0 and drawn[1] > 0
    assert _text(browser, "graph-title") == "lightrag: " + QUESTION
    browser.find_elements(By.CSS_SELECTOR, "#graph-contexts li")[2].click()  # a passage: a few entities
    assert re.match(r"context \[3\]: [1-9]\d* entities", _text(browser, "graph-detail"))
    assert browser.execute_script("return evidenceGraph.elements('.faded').length") > 0
    screenshot(browser, tmp_path, "web-graph.png")
    record()

    # The API docs, offline: Swagger UI and ReDoc render the schema from the package's assets.
    for path, shows, shot in (
        ("/docs", "/retrieve", "web-api-docs.png"),
        ("/redoc", "Graph-Unified query", None),
    ):
        browser.get(base_url + path)
        until(f"{path} to render", partial(_shows, browser, shows, "/eval/report"), browser)
        if shot:
            screenshot(browser, tmp_path, shot)
        record()

    # Everything came from this server (the browser's own chrome:// pages aside); what tried another
    # origin (ReDoc's footer logo) the policy stopped before it left.
    elsewhere = {
        rid: url
        for rid, url in requests.items()
        if url.startswith(("http", "ws")) and not url.startswith(base_url)
    }
    assert all(blocked.get(rid) == "csp" for rid in elsewhere), {
        u: blocked.get(r) for r, u in elsewhere.items()
    }
    assert any(url.startswith(f"{base_url}/static/vendor/cytoscape") for url in requests.values())
    errors = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert all("Content Security Policy" in e and "cdn.redoc.ly" in e for e in errors), errors


def test_passage_markup_is_shown_as_text(base_url: str, browser: Any) -> None:
    """A passage holding <script> and <img onerror> is shown as those characters, never run."""
    from selenium.webdriver.common.by import By

    browser.get(f"{base_url}/#ask")
    until("the strategies", lambda: browser.find_elements(By.CSS_SELECTOR, "#ask-strategy option"), browser)
    browser.find_element(By.ID, "ask-question").send_keys("What did Mallory Vane write in the wage ledger?")
    browser.find_element(By.CSS_SELECTOR, '#ask-strategy option[value="naive"]').click()
    browser.find_element(By.CSS_SELECTOR, "#ask-form button").click()
    until("the sources", lambda: browser.find_elements(By.CSS_SELECTOR, "#ask-result .source"), browser)
    passages = [p.text for p in browser.find_elements(By.CSS_SELECTOR, "#ask-result .passage")]
    hostile = [p for p in passages if "Mallory Vane" in p]
    assert hostile and "<script>" in hostile[0] and "onerror=" in hostile[0], passages
    assert browser.execute_script("return window.__injected === undefined")
    assert not browser.find_elements(By.CSS_SELECTOR, "#ask-result script, #ask-result img")


def test_eval_report_tab(evaluated: tuple[str, Path], browser: Any, tmp_path: Path) -> None:
    """The home's eval results as `eval` wrote them: one row per strategy, every plot loaded."""
    from selenium.webdriver.common.by import By

    url, home = evaluated
    results = json.loads((home / "eval" / "results.json").read_text(encoding="utf-8"))
    browser.set_window_size(1400, 900)
    browser.get(f"{url}/#eval")
    rows = until("the table", lambda: browser.find_elements(By.CSS_SELECTOR, ".eval-table tbody tr"), browser)
    assert [r.find_element(By.TAG_NAME, "th").text for r in rows] == list(results["strategies"])
    header = [h.text for h in browser.find_elements(By.CSS_SELECTOR, ".eval-table thead th")]
    cells = [c.text for c in rows[0].find_elements(By.TAG_NAME, "td")]
    first = results["strategies"][rows[0].find_element(By.TAG_NAME, "th").text]
    assert float(cells[header.index("recall@5") - 1]) == round(first["recall@5"], 3)
    images = browser.find_elements(By.CSS_SELECTOR, "#eval-result figure img")
    assert sorted(i.get_attribute("alt") for i in images) == sorted(
        p.name for p in (home / "eval").glob("*.png")
    )
    until(
        "every plot",
        lambda: all(browser.execute_script("return arguments[0].naturalWidth", i) for i in images),
        browser,
    )
    screenshot(browser, tmp_path, "web-eval.png")


def _text(browser: Any, element_id: str) -> str:
    return str(browser.execute_script(f"return document.getElementById('{element_id}').textContent"))


def _shows(browser: Any, *texts: str) -> bool:
    body = _body(browser)
    return all(text in body for text in texts)


def _body(browser: Any) -> str:
    return str(browser.execute_script("return document.body ? document.body.innerText : ''"))
