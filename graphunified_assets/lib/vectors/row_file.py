"""A file of float32 vector rows that updates append to, named by a small index written after it.

Two caches keep vectors from one update to the next: the report pieces (`piece_memory`) and the
entity names that resolution and the synonym edges compare (`text_vectors`). Rewritten whole,
each update wrote their 0.1-0.2 GB again to change a few rows. Here an update appends its new
rows to the file and replaces the index (how many rows it names, and what they are): the rows
reach the disk before the index that names them, so a crash leaves the previous index, whose rows
are untouched (rows past them are a crashed save's, overwritten by the next append). Once most
rows are no longer named (`COMPACT_SHARE`), a save writes the live ones to a new file instead.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import numpy as np

COMPACT_SHARE = 0.5  # once more of the rows than this are dead, a save writes the live ones anew
_PATTERN = "vectors.*.f32"


def no_rows() -> np.ndarray:
    return np.empty((0, 0), np.float32)


def map_rows(folder: Path, file: str, rows: int, dimension: int) -> np.ndarray:
    """The first ``rows`` rows of ``folder / file``, memory mapped read-only; raises when the file
    is missing or shorter (the caller's cache then reads as empty)."""
    if not rows:
        return no_rows()
    return np.memmap(folder / file, np.float32, mode="r", shape=(rows, dimension))


def append_rows(folder: Path, file: str, saved: np.ndarray, added: np.ndarray) -> None:
    """Writes ``added`` after ``saved`` (the file's rows the index names), synced."""
    with (folder / file).open("r+b") as handle:
        handle.seek(saved.shape[0] * saved.shape[1] * 4 if len(saved) else 0)
        handle.write(np.ascontiguousarray(added, np.float32).tobytes())
        handle.truncate()
        handle.flush()
        os.fsync(handle.fileno())


def write_rows(folder: Path, matrix: np.ndarray) -> str:
    """``matrix`` as a new file of ``folder``, synced; returns its name."""
    name = f"vectors.{uuid.uuid4().hex}.f32"
    staged = folder / f".{name}.{os.getpid()}.tmp"
    with staged.open("wb") as handle:
        handle.write(np.ascontiguousarray(matrix, np.float32).tobytes())
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(staged, folder / name)
    return name


def can_append(folder: Path, file: str, rows: int, live: int) -> bool:
    """Whether a save may append to ``file``: it exists and at most `COMPACT_SHARE` of its
    ``rows`` are dead (``live`` of them named)."""
    return bool(file) and (folder / file).is_file() and rows - live <= COMPACT_SHARE * rows


def remove_other_files(folder: Path, kept: str) -> None:
    """Row files of ``folder`` other than ``kept`` (after the index naming it was written)."""
    for old in folder.glob(_PATTERN):
        if old.name != kept:
            old.unlink(missing_ok=True)
