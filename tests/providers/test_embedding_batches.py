"""How the local MiniLM batches and counts: real token counts decide the batches, every batch's
real and padded tokens are recorded per scope, and its two variants never share vectors."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from graphunified_query.core.embedding_models import LOCAL_MODELS
from graphunified_query.core.providers.embedding import EmbeddingError
from graphunified_query.core.providers.embedding_cache import CachedEmbedder, EmbeddingCache
from graphunified_query.core.providers.embedding_usage import METER
from graphunified_query.core.providers.local_embedder import (
    BATCH_COST_TOKENS,
    MAX_BATCH_TOKENS,
    LocalMiniLMEmbedder,
    plan_batches,
)
from graphunified_query.core.settings.embedding import EmbeddingModelSettings

SCOPE = "test-scope"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def scoped() -> Iterator[str]:
    previous = METER.set_scope(lambda: SCOPE)
    METER.take(SCOPE)
    yield SCOPE
    METER.set_scope(previous)  # the pipeline's step scope, when its module was imported before
    METER.take(SCOPE)


def test_batches_group_equal_token_counts_not_equal_lengths(scoped: str) -> None:
    # Same 119 characters, 20 vs 60 word pieces, interleaved: sorted by characters (as before)
    # every batch of 16 held both kinds, padding the 20-token texts to 60 (padded/real 1.48).
    words = " ".join(["hello"] * 20)
    letters = " ".join(["x"] * 60)
    assert len(words) == len(letters)
    texts = [words, letters] * 16
    vectors = LocalMiniLMEmbedder(batch_size=16).embed(texts)
    usage = METER.take(scoped)
    # At most 256 padded tokens a batch: 11 + 5 texts of 22 tokens, 4 x 4 of 62.
    assert usage.texts == 32 and usage.batches == 2 + 4
    assert usage.tokens == 16 * 22 + 16 * 62  # [CLS] and [SEP] included
    assert usage.padded_tokens == usage.tokens  # every batch is one token count: no padding at all
    assert np.allclose(vectors[0], vectors[2]) and not np.allclose(vectors[0], vectors[1])  # input order


def test_padding_stays_under_five_percent_on_real_text(scoped: str) -> None:
    sample = Path(__file__).resolve().parents[2] / "data" / "sample"
    sentences = [s for p in sorted(sample.rglob("*.md")) for s in p.read_text().split(". ") if s.strip()]
    LocalMiniLMEmbedder(batch_size=16).embed(sentences)
    usage = METER.take(scoped)
    assert usage.texts == len(sentences) >= 64
    assert usage.padded_tokens / usage.tokens <= 1.05


def test_usage_is_recorded_under_the_scope_of_the_call(scoped: str) -> None:
    embedder = LocalMiniLMEmbedder()
    embedder.embed(["one text"])
    METER.set_scope(lambda: "elsewhere")
    embedder.embed(["another", "two"])
    assert METER.take(scoped).texts == 1
    assert METER.take("elsewhere").texts == 2


def test_the_variants_are_named_apart_and_never_share_cached_vectors(tmp_path: Path) -> None:
    shipped = LocalMiniLMEmbedder(variant="shipped")
    optimized = LocalMiniLMEmbedder(variant="optimized")  # built once into the model cache
    assert LocalMiniLMEmbedder().model_name == shipped.model_name == "all-MiniLM-L6-v2"  # the default
    assert optimized.model_name == "all-MiniLM-L6-v2+opt-int8pc"
    assert optimized.model_path != shipped.model_path and optimized.model_path.exists()
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    texts = ["The mill was founded in 1862.", "Arthur Penrose designed the Kestrel Dam."]
    first = CachedEmbedder(shipped, cache)
    first.embed(texts)
    second = CachedEmbedder(optimized, cache)
    vectors = second.embed(texts)
    assert second.texts_embedded == 2  # the shipped variant's cached vectors were not served
    assert np.allclose(vectors, optimized.embed(texts), atol=1e-5)


def test_the_optimized_variant_stays_within_cosine_0_98_of_the_shipped_vectors() -> None:
    # Per-tensor int8 on every product (the first recipe) gave min 0.886 / mean 0.959 on this
    # AVX2 machine; per channel with the feed-forward outputs in fp32 keeps every text >= 0.98.
    sentences = sorted(
        {
            s.strip()
            for path in (ROOT / "data/sample").rglob("*.md")
            for s in path.read_text(encoding="utf-8").split(". ")
            if len(s.strip()) > 20
        }
    )
    assert len(sentences) > 50
    optimized = LocalMiniLMEmbedder(variant="optimized")
    cosines = np.einsum("ij,ij->i", LocalMiniLMEmbedder().embed(sentences), optimized.embed(sentences))
    assert cosines.min() >= 0.98, cosines.min()


def test_a_variant_is_checked_against_the_model() -> None:
    assert [v.name for v in LOCAL_MODELS["all-MiniLM-L6-v2"].variants] == ["shipped", "optimized"]
    with pytest.raises(ValueError, match="variant 'fast' is unknown; use one of shipped, optimized"):
        EmbeddingModelSettings(name="all-MiniLM-L6-v2", variant="fast")
    with pytest.raises(ValueError, match="it has no variants"):
        EmbeddingModelSettings(name="multilingual-e5-small-q4", variant="shipped")


@pytest.mark.parametrize("seed", range(5))
def test_planned_batches_cover_the_order_and_pay_padding_only_when_a_batch_costs_more(seed: int) -> None:
    rng = np.random.default_rng(seed)
    lengths = sorted(int(n) for n in rng.integers(3, 300, size=int(rng.integers(1, 300))))
    batches = plan_batches(lengths, 16, max_tokens=MAX_BATCH_TOKENS)
    assert [s for s, _ in batches] == [0, *(e for _, e in batches[:-1])] and batches[-1][1] == len(lengths)
    assert all(0 < e - s <= 16 for s, e in batches)
    # Within the token limit, or a text too long for it alone.
    assert all((e - s) * lengths[e - 1] <= MAX_BATCH_TOKENS or e - s == 1 for s, e in batches)
    padded = sum((e - s) * lengths[e - 1] for s, e in batches)
    greedy: list[list[int]] = []  # as many texts as both limits allow, in order
    for length in lengths:
        if greedy and len(greedy[-1]) < 16 and (len(greedy[-1]) + 1) * length <= MAX_BATCH_TOKENS:
            greedy[-1].append(length)
        else:
            greedy.append([length])
    plain = sum(len(batch) * batch[-1] for batch in greedy)
    assert padded + BATCH_COST_TOKENS * len(batches) <= plain + BATCH_COST_TOKENS * len(greedy)
    assert padded <= 1.05 * sum(lengths) + BATCH_COST_TOKENS * len(batches)


def test_the_optimized_variant_without_onnx_is_a_one_line_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("GRAPHUNIFIED_CACHE_DIR", str(tmp_path))  # nothing built yet: it must build
    for module in ("onnx", "onnxruntime.transformers", "onnxruntime.quantization"):
        monkeypatch.setitem(sys.modules, module, None)  # a venv without onnx
    with pytest.raises(EmbeddingError, match="pip install onnx`, or set variant: shipped"):
        LocalMiniLMEmbedder(variant="optimized")
    assert not list(tmp_path.rglob("*.onnx"))  # no half-built file left behind
    # The first use says why it pauses (a silent 15 s at the first `index` surprised).
    assert f"building MiniLM's optimized variant once into {tmp_path}" in caplog.text
