"""CachedEmbedder over the SQLite EmbeddingCache: only unseen texts reach the provider."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from graphunified_query.core.providers import (
    CachedEmbedder,
    EmbeddingCache,
    EmbeddingModelMismatch,
    check_same_model,
)
from tests.fakes.recording_embedder import RecordingEmbedder


class LengthEmbedder:
    """Vectors the tests can predict: each text's length, then 1 and 0."""

    dimension = 3

    def __init__(self, model_name: str = "counting") -> None:
        self.model_name = model_name

    def embed(self, texts: Sequence[str], *, kind: str = "document") -> np.ndarray:
        return np.array([[len(t), 1.0, 0.0] for t in texts], dtype=np.float32)


def counting_embedder(model_name: str = "counting") -> RecordingEmbedder[LengthEmbedder]:
    return RecordingEmbedder(LengthEmbedder(model_name))


def test_second_embed_of_the_same_texts_calls_no_provider(tmp_path: Path) -> None:
    provider = counting_embedder()
    cached = CachedEmbedder(provider, EmbeddingCache(tmp_path / "e.sqlite"))
    first = cached.embed(["a", "bb", "a"])
    assert provider.calls == [("document", ("a", "bb"))]  # duplicates sent once
    again = cached.embed(["a", "bb", "a"])
    assert len(provider.calls) == 1 and np.array_equal(first, again)
    assert (cached.provider_calls, cached.texts_embedded) == (1, 2)
    assert (cached.model_name, cached.dimension) == ("counting", 3)
    assert cached.embed([]).shape == (0, 3)


def test_partial_hits_send_only_misses_and_keep_order(tmp_path: Path) -> None:
    provider = counting_embedder()
    cached = CachedEmbedder(provider, EmbeddingCache(tmp_path / "e.sqlite"))
    first = cached.embed(["a", "bb"])
    again = cached.embed(["bb", "ccc", "a", "ccc"])
    assert provider.calls[-1] == ("document", ("ccc",))
    assert np.array_equal(again[0], first[1]) and np.array_equal(again[2], first[0])
    assert again[1].tolist() == [3.0, 1.0, 0.0] and np.array_equal(again[1], again[3])
    assert (cached.provider_calls, cached.texts_embedded) == (2, 3)


def test_cache_survives_reopening_and_is_shared_between_connections(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "e.sqlite"
    writer = EmbeddingCache(path)
    reader = EmbeddingCache(path)  # another process would open its own connection like this
    CachedEmbedder(counting_embedder(), writer).embed(["a", "bb"])
    assert set(reader.get_many("counting", "document", [])) == set()
    provider = counting_embedder()
    CachedEmbedder(provider, reader).embed(["bb", "a"])
    assert provider.calls == []
    writer.close()
    reader.close()
    reopened = CachedEmbedder(provider, EmbeddingCache(path))
    assert reopened.embed(["a"]).tolist() == [[1.0, 1.0, 0.0]]
    assert reopened.provider_calls == 0


def test_models_and_kinds_do_not_share_entries(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    CachedEmbedder(counting_embedder(), cache).embed(["a"])
    other = counting_embedder("other")
    CachedEmbedder(other, cache).embed(["a"])
    assert other.calls == [("document", ("a",))]
    same = counting_embedder()
    CachedEmbedder(same, cache).embed(["a"], kind="query")
    assert same.calls == [("query", ("a",))]


class SizeLearningEmbedder(LengthEmbedder):
    """Like VoyageEmbedder with an unlisted model: the size is known only after a response."""

    def __init__(self) -> None:
        super().__init__()
        self.dimension = 0

    def embed(self, texts: Sequence[str], *, kind: str = "document") -> np.ndarray:
        vectors = super().embed(texts, kind=kind)
        self.dimension = vectors.shape[1]
        return vectors


def test_dimension_is_known_when_every_text_was_cached(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    CachedEmbedder(SizeLearningEmbedder(), cache).embed(["a"])
    rebuild = CachedEmbedder(SizeLearningEmbedder(), cache)
    rebuild.embed(["a"])
    assert rebuild.provider_calls == 0 and rebuild.dimension == 3


def test_mixing_models_is_refused() -> None:
    check_same_model("all-MiniLM-L6-v2", "all-MiniLM-L6-v2")
    with pytest.raises(EmbeddingModelMismatch, match=r"'voyage-3\.5'"):
        check_same_model("all-MiniLM-L6-v2", "voyage-3.5")


def test_fill_writes_rows_in_the_callers_order_and_reports_the_missing(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    a, b = np.array([1, 2, 3], np.float32), np.array([4, 5, 6], np.float32)
    cache.put_many("m", "document", {"ha": a, "hb": b})
    out = np.full((5, 3), -1.0, dtype=np.float32)
    missing = cache.fill("m", "document", ["hb", "hx", "ha", "hb", "hy"], out)
    assert missing == [1, 4]  # unseen hashes: the caller computes those rows
    assert out[[0, 2, 3]].tolist() == [b.tolist(), a.tolist(), b.tolist()]  # repeats filled too
    assert out[[1, 4]].tolist() == [[-1.0] * 3] * 2  # untouched
    assert cache.fill("other", "document", ["ha"], out[:1]) == [0]  # another model's rows are not its
    assert (cache.dimension("m", "document"), cache.dimension("m", "query")) == (3, 0)


def test_fill_looks_hashes_up_in_key_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sorted lookups walk the primary key forwards: random ones cost twice the time on a big cache."""
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    hashes = [f"h{i:04d}" for i in range(1200)][::-1]  # more than one query's worth, descending
    cache.put_many("m", "document", {h: np.full(2, i, np.float32) for i, h in enumerate(hashes)})
    asked: list[str] = []
    blobs = cache._blobs
    monkeypatch.setattr(cache, "_blobs", lambda m, k, hs: (asked.extend(hs), blobs(m, k, hs))[1])
    out = np.zeros((len(hashes) + 1, 2), np.float32)
    assert cache.fill("m", "document", [*hashes, hashes[0]], out) == []
    assert asked == sorted(hashes)
    assert out[:, 0].tolist() == [*range(len(hashes)), 0]


def test_fill_refuses_a_matrix_of_the_wrong_shape_or_width(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    cache.put_many("m", "document", {"ha": np.ones(3, np.float32)})
    with pytest.raises(ValueError, match="float32 matrix of 2 rows"):
        cache.fill("m", "document", ["ha", "hb"], np.zeros((1, 3), np.float32))
    with pytest.raises(ValueError, match="has 3 dimensions, the caller expects 4"):
        cache.fill("m", "document", ["ha"], np.zeros((1, 4), np.float32))


def test_cached_embed_is_one_contiguous_matrix_equal_to_the_providers_rows(tmp_path: Path) -> None:
    provider = counting_embedder()
    cached = CachedEmbedder(provider, EmbeddingCache(tmp_path / "e.sqlite"))
    cached.embed(["bb", "dddd"])  # part of the next call comes from the cache
    texts = ["a", "bb", "ccc", "a", "dddd", "ccc"]
    vectors = cached.embed(texts)
    assert provider.calls[-1] == ("document", ("a", "ccc"))  # each unseen text once, first-seen order
    assert vectors.dtype == np.float32 and vectors.flags.c_contiguous and vectors.flags.owndata
    assert np.array_equal(vectors, LengthEmbedder().embed(texts))


class WideEmbedder(LengthEmbedder):
    """The same model name answering with one more dimension than the cache holds."""

    def embed(self, texts: Sequence[str], *, kind: str = "document") -> np.ndarray:
        return np.ones((len(texts), 4), np.float32)


def test_a_provider_whose_width_changed_under_a_cache_is_a_clear_error(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    CachedEmbedder(counting_embedder(), cache).embed(["a"])
    wider = WideEmbedder()
    with pytest.raises(ValueError, match=r"returned 4-dimensional vectors, its cached ones .* have 3"):
        CachedEmbedder(wider, cache).embed(["a", "b"])
