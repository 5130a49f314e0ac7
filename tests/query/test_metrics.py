"""Evaluation metrics against hand-computed cases."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
import pytest

from graphunified_query.evaluation.metrics import (
    exact_match,
    ndcg_at_k,
    normalize_answer,
    percentile,
    recall_at_k,
    reciprocal_rank,
    rouge_l,
    semantic_similarity,
    token_f1,
)


def test_recall_counts_supporting_passages_in_the_deduplicated_top_k() -> None:
    ranking = ["a", "x", "a", "b", "y", "c"]  # the repeated "a" must not push "b" out of the top 3
    assert recall_at_k(ranking, ["a", "b"], 2) == 0.5
    assert recall_at_k(ranking, ["a", "b"], 3) == 1.0
    assert recall_at_k(ranking, ["a", "b", "c"], 3) == pytest.approx(2 / 3)
    assert recall_at_k(ranking, ["a", "b", "c", "d"], 5) == 0.75
    assert recall_at_k(ranking, ["a", "b", "c", "d"], 2) == 0.25
    assert recall_at_k([], ["a"], 5) == 0.0 and recall_at_k(["a"], [], 5) == 0.0


def test_reciprocal_rank_uses_the_first_hit_after_deduplication() -> None:
    assert reciprocal_rank(["x", "x", "y", "b"], ["b", "c"]) == pytest.approx(1 / 3)
    assert reciprocal_rank(["a"], ["a"]) == 1.0 and reciprocal_rank(["x"], ["a"]) == 0.0


def test_ndcg_binary_relevance() -> None:
    # hits at ranks 1 and 3 of 2 relevant: (1 + 1/log2(4)) / (1 + 1/log2(3))
    expected = (1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    assert ndcg_at_k(["a", "x", "b"], ["a", "b"], 10) == pytest.approx(expected)
    assert ndcg_at_k(["a", "b"], ["a", "b"], 10) == pytest.approx(1.0)
    assert ndcg_at_k(["x", "a", "a", "b"], ["a", "b"], 2) == pytest.approx(
        (1 / math.log2(3)) / (1 + 1 / math.log2(3))
    )
    # Four relevant, ideal DCG@3 counts only three of them.
    ideal3 = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at_k(["a", "b", "c"], ["a", "b", "c", "d"], 3) == pytest.approx(ideal3 / ideal3)


def test_answer_normalization_exact_match_and_f1() -> None:
    assert normalize_answer("The  River Lune!") == "river lune"
    assert exact_match("the river Lune.", ["River Lune"]) == 1.0
    assert exact_match("Lune", ["River Lune"]) == 0.0
    # prediction "lune river valley" vs gold "river lune": common 2, P 2/3, R 1 -> F1 0.8
    assert token_f1("Lune river valley", ["River Lune"]) == pytest.approx(0.8)
    assert token_f1("no", ["yes"]) == 0.0 and token_f1("yes", ["yes"]) == 1.0
    assert token_f1("Thomas Hale", ["Eleanor Hale", "Thomas Hale"]) == 1.0  # best over gold answers


def test_percentile_interpolates() -> None:
    assert percentile([10, 20, 30, 40], 50) == 25
    assert percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 95) == pytest.approx(9.55)
    assert percentile([], 95) == 0.0


def test_rouge_l_is_the_longest_common_subsequence_f_measure() -> None:
    # "thomas hale founded mill in 1862" (6 tokens) vs "thomas hale": LCS 2, P 2/6, R 1 -> 0.5
    assert rouge_l("Thomas Hale founded the mill in 1862.", ["Thomas Hale"]) == pytest.approx(0.5)
    # "cat sat on mat" vs "cat was on mat" (articles dropped): LCS "cat on mat" 3, P = R = 3/4
    assert rouge_l("The cat sat on the mat", ["the cat was on a mat"]) == pytest.approx(0.75)
    # order matters, unlike token F1: LCS of "mat on cat" and "cat on mat" is 1 -> 1/3
    assert rouge_l("mat on cat", ["cat on mat"]) == pytest.approx(1 / 3)
    assert token_f1("mat on cat", ["cat on mat"]) == 1.0
    assert rouge_l("", ["cat"]) == 0.0 and rouge_l("dog", []) == 0.0


class _TableEmbedder:
    """Fixed unit vectors, so the cosines can be worked out by hand."""

    model_name, dimension = "table", 2
    TABLE: ClassVar[dict[str, tuple[float, float]]] = {
        "Thomas Hale": (1.0, 0.0),
        "T. Hale": (0.6, 0.8),
        "Eleanor": (0.0, 1.0),
        "no one": (-1.0, 0.0),
    }

    def embed(self, texts: Sequence[str], *, kind: str = "document") -> np.ndarray:
        return np.array([self.TABLE[t] for t in texts])


def test_semantic_similarity_is_the_best_cosine_with_the_configured_embedder() -> None:
    embedder = _TableEmbedder()
    # cos((1, 0), (0.6, 0.8)) = 0.6 and cos((1, 0), (0, 1)) = 0: the best gold answer counts
    assert semantic_similarity(embedder, "Thomas Hale", ["Eleanor", "T. Hale"]) == pytest.approx(0.6)  # type: ignore[arg-type]
    # an opposite answer is clipped to 0, not negative
    assert semantic_similarity(embedder, "no one", ["Thomas Hale"]) == 0.0  # type: ignore[arg-type]
    assert semantic_similarity(embedder, "", ["Thomas Hale"]) == 0.0  # type: ignore[arg-type]
