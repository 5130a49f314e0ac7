"""The eval command: index the set (or reuse its index), run the questions, write the outputs."""

from __future__ import annotations

import json
import os
import platform
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphunified_query.core.progress import Progress
from graphunified_query.core.providers.registry import ANTHROPIC_KEY
from graphunified_query.core.settings.model import load_settings
from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.evaluation.dataset import load_dataset
from graphunified_query.evaluation.home import default_home, ensure_index
from graphunified_query.evaluation.judge import PairwiseJudge, win_rates
from graphunified_query.evaluation.report import write_outputs
from graphunified_query.evaluation.router_eval import router_figures
from graphunified_query.evaluation.runner import run_questions
from graphunified_query.evaluation.summary import summarize
from graphunified_query.strategies.composable.named import is_composition
from graphunified_query.strategies.registry import AUTO, STRATEGIES, names


@dataclass(frozen=True)
class EvalOptions:
    dataset: Path
    strategies: tuple[str, ...]
    ks: tuple[int, ...]
    home: Path | None = None
    out: Path | None = None
    generate: bool = False
    limit: int | None = None
    progress: bool = True
    judge: tuple[str, str] | None = None  # two strategies whose answers Claude compares
    params: dict[str, Any] = field(default_factory=dict)  # --param: strategy parameters, context options
    replace_input: bool = False  # --home H indexes another folder: replace its documents with the set's


def parse_strategies(value: str) -> tuple[str, ...]:
    """``all`` is the registry's core strategies plus the router; otherwise a comma-separated list,
    checked by `check_strategies` once the home (and the strategies its settings define) is known."""
    if value == "all":
        return (*names("core"), AUTO)
    chosen = tuple(n.strip() for n in value.split(",") if n.strip())
    if not chosen:
        raise ValueError(
            f"--strategies: no strategy in {value!r}; use all or some of {', '.join(STRATEGIES)}, auto"
        )
    return chosen


def check_strategies(chosen: tuple[str, ...], home: Path) -> None:
    """Every name is registered, ``auto``, or a strategy defined in the home's settings.yaml (a
    composition): checked before the set is indexed, so a typo costs no indexing."""
    settings = load_settings(home)  # defaults when the home (or its settings.yaml) does not exist yet
    defined = [n for n, entry in settings.strategy_entries.items() if is_composition(n, entry, STRATEGIES)]
    known = (*STRATEGIES, *defined, AUTO)
    unknown = [n for n in chosen if n not in known]
    if unknown:
        raise ValueError(f"--strategies: unknown {unknown!r}; use all or some of {', '.join(known)}")


def parse_ks(value: str) -> tuple[int, ...]:
    try:
        ks = tuple(sorted({int(k) for k in value.split(",") if k.strip()}))
    except ValueError:
        raise ValueError(f"--k must be comma-separated integers such as 2,5,10, not {value!r}") from None
    if not ks or ks[0] < 1:
        raise ValueError("--k values must be positive")
    return ks


def parse_judge(value: str | None, strategies: tuple[str, ...]) -> tuple[str, str] | None:
    if not value:
        return None
    pair = tuple(n.strip() for n in value.split(","))
    if len(pair) != 2 or any(n not in strategies for n in pair):
        raise ValueError(f"--judge takes two of the evaluated strategies, e.g. hipporag,naive; not {value!r}")
    return pair[0], pair[1]


def run_eval(options: EvalOptions) -> dict[str, Any]:
    dataset = load_dataset(options.dataset, limit=options.limit)
    home = options.home or default_home(dataset)
    check_strategies(options.strategies, home)
    echo = _index_line if options.progress else None
    indexed = ensure_index(dataset, home, replace_input=options.replace_input, echo=echo)
    engine = QueryEngine.open(home)
    judge: PairwiseJudge | None = None
    if options.judge:
        if engine.llm is None or not options.generate:
            raise ValueError(
                "--judge compares generated answers with the configured LLM: add --generate and set "
                f"llm.provider (or {ANTHROPIC_KEY})"
            )
        judge = PairwiseJudge(engine.llm)
    runs = run_questions(
        engine,
        dataset.questions,
        options.strategies,
        ks=options.ks,
        generate=options.generate,
        progress=Progress("eval", "runs") if options.progress else None,
        params=options.params,
    )
    results: dict[str, Any] = {
        "dataset": dataset.name,
        "questions_evaluated": len(dataset.questions),
        "ks": list(options.ks),
        "params": dict(options.params),  # --param values: what the figures were measured with
        "index": {"home": str(home), "seconds": round(indexed.seconds, 1), "reused": indexed.reused},
        "index_cost": _index_cost(indexed.output),
        "embedding_model": engine.snapshot.model,
        "generator": type(engine.generator).__name__ if options.generate else "none (retrieval only)",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        **summarize(runs, dataset.questions, options.ks),
        "dataset_folder": str(dataset.folder.resolve()),  # where train-router finds questions.jsonl
    }
    routers = router_figures(engine, dataset.questions, runs)
    if routers:  # rule, learned (cross-validated), best single, oracle; `auto` figures when it ran
        results["router"] = results.get("router", {}) | routers
    if judge is not None and options.judge:
        results["judge"] = _judge(judge, dataset.questions, runs, options.judge)
    out = options.out or home / "eval"
    results["outputs"] = [str(p) for p in write_outputs(out, results, runs, options.ks)]
    return results


def _index_line(line: str) -> None:
    print(f"index | {line}", file=sys.stderr, flush=True)


def _judge(judge: PairwiseJudge, questions: Any, runs: Any, pair: tuple[str, str]) -> dict[str, Any]:
    a, b = pair
    scores = [
        judge.compare(q.question, run_a.answer or "", run_b.answer or "")
        for q, run_a, run_b in zip(questions, runs[a], runs[b], strict=True)
    ]
    return {
        "a": a,
        "b": b,
        "win_rate_of_a": win_rates(scores),
        "llm_calls": judge.calls,
        "order_swapped": True,
    }


def _index_cost(output: str) -> dict[str, Any]:
    """What indexing printed about LLM spend (offline runs spend nothing)."""
    lines = [line for line in output.splitlines() if "$" in line or "estimate" in line.lower()]
    return {"log": lines[-5:]} if lines else {"usd": 0.0}


def to_json(results: dict[str, Any]) -> str:
    return json.dumps(results, indent=2, default=str)
