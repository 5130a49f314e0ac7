"""What updates changed in a faiss index since its base was written, kept beside it.

The base (``ann/<table>.faiss``) is written only when trained or when this delta is folded into
it (`ann_update.py`). ``ann/<table>.delta.npz`` holds the keys of the base rows that no longer count
(removed, or given a new vector) and the rows added since, keys and float32 vectors; an update
reads and writes only it and the ``.json``, not the 0.5-GB base. Each delta carries a random token
that the ``.json`` names: a delta the ``.json`` does not name (an update killed between the two
writes) makes the index absent, never wrong.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Delta:
    removed: np.ndarray  # sorted keys of the base rows that no longer count
    keys: np.ndarray  # keys of the rows added since the base (none of them counted in it)
    vectors: np.ndarray  # their unit vectors, (len(keys), dimension) float32

    @classmethod
    def empty(cls, dimension: int) -> Delta:
        return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, dimension), np.float32))

    @property
    def is_empty(self) -> bool:
        return not len(self.removed) and not len(self.keys)

    @property
    def size(self) -> int:
        """The rows the base is off by: the added ones are scanned exactly by every query, the
        removed ones still scanned in the base and discarded."""
        return max(len(self.removed), len(self.keys))

    def changed(self, gone: np.ndarray, in_base: np.ndarray, keys: np.ndarray, vectors: np.ndarray) -> Delta:
        """This delta after an update: the ``gone`` keys (rows removed, or given new vectors) no
        longer count, ``in_base`` of them held by the base; ``keys`` are added with ``vectors``."""
        kept = ~np.isin(self.keys, gone)
        return Delta(
            np.union1d(self.removed, in_base),
            np.concatenate([self.keys[kept], keys]),
            np.concatenate([self.vectors[kept], np.asarray(vectors, np.float32)]),
        )

    def nearest(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(keys, cosines) of the k added rows nearest ``query`` (an exact scan), in no order."""
        # einsum, not @: BLAS threads a matrix-vector product, and on two cores its threads and
        # faiss's held each other up (15.8K rows: a median 4 ms against einsum's 2 ms).
        scores = np.einsum("ij,j->i", self.vectors, query)
        if k < len(scores):
            top = np.argpartition(-scores, k - 1)[:k]
            return self.keys[top], scores[top]
        return self.keys, scores


def path_of(index: Path) -> Path:
    """``ann/<table>.delta.npz`` beside ``ann/<table>.faiss``."""
    return index.with_name(index.name.removesuffix(".faiss") + ".delta.npz")


def write(path: Path, delta: Delta) -> str:
    """Replaces the delta at ``path`` atomically → the token the ``.json`` names it by."""
    token = secrets.token_hex(8)
    tmp = path.with_name(f".{path.name}.tmp")  # the store check removes one a crash left
    with tmp.open("wb") as handle:  # a handle: np.savez would append .npz to a name
        np.savez(handle, token=np.array(token), removed=delta.removed, keys=delta.keys, vectors=delta.vectors)
    tmp.replace(path)
    return token


def read(path: Path, token: str | None, dimension: int) -> Delta | None:
    """The delta a ``.json`` naming ``token`` goes with (None: the base alone, an empty delta);
    None when the file is another one or missing."""
    if token is None:
        return Delta.empty(dimension)
    try:
        with np.load(path, allow_pickle=False) as stored:
            if str(stored["token"]) != token:
                return None
            return Delta(stored["removed"], stored["keys"], stored["vectors"])
    except FileNotFoundError:
        return None


def holds(path: Path, token: str | None) -> bool:
    """Whether the delta at ``path`` is the one ``token`` names (its token alone is read)."""
    if token is None:
        return True
    try:
        with np.load(path, allow_pickle=False) as stored:
            return str(stored["token"]) == token
    except FileNotFoundError:
        return False
