"""bench/recall_change.py: per-question recall changes between two evals, and the sign test."""

from __future__ import annotations

import math

import pytest

from bench.recall_change import recall_change, sign_test


def _results(recalls: dict[str, list[float]]) -> dict:
    return {
        "questions": {
            strategy: [{"question_id": f"q{i}", "recall": {"5": r}} for i, r in enumerate(values)]
            for strategy, values in recalls.items()
        }
    }


def test_the_sign_test_is_exact_and_two_sided() -> None:
    assert sign_test(0, 0) == 1.0
    assert sign_test(4, 1) == pytest.approx(2 * (1 + 5) / 32)  # 0.375
    assert sign_test(1, 4) == sign_test(4, 1)
    assert sign_test(10, 0) == pytest.approx(2 / 2**10)
    assert sign_test(3, 3) == 1.0  # capped: an even split is no evidence either way
    assert sign_test(9, 2) == pytest.approx(2 * sum(math.comb(11, i) for i in range(3)) / 2**11)


def test_questions_that_lost_and_gained_are_counted_per_strategy() -> None:
    before = _results({"naive": [1.0, 0.5, 0.0, 1.0], "hybrid": [1.0, 1.0, 1.0, 1.0], "old": [1.0]})
    after = _results({"naive": [0.5, 0.5, 1.0, 0.0], "hybrid": [1.0, 1.0, 1.0, 1.0]})
    changes = recall_change(before, after, "5")
    assert set(changes) == {"naive", "hybrid"}  # a strategy only one eval ran is left out
    naive = changes["naive"]
    assert (naive["recall@5_before"], naive["recall@5_after"]) == (62.5, 50.0)
    assert (naive["lost"], naive["gained"], naive["questions"]) == (2, 1, 4)
    assert naive["sign_test_p"] == 1.0
    assert changes["hybrid"]["lost"] == changes["hybrid"]["gained"] == 0
