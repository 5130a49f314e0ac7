"""The query side's subcommands of `graphunified`: ask, compare, eval, serve, train-router."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from graphunified_query.engine.switches import SWITCHES, flag

COMMANDS = ("ask", "compare", "eval", "serve", "train-router")


def main(argv: Sequence[str] | None = None) -> int:
    """Any `graphunified` command: the one parser is graphunified/cli.py's (kept for callers of this)."""
    from graphunified.cli import main as graphunified_main  # it reaches the pipeline's commands lazily

    return graphunified_main(argv)


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> tuple[str, ...]:
    """Declare the query side's subcommands on the one parser; their names."""
    # The registry's catalog: the names without the retrievers, so `--help` imports no numpy.
    from graphunified_query.strategies.catalog import AUTO, CATALOG

    ask = commands.add_parser(
        "ask",
        help="answer a question with one strategy (default: routed)",
        epilog='example:\n  graphunified ask "Who founded the Hale Mill?" --home data --strategy hipporag',
    )
    ask.add_argument("question", help="the question, quoted")
    # Not argparse choices: a strategy defined in the home's settings.yaml is valid too, and an
    # unknown name gets the request check's message (closest match), as over HTTP.
    ask.add_argument(
        "--strategy",
        default=None,
        metavar="{" + ",".join((*CATALOG, AUTO)) + "}",
        help="a registered strategy, one defined in settings.yaml (strategies:), or auto (routed); "
        "default: settings query.default_strategy",
    )
    _common(ask)
    for name, description in SWITCHES.items():  # the request's on/off fields, one flag each
        ask.add_argument(flag(name), action="store_true", help=description)
    ask.add_argument("--max-risk", choices=("low", "medium", "high"), help="highest context risk kept")
    ask.add_argument("--show-risky", action="store_true", help="keep risky contexts too, marked (debug)")
    compare = commands.add_parser(
        "compare",
        help="run the core strategies on one question, side by side",
        epilog='example:\n  graphunified compare "What happened in the flood of 1894?" --home data',
    )
    compare.add_argument("question", help="the question, quoted")
    _common(compare)
    evaluate = commands.add_parser(
        "eval",
        help="measure every strategy on a QA set (corpus + questions) in a home of its own",
        epilog="example:\n  graphunified eval tests/fixtures/eval_tiny --strategies naive,hipporag --limit 3",
    )
    evaluate.add_argument("dataset", type=Path, help="folder with corpus.jsonl and questions.jsonl")
    evaluate.add_argument(
        "--strategies", default="all", help="all, or a comma-separated list (auto = router)"
    )
    evaluate.add_argument("--k", default="2,5,10", help="Recall@k cut-offs, e.g. 2,5,10")
    evaluate.add_argument(
        "--home", type=Path, default=None, help="index home (default: data/eval/<set>-<hash>)"
    )
    evaluate.add_argument(
        "--replace-input",
        action="store_true",
        help="let eval replace the documents of a --home that indexes another folder",
    )
    evaluate.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where results.json, report.md, plots go (default: <home>/eval)",
    )
    evaluate.add_argument("--generate", action="store_true", help="also generate answers: EM and F1")
    evaluate.add_argument("--limit", type=int, default=None, help="first N questions only")
    evaluate.add_argument("--json", action="store_true", help="print results.json's summary to stdout")
    evaluate.add_argument("--judge", default=None, help="A,B: Claude judges A's answers against B's")
    _param_option(evaluate)
    _add_serve(commands)
    _add_train_router(commands)
    return COMMANDS


def run(args: argparse.Namespace) -> int:
    """Run a query-side subcommand parsed by the one parser."""
    if args.command == "eval":
        return _eval(args)
    if args.command == "train-router":
        return _train_router(args)
    if args.command == "serve":
        from graphunified_query.server.run import serve  # fastapi, uvicorn: only when serving

        return serve(args.home, args.host, args.port)
    refused = _refusals()
    try:
        params = _params(args.param)
        from graphunified_query.engine.query_engine import (
            QueryEngine,  # loads numpy, spaCy lazily: after parsing
        )
        from graphunified_query.engine.request import QueryRequest

        engine = QueryEngine.open(args.home)
        if args.command == "ask":
            params |= {"max_risk_level": args.max_risk} if args.max_risk else {}
            params |= {"show_risky": True} if args.show_risky else {}
            request = QueryRequest(
                question=args.question,
                strategy=args.strategy,
                top_k=args.top_k,
                params=params,
                **{name: getattr(args, name) for name in SWITCHES},
            )
            response = engine.query(request)
            print(json.dumps(response.as_dict(), indent=2) if args.json else _human(response))
            return 0
        responses = [engine.query(r) for r in engine.compare_requests(args.question, args.top_k, params)]
        if args.json:
            print(json.dumps({r.strategy: r.as_dict() for r in responses}, indent=2))
        else:
            from graphunified_query.engine.comparison import summary_table

            print("\n\n".join(f"=== {r.strategy} ===\n{_human(r)}" for r in responses))
            print(f"\n=== summary ===\n{summary_table(responses)}")
        return 0
    except refused as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except RuntimeError as error:
        if not isinstance(error, _provider_errors()):
            raise
        # A provider refused or failed (bad key, outage): its message is redacted and says why.
        print(f"error: {error}", file=sys.stderr)
        return 1


def _refusals(*more: type[Exception]) -> tuple[type[Exception], ...]:
    """A home or settings the command cannot use, and ``more`` (imported when a command runs, so
    the parser stays light)."""
    from graphunified_query.core.settings.model import SettingsError
    from graphunified_query.core.stores.parquet import StoreError  # IndexNotBuilt, StoreDamaged, …

    return StoreError, SettingsError, ValueError, *more


def _provider_errors() -> tuple[type[Exception], ...]:
    from graphunified_query.core.providers.claude import LLMError
    from graphunified_query.core.providers.embedding import EmbeddingError

    return LLMError, EmbeddingError


def _eval(args: argparse.Namespace) -> int:
    from graphunified_query.evaluation.command import (
        EvalOptions,
        parse_judge,
        parse_ks,
        parse_strategies,
        run_eval,
        to_json,
    )
    from graphunified_query.evaluation.dataset import DatasetError

    refused = _refusals(DatasetError, RuntimeError)
    try:
        strategies = parse_strategies(args.strategies)
        options = EvalOptions(
            dataset=args.dataset,
            strategies=strategies,
            judge=parse_judge(args.judge, strategies),
            ks=parse_ks(args.k),
            home=args.home,
            out=args.out,
            generate=args.generate,
            limit=args.limit,
            params=_params(args.param),
            replace_input=args.replace_input,
        )
        results = run_eval(options)
    except refused as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(to_json(results))
    else:
        print((Path(results["outputs"][1])).read_text(encoding="utf-8"))
        print("outputs: " + ", ".join(results["outputs"]))
    return 0


def _add_train_router(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    train = commands.add_parser(
        "train-router",
        help="fit the learned router `auto` uses from eval results.json files",
        epilog="example:\n  graphunified train-router data/eval/musique-*/eval/results.json --home data",
    )
    train.add_argument("results", type=Path, nargs="+", help="results.json files written by eval")
    train.add_argument("--home", type=Path, default=Path("data"), help="data home the router is stored in")
    train.add_argument(
        "--questions",
        type=Path,
        action="append",
        default=[],
        help="questions.jsonl of the set, when a results file carries no question texts (older evals)",
    )


def _train_router(args: argparse.Namespace) -> int:
    from graphunified_query.routing.command import report, train_router

    refused = _refusals()
    try:
        model, path = train_router(args.results, args.home, args.questions)
    except refused as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(report(model, path))
    return 0


def _add_serve(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = commands.add_parser(
        "serve",
        help="serve ask and retrieve over HTTP (JSON as ask --json)",
        epilog="example:\n  graphunified serve --home data --port 8765",
    )
    serve.add_argument("--home", default="data", help="data home, loaded once at start")
    # Spelled out, not imported from server.run, so `--help` needs no fastapi import.
    serve.add_argument("--host", default="127.0.0.1", help="bind address; others print a warning")
    serve.add_argument("--port", type=int, default=8765, help="0 picks a free port")


def _common(command: argparse.ArgumentParser) -> None:
    command.add_argument("--top-k", type=int, default=None, help="contexts to retrieve (default: settings)")
    command.add_argument("--home", default="data", help="data home built by `graphunified index`")
    command.add_argument("--json", action="store_true", help="print one JSON object")
    _param_option(command)


def _param_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="strategy parameter or context option, e.g. --param alpha=0.3 --param source_type=md "
        "(repeatable; `GET /strategies` and docs/strategies.md list each strategy's)",
    )


def _params(pairs: list[str]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--param {pair!r} must look like KEY=VALUE")
        params[key] = json.loads(raw) if raw[:1] in "-0123456789[{tfnNI" and _is_json(raw) else raw
    return params


def _is_json(raw: str) -> bool:
    try:
        json.loads(raw)
    except json.JSONDecodeError:
        return False
    return True


def _human(response: Any) -> str:
    meta = response.metadata
    lines = []
    if response.answer is not None:
        lines += [response.answer, ""]
    why = f" — {meta['router_reason']}" if meta.get("router_reason") else ""
    lines.append(f"strategy: {response.strategy}{why}")
    if meta.get("retrieval_explain"):  # what the strategy did with the question (lightrag's keywords)
        lines.append(str(meta["retrieval_explain"]))
    lines.append(
        f"{meta['latency_ms']:.0f} ms (retrieval {meta['retrieval_latency_ms']:.0f} ms), "
        f"{meta['llm_calls']} LLM calls, ${meta['cost_usd']:.4f}"
        # An answer from the LLM cache: free now; what it cost when first asked, apart.
        + (
            f" (answer from the LLM cache; {meta['cached_tokens']} tokens when first asked)"
            if meta.get("cached")
            else ""
        )
    )
    if response.evidence is not None:  # asked for with --evidence
        lines.append(_evidence_line(response.evidence))
    lines.append("")
    lines.append("Sources:")
    lines += [_source_line(n, c) for n, c in enumerate(response.contexts, start=1)]
    if response.expanded_contexts:  # numbered on: the answer's [n] runs over both, in this order
        lines.append("Linked from those (link expansion):")
        first = len(response.contexts) + 1
        numbers = {c.chunk_id: n for n, c in enumerate(response.contexts, start=1)}
        lines += [_source_line(n, c, numbers) for n, c in enumerate(response.expanded_contexts, start=first)]
    return "\n".join(lines)


def _evidence_line(evidence: Any) -> str:
    edges = "; ".join(f"{e.source} -[{e.type}]-> {e.target} {e.contexts}" for e in evidence.edges)
    return f"evidence: {len(evidence.nodes)} entities, {len(evidence.edges)} relationships" + (
        f": {edges}" if edges else ""
    )


def _source_line(n: int, context: Any, numbers: dict[str | None, int] | None = None) -> str:
    """One source; an expanded one says which source pulled it in (``numbers``: chunk id → [n])."""
    snippet = " ".join(context.text.split())[:160]
    level = context.metadata.get("risk_level", "low")
    flags = ", ".join(context.metadata.get("risk_flags", []))
    risk = f" RISK {level}: {flags}" if level != "low" else ""  # shown with --show-risky
    via = ""
    if numbers is not None and "expanded_from" in context.metadata:
        origin = numbers.get(context.metadata["expanded_from"])
        via = f", {context.metadata.get('expanded_via', 'link')} of [{origin}]" if origin else ""
    return f"[{n}] {context.source} ({context.kind}, score {context.score:.3f}{via}){risk}\n    {snippet}"
