"""The `init` and `settings-reference` subcommands of `graphunified`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from graphunified_query.core.settings.presets import PRESETS

COMMANDS = ("init", "settings-reference")


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> tuple[str, ...]:
    init = commands.add_parser(
        "init",
        help="write a commented starter settings.yaml (optionally a preset)",
        epilog="example:\n  graphunified init --home data --preset low-cost",
    )
    init.add_argument("--preset", choices=sorted(PRESETS), help="low-cost, research or production")
    init.add_argument("--home", default="data", help="data home; the file goes to <home>/settings.yaml")
    init.add_argument("--path", help="write here instead of <home>/settings.yaml")
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    reference = commands.add_parser(
        "settings-reference",
        help="regenerate docs/settings.md from the model",
        epilog="example:\n  graphunified settings-reference --check",
    )
    reference.add_argument(
        "--out", type=Path, default=None, help="where to write (default: docs/settings.md)"
    )
    reference.add_argument("--check", action="store_true", help="only check that the file is up to date")
    return COMMANDS


def run(args: argparse.Namespace) -> int:
    if args.command == "init":
        from graphunified_assets.ops.init_config import run_init

        code, message = run_init(args.home, args.path, args.preset, args.force)
        print(message, file=sys.stderr if code else sys.stdout)
        return code
    from graphunified_query.core.settings.reference import REFERENCE_PATH, generate_reference, write_reference

    path = args.out or REFERENCE_PATH
    if args.check:
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != generate_reference():
            print(f"error: {path} is out of date; run `python -m graphunified_assets settings-reference`",
                  file=sys.stderr)  # fmt: skip
            return 1
        print(f"{path} is up to date")
        return 0
    print(f"wrote {write_reference(path)}")
    return 0
