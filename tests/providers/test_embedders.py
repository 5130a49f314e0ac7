"""Embedding providers: the local ONNX model, Voyage over a real socket, and the cache."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from graphunified_query.providers import (
    CachedEmbedder,
    EmbeddingCache,
    EmbeddingError,
    EmbeddingModelMismatch,
    check_same_model,
    load_tokenizer,
    make_embedder,
)
from graphunified_query.providers.local_embedder import LocalMiniLMEmbedder
from graphunified_query.providers.tokenizer import TOKENIZER_FILE, TokenizerChecksumError
from graphunified_query.providers.voyage_embedder import VoyageEmbedder
from graphunified_query.settings import EmbeddingSettings
from tests.fakes.voyage_server import FakeVoyageServer


def test_local_model_ranks_paraphrases_above_unrelated_text() -> None:
    embedder = LocalMiniLMEmbedder()
    pairs = [
        ("The mill was founded in 1862.", "The factory was established in 1862."),
        ("How do I install the package?", "What are the installation steps for this library?"),
    ]
    unrelated = "Bananas are rich in potassium."
    for a, b in pairs:
        va, vb, vu = embedder.embed([a, b, unrelated])
        assert float(va @ vb) > float(va @ vu) + 0.3
    vectors = embedder.embed(["short", "a much longer sentence about rivers and floods", ""])
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    # Length-sorted batching must not reorder results.
    alone = embedder.embed(["a much longer sentence about rivers and floods"])[0]
    assert np.allclose(vectors[1], alone, atol=1e-5)


def test_tokenizer_checksum_is_verified(tmp_path: Path) -> None:
    assert load_tokenizer().truncation is None
    damaged = tmp_path / "tokenizer.json"
    shutil.copyfile(TOKENIZER_FILE, damaged)
    damaged.write_bytes(damaged.read_bytes().replace(b"[UNK]", b"[UNX]", 1))
    with pytest.raises(TokenizerChecksumError, match="Reinstall"):
        load_tokenizer(damaged)


def test_voyage_round_trip_batches_and_auth() -> None:
    with FakeVoyageServer() as server:
        embedder = VoyageEmbedder("test-key", base_url=server.base_url, batch_size=2)
        texts = ["river flood", "mill cloth", "river flood town", "observatory"]
        vectors = embedder.embed(texts, kind="query")
    assert len(server.requests) == 2
    headers, body = server.requests[0]
    assert headers["authorization"] == "Bearer test-key"
    assert body["model"] == "voyage-3.5" and body["input_type"] == "query"
    assert [t for _, b in server.requests for t in b["input"]] == texts
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert float(vectors[0] @ vectors[2]) > float(vectors[0] @ vectors[1])


def test_voyage_retries_429_then_succeeds() -> None:
    with FakeVoyageServer() as server:
        server.fail_next(429, retry_after="0")
        server.fail_next(503)
        embedder = VoyageEmbedder("test-key", base_url=server.base_url, base_delay=0.01)
        assert embedder.embed(["hello"]).shape == (1, 32)
    assert len(server.requests) == 3


def test_voyage_gives_up_without_leaking_the_key() -> None:
    with FakeVoyageServer() as server:
        server.fail_next(500, times=10)
        embedder = VoyageEmbedder("test-key", base_url=server.base_url, max_retries=2, base_delay=0.01)
        with pytest.raises(EmbeddingError) as error:
            embedder.embed(["hello"])
    assert len(server.requests) == 3
    assert "test-key" not in str(error.value)


def test_make_embedder_selection() -> None:
    assert make_embedder(EmbeddingSettings(), {}).model_name == "all-MiniLM-L6-v2"
    voyage = make_embedder(
        EmbeddingSettings(), {"VOYAGE_API_KEY": "k", "VOYAGE_BASE_URL": "http://127.0.0.1:9/v1"}
    )
    assert voyage.model_name == "voyage-3.5"
    with pytest.raises(EmbeddingError, match="VOYAGE_API_KEY"):
        make_embedder(EmbeddingSettings(provider="voyage"), {})


class CountingEmbedder:
    model_name = "counting"
    dimension = 3

    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    def embed(self, texts: Sequence[str], *, kind: str = "document") -> np.ndarray:
        self.seen.append(list(texts))
        return np.array([[len(t), 1.0, 0.0] for t in texts], dtype=np.float32)


def test_cache_sends_only_unseen_texts(tmp_path: Path) -> None:
    provider = CountingEmbedder()
    cached = CachedEmbedder(provider, EmbeddingCache(tmp_path / "e.sqlite"))
    first = cached.embed(["a", "bb", "a"])
    assert provider.seen == [["a", "bb"]]
    again = cached.embed(["bb", "ccc", "a"])
    assert provider.seen[-1] == ["ccc"]
    assert np.array_equal(again[0], first[1]) and np.array_equal(again[2], first[0])
    assert (cached.provider_calls, cached.texts_embedded) == (2, 3)
    # The cache survives reopening, and is keyed by model.
    reopened = CachedEmbedder(provider, EmbeddingCache(tmp_path / "e.sqlite"))
    reopened.embed(["a", "bb", "ccc"])
    assert reopened.provider_calls == 0
    other = CountingEmbedder()
    other.model_name = "other"
    CachedEmbedder(other, EmbeddingCache(tmp_path / "e.sqlite")).embed(["a"])
    assert other.seen == [["a"]]


def test_mixing_models_is_refused() -> None:
    check_same_model("all-MiniLM-L6-v2", "all-MiniLM-L6-v2")
    with pytest.raises(EmbeddingModelMismatch, match="fresh --home"):
        check_same_model("all-MiniLM-L6-v2", "voyage-3.5")
