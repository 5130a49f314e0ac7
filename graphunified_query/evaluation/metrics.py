"""Retrieval and answer metrics, as the papers define them.

Recall@k is HippoRAG's: the share of a question's supporting passages found in the top k of its
de-duplicated passage ranking. Answers are normalized as in the SQuAD/HotpotQA evaluation scripts.
ROUGE-L is Lin (2004)'s longest-common-subsequence F-measure (beta = 1, as rouge-score reports it)
over those normalized tokens; the semantic score is the cosine of the answer's and the gold
answer's embeddings with the configured embedder (a BERTScore-style check that needs no model
beyond the one the index already uses).
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from graphunified_query.core.providers.embedding import Embedder

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)


def deduplicated(ranking: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(ranking))


def recall_at_k(ranking: Sequence[str], relevant: Sequence[str], k: int) -> float:
    gold = set(relevant)
    if not gold:
        return 0.0
    return len(gold & set(deduplicated(ranking)[:k])) / len(gold)


def reciprocal_rank(ranking: Sequence[str], relevant: Sequence[str]) -> float:
    gold = set(relevant)
    for rank, item in enumerate(deduplicated(ranking), start=1):
        if item in gold:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(ranking: Sequence[str], relevant: Sequence[str], k: int = 10) -> float:
    """Binary-relevance NDCG: DCG of the ranking over the DCG of a perfect one."""
    gold = set(relevant)
    if not gold:
        return 0.0
    dcg = sum(
        1.0 / math.log2(rank + 1) for rank, item in enumerate(deduplicated(ranking)[:k], 1) if item in gold
    )
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(gold), k) + 1))
    return dcg / ideal


def normalize_answer(text: str) -> str:
    """Lower case, no punctuation, no articles, single spaces (SQuAD's normalize_answer)."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, answers: Sequence[str]) -> float:
    return float(any(normalize_answer(prediction) == normalize_answer(a) for a in answers))


def token_f1(prediction: str, answers: Sequence[str]) -> float:
    """Best token-overlap F1 against any gold answer (HotpotQA's f1_score, max over answers)."""
    return max((_f1(prediction, answer) for answer in answers), default=0.0)


def _f1(prediction: str, answer: str) -> float:
    predicted, gold = normalize_answer(prediction).split(), normalize_answer(answer).split()
    # HotpotQA: yes/no/noanswer only match exactly.
    if {" ".join(predicted), " ".join(gold)} & {"yes", "no", "noanswer"} and predicted != gold:
        return 0.0
    common = sum((Counter(predicted) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def rouge_l(prediction: str, answers: Sequence[str]) -> float:
    """Best ROUGE-L F-measure against any gold answer."""
    return max((_rouge_l(prediction, answer) for answer in answers), default=0.0)


def _rouge_l(prediction: str, answer: str) -> float:
    predicted, gold = normalize_answer(prediction).split(), normalize_answer(answer).split()
    common = _lcs(predicted, gold)
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def _lcs(first: Sequence[str], second: Sequence[str]) -> int:
    """Length of the longest common subsequence (one row of the dynamic programme at a time)."""
    previous = [0] * (len(second) + 1)
    for token in first:
        current = [0]
        for j, other in enumerate(second, 1):
            current.append(previous[j - 1] + 1 if token == other else max(previous[j], current[j - 1]))
        previous = current
    return previous[-1]


def semantic_similarity(embedder: Embedder, prediction: str, answers: Sequence[str]) -> float:
    """Best cosine (clipped at 0) between the answer's embedding and a gold answer's."""
    if not answers or not prediction.strip():
        return 0.0
    vectors = embedder.embed([prediction, *answers], kind="document")
    return max(0.0, float(np.max(vectors[1:] @ vectors[0])))


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default), without numpy."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
