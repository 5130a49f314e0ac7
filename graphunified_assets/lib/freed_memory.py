"""Giving the memory a finished step freed back to the system, when steps share one process.

With the in-process executor (the single-machine default) every step of a run executes in one
process, and what a step freed stays with that process: Arrow's allocator keeps freed blocks for
reuse, and glibc's ``malloc`` keeps freed pages of its heap unless the top of the heap is free.
A 12.6K-passage global refresh then grew from step to step to 2.6 GB (each step's peak on top
of what earlier steps had freed but kept); released after each step, its process falls back to
what is live (400-700 MB) and the refresh peaked at 2.2 GB, at the same wall time.

A small update's `index` keeps it instead (`run_job`'s ``keep_freed``): there every step works on
whole-corpus tables of about the same size, so the next step reuses what the last one freed,
where giving it back made each step fault its pages in again (2-4 s of a one-passage update of
the 12.6K home, for a peak 0.1 GB lower).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from collections.abc import Callable
from functools import cache

import pyarrow as pa


def release_freed_memory() -> None:
    """Collects the young generations' unreachable cycles, then returns Arrow's and ``malloc``'s
    free pages to the system.

    Not a full collection: that walks every object of the process, ~0.2 s per million, after
    each step; in the test processes, which hold many objects, `test_metadata` and
    `test_child_runs` took 82.7 s with it and 56.4 s without. What a step frees is freed by
    reference counting; the automatic collector still reaches older cycles."""
    gc.collect(1)
    pa.default_memory_pool().release_unused()
    if (trim := _malloc_trim()) is not None:
        trim(0)


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``; None where the C library has none (macOS, musl)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    trim: Callable[[int], int] | None = getattr(ctypes.CDLL(name), "malloc_trim", None)
    return trim
