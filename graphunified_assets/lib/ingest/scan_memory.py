"""What the last scan found in each input file, so the next scan reads only the files changed since.

A scan reads and hashes every input file: the 12.6K-passage JSONL (each line parsed, its record
made canonical and hashed) took 0.6 s of every `index`, `status` and sensor tick, to find the one
line that changed or none. A file's findings (its documents and problems) are reused while its
size, modification and change times and inode are the ones recorded, what git's index compares;
the change time cannot be set back by a user, and a rewrite by rename gets a new inode. A file
changed within ``_SETTLING_NS`` of being scanned is not remembered: a second write in the same
clock tick would leave all four as they were (git's "racily clean" entries).

It lives in the home's cache folder: a missing, torn or foreign record means every file is read.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphunified_query.core.stores.parquet import write_text_atomic

_SETTLING_NS = 2_000_000_000
_VERSION = 1  # bumped when what a scan records of a file changes

Findings = list[list[Any]]  # what `sources` found in one file, as JSON values
StatKey = list[int]


@dataclass
class ScanMemory:
    """Input file (relative to the input folder) → its stat key and the scan's findings in it."""

    root: str  # the input folder scanned
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    changed: bool = False

    @classmethod
    def load(cls, path: Path, root: Path) -> ScanMemory:
        """The record of the last scan of ``root``; empty when it recorded another folder."""
        try:
            record = json.loads(path.read_bytes())
            if (
                record["version"] == _VERSION
                and record["root"] == str(root)
                and isinstance(record["files"], dict)
            ):
                return cls(str(root), record["files"])
        except (OSError, ValueError, KeyError, TypeError):
            pass  # missing, torn or another version's: every file is scanned
        return cls(str(root))

    def save(self, path: Path) -> None:
        """Written when it changed; a home it cannot be written to (read-only, full) is scanned
        whole next time, as without it."""
        if self.changed:
            record = {"version": _VERSION, "root": self.root, "files": self.files}
            with contextlib.suppress(OSError):
                write_text_atomic(path, json.dumps(record, separators=(",", ":")))

    def recall(self, rel: str, key: StatKey | None) -> Findings | None:
        """What the last scan found in ``rel`` if the file's stat is still ``key``, else None."""
        entry = self.files.get(rel)
        return entry["findings"] if key is not None and entry is not None and entry["stat"] == key else None

    def remember(self, rel: str, key: StatKey | None, path: Path, findings: Findings) -> None:
        """``findings`` of the file read while its stat was ``key`` (taken before the read):
        kept if it still is, and settled."""
        self.changed = True
        if key is None or stat_key(path) != key or time.time_ns() - max(key[1], key[2]) < _SETTLING_NS:
            self.files.pop(rel, None)  # changed while read, or may change again unseen: read next time
        else:
            self.files[rel] = {"stat": key, "findings": findings}

    def keep_only(self, scanned: set[str]) -> None:
        """Forgets the files the scan no longer found."""
        if gone := set(self.files) - scanned:
            self.changed = True
            for rel in gone:
                del self.files[rel]


def stat_key(path: Path) -> StatKey | None:
    """Size, modification and change times, inode; None when it cannot be read."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return [found.st_size, found.st_mtime_ns, found.st_ctime_ns, found.st_ino]
