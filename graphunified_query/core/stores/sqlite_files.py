"""Opening SQLite files that can be rebuilt (the caches, the index state): damage never wedges a run.

Every SQLite file of a home is derived: the caches refill as documents are indexed, the index
state is rebuilt from the tables. So a file that is not a database or is malformed (random
bytes, a torn copy) is moved aside to `<name>.damaged-<time>` with a one-line warning naming it,
and an empty one takes its place. A busy or read-only file is not damage and still raises.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

_log = logging.getLogger(__name__)
_DAMAGE_CODES = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB (primary result codes)


def is_damage(error: sqlite3.DatabaseError) -> bool:
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _DAMAGE_CODES
    text = str(error)
    return "not a database" in text or "malformed" in text


def move_aside(path: Path, reason: object) -> str:
    """Rename a damaged file (and its WAL/SHM companions); return the warning that names it."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    aside = path.with_name(f"{path.name}.damaged-{stamp}")
    path.rename(aside)
    for suffix in ("-wal", "-shm"):  # the journal of a damaged file must not replay into the new one
        companion = path.with_name(path.name + suffix)
        if companion.exists():
            companion.rename(aside.with_name(aside.name + suffix))
    return f"{path} was damaged ({reason}); moved it to {aside.name} and rebuilt it"


def open_rebuildable(
    path: Path,
    setup: Callable[[sqlite3.Connection], object],
    *,
    timeout: float = 5.0,
    check_same_thread: bool = True,
) -> tuple[sqlite3.Connection, str | None]:
    """Connect and run ``setup`` (pragmas, schema); on damage move the file aside and start afresh.

    ``timeout`` and ``check_same_thread`` are sqlite3.connect's (its defaults); ``setup``'s result
    is ignored. Returns the connection and the warning when the file was replaced (also logged), else None.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=timeout, check_same_thread=check_same_thread)
    try:
        setup(db)
        return db, None
    except sqlite3.DatabaseError as error:
        db.close()
        if not is_damage(error):
            raise
        warning = move_aside(path, error)
    _log.warning(warning)
    db = sqlite3.connect(path, timeout=timeout, check_same_thread=check_same_thread)
    setup(db)
    return db, warning


def check_rebuildable(path: Path) -> str | None:
    """A full structural check (`pragma quick_check`); a damaged file is moved aside.

    Run before an `index` under the home's lock: damage inside pages only shows on the read
    that touches them, which could be deep inside a Dagster step.
    """
    if not path.exists():
        return None
    db = sqlite3.connect(path, timeout=60)
    try:
        problems = [row[0] for row in db.execute("pragma quick_check(3)")]
        result = None if problems == ["ok"] else "; ".join(problems)
    except sqlite3.DatabaseError as error:
        if not is_damage(error):
            raise
        result = str(error)
    finally:
        db.close()
    return None if result is None else move_aside(path, result)
