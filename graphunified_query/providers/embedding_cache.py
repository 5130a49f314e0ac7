"""Embeddings cached by (model, kind, text hash): a rebuild never re-embeds unchanged text."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from graphunified_query.providers.embedding import Embedder, EmbeddingKind

_SCHEMA = """
create table if not exists embeddings (
    model text not null, kind text not null, text_hash text not null, vector blob not null,
    primary key (model, kind, text_hash)
)
"""


class EmbeddingCache:
    """SQLite in WAL mode, so several Dagster runs can read and write it at once."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, timeout=60, check_same_thread=False)
        self._db.execute("pragma journal_mode=wal")
        self._db.execute(_SCHEMA)
        self._db.commit()
        self._lock = threading.Lock()

    def get_many(self, model: str, kind: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(hashes), 500):  # stay under SQLite's variable limit
                part = list(hashes[start : start + 500])
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    "select text_hash, vector from embeddings"
                    f" where model = ? and kind = ? and text_hash in ({marks})",
                    [model, kind, *part],
                )
                found.update((h, np.frombuffer(blob, dtype=np.float32)) for h, blob in rows)
        return found

    def put_many(self, model: str, kind: str, items: dict[str, np.ndarray]) -> None:
        with self._lock, self._db:
            self._db.executemany(
                "insert or replace into embeddings values (?, ?, ?, ?)",
                ((model, kind, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in items.items()),
            )


class CachedEmbedder:
    """An Embedder that asks its provider only for texts the cache has not seen."""

    def __init__(self, embedder: Embedder, cache: EmbeddingCache) -> None:
        self.provider = embedder
        self.cache = cache
        self.provider_calls = 0
        self.texts_embedded = 0

    @property
    def model_name(self) -> str:
        return self.provider.model_name

    @property
    def dimension(self) -> int:
        return self.provider.dimension

    def embed(self, texts: Sequence[str], *, kind: EmbeddingKind = "document") -> np.ndarray:
        hashes = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
        found = self.cache.get_many(self.model_name, kind, sorted(set(hashes)))
        missing = {h: t for h, t in zip(hashes, texts, strict=True) if h not in found}
        if missing:
            vectors = self.provider.embed(list(missing.values()), kind=kind)
            self.provider_calls += 1
            self.texts_embedded += len(missing)
            fresh = dict(zip(missing, vectors, strict=True))
            self.cache.put_many(self.model_name, kind, fresh)
            found.update(fresh)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.vstack([found[h] for h in hashes]).astype(np.float32)
