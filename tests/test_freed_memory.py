"""With the in-process executor (the default), the memory a step freed goes back to the system
before the next step starts, so each step's peak does not sit on what earlier steps kept."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import dagster as dg
import pytest

from graphunified_assets.defs.executors import executor_from_env
from graphunified_assets.lib.ingest.update_plan import UpdatePlan
from graphunified_assets.ops.index_progress import PROGRESS_LOGGER, step_progress_logger
from graphunified_assets.ops.indexing import _small_update, run_job
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.settings.model import LoggingSettings

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


_SEEN: list[tuple[int, int]] = []  # (the first step's peak, the next step's start), per run


@dg.op
def _next_step(peak: int) -> None:
    _SEEN.append((peak, _rss_mb()))


@dg.job
def _two_steps() -> None:
    _next_step(_allocates_and_frees())


def two_steps(home: str) -> dg.JobDefinition:
    """The two steps with the code location's executor (in process: GRAPHUNIFIED_EXECUTOR unset)."""
    return _two_steps.graph.to_job(executor_def=executor_from_env({}, home=HomeLayout.at(home)))


# `index`'s loggers (`run_job` configures them).
_PROGRESS = {"console": dg.colored_console_logger, PROGRESS_LOGGER: step_progress_logger(LoggingSettings())}
linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads /proc; glibc's malloc_trim"
)


@linux_only
def test_a_launched_run_starts_its_next_step_without_what_the_previous_one_freed(tmp_path: Path) -> None:
    # As the UI, the sensors and automation launch runs: through the code location's executor.
    job = dg.build_reconstructable_job(__name__, two_steps.__name__, (str(tmp_path),))
    with dg.instance_for_test() as instance, dg.execute_job(job, instance=instance) as result:
        assert result.success
    peak, next_start = _SEEN.pop()
    assert next_start < peak - FREED_MB // 2, (peak, next_start)


@linux_only
def test_a_run_of_index_starts_its_next_step_without_what_the_previous_one_freed(tmp_path: Path) -> None:
    # As `index` runs a job in its own process: `execute_in_process`, with Dagster's own executor.
    defs = dg.Definitions(jobs=[two_steps(str(tmp_path))], loggers=_PROGRESS)
    with dg.instance_for_test() as instance:
        run_job(defs, "_two_steps", instance, {})
    peak, next_start = _SEEN.pop()
    assert next_start < peak - FREED_MB // 2, (peak, next_start)


@linux_only
def test_a_small_updates_run_leaves_the_freed_memory_for_the_next_step(tmp_path: Path) -> None:
    # `index` of a small update: its steps' working sets are alike, the next step reuses the memory.
    defs = dg.Definitions(jobs=[two_steps(str(tmp_path))], loggers=_PROGRESS)
    with dg.instance_for_test() as instance:
        run_job(defs, "_two_steps", instance, {}, keep_freed=True)
    peak, next_start = _SEEN.pop()
    assert next_start > peak - FREED_MB // 2, (peak, next_start)


_FROZEN: list[int] = []


@dg.op
def _counts_frozen() -> None:
    _FROZEN.append(gc.get_freeze_count())


@dg.job
def _frozen_step() -> None:
    _counts_frozen()


def test_a_run_of_index_leaves_what_it_holds_out_of_the_steps_collections(tmp_path: Path) -> None:
    # The definitions, the model and the plan outlive every step: no full collection walks them.
    job = _frozen_step.graph.to_job(executor_def=executor_from_env({}, home=HomeLayout.at(str(tmp_path))))
    defs = dg.Definitions(jobs=[job], loggers=_PROGRESS)
    with dg.instance_for_test() as instance:
        run_job(defs, "_frozen_step", instance, {})
    assert _FROZEN.pop() > 10_000  # Dagster's own objects at least
    assert gc.get_freeze_count() == 0  # collectable again once the run is over


def test_an_update_is_small_up_to_a_tenth_of_the_corpus() -> None:
    def plan(new: int, removed: int) -> UpdatePlan:
        return UpdatePlan(
            tuple(f"n{i}" for i in range(new)), (), (), tuple(f"r{i}" for i in range(removed)), 0
        )

    assert _small_update(plan(1, 0), live=12_587)
    assert _small_update(plan(5, 5), live=100)
    assert not _small_update(plan(6, 5), live=100)
    assert not _small_update(plan(400, 0), live=0)  # a build
