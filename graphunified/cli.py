"""`graphunified index|status|ask|compare|eval|serve|…`: the one parser of every command.

Each side declares its own subcommands (`graphunified_assets.cli.main.add_commands`,
`graphunified_query.cli.add_commands`) and runs them; `python -m graphunified_query` and
`python -m graphunified_assets` are aliases of this parser.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from graphunified_assets.cli import main as pipeline
from graphunified_query import cli as query

DISTRIBUTION = "graph-unified"  # pyproject.toml [project] name: the version is declared there


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Examples keep their lines; every option with a real default says it (None and off say nothing)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if "%(default)" in text or default in (None, False, [], argparse.SUPPRESS):
            return text
        if action.option_strings or action.nargs in (argparse.OPTIONAL, argparse.ZERO_OR_MORE):
            text += " (default: %(default)s)"
        return text


def package_version() -> str:
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:  # run from a clone that was never installed
        return "unknown (not installed; pip install -e .)"


def build_parser() -> tuple[argparse.ArgumentParser, frozenset[str]]:
    """The parser, and which of its commands the query side runs (the rest are the pipeline's)."""
    parser = argparse.ArgumentParser(
        prog="graphunified",
        description="Index a folder of documents into a data home, then ask, compare and evaluate "
        "six RAG strategies over it.",
        epilog="example:\n  graphunified index --input docs/ --home data\n"
        '  graphunified ask "Who founded the Hale Mill?" --home data',
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    pipeline.add_commands(commands)
    query_commands = frozenset(query.add_commands(commands))
    summaries = {choice.dest: choice.help for choice in commands._choices_actions}
    for name, command in commands.choices.items():
        command.formatter_class = HelpFormatter
        command.prog = f"graphunified {name}"
        command.description = command.description or summaries[name]  # `X --help` says what X does
    return parser, query_commands


def main(argv: Sequence[str] | None = None) -> int:
    parser, query_commands = build_parser()
    args = parser.parse_args(argv)
    if problem := argument_problem(args):
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        return query.run(args) if args.command in query_commands else pipeline.run(args)
    except Exception as error:  # a full or read-only disk, wherever a command wrote (maybe wrapped)
        from graphunified_query.core.stores.errors import storage_problem  # not for `--help`

        home = getattr(args, "home", None)
        problem = storage_problem(error, Path(home) if home is not None else None)
        if problem is None:
            raise
        print(f"error: {problem}", file=sys.stderr)
        return 1


def argument_problem(args: argparse.Namespace) -> str | None:
    """Arguments no command can use, said in one line, for every command (they used to end in a
    traceback, and `ask --home FILE` in a store error about `FILE/published/CURRENT`)."""
    for name, value in vars(args).items():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str | Path) and not _encodes(str(item)):  # non-UTF-8 argv: lone surrogates
                shown = str(item).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
                label = name if name in ("question", "dataset") else f"--{name.replace('_', '-')}"
                return f"{label} '{shown}' is not valid UTF-8 text; re-type it or set a UTF-8 locale"
    home = getattr(args, "home", None)
    if home is not None and Path(home).exists() and not Path(home).is_dir():
        return f"--home {home} is a file; pass a folder (it is created if missing)"
    return None


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
