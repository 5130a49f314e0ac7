"""How `make test` spreads the suite over processes (pytest-xdist, `-n`; docs/development.md).

A test file is the unit of work: its module-scoped fixtures (an index, a server) are built once,
by the one worker that runs it. Files sharing a process-wide resource (one Chromium, one
`dagster dev`) carry the same `xdist_group` mark and go to one worker together. Files marked
`first` (minutes each: services, servers, real models) start before the rest, so that none of
them is what the run ends on while the other worker idles. Without `-n`, this changes nothing.
"""

from __future__ import annotations

from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

FIRST = "first"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{FIRST}: a long test file (minutes): with -n it starts before the others (tests/parallel.py)",
    )


class FileScheduling(LoadScopeScheduling):
    """xdist's `loadgroup`, with an unmarked test's unit being its whole file (not itself), and the
    units queued in collection order (`pytest_collection_modifyitems` puts the `first` files ahead)."""

    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        super().__init__(config, log)
        config.option.loadscopereorder = False  # the order collected, not "most tests first"

    def _split_scope(self, nodeid: str) -> str:
        if nodeid.rfind("@") > nodeid.rfind("]"):  # `xdist_group` adds "@group" (loadgroup)
            return nodeid.rsplit("@", 1)[-1]
        return nodeid.split("::", 1)[0]


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> LoadScopeScheduling | None:
    if config.getvalue("dist") != "loadgroup":
        return None  # another --dist asked for explicitly: xdist's own
    return FileScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput"):
        return  # not an xdist worker: pytest's own order
    # Every worker sorts its (identical) collection alike, as xdist requires. Stable: files keep
    # their order among themselves, tests theirs within a file.
    items.sort(key=lambda item: item.get_closest_marker(FIRST) is None)
