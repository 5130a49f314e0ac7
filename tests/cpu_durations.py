"""`pytest --cpu-durations=N`: the N tests (setup, call and teardown apart) and files that cost the
most CPU seconds: this process's (every thread) plus its finished child processes'.

`--durations` measures wall time, which on a shared machine mostly measures the other jobs; CPU
seconds barely move with the load, so a ranking taken at load 15 still says where an idle run's
time goes. A test that waits (sleeps, polls a server started elsewhere) shows as wall time only.
Under xdist (`-n`) each worker measures its own phases and the reports carry the figures to the
controller, which prints the ranking.
"""

from __future__ import annotations

import resource
from collections.abc import Generator, Iterator

import pytest

_CPU = "cpu_seconds"  # the attribute a phase's report carries: xdist sends it to the controller
_PHASE_CPU = pytest.StashKey[float]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--cpu-durations",
        type=int,
        default=None,
        metavar="N",
        help="show the N slowest test phases and files by CPU seconds (own threads and child processes)",
    )


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _measure(item: pytest.Item) -> Iterator[None]:
    if item.config.getoption("cpu_durations") is None:
        yield
        return
    cpu = _cpu_seconds()
    yield
    item.stash[_PHASE_CPU] = _cpu_seconds() - cpu


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    return (yield from _measure(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    return (yield from _measure(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    return (yield from _measure(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if _PHASE_CPU in item.stash:
        setattr(report, _CPU, item.stash[_PHASE_CPU])
        del item.stash[_PHASE_CPU]
    return report


class _Rows:
    """(test id, phase, wall, cpu) of every phase reported: in the controller under xdist."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, float, float]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        cpu = getattr(report, _CPU, None)
        if cpu is not None:
            self.rows.append((report.nodeid, report.when or "", report.duration, cpu))


_KEY = pytest.StashKey[_Rows]()


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("cpu_durations") is not None:
        config.stash[_KEY] = rows = _Rows()
        config.pluginmanager.register(rows, "cpu-durations-rows")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    rows = config.stash[_KEY].rows if _KEY in config.stash else []
    if not rows:
        return
    shown = config.getoption("cpu_durations") or len(rows)
    write = terminalreporter.write_line
    total_cpu, total_wall = sum(r[3] for r in rows), sum(r[2] for r in rows)
    terminalreporter.section(
        f"slowest {shown} by CPU seconds (total {total_cpu:.1f} CPU s, {total_wall:.1f} s)"
    )
    for test, phase, wall, cpu in sorted(rows, key=lambda r: -r[3])[:shown]:
        write(f"{cpu:8.2f} cpu {wall:8.2f}s {phase:<8} {test}")
    files: dict[str, float] = {}
    for test, _, _, cpu in rows:
        name = test.split("::")[0]
        files[name] = files.get(name, 0.0) + cpu
    terminalreporter.section(f"slowest {shown} files by CPU seconds")
    for name, cpu in sorted(files.items(), key=lambda f: -f[1])[:shown]:
        write(f"{cpu:8.2f} cpu {name}")
