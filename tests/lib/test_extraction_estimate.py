"""The pre-run estimate counts chunks, calls and dollars from text sizes."""

from __future__ import annotations

import pytest

from graphunified_assets.lib.extraction.estimate import OUTPUT_TOKENS_PER_CALL, estimate_extraction
from graphunified_query.core.settings.model import Settings


def test_estimate_counts_chunks_calls_and_dollars() -> None:
    settings = Settings()  # 512/128 chunks, one gleaning, claude-sonnet-4-5 prices
    estimate = estimate_extraction(["x" * 4000, "short"], settings)
    # 1000 tokens -> ceil((1000 - 128) / 384) = 3 chunks; "short" -> 1 chunk; two turns each.
    assert estimate.chunks == 4
    assert estimate.calls == 8
    assert estimate.output_tokens == 8 * OUTPUT_TOKENS_PER_CALL
    price = settings.prices["claude-sonnet-4-5"]
    expected = (estimate.input_tokens * price.input + estimate.output_tokens * price.output) / 1e6
    assert estimate.usd == pytest.approx(expected)
    assert "8 calls" in estimate.describe(5.0) and "budget $5.00" in estimate.describe(5.0)


def test_no_gleaning_halves_the_calls() -> None:
    settings = Settings.model_validate({"llm": {"max_gleanings": 0}})
    assert estimate_extraction(["x" * 4000], settings).calls == 3
