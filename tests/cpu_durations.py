"""`pytest --cpu-durations=N`: the N tests (setup, call and teardown apart) and files that cost the
most CPU seconds: this process's (every thread) plus its finished child processes'.

`--durations` measures wall time, which on a shared machine mostly measures the other jobs; CPU
seconds barely move with the load, so a ranking taken at load 15 still says where an idle run's
time goes. A test that waits (sleeps, polls a server started elsewhere) shows as wall time only.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Iterator

import pytest

_KEY = pytest.StashKey[list[tuple[str, str, float, float]]]()  # (test id, phase, wall, cpu)


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


def _measure(item: pytest.Item, phase: str) -> Iterator[None]:
    rows = item.config.stash.get(_KEY, None)
    if rows is None:
        yield
        return
    wall, cpu = time.monotonic(), _cpu_seconds()
    yield
    rows.append((item.nodeid, phase, time.monotonic() - wall, _cpu_seconds() - cpu))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    return (yield from _measure(item, "setup"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    return (yield from _measure(item, "call"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    return (yield from _measure(item, "teardown"))


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("cpu_durations") is not None:
        config.stash[_KEY] = []


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    rows = config.stash.get(_KEY, None)
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
