"""A published generation read from object storage (``ask --home s3://bucket/prefix``).

The layout a writer's mirror (``graphunified_assets.ops.object_mirror``) keeps under the prefix:

    CURRENT                         the generation readers load; written last, in one PUT
    generations/<n>/manifest.json   its objects (bytes, sha256), LanceDB versions, its origin
    generations/<n>/tables/…        Parquet tables, read in place by pyarrow's S3 filesystem
    generations/<n>/indexes/…       BM25, PPR, IVF files: downloaded once per generation
    generations/<n>/settings.yaml   the writer's settings, so queries embed with its model
    lancedb/<table>.lance/…         each LanceDB table, opened in place at the recorded version

Index files are downloaded to a local cache (``GRAPHUNIFIED_CACHE_DIR``, default
``~/.cache/graph-unified``) because their loaders memory-map or read them whole anyway; the
same folder holds this reader's LLM cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lancedb
import pyarrow as pa
import pyarrow.parquet as pq

from graphunified_query.core.artifacts import ALIASES_FILE, MANIFEST, POINTER
from graphunified_query.core.cache_dir import cache_base
from graphunified_query.core.settings.model import environment_settings
from graphunified_query.core.stores.object_store import ObjectFiles, ObjectStore
from graphunified_query.core.stores.parquet import StoreError

GENERATIONS = "generations"
LANCEDB = "lancedb"
_KEEP_LOCAL = 2
_DOWNLOADED = ("indexes/", "settings.yaml", f"tables/{ALIASES_FILE}")  # prefixes of names


class NothingPublished(StoreError):
    """No generation has been published at the location yet."""


def cache_root(uri: str, environ: Mapping[str, str]) -> Path:
    """This machine's working folder for one remote location (downloads, LLM cache)."""
    return cache_base(environ) / "remote" / hashlib.sha256(uri.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class RemoteGeneration:
    """The generation ``CURRENT`` names, with the same reading surface as a local one."""

    files: ObjectFiles
    number: int
    manifest: dict[str, Any]
    local_home: Path  # downloaded index files, settings and aliases of this generation
    published: bool = True

    @property
    def uri(self) -> str:
        return self.files.store.uri

    def describe(self) -> str:
        return f"generation {self.number} of {self.uri}"

    def rebuild_hint(self) -> str:
        origin = self.manifest.get("published_from", "<the writer's home>")
        return f"python -m graphunified_assets publish --home {origin}"

    def missing_files(self) -> list[str]:
        stored = self.files.sizes(GENERATIONS, str(self.number))
        named = self._objects()
        return [self.files.store.url(GENERATIONS, str(self.number), n) for n in named if n not in stored]

    def read_table(self, table: str, hint: str) -> pa.Table:
        key = self.files.store.key(GENERATIONS, str(self.number), "tables", f"{table}.parquet")
        try:
            return pq.read_table(key, filesystem=self.files.fs)
        except FileNotFoundError:
            raise StoreError(f"s3://{key} is missing ({self.describe()}); rebuild with `{hint}`.") from None
        except (pa.ArrowInvalid, OSError) as error:
            raise StoreError(f"s3://{key} is unreadable ({error}); rebuild it with `{hint}`.") from None

    def index_path(self, name: str) -> Path:
        return self.local_home / "indexes" / name

    def lance_connect(self) -> Any:
        store = self.files.store
        return lancedb.connect(store.url(LANCEDB), storage_options=store.lance_options())

    def lance_location(self, table: str) -> str:
        return self.files.store.url(LANCEDB, f"{table}.lance")

    def lance_exists(self, table: str) -> bool:
        return bool(self.files.sizes(LANCEDB, f"{table}.lance", "_versions"))

    def lance_version(self, table: str) -> int | None:
        version = self.manifest.get("lance_versions", {}).get(table)
        return int(version) if version is not None else None

    def _objects(self) -> dict[str, Any]:
        return dict(self.manifest.get("objects", {}))


def open_current(uri: str, environ: Mapping[str, str]) -> RemoteGeneration:
    """Read ``CURRENT`` and its manifest, and make sure its index files are downloaded."""
    store = ObjectStore.at(uri, environment_settings(environ).storage, environ)
    files = ObjectFiles(store)
    pointer = files.read_text(POINTER)
    if pointer is None:
        raise NothingPublished(
            f"Nothing is published at {store.uri}: set `storage.publish_uri: {store.uri}` in the writing "
            "home's settings.yaml and run `python -m graphunified_assets index` (or `publish`) there."
        )
    try:
        number = int(pointer.strip())
    except ValueError:
        raise StoreError(f"{store.url(POINTER)} does not name a generation ({pointer[:40]!r}).") from None
    manifest_text = files.read_text(GENERATIONS, str(number), MANIFEST)
    if manifest_text is None:
        raise StoreError(f"{store.url(GENERATIONS, str(number), MANIFEST)} is missing (named by {POINTER}).")
    try:
        manifest = json.loads(manifest_text)
    except ValueError as error:
        where = store.url(GENERATIONS, str(number), MANIFEST)
        raise StoreError(f"{where} is not valid JSON ({error}).") from None
    digest = hashlib.sha256(manifest_text.encode("utf-8")).hexdigest()[:12]
    local_home = _download(files, number, manifest, cache_root(store.uri, environ), digest)
    return RemoteGeneration(files, number, manifest, local_home)


def _download(files: ObjectFiles, number: int, manifest: dict[str, Any], root: Path, digest: str) -> Path:
    """The generation's local files, downloaded once: generations never change, so a folder
    named by number and manifest digest is complete if it exists (it appears by rename)."""
    folders = root / GENERATIONS
    target = folders / f"{number}-{digest}"
    if target.is_dir():
        return target
    staging = folders / f".staging-{number}-{digest}-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        for name, info in manifest.get("objects", {}).items():
            if name.startswith(_DOWNLOADED):
                files.download(staging / name, GENERATIONS, str(number), name)
                _verify(staging / name, info, files.store.url(GENERATIONS, str(number), name))
        staging.mkdir(parents=True, exist_ok=True)
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        if not target.is_dir():  # unless another reader finished the same download first
            raise
    _prune(folders, keep=target.name)
    return target


def _verify(path: Path, info: Mapping[str, Any], url: str) -> None:
    """A downloaded object must be the one the manifest lists (a partial or replaced object is not)."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != info.get("sha256"):
        raise StoreError(f"{url} does not match its manifest (sha256 {digest[:12]}…); publish it again.")


def _prune(folders: Path, *, keep: str) -> None:
    """Keep the newest few downloads; older ones are never read again."""
    finished = [p for p in folders.iterdir() if p.is_dir() and not p.name.startswith(".")]
    finished.sort(key=lambda p: int(p.name.split("-", 1)[0]), reverse=True)
    for stale in finished[_KEEP_LOCAL:]:
        if stale.name != keep:
            shutil.rmtree(stale, ignore_errors=True)
