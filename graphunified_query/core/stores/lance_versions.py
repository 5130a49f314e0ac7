"""Keeping the LanceDB versions kept generations read, and releasing the rest.

Every refresh writes new versions of the vector tables, and Lance keeps each old version's
data files until told otherwise, so a home grew by a full copy of every rewritten table per
refresh, versions nobody could read any more.

Two mechanisms, because either alone is not safe:

* **Tags protect.** Publishing generation ``n`` tags each version it reads ``generation-n``;
  pruning the generation deletes its tags. Lance refuses to clean up a tagged version (the
  cleanup fails instead), so no clock error can delete what a kept generation reads.
* **Age releases.** Lance cleans up only by age, so the cutoff is the creation time of the oldest
  version in use, less a margin. If compaction or a clock step moves Lance's own cutoff past a
  tagged version, the cleanup of that table fails, is skipped, and is tried again next time.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Set
from datetime import datetime, timedelta
from typing import Any

# Versions written within this long before the oldest one in use are kept too; a cleanup that
# would reach a tagged version fails safely, so this only saves a retry.
MARGIN = timedelta(minutes=1)
_TAG_PREFIX = "generation-"
log = logging.getLogger(__name__)


def generation_tag(number: int) -> str:
    return f"{_TAG_PREFIX}{number}"


def tag_generation(db: Any, number: int, versions: Mapping[str, int]) -> None:
    """Protect the versions generation ``number`` reads (a leftover tag of a killed publisher
    under the same name is replaced)."""
    name = generation_tag(number)
    for table, version in sorted(versions.items()):
        tags = db.open_table(table).tags
        if name in tags.list():
            tags.delete(name)
        tags.create(name, version)


def untag_generations(db: Any, numbers: Iterable[int], tables: Iterable[str]) -> None:
    """Lift the protection of pruned generations; their versions become releasable."""
    names = {generation_tag(n) for n in numbers}
    for table in tables:
        tags = db.open_table(table).tags
        for name in names & set(tags.list()):
            tags.delete(name)


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
        age = datetime.now() - min(needed) + margin if len(needed) == len(versions) else None
        if age is None or age <= timedelta(0):
            continue  # a version in use is gone, or the clock went back: touch nothing
        try:
            handle.optimize(cleanup_older_than=age)
        except RuntimeError as error:  # Lance refused to remove a tagged version: safe, retry later
            log.warning("kept every version of %s this time: %s", table, error)
            continue
        remaining = {int(v["version"]) for v in handle.list_versions()}
        released[table] = len(set(created) - remaining)
    return released
