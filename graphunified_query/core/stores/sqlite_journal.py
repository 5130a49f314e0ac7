"""The journal mode of a home's SQLite files: WAL on a local disk, rollback on a network filesystem.

WAL lets one machine's processes read while one writes, but it keeps its index in shared memory,
which SQLite documents as unsafe when the file is on a network filesystem (NFS, EFS, CIFS, CephFS,
FUSE mounts): the shared home a cluster's workers mount. There every cache and the index state use
SQLite's rollback journal (``delete``), which relies only on file locks. The filesystem is read
from /proc/mounts (the longest mount point holding the file); elsewhere WAL stays.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

MOUNTS = Path("/proc/mounts")
# Filesystem types whose files other machines share (`fuse.*` covers s3fs, sshfs, gcsfuse, …).
NETWORK_FILESYSTEMS = frozenset(
    {"nfs", "nfs4", "cifs", "smb3", "smbfs", "ceph", "glusterfs", "lustre", "9p", "afs", "gpfs", "beegfs"}
)


def filesystem_type(path: Path, mounts: str | None = None) -> str | None:
    """The type of the filesystem holding ``path`` (None when /proc/mounts cannot be read)."""
    if mounts is None:
        try:
            mounts = MOUNTS.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
    target = os.path.realpath(path)
    best, kind = "", None
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, fields[2]
    return kind


def on_network_filesystem(path: Path, mounts: str | None = None) -> bool:
    kind = filesystem_type(path, mounts)
    return kind is not None and (kind in NETWORK_FILESYSTEMS or kind == "fuse" or kind.startswith("fuse."))


def journal_mode(path: Path) -> str:
    return "delete" if on_network_filesystem(path) else "wal"


def set_journal_mode(db: sqlite3.Connection) -> str:
    """Give ``db`` the journal mode its file's filesystem allows; the mode now in effect."""
    _, _, file = db.execute("pragma database_list").fetchone()
    mode = journal_mode(Path(file)) if file else "wal"
    return str(db.execute(f"pragma journal_mode={mode}").fetchone()[0])
