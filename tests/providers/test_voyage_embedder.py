"""VoyageEmbedder through the real `voyageai` SDK, against a loopback server speaking Voyage's wire format."""

from __future__ import annotations

import logging
import math
import time

import numpy as np
import pytest
import voyageai

from graphunified_query.core.providers import EmbeddingError, VoyageEmbedder, make_embedder
from graphunified_query.core.providers.local_embedder import LocalMiniLMEmbedder
from graphunified_query.core.providers.voyage_embedder import MAX_CHARS_PER_REQUEST, _batches
from graphunified_query.core.settings.model import EmbeddingSettings
from tests.fakes.voyage_server import FakeVoyageServer

KEY = "test-key"


def test_round_trip_sends_auth_model_and_input_type_in_batches() -> None:
    texts = [f"river flood number {i}" for i in range(7)] + ["mill cloth", "observatory telescope"]
    with FakeVoyageServer() as server:
        embedder = VoyageEmbedder(KEY, base_url=server.base_url, batch_size=4)
        assert embedder.dimension == 1024  # known for voyage-3.5 before any call
        vectors = embedder.embed(texts, kind="query")
    assert len(server.requests) == math.ceil(len(texts) / 4)
    for headers, body in server.requests:
        assert headers["authorization"] == f"Bearer {KEY}"
        assert body["model"] == "voyage-3.5" and body["input_type"] == "query"
        assert len(body["input"]) <= 4
    assert [t for _, body in server.requests for t in body["input"]] == texts
    assert vectors.shape == (len(texts), 32) and vectors.dtype == np.float32
    assert embedder.dimension == 32  # learned from the response
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    # Rows stay in input order: text 0 is nearer its sibling than the unrelated last text.
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[-1])


def test_documents_are_sent_as_documents_and_empty_input_makes_no_request() -> None:
    with FakeVoyageServer() as server:
        embedder = VoyageEmbedder(KEY, base_url=server.base_url)
        assert embedder.embed([]).shape == (0, 1024)
        vectors = embedder.embed(["", "text"])
    assert len(server.requests) == 1
    assert server.requests[0][1]["input_type"] == "document"
    assert server.requests[0][1]["input"] == [" ", "text"]  # Voyage rejects empty strings
    assert vectors.shape == (2, 32)


def test_requests_are_capped_by_characters_too() -> None:
    big = "x" * (MAX_CHARS_PER_REQUEST // 2 + 1)
    assert [len(b) for b in _batches([big, big, "a", "b"], batch_size=64)] == [1, 3]
    assert _batches([], batch_size=3) == []


def test_429_retry_after_is_honoured_then_succeeds() -> None:
    with FakeVoyageServer() as server:
        server.fail_next(429, retry_after="0.4")
        server.fail_next(503)
        embedder = VoyageEmbedder(KEY, base_url=server.base_url, base_delay=0.01)
        started = time.monotonic()
        vectors = embedder.embed(["hello world"])
        elapsed = time.monotonic() - started
    assert vectors.shape == (1, 32)
    assert len(server.requests) == 3
    assert elapsed >= 0.4


def test_persistent_500_gives_up_after_max_retries_without_leaking_the_key(
    caplog: pytest.LogCaptureFixture,
) -> None:
    secret = "pa-secret-0123456789"
    caplog.set_level(logging.DEBUG)
    with FakeVoyageServer(api_key=secret) as server:
        server.fail_next(500, times=10)
        embedder = VoyageEmbedder(secret, base_url=server.base_url, max_retries=2, base_delay=0.01)
        with pytest.raises(EmbeddingError, match="after 3 attempts") as error:
            embedder.embed(["hello"])
    assert len(server.requests) == 3
    assert secret not in str(error.value) and secret not in repr(embedder)
    assert secret not in caplog.text


@pytest.mark.parametrize("status", [502, 520])
def test_any_5xx_is_retried_even_one_the_sdk_does_not_map(status: int) -> None:
    # voyageai 0.5.0 parses a JSON 520 as a success and fails on the missing "data".
    with FakeVoyageServer() as server:
        server.fail_next(status)
        embedder = VoyageEmbedder(KEY, base_url=server.base_url, base_delay=0.01)
        assert embedder.embed(["hello"]).shape == (1, 32)
    assert len(server.requests) == 2


def test_persistent_unmapped_5xx_ends_in_embedding_error() -> None:
    with FakeVoyageServer() as server:
        server.fail_next(520, times=5)
        embedder = VoyageEmbedder(KEY, base_url=server.base_url, max_retries=1, base_delay=0.01)
        with pytest.raises(EmbeddingError, match="after 2 attempts: unreadable response"):
            embedder.embed(["hello"])
    assert len(server.requests) == 2


def test_retry_after_is_capped_by_max_delay() -> None:
    with FakeVoyageServer() as server:
        server.fail_next(429, retry_after=30)
        embedder = VoyageEmbedder(KEY, base_url=server.base_url, max_delay=0.05)
        started = time.monotonic()
        embedder.embed(["hello"])
    assert time.monotonic() - started < 5
    assert len(server.requests) == 2


def test_connection_errors_are_retried_then_reported() -> None:
    with FakeVoyageServer() as server:
        closed_url = server.base_url  # nothing listens here once the server has stopped
    embedder = VoyageEmbedder(KEY, base_url=closed_url, max_retries=1, base_delay=0.01)
    with pytest.raises(EmbeddingError, match="after 2 attempts: APIConnectionError") as error:
        embedder.embed(["hello"])
    assert KEY not in str(error.value)


def test_models_the_sdk_runs_locally_are_refused() -> None:
    # voyageai would download these from the Hugging Face hub and run them in-process.
    with pytest.raises(EmbeddingError, match=r"'voyage-4-nano'.*hosted model"):
        VoyageEmbedder(KEY, model="voyage-4-nano")
    with pytest.raises(EmbeddingError, match="voyage-4-nano"):
        make_embedder(EmbeddingSettings(voyage_model="voyage-4-nano"), {"VOYAGE_API_KEY": KEY})


def test_rejected_key_is_not_retried_and_not_echoed() -> None:
    with FakeVoyageServer() as server:
        embedder = VoyageEmbedder("wrong-key-987", base_url=server.base_url, base_delay=0.01)
        with pytest.raises(EmbeddingError, match="AuthenticationError") as error:
            embedder.embed(["hello"])
    assert len(server.requests) == 1
    assert "wrong-key-987" not in str(error.value)


def test_fake_rerank_speaks_the_sdk_wire_format() -> None:
    with FakeVoyageServer() as server:
        client = voyageai.Client(api_key=KEY, base_url=server.base_url, max_retries=0)
        result = client.rerank(
            "river flood", ["mill cloth", "the river flood of 1894"], "rerank-2.5", top_k=1
        )
    assert [(r.index, r.relevance_score) for r in result.results] == [(1, 1.0)]


def test_make_embedder_selection_rules() -> None:
    assert isinstance(make_embedder(EmbeddingSettings(), {}), LocalMiniLMEmbedder)
    assert isinstance(
        make_embedder(EmbeddingSettings(provider="local"), {"VOYAGE_API_KEY": KEY}), LocalMiniLMEmbedder
    )
    with pytest.raises(EmbeddingError, match="VOYAGE_API_KEY"):
        make_embedder(EmbeddingSettings(provider="voyage"), {})
    with FakeVoyageServer() as server:
        environ = {"VOYAGE_API_KEY": KEY, "VOYAGE_BASE_URL": server.base_url}
        auto = make_embedder(EmbeddingSettings(batch_size=1), environ)
        assert isinstance(auto, VoyageEmbedder)
        assert auto.embed(["a", "b"]).shape == (2, 32)
        # settings.voyage_base_url wins over the environment.
        settings = EmbeddingSettings(
            provider="voyage", voyage_model="voyage-3.5-lite", voyage_base_url=server.base_url
        )
        configured = make_embedder(
            settings, {"VOYAGE_API_KEY": KEY, "VOYAGE_BASE_URL": "http://127.0.0.1:9/v1"}
        )
        configured.embed(["c"])
    assert len(server.requests) == 3
    assert server.requests[-1][1]["model"] == "voyage-3.5-lite"
