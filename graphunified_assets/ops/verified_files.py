"""What the last finished `index` found whole, so the next one checks only files changed since.

`index` checks the home's derived files before it writes (`store_check`): each SQLite cache and
the index state in full (`pragma quick_check` reads the whole file: 1.7 GB of embeddings at 12.6K
passages, 15 s from a cold disk) and each Parquet table's magic bytes (50K files, 7 s cold). Our
own writers never leave those files damaged (SQLite's transactions, the tables' atomic renames),
so damage comes from outside: a torn copy, a truncation, random bytes. Each changes the file's
size, modification time or inode. So an `index` that finishes records those of every such file
in `<home>/cache/verified.json.gz`, and the next one checks only the files whose record differs
or is missing. The record is taken away when an `index` starts: one that fails (for instance on a
page a disk error damaged, which no record shows) leaves none, and the next `index` checks
everything.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import zlib
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path, PurePath

from graphunified_query.core.layout import HomeLayout

Fingerprint = list[int | None]  # size, mtime_ns, inode, and the write-ahead log's size (SQLite)
SQLITE_SUFFIX = ".sqlite"  # every SQLite file of a home (`HomeLayout.sqlite_files`); only they have a log


def fingerprint(path: str | Path) -> Fingerprint | None:
    """None for a missing file. Paths may be strings: 50K at 12.6K passages, twice per `index`."""
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return None
    wal: int | None = None
    if os.fspath(path).endswith(SQLITE_SUFFIX):  # frames not yet checkpointed are part of a SQLite database
        with contextlib.suppress(FileNotFoundError):
            wal = os.stat(f"{path}-wal").st_size
    return [stat.st_size, stat.st_mtime_ns, stat.st_ino, wal or None]  # an empty log is no log


class VerifiedFiles:
    """The record of the last finished `index`: file (relative to the home) → fingerprint."""

    def __init__(self, home: Path, files: dict[str, Fingerprint]) -> None:
        self._home = home
        self._files = files
        self._seen: dict[str, Fingerprint] = {}  # file -> its fingerprint when this `index` checked it

    @classmethod
    def take(cls, layout: HomeLayout) -> VerifiedFiles:
        """The record, removed from the home; empty when there is none or it cannot be read."""
        path = layout.verified_files
        try:
            files = json.loads(gzip.decompress(path.read_bytes()))
        except (OSError, EOFError, ValueError, zlib.error):  # missing, torn or not ours: check all
            files = {}
        path.unlink(missing_ok=True)
        return cls(layout.home, files if isinstance(files, dict) else {})

    def unchanged(self, path: str | Path) -> bool:
        """``path`` is as the last finished `index` left it, so needs no check."""
        key, now = _key(self._home, path), fingerprint(path)
        if now is not None:
            self._seen[key] = now
        recorded = self._files.get(key)
        return recorded is not None and recorded == now

    def forget(self, path: str | Path) -> None:
        """``path`` was removed after its check (a damaged file)."""
        self._seen.pop(_key(self._home, path), None)

    @classmethod
    def recorded(cls, home: Path, files: dict[str, Fingerprint]) -> VerifiedFiles:
        """The record an `index` has just written, as that `index`'s check: what the status it
        prints next plans from."""
        verified = cls(home, files)
        verified._seen = files
        return verified

    def table_times(self, table: str) -> dict[str, int]:
        """File name → modification time (ns) of each file of a per-document ``table`` this
        `index`'s check fingerprinted: the check takes every file of those tables, and nothing
        writes them until the runs start, so the update plan reads these instead of listing and
        stating the 50K files again (0.5 s at 12.6K passages)."""
        prefix = f"{_key(self._home, HomeLayout.at(self._home).partition_dir(table))}{os.sep}"
        return {
            key[len(prefix) :]: found[1]
            for key, found in self._seen.items()
            if key.startswith(prefix) and os.sep not in key[len(prefix) :] and found[1] is not None
        }

    def as_checked(self, rewritten: Collection[str]) -> dict[str, Fingerprint]:
        """The fingerprints this `index`'s check took of the per-document files (``<table>/<file>``
        under the tables folder) but those named in ``rewritten`` (the files of the documents it
        indexes): recording a file as it was when checked is safe, since one written since shows
        another fingerprint and is checked next time. Restating all 50K at 12.6K passages took
        0.3-0.5 s of each `index`."""
        tables = HomeLayout.at(self._home).tables.name
        return {
            key: found
            for key, found in self._seen.items()
            if len(parts := PurePath(key).parts) == 3 and parts[0] == tables and parts[2] not in rewritten
        }


def record_verified(
    layout: HomeLayout, paths: Iterable[str | Path], checked: Mapping[str, Fingerprint] | None = None
) -> VerifiedFiles:
    """Record ``paths`` as whole (at the end of an `index` that finished), and return the record
    (`VerifiedFiles.recorded`). A file in ``checked`` (`VerifiedFiles.as_checked`) is recorded as
    it was checked, the rest as they are now."""
    checked = checked or {}
    files = {}
    for path in paths:
        key = _key(layout.home, path)
        if (found := checked.get(key) or fingerprint(path)) is not None:
            files[key] = found
    partial = layout.verified_files.with_name(layout.verified_files.name + ".partial")
    partial.parent.mkdir(parents=True, exist_ok=True)
    partial.write_bytes(gzip.compress(json.dumps(files).encode(), compresslevel=1))
    os.replace(partial, layout.verified_files)  # a torn record would only mean checking everything
    return VerifiedFiles.recorded(layout.home, files)


def _key(home: Path, path: str | Path) -> str:
    # A prefix cut, not Path.relative_to: 50K files at 12.6K passages, twice per `index`.
    text, prefix = os.fspath(path), f"{home}{os.sep}"
    return text[len(prefix) :] if text.startswith(prefix) else str(Path(path).relative_to(home))
