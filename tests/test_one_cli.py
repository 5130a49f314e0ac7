"""One `graphunified` command (#32 item 5): every subcommand on one parser, with defaults and an
example in each `--help`, `--version`, the two `python -m` aliases, and docs/cli.md from it."""

from __future__ import annotations

import argparse
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from graphunified import reference
from graphunified.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
EXPECTED = {"index", "status", "ask", "compare", "eval", "serve", "init", "tune", "publish"}
EXPECTED |= {
    "export-graphrag",
    "import-graphrag",
    "export-lightrag",
    "import-lightrag",
    "extraction-report",
    "settings-reference",
    "train-router",
}
EXPECTED |= {"worker"}


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser, _ = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_one_parser_holds_every_command_of_both_sides() -> None:
    assert set(_commands()) == EXPECTED


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_help_exits_0_with_an_example_and_its_defaults(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main([name, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert f"usage: graphunified {name}" in out
    assert f"example:\n  graphunified {name}" in out
    command = _commands()[name]
    for action in command._actions:  # every option with a real default says it
        if action.option_strings and action.default not in (None, False, [], argparse.SUPPRESS):
            assert f"(default: {action.default})" in " ".join(command.format_help().split()), action.dest


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"graphunified {version('graph-unified')}"


@pytest.mark.parametrize("alias", ["graphunified_query", "graphunified_assets"])
def test_the_python_m_aliases_are_the_same_parser(alias: str) -> None:
    """The query package's alias runs pipeline commands and the pipeline's runs query commands."""
    for name in ("index", "ask"):
        done = subprocess.run(
            [sys.executable, "-m", alias, name, "--help"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert f"usage: graphunified {name}" in done.stdout


HEAVY = ("dagster", "numpy", "pyarrow", "scipy", "lancedb", "graphunified_query.core.settings.model")


def test_the_parser_loads_nothing_heavy() -> None:
    """`graphunified ask --help` took 14-17 s under load when the parser imported the strategy
    registry (numpy, scipy, pyarrow, the settings model) and the providers: it reads the registry's
    catalog instead, and each command loads what it needs to run."""
    code = (
        "import sys; from graphunified.cli import build_parser as b; b();"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.strip() == ""


def test_ask_help_lists_the_registry_strategies() -> None:
    from graphunified_query.strategies.registry import AUTO, STRATEGIES

    strategy = next(a for a in _commands()["ask"]._actions if a.dest == "strategy")
    assert strategy.metavar == "{" + ",".join((*STRATEGIES, AUTO)) + "}"


def test_docs_cli_md_is_generated_from_the_parser() -> None:
    assert reference.REFERENCE_PATH.read_text(encoding="utf-8") == reference.generate(), (
        f"docs/cli.md is stale: run `{reference.COMMAND}`"
    )
