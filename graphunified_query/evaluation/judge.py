"""Pairwise LLM judge (GraphRAG's and LightRAG's criteria), with the answer order swapped.

Each pair is judged twice, A-then-B and B-then-A, and the two verdicts are averaged, so a judge
that prefers whichever answer comes first scores the pair even: position bias cancels.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from statistics import fmean
from typing import Any

from graphunified_query.core.providers.llm import LLM

CRITERIA = ("comprehensiveness", "diversity", "empowerment", "overall")
_PROMPT = Path(__file__).resolve().parents[1] / "prompts" / "judge_pairwise.md"
_TOOL = {
    "name": "verdict",
    "description": "Record the winner of each criterion.",
    "input_schema": {
        "type": "object",
        "properties": {c: {"type": "string", "enum": ["1", "2", "tie"]} for c in CRITERIA},
        "required": list(CRITERIA),
    },
}


class PairwiseJudge:
    def __init__(self, client: LLM) -> None:
        self.client = client
        self.calls = 0
        self._system = [
            {
                "type": "text",
                "text": _PROMPT.read_text(encoding="utf-8"),
                "cache_control": {"type": "ephemeral"},
            }
        ]

    def compare(self, question: str, answer_a: str, answer_b: str) -> dict[str, float]:
        """Score of A per criterion: 1 = A wins both orders, 0.5 = even, 0 = B wins both."""
        first = self._verdict(question, answer_a, answer_b)
        second = self._verdict(question, answer_b, answer_a)
        return {c: (_points(first.get(c), "1") + _points(second.get(c), "2")) / 2 for c in CRITERIA}

    def _verdict(self, question: str, one: str, two: str) -> dict[str, Any]:
        response = self.client.create(
            system=self._system,
            messages=[
                {"role": "user", "content": f"Question: {question}\n\nAnswer 1:\n{one}\n\nAnswer 2:\n{two}"}
            ],
            tools=[_TOOL],
            tool_choice={"type": "tool", "name": "verdict"},
            max_tokens=300,
        )
        self.calls += 0 if response.cached else 1
        verdict = response.tool_input("verdict")
        return verdict if isinstance(verdict, dict) else {}


def _points(winner: object, position_of_a: str) -> float:
    if winner == position_of_a:
        return 1.0
    if winner in ("1", "2"):
        return 0.0
    return 0.5  # a tie, or no usable verdict


def win_rates(scores: Sequence[dict[str, float]]) -> dict[str, float]:
    return {c: round(100 * fmean(s[c] for s in scores), 2) for c in CRITERIA} if scores else {}
