"""Embeddings cached by (model, kind, text hash): a rebuild never re-embeds unchanged text.

A fused embedder's vectors are cached per model and assembled on the way out."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from graphunified_query.providers.embedding import Embedder, EmbeddingKind
from graphunified_query.providers.fused_embedder import FusedEmbedder
from graphunified_query.sqlite_files import open_rebuildable

_SCHEMA = """
create table if not exists embeddings (
    model text not null, kind text not null, text_hash text not null, vector blob not null,
    primary key (model, kind, text_hash)
) without rowid
"""
_CHUNK = 500  # stay under SQLite's bound-variable limit


def _setup(db: sqlite3.Connection) -> None:
    db.execute("pragma journal_mode=wal")
    db.execute("pragma synchronous=normal")  # WAL keeps this crash-safe; a lost tail re-embeds
    with db:
        db.execute(_SCHEMA)


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """SQLite in WAL mode with a long busy timeout, so several runs can read and write it at once."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # A damaged file is moved aside and started afresh: every vector can be computed again.
        self._db, _ = open_rebuildable(self.path, _setup, timeout=60, check_same_thread=False)

    def get_many(self, model: str, kind: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(hashes), _CHUNK):
                part = list(hashes[start : start + _CHUNK])
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    "select text_hash, vector from embeddings"
                    f" where model = ? and kind = ? and text_hash in ({marks})",
                    [model, kind, *part],
                )
                found.update((h, np.frombuffer(blob, dtype=np.float32)) for h, blob in rows)
        return found

    def put_many(self, model: str, kind: str, items: Mapping[str, np.ndarray]) -> None:
        rows = [(model, kind, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in items.items()]
        with self._lock, self._db:
            self._db.executemany("insert or replace into embeddings values (?, ?, ?, ?)", rows)

    def close(self) -> None:
        with self._lock:
            self._db.close()


class CachedEmbedder:
    """An Embedder that asks its provider only for texts the cache has not seen."""

    def __init__(self, embedder: Embedder, cache: EmbeddingCache) -> None:
        self.provider = embedder
        self.cache = cache
        self.provider_calls = 0
        self.texts_embedded = 0
        self._cached_dimension = 0

    @property
    def model_name(self) -> str:
        return self.provider.model_name

    @property
    def dimension(self) -> int:
        # A provider that learns its size from a response (Voyage, unlisted model) is never called
        # when every text is cached: the cached rows tell the size instead.
        return self.provider.dimension or self._cached_dimension

    def embed(self, texts: Sequence[str], *, kind: EmbeddingKind = "document") -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        hashes = [text_hash(t) for t in texts]
        if isinstance(self.provider, FusedEmbedder):
            # Each model's vectors under its own name: adding a model to embedding.models embeds
            # only with the new one, and a single-model home's cache serves the fused one.
            parts = [self._embed_with(part, texts, hashes, kind) for part in self.provider.parts]
            vectors = self.provider.combine(parts)
        else:
            vectors = self._embed_with(self.provider, texts, hashes, kind)
        self._cached_dimension = vectors.shape[1]
        return vectors

    def _embed_with(
        self, provider: Embedder, texts: Sequence[str], hashes: list[str], kind: EmbeddingKind
    ) -> np.ndarray:
        model = provider.model_name
        found = self.cache.get_many(model, kind, sorted(set(hashes)))
        # dict keeps first-seen order and drops duplicates: each unseen text is sent once.
        missing = {h: t for h, t in zip(hashes, texts, strict=True) if h not in found}
        if missing:
            vectors = provider.embed(list(missing.values()), kind=kind)
            self.provider_calls += 1
            self.texts_embedded += len(missing)
            fresh = dict(zip(missing, np.asarray(vectors, dtype=np.float32), strict=True))
            self.cache.put_many(model, kind, fresh)
            found.update(fresh)
        return np.vstack([found[h] for h in hashes]).astype(np.float32, copy=False)
