"""Releasing the LanceDB versions that no kept generation reads any more.

Every refresh writes new versions of the vector tables, and Lance keeps each old version's
data files until told otherwise, so a home grew by a full copy of every rewritten table per
refresh, versions nobody could read any more. Lance cleans up by age only, so the cutoff is
the creation time of the oldest version a kept generation still reads, less a margin: every
version older than that is unreachable, and Lance never removes a table's latest version.
The same call works on a local folder and on a bucket (LanceDB's own S3 support).
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from datetime import datetime, timedelta
from typing import Any

# Versions written within this long before the oldest one in use are kept too: it absorbs the
# time between reading the clock and Lance reading it, and costs at most a version or two.
MARGIN = timedelta(minutes=1)


def release_unused_versions(
    db: Any, in_use: Mapping[str, Set[int]], *, margin: timedelta = MARGIN
) -> dict[str, int]:
    """Remove each table's versions older than the oldest in ``in_use`` → versions removed per
    table. Tables not named are left alone (nothing says which of their versions a reader needs).

    LanceDB's `optimize` does the removal (its `cleanup_old_versions` needs the separate 85 MB
    pylance package); it also compacts small fragments, which writes one more version when there
    are any, never touching the versions in use.
    """
    released: dict[str, int] = {}
    for table, versions in sorted(in_use.items()):
        handle = db.open_table(table)
        # list_versions gives naive local times (datetime.fromtimestamp), as datetime.now() is.
        created = {int(v["version"]): v["timestamp"] for v in handle.list_versions()}
        needed = [created[v] for v in versions if v in created]
        if len(needed) != len(versions):
            continue  # a version in use is already gone: touch nothing, the store needs a rebuild
        handle.optimize(cleanup_older_than=datetime.now() - min(needed) + margin)
        remaining = {int(v["version"]) for v in handle.list_versions()}
        released[table] = len(set(created) - remaining)
    return released
