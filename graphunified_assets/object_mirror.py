"""Copies a published generation to object storage, for readers on other machines.

The remote layout is described in `graphunified_query.remote_generation`. The order of writes
is what keeps readers safe: every object of the generation first, then its manifest, then
``CURRENT`` in one PUT. A mirror that dies half-way leaves ``CURRENT`` on the previous
generation, and the next mirror starts that generation again from scratch.

Two things keep a mirror cheap after the first one:

* a generation file whose sha256 the previous remote generation already lists is copied
  server-side from it (its bytes never leave the store);
* LanceDB tables are mirrored once, not per generation. Lance never rewrites a data file or a
  version manifest, so only files missing remotely are uploaded, and each generation opens
  the version its manifest records (the same versions the local generations read).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import lancedb

from graphunified_query.aliases import ALIASES_FILE
from graphunified_query.layout import HomeLayout
from graphunified_query.object_store import ObjectFiles, ObjectStoreError
from graphunified_query.publication import Generation, published_lance_versions
from graphunified_query.remote_generation import GENERATIONS, LANCEDB, MANIFEST, POINTER
from graphunified_query.settings import SETTINGS_FILE_NAME

_MUTABLE_LANCE_FILES = ("_latest.manifest",)  # rewritten in place by Lance: always re-uploaded


@dataclass(frozen=True)
class MirrorReport:
    generation: int
    uri: str
    uploaded_files: int = 0
    uploaded_bytes: int = 0
    copied_files: int = 0  # server-side copies of files the previous generation already had
    copied_bytes: int = 0
    lance_files: int = 0  # LanceDB files new since the last mirror
    lance_bytes: int = 0
    pruned_generations: tuple[int, ...] = ()
    lance_files_deleted: int = 0  # remote LanceDB files of versions neither kept generation reads
    already_current: bool = False
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"pruned_generations": list(self.pruned_generations)}


def mirror(layout: HomeLayout, generation: Generation, files: ObjectFiles) -> MirrorReport:
    """Make ``generation`` the remote ``CURRENT``; safe to repeat after any failure."""
    started = time.perf_counter()
    if generation.root is None:
        raise ObjectStoreError(
            f"{layout.home} has no published generation to copy; build it with "
            f"`python -m graphunified_assets index --home {layout.home}`."
        )
    number, uri = generation.number, files.store.uri
    local = _local_objects(layout, generation)
    previous_number, previous = _remote_current(files)
    local_manifest = _local_manifest(generation)
    origin = (local_manifest["published_at"], local_manifest.get("run_id"))
    if previous_number == number and (previous.get("published_at"), previous.get("run_id")) == origin:
        return MirrorReport(number, uri, already_current=True, seconds=time.perf_counter() - started)
    known = {name: info["sha256"] for name, info in previous.get("objects", {}).items()}
    counts = {"uploaded_files": 0, "uploaded_bytes": 0, "copied_files": 0, "copied_bytes": 0}
    objects: dict[str, dict[str, Any]] = {}
    for name, path in sorted(local.items()):
        info = _describe(path)
        objects[name] = info
        reusable = previous_number not in (None, number) and known.get(name) == info["sha256"]
        if reusable:
            files.copy((GENERATIONS, str(previous_number), name), (GENERATIONS, str(number), name))
            counts["copied_files"] += 1
            counts["copied_bytes"] += info["bytes"]
        else:
            files.upload(path, GENERATIONS, str(number), name)
            counts["uploaded_files"] += 1
            counts["uploaded_bytes"] += info["bytes"]
    lance_files, lance_bytes = 0, 0
    for table in sorted(generation.lance_versions):
        added, size = _sync_lance_table(layout.lancedb / f"{table}.lance", files, table)
        lance_files, lance_bytes = lance_files + added, lance_bytes + size
    _check_lance_versions(layout, generation, files)
    manifest = local_manifest | {
        "objects": objects,
        "published_from": str(layout.home),
        "mirrored_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    files.write_text(json.dumps(manifest, indent=2, sort_keys=True), GENERATIONS, str(number), MANIFEST)
    files.write_text(f"{number}\n", POINTER)  # the switch remote readers see
    pruned = _prune(files, keep={number, previous_number})
    in_use = _versions_in_use(generation.lance_versions, previous.get("lance_versions", {}))
    released = _drop_released_lance_files(layout, files, in_use)
    return MirrorReport(
        number,
        uri,
        **counts,
        lance_files=lance_files,
        lance_bytes=lance_bytes,
        pruned_generations=pruned,
        lance_files_deleted=released,
        seconds=time.perf_counter() - started,
    )


def _local_objects(layout: HomeLayout, generation: Generation) -> dict[str, Path]:
    """The generation's files plus what a remote reader needs beside them (settings, aliases)."""
    assert generation.root is not None
    objects = {name: generation.root / name for name in generation.files}
    extras = {
        SETTINGS_FILE_NAME: layout.home / SETTINGS_FILE_NAME,
        f"tables/{ALIASES_FILE}": layout.tables / ALIASES_FILE,
    }
    return objects | {name: path for name, path in extras.items() if path.is_file()}


def _local_manifest(generation: Generation) -> dict[str, Any]:
    assert generation.root is not None
    return json.loads((generation.root / MANIFEST).read_text(encoding="utf-8"))


def _describe(path: Path) -> dict[str, Any]:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
    except FileNotFoundError:
        raise ObjectStoreError(
            f"{path} is missing from the published generation; rebuild it with "
            "`python -m graphunified_assets index --refresh`, which publishes and mirrors again."
        ) from None
    return {"bytes": path.stat().st_size, "sha256": digest.hexdigest()}


def _remote_current(files: ObjectFiles) -> tuple[int | None, dict[str, Any]]:
    """The remote generation readers load now and its manifest (None, {} when there is none)."""
    pointer = files.read_text(POINTER)
    if pointer is None or not pointer.strip().isdigit():
        return None, {}
    number = int(pointer.strip())
    return number, files.read_json(GENERATIONS, str(number), MANIFEST) or {}


def _sync_lance_table(folder: Path, files: ObjectFiles, table: str) -> tuple[int, int]:
    remote = files.sizes(LANCEDB, f"{table}.lance")
    added, size = 0, 0
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        name = path.relative_to(folder).as_posix()
        if any(part.startswith(".") for part in path.relative_to(folder).parts):
            continue  # Lance's temporary files
        stat_size = path.stat().st_size
        if remote.get(name) == stat_size and path.name not in _MUTABLE_LANCE_FILES:
            continue
        files.upload(path, LANCEDB, f"{table}.lance", name)
        added, size = added + 1, size + stat_size
    return added, size


def _check_lance_versions(layout: HomeLayout, generation: Generation, files: ObjectFiles) -> None:
    """Open each table remotely at its recorded version, through LanceDB's own S3 support,
    before any reader is pointed at it."""
    store, remote = files.store, _remote_db(files)
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


def _remote_db(files: ObjectFiles) -> Any:
    return lancedb.connect(files.store.url(LANCEDB), storage_options=files.store.lance_options())


def _drop_released_lance_files(layout: HomeLayout, files: ObjectFiles, in_use: dict[str, set[int]]) -> int:
    """Delete remote LanceDB files the local tables no longer have (their versions were released
    by `published_snapshot`), but only when every version the two kept remote generations read
    is still kept locally: Lance keeps all files of a kept version, so none of theirs can go."""
    kept_locally = published_lance_versions(layout)
    if any(not versions <= kept_locally.get(table, set()) for table, versions in in_use.items()):
        return 0  # e.g. an earlier mirror was skipped: the remote may need files the home dropped
    deleted = 0
    for table in sorted(in_use):
        folder = layout.lancedb / f"{table}.lance"
        for name in files.sizes(LANCEDB, f"{table}.lance"):
            if not (folder / name).exists():
                files.delete(LANCEDB, f"{table}.lance", name)
                deleted += 1
    return deleted


def _versions_in_use(*generations: Mapping[str, Any]) -> dict[str, set[int]]:
    in_use: dict[str, set[int]] = {}
    for versions in generations:
        for table, version in versions.items():
            in_use.setdefault(table, set()).add(int(version))
    return in_use


def _prune(files: ObjectFiles, *, keep: set[int | None]) -> tuple[int, ...]:
    """Keep the new generation and the one readers may still be opening (as `publication.KEEP`)."""
    listed = {name.split("/", 1)[0] for name in files.sizes(GENERATIONS)}
    stale = tuple(sorted(int(n) for n in listed if n.isdigit() and int(n) not in keep))
    for number in stale:
        files.delete(GENERATIONS, str(number), tree=True)
    return stale
