"""One glibc ``malloc`` arena per core, set when the pipeline is imported.

glibc gives each thread that allocates while another holds an arena a new one, up to eight per
core, and an arena keeps what its threads freed in pages ``malloc_trim`` can rarely return. The
local model runs its batches on one thread per core (`LocalMiniLMEmbedder.embed`), on threads made
per call, and ONNX Runtime allocates each run's intermediates on the calling thread: the arenas
multiplied. A cold build of 400 MuSiQue passages peaked at 1,051 MB PSS, against 967 MB when the
model ran a batch at a time on its own two threads; with one arena per core, 818 MB at the same
wall time (71.1 s against 71.8 s).

Set before any thread of the process allocates (glibc fixes its limit at the first arena beyond
the default's), so from the package's `__init__`; ``MALLOC_ARENA_MAX`` in the environment wins.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

M_ARENA_MAX = -8  # mallopt's parameter number in glibc's <malloc.h>


def limit_malloc_arenas() -> int | None:
    """Caps the arenas at this process's cores; the cap set, or None (not glibc, or set already)."""
    if "MALLOC_ARENA_MAX" in os.environ:  # glibc read it at start
        return None
    name = ctypes.util.find_library("c")
    mallopt = getattr(ctypes.CDLL(name), "mallopt", None) if name else None
    if mallopt is None:  # macOS, musl
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cores if mallopt(M_ARENA_MAX, cores) == 1 else None
