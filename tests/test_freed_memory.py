"""With the in-process executor (the default), the memory a step freed goes back to the system
before the next step starts, so each step's peak does not sit on what earlier steps kept."""

from __future__ import annotations

import sys
from pathlib import Path

import dagster as dg
import pytest

from graphunified_assets.defs.executors import executor_from_env
from graphunified_query.core.layout import HomeLayout

FREED_MB = 200
_PINNED: list[bytearray] = []


def _rss_mb() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) // 1024


@dg.op
def _allocates_and_frees() -> int:
    """Holds ``FREED_MB`` in 1 KB blocks (malloc's heap, not mmap), then frees them; one block
    allocated after them stays, so the heap's top is in use and ``free`` alone returns nothing."""
    blocks = [bytearray(1024) for _ in range(FREED_MB * 1024)]
    _PINNED.append(bytearray(1024))
    peak = _rss_mb()
    del blocks
    return peak


@dg.op
def _next_step(peak: int) -> tuple[int, int]:
    return peak, _rss_mb()


@dg.job
def _two_steps() -> None:
    _next_step(_allocates_and_frees())


def two_steps(home: str) -> dg.JobDefinition:
    """The two steps with the code location's executor (in process: GRAPHUNIFIED_EXECUTOR unset)."""
    return _two_steps.graph.to_job(executor_def=executor_from_env({}, home=HomeLayout.at(home)))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; malloc_trim is glibc's")
def test_the_next_step_starts_without_what_the_previous_one_freed(tmp_path: Path) -> None:
    job = dg.build_reconstructable_job(__name__, two_steps.__name__, (str(tmp_path),))
    with dg.instance_for_test() as instance, dg.execute_job(job, instance=instance) as result:
        assert result.success
        peak, next_start = result.output_for_node("_next_step")
    assert next_start < peak - FREED_MB // 2, (peak, next_start)
