"""The eval command on a tiny set: indexes through Dagster, scores every strategy, writes outputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from graphunified_query.cli import main
from graphunified_query.core.providers.claude import ClaudeClient
from graphunified_query.core.settings.model import LLMSettings, Settings
from graphunified_query.evaluation.dataset import DatasetError, load_dataset
from graphunified_query.evaluation.judge import CRITERIA, PairwiseJudge, win_rates
from tests.fakes.anthropic_server import FakeAnthropicServer, tool_use

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "eval_tiny"


def test_eval_scores_every_strategy_and_the_router(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    home, out = tmp_path / "home", tmp_path / "out"
    home.mkdir()
    (home / "settings.yaml").write_text("embedding:\n  provider: local\n")
    argv = ["eval", str(TINY), "--home", str(home), "--out", str(out), "--k", "1,2,5", "--generate", "--json"]
    assert main(argv) == 0
    results = json.loads(capsys.readouterr().out)
    strategies = results["strategies"]
    assert set(strategies) == {
        "naive",
        "hybrid",
        "graphrag_local",
        "graphrag_global",
        "lightrag",
        "hipporag",
        "auto",
    }
    for figures in strategies.values():
        assert {"recall@1", "recall@2", "recall@5", "mrr", "ndcg@10", "exact_match", "f1"} <= set(figures)
        assert 0 <= figures["rouge_l"] <= 100 and 0 < figures["semantic_similarity"] <= 100
        assert all("rouge_l" in by_type for by_type in figures["by_question_type"].values())
        assert 0 <= figures["recall@1"] <= figures["recall@2"] <= figures["recall@5"] <= 100
        assert figures["retrieval_latency_p95_ms"] >= figures["retrieval_latency_p50_ms"] > 0
        assert set(figures["by_question_type"]) == {"1hop", "2hop", "3hop"}
    assert strategies["naive"]["recall@5"] >= 50  # the two-document questions are easy at k=5
    router = results["router"]
    assert router["oracle"] >= router["best_single"] and router["oracle"] >= router["auto"]
    assert sum(strategies["auto"]["routed_to"].values()) == 3
    # The rule router and the learned router cross-validated on the set's own questions, beside auto.
    assert router["auto_router"] == "rule" and router["learned_cv_folds"] == 3  # one question a fold
    assert router["best_single"] <= router["oracle"] and 0 <= router["learned_cv"] <= router["oracle"]
    assert 0 <= router["rule"] <= router["oracle"] and sum(router["learned_cv_routed_to"].values()) == 3
    assert results["index"]["reused"] is False
    saved = json.loads((out / "results.json").read_text())
    per_question = saved["questions"]["hipporag"]
    assert [q["question_id"] for q in per_question] == ["q1", "q2", "q3"]
    assert all(q["question"] for q in per_question) and saved["dataset_folder"] == str(TINY.resolve())
    assert all(q["ranking"] and q["answer"] for q in per_question)
    assert "| hipporag |" in (out / "report.md").read_text()
    assert "- learned router, 3-fold cross-validated" in (out / "report.md").read_text()
    assert (
        "## Answers by question type (exact_match, f1, rouge_l, semantic_similarity)"
        in (out / "report.md").read_text()
    )
    assert all(q["rouge_l"] is not None and q["semantic"] is not None for q in per_question)
    for plot in (
        "recall_at_k.png",
        "latency.png",
        "quality_vs_cost.png",
        "answer_quality.png",
        "routers.png",
    ):
        assert (out / plot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # An unchanged corpus reuses its index.
    assert main([*argv[:-1], "--strategies", "naive", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["index"]["reused"] is True
    # A strategy defined in settings.yaml is evaluated like any other, the --param values are recorded
    # with the figures, and two questions are enough for the cross-validated router figures.
    (home / "settings.yaml").write_text(
        "embedding:\n  provider: local\nstrategies:\n  mixed:\n    combine: [naive, hybrid]\n"
        "    mode: weighted\n"
    )
    mixed = ["--strategies", "naive,mixed", "--param", "vector_weight=0.6", "--limit", "2", "--json"]
    assert main([*argv[:-2], *mixed]) == 0
    results = json.loads(capsys.readouterr().out)
    assert set(results["strategies"]) == {"naive", "mixed"} and results["params"] == {"vector_weight": 0.6}
    assert results["questions_evaluated"] == 2 and "learned_cv" in results["router"]


def test_bad_dataset_errors_name_the_file_and_field(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"corpus\.jsonl is missing"):
        load_dataset(tmp_path)
    (tmp_path / "corpus.jsonl").write_text('{"id": "p1", "title": "t", "text": "x"}\n')
    (tmp_path / "questions.jsonl").write_text('{"id": "q1", "question": "?", "supporting_ids": ["p9"]}\n')
    with pytest.raises(DatasetError, match=r"questions.jsonl:1: supporting_ids \['p9'\]"):
        load_dataset(tmp_path)
    (tmp_path / "questions.jsonl").write_text('{"id": "q1", "supporting_ids": []}\n')
    with pytest.raises(DatasetError, match=r"questions\.jsonl:1: field 'question' is missing"):
        load_dataset(tmp_path)


def test_pairwise_judge_cancels_position_bias_and_counts_wins() -> None:
    def first_always(body: dict[str, Any]) -> object:
        return tool_use("verdict", dict.fromkeys(CRITERIA, "1"))

    def prefers_detail(body: dict[str, Any]) -> object:
        prompt = body["messages"][0]["content"]
        winner = "1" if prompt.index("detailed") < prompt.index("Answer 2:") else "2"
        return tool_use("verdict", dict.fromkeys(CRITERIA, winner) | {"diversity": "tie"})

    def judge(server: FakeAnthropicServer) -> PairwiseJudge:
        settings = LLMSettings(base_url=server.base_url, max_retries=1, requests_per_minute=10_000)
        return PairwiseJudge(ClaudeClient(settings, Settings().prices, api_key="test-key", base_delay=0.001))

    with FakeAnthropicServer(first_always) as server:
        biased = judge(server)
        assert biased.compare("q?", "short", "a detailed answer") == dict.fromkeys(CRITERIA, 0.5)
        assert biased.calls == 2 and len(server.requests) == 2
    with FakeAnthropicServer(prefers_detail) as server:
        fair = judge(server)
        scores = [
            fair.compare("q?", "a detailed answer", "short"),
            fair.compare("q2?", "short", "a detailed one"),
        ]
    assert scores[0] == {"comprehensiveness": 1.0, "diversity": 0.5, "empowerment": 1.0, "overall": 1.0}
    assert scores[1]["overall"] == 0.0
    assert win_rates(scores) == {
        "comprehensiveness": 50.0,
        "diversity": 50.0,
        "empowerment": 50.0,
        "overall": 50.0,
    }


def test_eval_times_every_run_afresh_with_the_result_cache_off(engine: Any) -> None:
    """`auto` routes a question to a strategy; that strategy asked next would be a result-cache hit
    (timed at ~0.3 ms on 2Wiki): eval runs with the cache off, and puts it back on."""
    from graphunified_query.evaluation.runner import run_questions

    questions = load_dataset(TINY).questions[:2]
    cache = engine.result_cache
    before, enabled = len(cache), cache.enabled
    runs = run_questions(engine, questions, ["auto", "hipporag", "naive"], ks=(5,), generate=False)
    assert all(len(found) == len(questions) for found in runs.values())
    assert len(cache) == before and cache.enabled == enabled  # nothing stored, the switch restored
