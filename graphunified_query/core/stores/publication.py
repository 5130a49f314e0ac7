"""Published generations: the consistent set of global tables and indexes that readers load.

A rebuild rewrites `tables/*.parquet`, `indexes/` and the LanceDB tables one by one, so a reader
opening the live paths mid-rebuild could mix old and new files. At the end of a successful
global refresh, `publish` hard-links the global files into `published/<n>/` (every writer
replaces files by rename, so a link keeps the old content alive), records each LanceDB table's
version (old versions stay readable by checkout), and only then switches `published/CURRENT`
with one atomic rename. Readers follow `CURRENT`, so they see one whole generation: the old
one or the new one. The last `KEEP` generations are kept for readers still opening the older.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa

from graphunified_query.core.artifacts import ALIASES_FILE, MANIFEST, POINTER
from graphunified_query.core.layout import HomeLayout, build_command, refresh_command
from graphunified_query.core.settings.model import SETTINGS_FILE_NAME
from graphunified_query.core.stores.lance_versions import tag_generation, untag_generations
from graphunified_query.core.stores.parquet import StoreError, read_table

KEEP = 2
# Published with the generation so a remote reader gets the settings and aliases it was built with.
FROZEN_WITH_GENERATION = (SETTINGS_FILE_NAME, f"tables/{ALIASES_FILE}")
_STAGING_PREFIX = ".staging-"


def _is_staging_leftover(name: str) -> bool:
    """Files a writer is still building or swapping (temp names), never part of a generation."""
    return name.startswith(".") or ".tmp" in name or name.endswith(".old")


class PublishedFiles(Protocol):
    """One generation's files, local (`publication.Generation`) or remote (`RemoteGeneration`)."""

    @property
    def number(self) -> int: ...  # read-only: a generation's number never changes

    @property
    def published(self) -> bool: ...  # False: the live files of a home built before generations
    @property
    def local_home(self) -> Path: ...  # where aliases (and a remote generation's downloads) are
    def describe(self) -> str: ...
    def rebuild_hint(self) -> str: ...
    def missing_files(self) -> list[str]: ...
    def read_table(self, table: str, hint: str) -> pa.Table: ...
    def index_path(self, name: str) -> Path: ...
    def lance_connect(self) -> Any: ...
    def lance_location(self, table: str) -> str: ...
    def lance_exists(self, table: str) -> bool: ...
    def lance_version(self, table: str) -> int | None: ...


@dataclass(frozen=True)
class Generation:
    """One published generation; ``root`` None means "the live paths" (a home built before)."""

    layout: HomeLayout
    number: int = 0
    root: Path | None = None
    lance_versions: dict[str, int] = field(default_factory=dict)
    files: tuple[str, ...] = ()  # every file published, relative to root: a deleted one is damage

    # The reading surface a snapshot loads from; `remote_generation.RemoteGeneration` has it too.
    @property
    def published(self) -> bool:
        return self.root is not None

    @property
    def local_home(self) -> Path:
        return self.layout.home

    def rebuild_hint(self) -> str:
        return refresh_command(self.layout.home)

    def missing_files(self) -> list[str]:
        return (
            [str(self.root / name) for name in self.files if not (self.root / name).exists()]
            if self.root
            else []
        )

    def table_path(self, table: str) -> Path:
        return self.root / "tables" / f"{table}.parquet" if self.root else self.layout.table_path(table)

    def read_table(self, table: str, hint: str) -> pa.Table:
        return read_table(self.table_path(table), rebuild_hint=hint)

    def index_path(self, name: str) -> Path:
        return self.root / "indexes" / name if self.root else self.layout.index_path(name)

    def lance_connect(self) -> Any:
        import lancedb  # ~4 s to import: only a load that reads LanceDB pays it, not a mapped one

        return lancedb.connect(str(self.layout.lancedb))

    def lance_location(self, table: str) -> str:
        return str(self.layout.lancedb / f"{table}.lance")

    def lance_exists(self, table: str) -> bool:
        return (self.layout.lancedb / f"{table}.lance").exists()

    def lance_version(self, table: str) -> int | None:
        return self.lance_versions.get(table) if self.root else None

    def describe(self) -> str:
        return (
            f"generation {self.number} ({self.root})"
            if self.root
            else f"the live files of {self.layout.home}"
        )


def current(layout: HomeLayout, *, rebuild_hint: str) -> Generation:
    """The generation `CURRENT` names, or the live paths when nothing was ever published."""
    pointer = layout.published / POINTER
    try:
        number = int(pointer.read_text(encoding="utf-8").strip())
    except FileNotFoundError:
        if kept := _generations(layout):  # published before: the live files may be mid-rebuild
            raise StoreError(
                f"{pointer} is missing although generations {kept} were published; readers do not "
                f"guess which is whole: run `{build_command(layout.home)}` (it republishes)."
            ) from None
        return Generation(layout)
    except (ValueError, OSError) as error:
        raise StoreError(f"{pointer} is unreadable ({error}); rebuild with `{rebuild_hint}`.") from None
    root = layout.published / str(number)
    manifest = root / MANIFEST
    try:
        recorded = json.loads(manifest.read_text(encoding="utf-8"))
        versions = {str(k): int(v) for k, v in recorded["lance_versions"].items()}
        files = tuple(str(name) for name in recorded.get("files", []))
    except FileNotFoundError:
        raise StoreError(
            f"{manifest} is missing (generation {number} named by {pointer}); rebuild with `{rebuild_hint}`."
        ) from None
    except (ValueError, KeyError, TypeError, AttributeError, OSError) as error:
        raise StoreError(f"{manifest} is unreadable ({error}); rebuild with `{rebuild_hint}`.") from None
    return Generation(layout, number, root, versions, files)


def publish(layout: HomeLayout, lance_versions: dict[str, int], *, run_id: str = "") -> Generation:
    """Freeze the current global files as the next generation and point readers at it.

    Callers hold the home's index lock, so only one publisher runs at a time.
    """
    layout.published.mkdir(parents=True, exist_ok=True)
    for leftover in layout.published.glob(f"{_STAGING_PREFIX}*"):  # from a killed publisher
        shutil.rmtree(leftover, ignore_errors=True)
    number = max(_generations(layout), default=0) + 1
    staging = layout.published / f"{_STAGING_PREFIX}{number}"
    _link_files(layout.tables, staging / "tables", lambda p: p.is_file() and p.suffix == ".parquet")
    _link_tree(layout.indexes, staging / "indexes")
    for name in FROZEN_WITH_GENERATION:  # copied, not linked: an editor may rewrite them in place
        if (layout.home / name).is_file():
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(layout.home / name, staging / name)
    files = sorted(str(p.relative_to(staging)) for p in staging.rglob("*") if p.is_file())
    manifest = {
        "files": files,
        "generation": number,
        "published_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "run_id": run_id,
        "lance_versions": lance_versions,
    }
    _write_durable(staging / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True))
    import lancedb

    db = lancedb.connect(str(layout.lancedb))
    tag_generation(db, number, lance_versions)  # before readers can see it: cleanup never touches these
    root = layout.published / str(number)
    os.replace(staging, root)
    _write_durable(layout.published / POINTER, f"{number}\n")  # the switch readers see
    pruned = _prune(layout, keep_from=number - KEEP + 1)
    untag_generations(db, pruned, lance_versions)
    return Generation(layout, number, root, dict(lance_versions), tuple(files))


def published_lance_versions(layout: HomeLayout) -> dict[str, set[int]]:
    """LanceDB versions some kept generation still reads: never clean these up."""
    used: dict[str, set[int]] = {}
    for number in _generations(layout):
        try:
            recorded = json.loads((layout.published / str(number) / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for table, version in recorded.get("lance_versions", {}).items():
            used.setdefault(table, set()).add(int(version))
    return used


def _generations(layout: HomeLayout) -> list[int]:
    if not layout.published.is_dir():
        return []
    return sorted(int(p.name) for p in layout.published.iterdir() if p.is_dir() and p.name.isdigit())


def _link_files(source: Path, target: Path, wanted: Callable[[Path], bool]) -> None:
    target.mkdir(parents=True, exist_ok=True)
    if not source.is_dir():
        return
    for path in source.iterdir():
        if wanted(path) and not _is_staging_leftover(path.name):
            _link(path, target / path.name)


def _link_tree(source: Path, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    if not source.is_dir():
        return
    for path in source.iterdir():
        if _is_staging_leftover(path.name):
            continue
        if path.is_dir():
            _link_tree(path, target / path.name)
        elif path.is_file():
            _link(path, target / path.name)


def _link(source: Path, target: Path) -> None:
    """A hard link costs no space or time; a filesystem without them gets a copy."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _write_durable(path: Path, text: str) -> None:
    staging = path.with_name(f".{path.name}.tmp")
    with staging.open("w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(staging, path)


def _prune(layout: HomeLayout, *, keep_from: int) -> list[int]:
    pruned = [number for number in _generations(layout) if number < keep_from]
    for number in pruned:
        shutil.rmtree(layout.published / str(number), ignore_errors=True)
    return pruned
