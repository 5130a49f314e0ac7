"""The pipeline caps glibc's malloc arenas at one per core when it is imported."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

# Eight threads alive at once, each allocating: without a cap glibc gives each its own arena (up
# to eight per core). `malloc_stats` prints an "Arena N:" block per arena on stderr.
PROBE = """
import ctypes, ctypes.util, threading
{imports}
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.malloc.restype = ctypes.c_void_p
held = threading.Barrier(8)
def allocate():
    libc.malloc(4096)
    held.wait()
threads = [threading.Thread(target=allocate) for _ in range(8)]
[t.start() for t in threads]
[t.join() for t in threads]
libc.malloc_stats()
"""


def _arenas(imports: str, env: dict[str, str]) -> int:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(imports=imports)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return done.stderr.count("Arena ")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_importing_the_pipeline_caps_the_arenas_at_the_cores() -> None:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    cores = len(os.sched_getaffinity(0))
    assert _arenas("", env) > cores  # glibc alone: an arena per allocating thread
    assert _arenas("import graphunified_assets", env) <= cores
    # The user's own setting wins (glibc reads it at start; the import leaves it).
    assert _arenas("import graphunified_assets", {**env, "MALLOC_ARENA_MAX": "5"}) == 5
