"""Retrieval and answer metrics, as the papers define them.

Recall@k is HippoRAG's: the share of a question's supporting passages found in the top k of its
de-duplicated passage ranking. Answers are normalized as in the SQuAD/HotpotQA evaluation scripts.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Sequence

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


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default), without numpy."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
