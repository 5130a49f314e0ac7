"""The browser tests: opt-in (`make test` turns them on), slow, and they need Debian's chromium."""

from __future__ import annotations

import os

import pytest

BROWSER_ENV = "GRAPHUNIFIED_BROWSER_TESTS"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "browser: starts `dagster dev` and drives it with headless Chromium")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get(BROWSER_ENV) == "1":
        return
    skip = pytest.mark.skip(reason=f"browser test: set {BROWSER_ENV}=1 (`make test` does)")
    for item in items:
        if "browser" in item.keywords:
            item.add_marker(skip)
