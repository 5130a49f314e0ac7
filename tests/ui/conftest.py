"""The browser tests: opt-in (`make test` turns them on), slow, and they need Debian's chromium."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

BROWSER_ENV = "GRAPHUNIFIED_BROWSER_TESTS"
ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
SCREENSHOTS = ROOT / "docs" / "screenshots"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "browser: starts `dagster dev` and drives it with headless Chromium")


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups (tests/parallel.py)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    browser = [item for item in items if "browser" in item.keywords]
    for item in browser:  # one worker for them all: they share the session's Chromium
        item.add_marker(pytest.mark.xdist_group("browser"))
    if os.environ.get(BROWSER_ENV) == "1":
        return
    skip = pytest.mark.skip(reason=f"browser test: set {BROWSER_ENV}=1 (`make test` does)")
    for item in browser:
        item.add_marker(skip)


@pytest.fixture(scope="session")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, dict[str, int]]]:
    """One headless Chromium for every browser test (each start costs seconds of CPU), and its
    window's size as it started."""
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
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
    ):
        options.add_argument(flag)
    # An explicit driver path: Selenium Manager never looks for (or downloads) a browser.
    # What the page requested and logged: the web page's test checks nothing left this machine.
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver, driver.get_window_size()
    finally:
        driver.quit()


@pytest.fixture
def browser(chromium: tuple[Any, dict[str, int]]) -> Any:
    """The shared Chromium as a fresh one starts: a blank page, its first window size, and no
    requests or console messages of an earlier test in its logs (each read of a log drains it)."""
    driver, size = chromium
    driver.get("about:blank")
    if driver.get_window_size() != size:
        driver.set_window_size(size["width"], size["height"])
    for log in ("performance", "browser"):
        driver.get_log(log)
    return driver


def screenshot(browser: Any, tmp_path: Path, name: str) -> None:
    """Into the test's files and, as the docs' picture, docs/screenshots/."""
    shot = tmp_path / name
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 20_000
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    from PIL import Image  # matplotlib's dependency

    # 256 colours: a page's flat colours survive, and the committed PNG is a third of the size.
    with Image.open(shot) as image:
        image.convert("RGB").quantize(256).save(SCREENSHOTS / name, optimize=True)
