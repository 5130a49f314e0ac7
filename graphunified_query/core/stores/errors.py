"""What a reader of a data home raises: the store's errors, each naming the file and the command
that (re)builds it, and the one line for a write the disk refused (`storage_problem`). Shared by
the query side (loading a snapshot) and the pipeline (checking what readers would fail on), so
both live in core."""

from __future__ import annotations

import errno
import shutil
import sqlite3
from pathlib import Path

from graphunified_query.core.stores.parquet import StoreError


class IndexNotBuilt(StoreError):
    """The data home has no (complete) index; the message names the command that builds it."""


class StoreDamaged(IndexNotBuilt):
    """A stored file is truncated, deleted or unreadable; the message names it and the rebuild."""


# What to do when the disk refuses a write, by errno: the one line every command prints instead of
# a traceback (a full disk used to end `index` in 87-98 lines of one).
_REMEDIES = {
    errno.ENOSPC: "free space on its disk",
    errno.EDQUOT: "free space (the disk quota is used up)",
    errno.EFBIG: "free space or raise the file size limit (ulimit -f)",
    errno.EROFS: "mount it writable or pass another --home",
    errno.EACCES: "fix its permissions",
    errno.EPERM: "fix its permissions",
}
_SQLITE_FULL, _SQLITE_IOERR = 13, 10  # SQLite names no file: the home's free space says which


def storage_problem(error: BaseException, home: Path | None) -> str | None:
    """One line naming the file (or the home) a refused write hit and what to do; None when
    ``error`` (or any error it was raised from) is not the disk refusing a write."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in _REMEDIES:
            where = current.filename or home or "the data home"
            return f"cannot write {where} ({current.strerror}); {_REMEDIES[current.errno]}, then run it again"
        code = getattr(current, "sqlite_errorcode", None)
        if (
            isinstance(current, sqlite3.Error)
            and code is not None
            and code & 0xFF in (_SQLITE_FULL, _SQLITE_IOERR)
        ):
            where = home or Path.cwd()
            free = _free_bytes(where)
            return (
                f"cannot write a SQLite file under {where} ({current}; {free} free on its disk); "
                f"{_REMEDIES[errno.ENOSPC]}, then run it again"
            )
        current = current.__cause__ or current.__context__
    return None


def _free_bytes(path: Path) -> str:
    while not path.exists() and path != path.parent:
        path = path.parent
    try:
        free = shutil.disk_usage(path).free
    except OSError:
        return "unknown space"
    return f"{free / 1024:,.0f} KiB" if free < 1024**3 else f"{free / 1024**3:,.1f} GiB"
