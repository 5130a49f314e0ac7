"""The vectors a step embedded on its last run, kept so that the next run embeds only new texts.

Resolution's name neighbours and the graph's synonym edges compare each new name with every live
one, so every update needs every live name's vector. Read back from the embedding cache (SQLite,
1.7 GB at 12.6K passages, the 78K name vectors spread among 364K others) that took 5-16 s per
step. The matrix of the last run's vectors, in one file read whole, takes a fraction of a second.

A cache: a file made under another key (another model) or torn is ignored, and the texts are
embedded again. It holds only the texts of its last run (a removed document's names leave it).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

Embed = Callable[[list[str]], np.ndarray]


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


def save_vectors(path: Path, key: str, sets: Mapping[str, TextVectors]) -> None:
    """Writes ``sets`` under ``key`` (what made the vectors: the model) beside ``path`` and
    renames it over: a crash leaves the previous file."""
    arrays: dict[str, np.ndarray] = {"key": np.array(key)}
    for i, (name, vectors) in enumerate(sets.items()):
        lengths, data = encode_texts(vectors.texts)
        arrays |= {
            f"name_{i}": np.array(name),
            f"lengths_{i}": lengths,
            f"texts_{i}": data,
            f"matrix_{i}": vectors.matrix,
        }
    staged = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with staged.open("wb") as handle:
            np.savez(handle, **arrays)  # type: ignore[arg-type]
        os.replace(staged, path)
    finally:
        staged.unlink(missing_ok=True)


def load_vectors(path: Path, key: str) -> dict[str, TextVectors]:
    """The sets saved under ``key``; none when the file is missing, torn or another key's."""
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
