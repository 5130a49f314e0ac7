"""The LanceDB half of a mirror: each table's files, synced once and checked through LanceDB.

Lance never rewrites a data file or a version manifest (version files are named by number), so
a table's remote copy only ever gains files: those missing remotely are uploaded, data before
the manifests that name it, and each generation opens the version its manifest records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lancedb

from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.stores.object_store import ObjectFiles, ObjectStoreError
from graphunified_query.core.stores.publication import Generation, published_lance_versions
from graphunified_query.core.stores.remote_generation import LANCEDB

# Rewritten in place by Lance: always re-uploaded, and last, after what they point to.
_MUTABLE_FILES = ("_latest.manifest", "latest_version_hint.json")


def sync_table(folder: Path, files: ObjectFiles, table: str) -> tuple[int, int]:
    """Upload the table's files the bucket lacks → (files, bytes) uploaded."""
    remote = files.sizes(LANCEDB, f"{table}.lance")
    local = [p for p in folder.rglob("*") if p.is_file() and not _is_temporary(p.relative_to(folder))]
    added, size = 0, 0
    for path in sorted(local, key=lambda p: _upload_order(p.relative_to(folder))):
        name, stat_size = path.relative_to(folder).as_posix(), path.stat().st_size
        if remote.get(name) == stat_size and path.name not in _MUTABLE_FILES:
            continue
        files.upload(path, LANCEDB, f"{table}.lance", name)
        added, size = added + 1, size + stat_size
    return added, size


def _is_temporary(relative: Path) -> bool:
    return any(part.startswith(".") for part in relative.parts)


def _upload_order(relative: Path) -> tuple[int, str]:
    """Data, deletion and index files first, version manifests after them, mutable hints last:
    a remote reader never finds a manifest whose files are not there yet."""
    if relative.name in _MUTABLE_FILES:
        return 2, relative.as_posix()
    return (1 if relative.parts[0] == "_versions" else 0), relative.as_posix()


def check_versions(layout: HomeLayout, generation: Generation, files: ObjectFiles) -> None:
    """Open each table remotely at its recorded version, through LanceDB's own S3 support,
    before any reader is pointed at it."""
    store, remote = files.store, remote_db(files)
    local = lancedb.connect(str(layout.lancedb))
    for table, version in sorted(generation.lance_versions.items()):
        try:
            remote_rows = remote.open_table(table, version=version).count_rows()
        except Exception as error:  # lance raises several error types for missing objects
            raise ObjectStoreError(
                f"{store.url(LANCEDB, table + '.lance')} does not open at version {version} after "
                f"the upload ({type(error).__name__}: {error}); run the mirror again."
            ) from None
        expected = local.open_table(table, version=version).count_rows()
        if remote_rows != expected:
            raise ObjectStoreError(
                f"{store.url(LANCEDB, table + '.lance')} has {remote_rows} rows at version {version}, "
                f"the local table {expected}; run the mirror again."
            )


def drop_released_files(layout: HomeLayout, files: ObjectFiles, in_use: dict[str, set[int]]) -> int:
    """Delete remote LanceDB files the local tables no longer have (their versions were released
    by `published_snapshot`), but only when every version the kept remote generations read is
    still protected and present locally: Lance keeps all files of a kept version, so none of
    theirs can go."""
    kept_locally = published_lance_versions(layout)
    if any(not versions <= kept_locally.get(table, set()) for table, versions in in_use.items()):
        return 0  # e.g. an earlier mirror was skipped: the remote may need files the home dropped
    local = lancedb.connect(str(layout.lancedb))
    for table, versions in in_use.items():
        present = {int(v["version"]) for v in local.open_table(table).list_versions()}
        if not versions <= present:
            return 0  # a version in use is gone locally: the home needs a rebuild, keep the bucket
    deleted = 0
    for table in sorted(in_use):
        folder = layout.lancedb / f"{table}.lance"
        for name in files.sizes(LANCEDB, f"{table}.lance"):
            if not (folder / name).exists():
                files.delete(LANCEDB, f"{table}.lance", name)
                deleted += 1
    return deleted


def remote_db(files: ObjectFiles) -> Any:
    return lancedb.connect(files.store.url(LANCEDB), storage_options=files.store.lance_options())
