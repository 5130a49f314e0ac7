"""The query contract over the cross-product, generated from the registries.

Every registered strategy, every composition kind (`named.KINDS`) and every reranker name
(`rerank.registry.RERANKERS`), each with its parameters at their defaults and one at a time at each
boundary value (`param_values.boundaries`, read from the parameter's declaration), through Python
(the engine), the CLI (``ask --json`` via ``main()``), HTTP (TestClient on ``server/app.py``),
LangChain, eval's runner, and with the same values written in ``settings.yaml`` instead of the
call: every path returns the same contexts, or the same one-line error; never a traceback or a
500. A new strategy, parameter, composition kind or reranker is covered without a new test.

Speed: the index is the session's (`conftest.built_home`); the CLI runs in process with
``QueryEngine.open`` answering from the engine already loaded for its home (a CLI run opening the
home itself is `test_the_cli_opening_the_home_itself_agrees`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi import FastAPI
from fastapi.testclient import TestClient

from graphunified_query.cli import main
from graphunified_query.core.settings.model import load_settings
from graphunified_query.engine.query_engine import QueryEngine, QueryRequest
from graphunified_query.evaluation.dataset import Question
from graphunified_query.evaluation.runner import run_questions
from graphunified_query.langchain import as_langchain
from graphunified_query.server.app import create_app
from graphunified_query.strategies.composable.named import KINDS
from graphunified_query.strategies.registry import STRATEGIES
from graphunified_query.strategies.rerank.registry import RERANKERS
from tests.query.conftest import OFFLINE_SETTINGS
from tests.query.param_values import boundaries

QUESTION = "On which river is the town where Ada Whitlock was born?"
TOP_K = 10  # eval asks for max(10, ks) contexts
# What each composition kind composes here: one strategy of each shape, cheap on the sample index.
COMPOSED: dict[str, dict[str, Any]] = {
    "combine": {"combine": ["vector", "graph_bfs"]},
    "rerank": {"rerank": "hybrid"},
}
assert set(COMPOSED) == set(KINDS), "a new composition kind: say what it composes here"

Outcome = list[tuple[str | None, float]] | str  # the contexts (chunk id, score), or the error's text


@dataclass(frozen=True)
class Case:
    strategy: str
    params: dict[str, Any] = field(default_factory=dict)
    defined: dict[str, Any] | None = None  # the settings.yaml entry defining the strategy, if any

    @property
    def id(self) -> str:
        shown = ",".join(f"{k}={v}" for k, v in self.params.items()) or "defaults"
        return f"{self.strategy}[{shown}]"

    def settings_entries(self, with_params: bool) -> dict[str, Any]:
        """``strategies:`` of settings.yaml: the definition, and the parameters when they are set there."""
        entry = {**(self.defined or {}), **(self.params if with_params else {})}
        return {self.strategy: entry} if entry else {}


def _cases() -> Iterator[Case]:
    for name, strategy in STRATEGIES.items():
        yield Case(name)
        for param in strategy.params.model_fields:
            for value in boundaries(strategy.params, param):
                yield Case(name, {param: value})
    for kind, model in KINDS.items():
        defined = COMPOSED[kind]
        yield Case(f"{kind}_composed", defined=defined)
        for param in model.model_fields:
            for value in boundaries(model, param):
                yield Case(f"{kind}_composed", {param: value}, defined)
        # Each reranker by name: at the defaults, and where the kind reranks only in one mode, in it.
        for reranker in RERANKERS.names():
            named = {**defined, "reranker": reranker}
            yield Case(f"{kind}_{reranker}", {}, named)
            if "mode" in model.model_fields:
                yield Case(f"{kind}_{reranker}", {"mode": "rerank"}, named)


CASES = list(_cases())


@dataclass
class Served:
    """One configuration of the sample index: its engine, its HTTP app (or why it would not start),
    and a home folder whose settings.yaml is that configuration (for the CLI)."""

    engine: QueryEngine
    home: Path
    http: TestClient | str


class Homes:
    """Engines over the session's snapshot, one per settings.yaml text, made once."""

    def __init__(self, base: QueryEngine, built_home: Path, root: Path) -> None:
        self.base, self.built_home, self.root = base, built_home, root
        self.served: dict[str, Served] = {}

    def settings_text(self, strategies: dict[str, Any]) -> str:
        values = yaml.safe_load(OFFLINE_SETTINGS) | ({"strategies": strategies} if strategies else {})
        return yaml.safe_dump(values, sort_keys=True)

    def get(self, strategies: dict[str, Any]) -> Served:
        text = self.settings_text(strategies)
        if text not in self.served:
            home = self.root / f"home{len(self.served)}"
            home.mkdir()
            (home / "settings.yaml").write_text(text, encoding="utf-8")
            # The settings loader reads the YAML as a user's file; the engine shares the session's index.
            settings = load_settings(home, environ={})
            engine = QueryEngine(self.base.snapshot, settings, self.base.embedder, llm=self.base.llm)
            http: TestClient | str
            try:
                http = TestClient(_app(engine), base_url="http://127.0.0.1")
            except ValueError as error:  # `serve` does not start: the one-line reason
                http = str(error)
            self.served[text] = Served(engine, home, http)
        return self.served[text]


def _app(engine: QueryEngine) -> FastAPI:
    return create_app(engine)


@pytest.fixture(scope="module")
def homes(engine: QueryEngine, built_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Homes:
    return Homes(engine, built_home, tmp_path_factory.mktemp("contract-matrix"))


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "VOYAGE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def _contexts(contexts: Any) -> Outcome:
    return [(c.chunk_id, round(c.score, 9)) for c in contexts]


def python_path(served: Served, case: Case, params: dict[str, Any]) -> Outcome:
    request = QueryRequest(
        question=QUESTION, strategy=case.strategy, top_k=TOP_K, params=params, retrieve_only=True
    )
    try:
        return _contexts(served.engine.query(request).contexts)
    except ValueError as error:
        return str(error)


def cli_path(
    served: Served,
    case: Case,
    params: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
    patch: pytest.MonkeyPatch,
) -> Outcome:
    patch.setattr(QueryEngine, "open", classmethod(lambda cls, home, **_: served.engine))
    flags = [f"--param={k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in params.items()]
    argv = ["ask", QUESTION, "--home", str(served.home), "--strategy", case.strategy, "--top-k", str(TOP_K)]
    code = main([*argv, *flags, "--retrieve-only", "--json"])
    out, err = capsys.readouterr()
    if code != 0:
        assert code == 2 and "Traceback" not in err and err.count("\n") == 1, err
        return err.removeprefix("error: ").strip()
    return [(c["chunk_id"], round(c["score"], 9)) for c in json.loads(out)["contexts"]]


def http_path(served: Served, case: Case, params: dict[str, Any]) -> Outcome:
    if isinstance(served.http, str):
        return served.http
    body = {"question": QUESTION, "strategy": case.strategy, "top_k": TOP_K, "params": params}
    reply = served.http.post("/retrieve", json=body)
    assert reply.status_code in (200, 422), reply.text  # never a 500
    if reply.status_code == 422:
        return str(reply.json()["detail"][0]["msg"])
    return [(c["chunk_id"], round(c["score"], 9)) for c in reply.json()["contexts"]]


def langchain_path(served: Served, case: Case, params: dict[str, Any]) -> Outcome:
    try:
        documents = as_langchain(served.engine, strategy=case.strategy, k=TOP_K, **params).invoke(QUESTION)
    except ValueError as error:
        return str(error)
    return [(d.id, round(d.metadata["score"], 9)) for d in documents]


def eval_path(served: Served, case: Case, params: dict[str, Any]) -> Outcome:
    question = Question("q1", QUESTION, ("Severn",), ("whitlock.md",), None)
    try:
        runs = run_questions(
            served.engine, [question], [case.strategy], ks=(TOP_K,), generate=False, params=params
        )
    except ValueError as error:
        return str(error)
    return [(chunk, round(score, 9)) for chunk, score in runs[case.strategy][0].contexts]


def outcomes(
    homes: Homes, case: Case, capsys: pytest.CaptureFixture[str], patch: pytest.MonkeyPatch
) -> dict[str, Outcome]:
    called = homes.get(case.settings_entries(with_params=False))
    configured = homes.get(case.settings_entries(with_params=True))
    paths: dict[str, Callable[[], Outcome]] = {
        "python": lambda: python_path(called, case, case.params),
        "cli": lambda: cli_path(called, case, case.params, capsys, patch),
        "http": lambda: http_path(called, case, case.params),
        "langchain": lambda: langchain_path(called, case, case.params),
        "eval": lambda: eval_path(called, case, case.params),
        "settings.yaml": lambda: python_path(configured, case, {}),
    }
    return {name: run() for name, run in paths.items()}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_every_entry_point_agrees(
    homes: Homes, case: Case, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    found = outcomes(homes, case, capsys, monkeypatch)
    expected = found["python"]
    if isinstance(expected, str):
        assert "\n" not in expected and expected, found  # one line, saying something
    else:
        assert len(expected) <= TOP_K
    assert {name: found[name] for name in found if found[name] != expected} == {}, (expected, found)


def test_the_cases_cover_every_registry() -> None:
    strategies = {c.strategy for c in CASES}
    assert set(STRATEGIES) <= strategies
    assert {f"{kind}_{r}" for kind in KINDS for r in RERANKERS.names()} <= strategies
    assert all(
        any(p in c.params for c in CASES if c.strategy == n)
        for n, s in STRATEGIES.items()
        for p in s.params.model_fields
        if boundaries(s.params, p)
    )


@pytest.mark.parametrize("strategy", [n for n, s in STRATEGIES.items() if s.tier == "core"])
def test_the_cli_opening_the_home_itself_agrees(
    engine: QueryEngine, built_home: Path, strategy: str, capsys: pytest.CaptureFixture[str]
) -> None:
    served = Served(engine, built_home, "")
    argv = ["ask", QUESTION, "--home", str(built_home), "--strategy", strategy, "--top-k", str(TOP_K)]
    assert main([*argv, "--retrieve-only", "--json"]) == 0
    opened = [(c["chunk_id"], round(c["score"], 9)) for c in json.loads(capsys.readouterr().out)["contexts"]]
    assert opened == python_path(served, Case(strategy), {})
