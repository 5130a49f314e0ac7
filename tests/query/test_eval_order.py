"""eval latencies do not depend on strategy order (#32 item 3): the first strategy used to pay the
cold start and the query embedding (naive then hybrid: 32/162 and 17/22 ms p50/p95; reversed:
22/42 and 41/231)."""

from __future__ import annotations

from typing import Any

import pytest

from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.evaluation.dataset import Question
from graphunified_query.evaluation.runner import WARM_UP_QUESTION, run_questions

STRATEGIES = ("naive", "hybrid", "hipporag", "lightrag")
QUESTIONS = [
    Question(f"q{n}", text, ("x",), ("hale-mill.md",), None)
    for n, text in enumerate(
        [
            "Who founded the Hale Mill?",
            "Which river flooded Eastfold?",
            "Where did Ada Whitlock study?",
            "What was built at Kestrel Dam?",
            "Which towns lie on the River Wear?",
        ]
    )
]


def _spy(engine: QueryEngine, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, Any]]:
    calls: list[tuple[str, str, Any]] = []
    query, embed, warm = engine.query, engine.embed_query, engine.warm

    def spied_query(request: Any) -> Any:
        calls.append(("query", request.question, request.strategy))
        return query(request)

    def spied_embed(question: str) -> None:
        calls.append(("embed", question, None))
        embed(question)

    def spied_warm() -> None:
        calls.append(("warm", "", None))
        warm()

    monkeypatch.setattr(engine, "query", spied_query)
    monkeypatch.setattr(engine, "embed_query", spied_embed)
    monkeypatch.setattr(engine, "warm", spied_warm)
    return calls


def _orders(calls: list[tuple[str, str, Any]]) -> list[tuple[str, ...]]:
    return [
        tuple(s for kind, q, s in calls if kind == "query" and q == question.question)
        for question in QUESTIONS
    ]


def test_every_strategy_is_warm_and_each_question_embedded_before_it_is_timed(
    engine: QueryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _spy(engine, monkeypatch)
    runs = run_questions(engine, QUESTIONS, STRATEGIES, ks=(2,), generate=False, seed=7)
    first_timed = next(i for i, c in enumerate(calls) if c[0] == "query" and c[1] != WARM_UP_QUESTION)
    warm_up = calls[:first_timed]
    assert warm_up[0] == ("warm", "", None)
    assert sorted(s for kind, q, s in warm_up if kind == "query" and q == WARM_UP_QUESTION) == sorted(
        STRATEGIES
    )
    for question in QUESTIONS:  # its embedding comes before the first strategy that runs it
        positions = [i for i, c in enumerate(calls) if c[1] == question.question]
        assert calls[positions[0]][0] == "embed" and len(positions) == 1 + len(STRATEGIES)
    orders = _orders(calls)
    assert all(sorted(order) == sorted(STRATEGIES) for order in orders)
    assert len(set(orders)) > 1  # shuffled per question, not one fixed order
    for strategy in STRATEGIES:  # results stay in question order whatever the run order
        assert [r.question_id for r in runs[strategy]] == [q.id for q in QUESTIONS]


def test_the_order_is_seeded(engine: QueryEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    first = _spy(engine, monkeypatch)
    run_questions(engine, QUESTIONS, STRATEGIES, ks=(2,), generate=False, seed=3)
    monkeypatch.undo()
    second = _spy(engine, monkeypatch)
    run_questions(engine, QUESTIONS, STRATEGIES, ks=(2,), generate=False, seed=3)
    assert _orders(first) == _orders(second)
