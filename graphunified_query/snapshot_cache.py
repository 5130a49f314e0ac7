"""A generation's snapshot as memory-mapped files: a load maps them instead of decoding tables.

Reading a generation the slow way decodes everything into memory: LanceDB's vector columns
(~1 s per 40K vectors on a loaded machine) and zstd Parquet, and the result stays resident. The
first load of a generation writes what the snapshot keeps to ``cache/snapshot/``: each vector
matrix as one contiguous float32 ``.npy`` (in the row order, or the inverted-list order, the
index searches it in) and each table as an uncompressed Arrow IPC file. Every later load of that
generation (a restart, another worker, a reload) maps them: nothing is decoded or copied, the
pages are shared between processes, and only those a query touches become resident.

A file's name is a digest of what it was made from (the generation and its sources), so a new
generation never meets a stale file; a home that cannot be written keeps the data in memory.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa

_NAME = re.compile(r"^g(\d+)-")


def cache_key(*parts: object) -> str:
    return hashlib.sha1("\n".join(str(p) for p in parts).encode()).hexdigest()[:20]


def mapped_matrix(
    folder: Path, generation: int, table: str, key: str, build: Callable[[], tuple[np.ndarray, str]]
) -> tuple[np.ndarray, str]:
    """(matrix, embedding model) of ``table``: the mapped file for ``key``, or ``build()`` written
    there first. ``build`` returns the float32 matrix and the model its vectors came from."""
    path = folder / f"g{generation}-{table}-{key}.npy"
    model = _mapped_model(path)
    if model is not None:
        try:
            return _mapped_array(path), model
        except (OSError, ValueError):
            pass  # a damaged cache file is rebuilt below
    matrix, model = build()
    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    try:
        _write(path, lambda handle: np.save(handle, matrix))
        _write_text(path.with_suffix(".json"), json.dumps({"model": model, "shape": list(matrix.shape)}))
    except OSError:  # a read-only home: serve from memory
        return matrix, model
    _prune(folder, generation)
    return _mapped_array(path), model


def mapped_table(
    folder: Path, generation: int, table: str, key: str, build: Callable[[], pa.Table]
) -> pa.Table:
    """Table ``table`` mapped from its Arrow IPC file for ``key``, or ``build()`` written there first."""
    path = folder / f"g{generation}-{table}-{key}.arrow"
    if path.with_suffix(".done").exists():
        try:
            return pa.ipc.open_file(pa.memory_map(str(path))).read_all()
        except (OSError, pa.ArrowInvalid):
            pass  # a damaged cache file is rebuilt below
    built = build().combine_chunks()

    def write(handle: object) -> None:
        with pa.ipc.new_file(handle, built.schema) as writer:
            writer.write_table(built)

    try:
        _write(path, write)
        _write_text(path.with_suffix(".done"), "")
    except OSError:
        return built
    _prune(folder, generation)
    return pa.ipc.open_file(pa.memory_map(str(path))).read_all()


def _mapped_array(path: Path) -> np.ndarray:
    """The file mapped read-only, as a plain ndarray view of the mapping: `np.memmap`'s Python
    ``__getitem__`` cost ~30 us per slice, which the inverted-list search takes hundreds of."""
    return np.asarray(np.load(path, mmap_mode="r"))


def _mapped_model(path: Path) -> str | None:
    try:
        return str(json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))["model"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write(path: Path, write: Callable[[object], None]) -> None:
    """Written under a temporary name, then renamed; a reader trusts it only once its sidecar
    (written after) exists, so a killed writer leaves nothing that looks whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, staging = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
        os.chmod(staging, 0o644)  # mkstemp makes it private; other readers of the home map it too
        os.replace(staging, path)
    except BaseException:
        Path(staging).unlink(missing_ok=True)
        raise


def _write_text(path: Path, text: str) -> None:
    staging = path.with_name(f".{path.name}.tmp")
    staging.write_text(text, encoding="utf-8")
    os.replace(staging, path)


def _prune(folder: Path, generation: int) -> None:
    """Drop the files of generations older than the previous one (publication keeps two); a
    process still mapping one keeps its pages until it lets go."""
    for path in folder.iterdir():
        found = _NAME.match(path.name)
        if found and int(found.group(1)) < generation - 1:
            path.unlink(missing_ok=True)
