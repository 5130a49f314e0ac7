"""Query embeddings kept per engine: a repeated question (or keyword set) skips the embedder.

Embedding the question is a fixed cost of every strategy (a model call, or an HTTP round trip
with a hosted embedder); the same text always embeds the same with one model, so a bounded LRU
of the recent ones is exact. It lives with the engine, across snapshot reloads: the vectors
depend on the embedder, not on the index.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from graphunified_query.core.providers.embedding import Embedder

DEFAULT_SIZE = 1024  # 1024 x 384 float32 = 1.5 MB


class QueryVectors:
    """A thread-safe LRU of query text → its (read-only) query vector."""

    def __init__(self, max_entries: int = DEFAULT_SIZE) -> None:
        self.max_entries = max_entries
        self.hits = 0
        self.misses = 0
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._vectors)

    def clear(self) -> None:
        with self._lock:
            self._vectors.clear()

    def embed(self, embedder: Embedder, query: str) -> np.ndarray:
        key = f"{embedder.model_name}\n{query}"
        with self._lock:
            vector = self._vectors.get(key)
            if vector is not None:
                self._vectors.move_to_end(key)
                self.hits += 1
                return vector
            self.misses += 1
        vector = np.asarray(embedder.embed([query], kind="query")[0])
        vector.flags.writeable = False  # shared by every caller: nobody may change it in place
        if self.max_entries > 0:
            with self._lock:
                self._vectors[key] = vector
                while len(self._vectors) > self.max_entries:
                    self._vectors.popitem(last=False)
        return vector
