"""bench/build.py's memory sampler: every process of the tree, grandchildren included."""

from __future__ import annotations

import subprocess
import sys
import time

from bench.build import TreeMemory, process_tree

# A child that starts a grandchild holding ~200 MB of touched pages, then both wait.
GRANDCHILD = "import time; block = b'x' * (200 * 2**20); time.sleep(3)"
CHILD = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {GRANDCHILD!r}])"


def test_the_sampler_counts_the_grandchildren() -> None:
    child = subprocess.Popen([sys.executable, "-c", CHILD])
    try:
        with TreeMemory(child.pid, every=0.1) as memory:
            deadline = time.monotonic() + 10
            while len(process_tree(child.pid)) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(process_tree(child.pid)) == 2  # the child and its grandchild
            time.sleep(1.5)  # the grandchild has touched its pages
    finally:
        child.wait()
    assert memory.peak_pss_kb > 200 * 1024  # the grandchild's 200 MB are in the tree's sum
    assert max(memory.peak_hwm_kb.values()) > 200 * 1024
    assert len(memory.peak_hwm_kb) == 2
