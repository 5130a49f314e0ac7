"""Copies a published generation to object storage, for readers on other machines.

The remote layout is described in `graphunified_query.core.stores.remote_generation`. The order of writes
is what keeps readers safe: every object of the generation first, then its manifest, then
``CURRENT`` in one PUT. A mirror that dies half-way leaves ``CURRENT`` on the previous
generation, and the next mirror starts that generation again; mirroring the generation that is
already current repairs it (re-uploads missing objects) without touching what readers load.

One home owns a prefix: its id is written to ``WRITER`` by the first mirror, and a mirror from
another home (or from this home after its generations were wiped, so numbers restarted) is
refused. Lance names version files by number, so two writers would overwrite each other's.

Two things keep a mirror cheap after the first one:

* a generation file whose sha256 the previous remote generation already lists is copied
  server-side from it (its bytes never leave the store);
* LanceDB tables are mirrored once, not per generation. Lance never rewrites a data file or a
  version manifest, so only files missing remotely are uploaded (data before manifests), and
  each generation opens the version its manifest records.
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

from graphunified_assets.ops.lance_mirror import check_versions, drop_released_files, sync_table
from graphunified_assets.ops.run_home import home_id as own_id
from graphunified_query.core.artifacts import MANIFEST, POINTER
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.stores.object_store import ObjectFiles, ObjectStoreError
from graphunified_query.core.stores.publication import Generation
from graphunified_query.core.stores.remote_generation import GENERATIONS

WRITER = "WRITER"


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
    already_current: bool = False  # this generation was CURRENT already: only repaired
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
    _claim(layout, files)
    previous_number, previous = _remote_current(files)
    local_manifest = _local_manifest(generation)
    same = previous_number == number and _origin(previous) == _origin(local_manifest)
    if previous_number is not None and not same and previous_number >= number:
        raise ObjectStoreError(
            f"{uri} already serves generation {previous_number}, not older than this home's {number} "
            "(a newer mirror finished first, or this home's generations were rebuilt from scratch); "
            "nothing was changed. Publish to a new prefix, or delete the prefix to start it again."
        )
    objects = {name: _describe(generation.root / name) for name in sorted(generation.files)}
    present = files.sizes(GENERATIONS, str(number)) if same else {}
    known = {name: info["sha256"] for name, info in previous.get("objects", {}).items()}
    counts = {"uploaded_files": 0, "uploaded_bytes": 0, "copied_files": 0, "copied_bytes": 0}
    for name, info in objects.items():
        if present.get(name) == info["bytes"]:
            continue  # repairing the current generation: this object is there already
        if not same and previous_number is not None and known.get(name) == info["sha256"]:
            files.copy((GENERATIONS, str(previous_number), name), (GENERATIONS, str(number), name))
            counts["copied_files"] += 1
            counts["copied_bytes"] += info["bytes"]
        else:
            files.upload(generation.root / name, GENERATIONS, str(number), name)
            counts["uploaded_files"] += 1
            counts["uploaded_bytes"] += info["bytes"]
    lance_files, lance_bytes = 0, 0
    for table in sorted(generation.lance_versions):
        added, size = sync_table(layout.lancedb / f"{table}.lance", files, table)
        lance_files, lance_bytes = lance_files + added, lance_bytes + size
    check_versions(layout, generation, files)
    if not same:
        manifest = local_manifest | {
            "objects": objects,
            "published_from": str(layout.home),
            "mirrored_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        files.write_text(json.dumps(manifest, indent=2, sort_keys=True), GENERATIONS, str(number), MANIFEST)
        _switch(files, number, previous_number)
    kept = {number} | ({previous_number} if previous_number is not None and not same else set())
    if same:
        kept |= _older_generation_kept(files, number)
    pruned = _prune(files, keep=kept)
    in_use = _versions_in_use(
        generation.lance_versions, *(_lance_versions(files, n) for n in kept - {number})
    )
    deleted = drop_released_files(layout, files, in_use)
    return MirrorReport(
        number,
        uri,
        **counts,
        lance_files=lance_files,
        lance_bytes=lance_bytes,
        pruned_generations=pruned,
        lance_files_deleted=deleted,
        already_current=same,
        seconds=time.perf_counter() - started,
    )


def _claim(layout: HomeLayout, files: ObjectFiles) -> None:
    """Make sure the prefix belongs to this home (claiming it if it is empty)."""
    home_id = own_id(layout)
    if home_id is None:
        raise ObjectStoreError(f"{layout.home} is not a folder; index it before publishing it")
    writer = files.read_json(WRITER)
    if writer is None:
        if files.read_text(POINTER) is not None:
            raise ObjectStoreError(
                f"{files.store.uri} holds generations of an unknown writer (no {WRITER}); "
                "publish to a new prefix, or delete this one to start it again."
            )
        files.write_text(json.dumps({"home_id": home_id, "home": str(layout.home)}), WRITER)
    elif writer.get("home_id") != home_id:
        raise ObjectStoreError(
            f"{files.store.uri} is published by another home ({writer.get('home', '?')}, id "
            f"{writer.get('home_id', '?')}); two homes would overwrite each other's LanceDB versions. "
            "Publish to a new prefix, or delete this one to move it to this home."
        )


def _origin(manifest: Mapping[str, Any]) -> tuple[Any, Any]:
    return manifest.get("published_at"), manifest.get("run_id")


def _switch(files: ObjectFiles, number: int, expected: int | None) -> None:
    """Point readers at ``number``, unless another mirror moved ``CURRENT`` on meanwhile (S3 has
    no compare-and-swap; this narrows the race to the moment between the read and the PUT)."""
    now, _ = _remote_current(files)
    if now != expected:
        raise ObjectStoreError(
            f"{files.store.uri}: {POINTER} moved from {expected} to {now} during this mirror; "
            f"generation {number} was uploaded but not switched in. Run `publish` again."
        )
    files.write_text(f"{number}\n", POINTER)


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


def _lance_versions(files: ObjectFiles, number: int) -> Mapping[str, Any]:
    return (files.read_json(GENERATIONS, str(number), MANIFEST) or {}).get("lance_versions", {})


def _older_generation_kept(files: ObjectFiles, number: int) -> set[int]:
    """When repairing ``CURRENT``: the one older generation that stays (readers may be on it)."""
    listed = {name.split("/", 1)[0] for name in files.sizes(GENERATIONS)}
    older = [int(n) for n in listed if n.isdigit() and int(n) < number]
    return {max(older)} if older else set()


def _versions_in_use(*generations: Mapping[str, Any]) -> dict[str, set[int]]:
    in_use: dict[str, set[int]] = {}
    for versions in generations:
        for table, version in versions.items():
            in_use.setdefault(table, set()).add(int(version))
    return in_use


def _prune(files: ObjectFiles, *, keep: set[int]) -> tuple[int, ...]:
    """Keep the new generation and the one readers may still be opening (as `publication.KEEP`)."""
    listed = {name.split("/", 1)[0] for name in files.sizes(GENERATIONS)}
    stale = tuple(sorted(int(n) for n in listed if n.isdigit() and int(n) not in keep))
    for number in stale:
        files.delete(GENERATIONS, str(number), tree=True)
    return stale
