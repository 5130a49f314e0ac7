"""A full disk without root: the process's file-size limit (RLIMIT_FSIZE) makes every write that
grows a file past ``limit`` bytes fail with EFBIG, as ENOSPC would on a full disk (SQLite reports
both as a disk I/O error or "database or disk is full"). Only this process and only inside the
block: the limit and SIGXFSZ's handler are restored after it.

Output the test captures must be in memory (capsys, StringIO): a redirected file would hit the limit.
"""

from __future__ import annotations

import resource
import signal
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def full_disk(limit: int = 0) -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # else the kernel kills the process
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)
