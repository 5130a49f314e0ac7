"""How `make test` spreads the suite over xdist workers (tests/parallel.py): whole files and groups
as units, in the order collected, and the browser tests in one group (one Chromium per session)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.parallel import FIRST, FileScheduling

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = ROOT / "tests" / "test_celery_cluster.py"


@dataclass(eq=False)
class FakeWorker:
    """What the scheduler calls on a worker: it records the indexes it is sent."""

    name: str
    sent: list[int] = field(default_factory=list)
    shutting_down: bool = False

    @property
    def gateway(self) -> SimpleNamespace:
        return SimpleNamespace(id=self.name)

    def send_runtest_some(self, indexes: list[int]) -> None:
        self.sent.extend(indexes)

    def shutdown(self) -> None:
        self.shutting_down = True


COLLECTION = [
    "tests/test_cluster.py::test_one",
    "tests/test_cluster.py::test_two",
    "tests/ui/test_browser.py::test_page@browser",
    "tests/query/test_a.py::test_one",
    "tests/query/test_a.py::test_two[x@y]",  # an "@" inside a parameter is not a group
    "tests/query/test_a.py::test_three",
    "tests/ui/test_web_page.py::test_ask@browser",
    "tests/query/test_b.py::test_one",
]


def test_files_and_groups_are_units_sent_whole_in_collection_order(
    pytestconfig: pytest.Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pytestconfig.option, "tx", ["2*popen"])  # as `-n 2` sets it
    monkeypatch.setattr(pytestconfig.option, "loadscopereorder", True)  # xdist's default
    scheduler = FileScheduling(pytestconfig)
    workers = [FakeWorker("gw0"), FakeWorker("gw1")]
    for worker in workers:
        scheduler.add_node(worker)
        scheduler.add_node_collection(worker, COLLECTION)
    scheduler.schedule()
    # The first unit of each worker: the first file whole, and both browser files together.
    assert [COLLECTION[i] for i in workers[0].sent[:2]] == COLLECTION[:2]
    assert [COLLECTION[i] for i in workers[1].sent[:2]] == [COLLECTION[2], COLLECTION[6]]
    done: set[int] = set()
    for _ in COLLECTION:  # the workers run what they were sent, and are sent the rest meanwhile
        for worker in workers:
            for index in [i for i in worker.sent if i not in done]:
                done.add(index)
                scheduler.mark_test_complete(worker, index)
    sent = [[COLLECTION[i] for i in worker.sent] for worker in workers]
    assert sorted(node_id for ids in sent for node_id in ids) == sorted(COLLECTION)  # each once
    for unit in ("tests/test_cluster.py", "tests/query/test_a.py", "tests/query/test_b.py", "@browser"):
        assert sum(any(unit in node_id for node_id in ids) for ids in sent) == 1, (unit, sent)


class Collected:
    """The items of a collection-only run, as the plugin sees them after every hook."""

    items: list[pytest.Item]

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.items = list(session.items)


def test_browser_tests_share_one_group_and_the_long_files_start_first() -> None:
    collected = Collected()
    args = ["--collect-only", "-q", "-p", "no:cacheprovider", str(ROOT / "tests" / "ui"), str(CLUSTER)]
    assert pytest.main(args, plugins=[collected]) == pytest.ExitCode.OK
    browser = [item for item in collected.items if "browser" in item.keywords]
    assert len(browser) >= 2, collected.items
    groups = {mark.args[0] for item in browser for mark in item.iter_markers("xdist_group")}
    assert groups == {"browser"}, groups  # and no browser test without it:
    assert all(item.get_closest_marker("xdist_group") for item in browser)
    first = {item.path.name for item in collected.items if item.get_closest_marker(FIRST)}
    assert first == {"test_celery_cluster.py", "test_browser.py", "test_web_page.py"}, first
