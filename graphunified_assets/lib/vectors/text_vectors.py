"""The vectors a step embedded on its last run, kept so that the next run embeds only new texts.

Resolution's name neighbours and the graph's synonym edges compare each new name with every live
one, so every update needs every live name's vector. Read back from the embedding cache (SQLite,
1.7 GB at 12.6K passages, the 78K name vectors spread among 364K others) that took 5-16 s per
step. The last run's vectors, in a folder of the home's cache, take a fraction of a second: a
row file that each save appends only its new texts' rows to (`row_file`; rewriting it whole
wrote 0.1 GB per step and update), and an index naming each set's rows.

A cache: a folder saved under another key (another model) or torn is ignored, and the texts are
embedded again. Its sets hold only the texts of their last run (a removed document's names leave
them; their rows stay in the file, to be used again or dropped when it is compacted).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from graphunified_assets.lib.vectors import row_file

Embed = Callable[[list[str]], np.ndarray]
_INDEX = "index.npz"
_OLD_SUFFIX = ".npz"  # the single file the folder replaced (every row rewritten by each update)


@dataclass
class TextVectors:
    texts: list[str] = field(default_factory=list)
    matrix: np.ndarray = field(default_factory=lambda: np.empty((0, 0), np.float32))  # a row per text
    asked: int = 0  # texts handed to the embedder (not kept from the last run), this run

    def lookup(self, texts: Sequence[str], embed: Embed) -> np.ndarray:
        """A float32 row per text: the kept ones from here, the rest from ``embed``. Holds exactly
        ``texts`` afterwards."""
        row_of = {text: i for i, text in enumerate(self.texts)}
        missing = list(dict.fromkeys(text for text in texts if text not in row_of))
        fresh = np.asarray(embed(missing), dtype=np.float32) if missing else self.matrix[:0]
        self.asked += len(missing)
        if self.texts and missing and fresh.shape[1] != self.matrix.shape[1]:  # another model's rows
            self.texts, self.matrix = [], np.empty((0, 0), np.float32)
            return self.lookup(texts, embed)
        row_of.update((text, len(self.texts) + i) for i, text in enumerate(missing))
        known = np.concatenate([self.matrix, fresh]) if self.texts else fresh
        self.texts, self.matrix = list(texts), known[[row_of[text] for text in texts]]
        return self.matrix

    def keep(self, texts: Iterable[str]) -> None:
        """Only the rows of ``texts`` stay (the rest are gone from the corpus)."""
        current = set(texts)
        kept = [i for i, text in enumerate(self.texts) if text in current]
        if len(kept) < len(self.texts):
            self.texts, self.matrix = [self.texts[i] for i in kept], self.matrix[kept]


def encode_texts(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Texts as two arrays an ``.npz`` holds: each one's UTF-8 length, and all their bytes."""
    encoded = [text.encode() for text in texts]
    return np.array([len(b) for b in encoded], np.int64), np.frombuffer(b"".join(encoded), np.uint8)


def decode_texts(lengths: np.ndarray, data: np.ndarray) -> list[str]:
    """The texts `encode_texts` gave ``lengths`` and ``data`` of."""
    raw, ends = data.tobytes(), np.cumsum(lengths).tolist()
    return [raw[a:b].decode() for a, b in zip([0, *ends][: len(ends)], ends, strict=True)]


def save_vectors(folder: Path, key: str, sets: Mapping[str, TextVectors]) -> None:
    """Writes ``sets`` under ``key`` (what made the vectors: the model) to ``folder``: a row per
    distinct text, appended to the rows the folder holds already (`row_file`), and an index naming
    each set's rows. A crash leaves the previous index and its rows."""
    folder.mkdir(parents=True, exist_ok=True)
    dimension = next((v.matrix.shape[1] for v in sets.values() if v.texts), 0)
    held = _Held.read(folder, key)
    if held.dimension != dimension:  # another model's rows, or none
        held = _Held()
    texts = list(held.texts)
    rows_of_set, added = _numbered(sets, texts, dimension)
    live = np.unique(np.concatenate([np.empty(0, np.int64), *rows_of_set.values()]))
    if row_file.can_append(folder, held.file, len(texts), len(live)):
        row_file.append_rows(folder, held.file, held.rows, added)
        file = held.file
    else:  # most rows dead, or no file yet: the live rows alone, from the sets themselves
        if held.texts:  # numbered after rows that are dropped: number the live texts alone
            texts = []
            rows_of_set, added = _numbered(sets, texts, dimension)
        file = row_file.write_rows(folder, added)
    _write_index(folder, key, file, dimension, texts, rows_of_set)
    row_file.remove_other_files(folder, file)
    folder.with_name(folder.name + _OLD_SUFFIX).unlink(missing_ok=True)


def load_vectors(folder: Path, key: str) -> dict[str, TextVectors]:
    """The sets saved under ``key``; none when the folder is missing, torn or another key's."""
    if not (folder / _INDEX).exists():
        return _load_single_file(folder.with_name(folder.name + _OLD_SUFFIX), key)
    held = _Held.read(folder, key)
    return {
        name: TextVectors([held.texts[row] for row in rows.tolist()], np.asarray(held.rows[rows]))
        for name, rows in held.sets.items()
    }


def _load_single_file(path: Path, key: str) -> dict[str, TextVectors]:
    """The sets of the single file a home saved before the folder (its next save removes it):
    without it, that update read every name back from the embedding cache (35 s at 12.6K)."""
    try:
        with np.load(path) as arrays:
            if str(arrays["key"]) != key:
                return {}
            sets = {}
            for i in range(sum(1 for name in arrays.files if name.startswith("name_"))):
                texts = decode_texts(arrays[f"lengths_{i}"], arrays[f"texts_{i}"])
                matrix = arrays[f"matrix_{i}"]
                if len(texts) != len(matrix):
                    return {}
                sets[str(arrays[f"name_{i}"])] = TextVectors(texts, matrix)
            return sets
    except Exception:  # missing, torn, not a zip: a cache, embedded again
        return {}


def _numbered(
    sets: Mapping[str, TextVectors], texts: list[str], dimension: int
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Each set's rows among ``texts``, the texts not in it appended to it; and their vectors."""
    row_of = {text: row for row, text in enumerate(texts)}
    rows_of_set, added = {}, []
    for name, vectors in sets.items():
        rows, new = np.empty(len(vectors.texts), np.int64), []
        for i, text in enumerate(vectors.texts):
            row = row_of.get(text)
            if row is None:
                row = row_of[text] = len(texts)
                texts.append(text)
                new.append(i)
            rows[i] = row
        rows_of_set[name] = rows
        if new:
            added.append(vectors.matrix[new])
    return rows_of_set, np.concatenate(added) if added else np.empty((0, dimension), np.float32)


@dataclass
class _Held:
    """What a folder holds: the row file (memory mapped), each row's text, each set's rows."""

    file: str = ""
    dimension: int = 0
    texts: list[str] = field(default_factory=list)
    rows: np.ndarray = field(default_factory=row_file.no_rows)
    sets: dict[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def read(cls, folder: Path, key: str) -> _Held:
        try:
            with np.load(folder / _INDEX) as index:
                if str(index["key"]) != key:
                    return cls()
                texts = decode_texts(index["lengths"], index["texts"])
                file, dimension = str(index["row_file"]), int(index["dimension"])
                sets = {
                    str(index[f"name_{i}"]): index[f"rows_{i}"]
                    for i in range(sum(1 for name in index.files if name.startswith("name_")))
                }
            rows = row_file.map_rows(folder, file, len(texts), dimension)
        except Exception:  # missing, torn, not a zip, a short row file: embedded again
            return cls()
        if any(len(r) and (r.min() < 0 or r.max() >= len(texts)) for r in sets.values()):
            return cls()
        return cls(file, dimension, texts, rows, sets)


def _write_index(
    folder: Path, key: str, file: str, dimension: int, texts: list[str], sets: Mapping[str, np.ndarray]
) -> None:
    lengths, data = encode_texts(texts)
    arrays: dict[str, np.ndarray] = {
        "key": np.array(key),
        "row_file": np.array(file),
        "dimension": np.array(dimension),
        "lengths": lengths,
        "texts": data,
    }
    for i, (name, rows) in enumerate(sets.items()):
        arrays |= {f"name_{i}": np.array(name), f"rows_{i}": rows}
    staged = folder / f".{_INDEX}.{os.getpid()}.tmp"
    try:
        with staged.open("wb") as handle:
            np.savez(handle, **arrays)  # type: ignore[arg-type]
        os.replace(staged, folder / _INDEX)
    finally:
        staged.unlink(missing_ok=True)
