"""A Celery worker's environment: one declaration (WORKER_VARIABLES), checked at start with one line
per problem, and listed in deploy/README.md and `graphunified worker --help`."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from graphunified.cli import build_parser, main
from graphunified_assets.ops.worker import WORKER_VARIABLES, worker_problems

ROOT = Path(__file__).resolve().parent.parent


def _names() -> list[str]:
    return [n for v in WORKER_VARIABLES for n in re.findall(r"[A-Z][A-Z0-9_]{3,}", v.name)]


def test_deploy_readme_and_help_list_every_worker_variable() -> None:
    readme = (ROOT / "deploy" / "README.md").read_text(encoding="utf-8")
    assert [n for n in _names() if f"`{n}`" not in readme] == []
    parser, _ = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert [n for n in _names() if n not in commands.choices["worker"].format_help()] == []


def _environ(home: Path, **extra: str) -> dict[str, str]:
    return {
        "GRAPHUNIFIED_EXECUTOR": "celery",
        "GRAPHUNIFIED_HOME": str(home),
        "DAGSTER_HOME": str(home / "dagster"),
        "CELERY_BROKER_URL": "redis://127.0.0.1:1/0",
        **extra,
    }


def test_a_complete_environment_passes_and_each_gap_is_named(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "dagster").mkdir(parents=True)
    assert worker_problems(_environ(home)) == []
    assert worker_problems({}) == [
        "set GRAPHUNIFIED_EXECUTOR, GRAPHUNIFIED_HOME, CELERY_BROKER_URL, DAGSTER_HOME "
        "(graphunified worker --help lists what each is for)"
    ]
    (problem,) = worker_problems(_environ(tmp_path / "not-mounted"))
    assert "is not a folder here: mount the shared home at that path" in problem
    # The instance's own variables (Postgres' password) and the providers settings.yaml names.
    (home / "dagster" / "dagster.yaml").write_text("password: {env: DAGSTER_PG_PASSWORD}\n", encoding="utf-8")
    (home / "settings.yaml").write_text("llm:\n  provider: anthropic\n", encoding="utf-8")
    problems = worker_problems(_environ(home))
    assert any("reads DAGSTER_PG_PASSWORD from the environment" in p for p in problems)
    assert any("llm.provider anthropic needs ANTHROPIC_API_KEY" in p for p in problems)
    fixed = _environ(home, DAGSTER_PG_PASSWORD="x", ANTHROPIC_API_KEY="k")
    assert worker_problems(fixed) == []
    assert worker_problems({**fixed, "GRAPHUNIFIED_EXECUTOR": "in_process"}) == [
        "GRAPHUNIFIED_EXECUTOR='in_process': a Celery worker needs GRAPHUNIFIED_EXECUTOR=celery"
    ]


def test_the_worker_command_refuses_to_start_with_one_line_per_gap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("GRAPHUNIFIED_EXECUTOR", "GRAPHUNIFIED_HOME", "CELERY_BROKER_URL", "DAGSTER_HOME"):
        monkeypatch.delenv(name, raising=False)
    assert main(["worker"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: worker: set GRAPHUNIFIED_EXECUTOR") and err.count("\n") == 1
    for name, value in _environ(tmp_path).items():
        monkeypatch.setenv(name, value)
    assert main(["worker", "--check"]) == 0
    assert "worker environment complete; queue graphunified-" in capsys.readouterr().out
