"""Which upstream versions an index was built from, so a reader can tell a stale index.

A fingerprint is cheap and changes whenever a table is rewritten: a Parquet file's size and
modification time, or a LanceDB table's version number.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from graphunified_query.core.artifacts import INDEX_MANIFEST_SUFFIX
from graphunified_query.core.stores.parquet import write_text_atomic


def file_fingerprint(path: Path) -> str:
    """Size and mtime of a file (or of every file below a folder), hashed; "missing" when absent."""
    if not path.exists():
        return "missing"
    return _digest(
        f"{'/'.join(parts)}|{found.st_size}|{found.st_mtime_ns}\n"
        for parts, found in sorted(_stats(path, (path.name,)))
    )


def listed_fingerprint(folder: Path, listing: Mapping[str, os.stat_result]) -> str:
    """`file_fingerprint` of ``folder`` from a listing of it the caller made already (entry name
    -> stat): listing a folder of 12.6K files again took 0.07 s, hashing the listing 0.01 s. A
    folder listed empty (or missing) or holding more than files is fingerprinted on disk."""
    if not listing or not all(stat.S_ISREG(found.st_mode) for found in listing.values()):
        return file_fingerprint(folder)
    parent = folder.name
    return _digest(
        f"{parent}/{name}|{found.st_size}|{found.st_mtime_ns}\n" for name, found in sorted(listing.items())
    )


def _digest(lines: Iterable[str]) -> str:
    """The hash of the files' lines, in path order (as one string: a line at a time took twice
    as long at 12.6K files)."""
    return hashlib.sha256("".join(lines).encode()).hexdigest()[:16]


def _stats(path: Path, parts: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], os.stat_result]]:
    """(path parts below ``path``'s parent, stat) of each file at or below ``path``: strings from
    one scan per folder (Path objects per file took 0.25 s per folder of 12.6K files)."""
    if not path.is_dir():
        yield parts, path.stat()
        return
    with os.scandir(path) as entries:
        for entry in entries:
            if entry.is_dir():
                yield from _stats(Path(entry.path), (*parts, entry.name))
            elif entry.is_file():
                yield (*parts, entry.name), entry.stat()


def write_manifest(index: Path, built_from: dict[str, str], **details: Any) -> dict[str, Any]:
    manifest = {"built_at": datetime.now(UTC).isoformat(timespec="seconds"), "built_from": built_from}
    manifest.update(details)
    write_text_atomic(manifest_path(index), json.dumps(manifest, indent=2, sort_keys=True))
    return manifest


def read_manifest(index: Path) -> dict[str, Any] | None:
    path = manifest_path(index)
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def manifest_path(index: Path) -> Path:
    return index.with_name(index.name + INDEX_MANIFEST_SUFFIX)
