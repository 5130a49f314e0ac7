"""results.json, report.md and PNG plots of one evaluation."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from graphunified_query.evaluation.runner import QuestionRun

ANSWER_METRICS = ("exact_match", "f1", "rouge_l", "semantic_similarity")  # with --generate


def write_outputs(
    out: Path, results: dict[str, Any], runs: Mapping[str, Sequence[QuestionRun]], ks: Sequence[int]
) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    payload = results | {"questions": {s: [asdict(r) for r in rs] for s, rs in runs.items()}}
    (out / "results.json").write_text(json.dumps(payload, indent=2, default=str), encoding="utf-8")
    (out / "report.md").write_text(markdown(results, ks), encoding="utf-8")
    return [out / "results.json", out / "report.md", *plots(out, results, ks)]


def markdown(results: Mapping[str, Any], ks: Sequence[int]) -> str:
    strategies = results["strategies"]
    recall_cols = [f"recall@{k}" for k in ks]
    answer_cols = [c for c in ANSWER_METRICS if any(c in f for f in strategies.values())]
    columns = [
        *recall_cols,
        "mrr",
        "ndcg@10",
        *answer_cols,
        "retrieval_latency_p50_ms",
        "retrieval_latency_p95_ms",
        "llm_calls_per_query",
        "tokens_per_query",
        "cost_usd_per_query",
    ]
    index = results["index"]
    built = "reused" if index["reused"] else f"built in {index['seconds']:.0f} s"
    lines = [
        f"# Evaluation: {results['dataset']}",
        "",
        f"{results['questions_evaluated']} questions; index `{index['home']}` "
        f"({built}); "
        f"embedding model `{results['embedding_model']}`; answers by `{results['generator']}`.",
        "",
        "| strategy | " + " | ".join(columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for name, figures in strategies.items():
        lines.append(f"| {name} | " + " | ".join(_cell(figures.get(c)) for c in columns) + " |")
    router = results.get("router")
    if router:
        lines += ["", *_router_lines(router), ""]
        routed = strategies.get("auto", {}).get("routed_to")
        if routed:
            lines.append("`auto` routed to: " + ", ".join(f"{s} {n}" for s, n in routed.items()) + ".")
    types = {t for f in strategies.values() for t in f.get("by_question_type", {})}
    if types:
        lines += ["", f"## Recall@{ks[min(1, len(ks) - 1)]} by question type", ""]
        k_col = f"recall@{ks[min(1, len(ks) - 1)]}"
        ordered = sorted(types)
        lines += ["| strategy | " + " | ".join(ordered) + " |", "|---|" + "---|" * len(ordered)]
        for name, figures in strategies.items():
            by_type = figures.get("by_question_type", {})
            lines.append(
                f"| {name} | " + " | ".join(_cell(by_type.get(t, {}).get(k_col)) for t in ordered) + " |"
            )
    if answer_cols and types:
        lines += _answers_by_type(strategies, sorted(types), answer_cols)
    return "\n".join(lines) + "\n"


def _router_lines(router: Mapping[str, Any]) -> list[str]:
    """Rule router, learned router (cross-validated), `auto` as run, best single and oracle."""
    lines = [f"**Routers** ({router['metric']}):", ""]
    if "auto" in router:
        lines.append(
            f"- `auto` as run ({router.get('auto_router', 'rule')} router): {router['auto']} "
            f"(gap to best {router['gap_to_best_single']:+}, to oracle {router['gap_to_oracle']:+})"
        )
    if "rule" in router:
        lines.append(f"- rule router: {router['rule']}")
        lines.append(
            f"- learned router, {router['learned_cv_folds']}-fold cross-validated on these questions "
            f"(each scored by a model that never saw it): {router['learned_cv']}"
        )
    lines.append(f"- best single strategy `{router['best_single_strategy']}`: {router['best_single']}")
    lines.append(f"- per-question oracle: {router['oracle']}")
    return lines


def _answers_by_type(
    strategies: Mapping[str, Any], types: Sequence[str], metrics: Sequence[str]
) -> list[str]:
    """One row per strategy, one ``metric: value`` cell per question type."""
    lines = ["", "## Answers by question type (" + ", ".join(metrics) + ")", ""]
    lines += ["| strategy | " + " | ".join(types) + " |", "|---|" + "---|" * len(types)]
    for name, figures in strategies.items():
        by_type = figures.get("by_question_type", {})
        cells = [" / ".join(_cell(by_type.get(t, {}).get(m)) for m in metrics) for t in types]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def _cell(value: object) -> str:
    if value is None:
        return "–"
    return f"{value:g}" if isinstance(value, float) else str(value)


def plots(out: Path, results: Mapping[str, Any], ks: Sequence[int]) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    strategies = results["strategies"]
    names = list(strategies)
    written = []

    figure, axes = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / max(len(ks), 1)
    for i, k in enumerate(ks):
        xs = [n + i * width for n in range(len(names))]
        axes.bar(xs, [strategies[s].get(f"recall@{k}", 0) for s in names], width, label=f"Recall@{k}")
    axes.set_xticks([n + width * (len(ks) - 1) / 2 for n in range(len(names))], names, rotation=20)
    axes.set_ylabel("Recall (%)")
    axes.set_title(f"Passage recall by strategy — {results['dataset']}")
    axes.legend()
    written.append(_save(figure, out / "recall_at_k.png"))

    figure, axes = plt.subplots(figsize=(9, 4.5))
    positions = range(len(names))
    axes.bar(
        [x - 0.2 for x in positions],
        [strategies[s]["retrieval_latency_p50_ms"] for s in names],
        0.4,
        label="p50",
    )
    axes.bar(
        [x + 0.2 for x in positions],
        [strategies[s]["retrieval_latency_p95_ms"] for s in names],
        0.4,
        label="p95",
    )
    axes.set_xticks(list(positions), names, rotation=20)
    axes.set_ylabel("Retrieval latency (ms)")
    axes.set_title("Latency per strategy")
    axes.legend()
    written.append(_save(figure, out / "latency.png"))

    k = ks[min(1, len(ks) - 1)]
    figure, (cost_axes, latency_axes) = plt.subplots(1, 2, figsize=(11, 4.5))
    for name in names:
        quality = strategies[name].get(f"recall@{k}", 0)
        cost_axes.scatter(strategies[name]["cost_usd_per_query"], quality)
        cost_axes.annotate(name, (strategies[name]["cost_usd_per_query"], quality))
        latency_axes.scatter(strategies[name]["total_latency_p50_ms"], quality)
        latency_axes.annotate(name, (strategies[name]["total_latency_p50_ms"], quality))
    cost_axes.set_xlabel("Dollars per query")
    latency_axes.set_xlabel("Latency p50 (ms)")
    for axes in (cost_axes, latency_axes):
        axes.set_ylabel(f"Recall@{k} (%)")
    figure.suptitle("Quality versus cost")
    written.append(_save(figure, out / "quality_vs_cost.png"))
    if "rule" in results.get("router", {}):
        written.append(_router_plot(out, results))
    metrics = [m for m in ANSWER_METRICS if any(m in strategies[s] for s in names)]
    if metrics:
        written.append(_answer_plot(out, results, names, metrics))
    return written


def _answer_plot(out: Path, results: Mapping[str, Any], names: Sequence[str], metrics: Sequence[str]) -> Path:
    import matplotlib.pyplot as plt

    strategies = results["strategies"]
    figure, axes = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / len(metrics)
    for i, metric in enumerate(metrics):
        xs = [n + i * width for n in range(len(names))]
        axes.bar(xs, [strategies[s].get(metric, 0) for s in names], width, label=metric)
    axes.set_xticks([n + width * (len(metrics) - 1) / 2 for n in range(len(names))], names, rotation=20)
    axes.set_ylabel("Score (%)")
    axes.set_title(f"Answer quality by strategy — {results['dataset']}")
    axes.legend()
    return _save(figure, out / "answer_quality.png")


def _router_plot(out: Path, results: Mapping[str, Any]) -> Path:
    import matplotlib.pyplot as plt

    router = results["router"]
    bars = {
        "rule router": router["rule"],
        "learned (CV)": router["learned_cv"],
        **({f"auto ({router['auto_router']})": router["auto"]} if "auto" in router else {}),
        f"best single\n({router['best_single_strategy']})": router["best_single"],
        "oracle": router["oracle"],
    }
    figure, axes = plt.subplots(figsize=(8, 4.5))
    axes.bar(list(bars), list(bars.values()), color="tab:blue")
    for x, value in enumerate(bars.values()):
        axes.annotate(f"{value:.1f}", (x, value), ha="center", va="bottom")
    axes.set_ylabel(f"{router['metric']} (%)")
    axes.set_title(f"Routers — {results['dataset']}")
    return _save(figure, out / "routers.png")


def _save(figure: Any, path: Path) -> Path:
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    import matplotlib.pyplot as plt

    plt.close(figure)
    return path
