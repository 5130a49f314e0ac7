"""docs/cli.md, generated from the one parser: every command's `--help`, so the page cannot drift.

`python -m graphunified.reference` rewrites it; `--check` only compares (a test runs the check).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from graphunified.cli import build_parser

REFERENCE_PATH = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
COMMAND = "python -m graphunified.reference"
WIDTH = "100"  # help is wrapped to the terminal; the page is wrapped the same everywhere

INTRO = """\
# The `graphunified` command

One command drives everything: indexing a folder into a *data home*, asking and comparing the
strategies, evaluating them on a QA set, serving them over HTTP, and moving an index in and out
of GraphRAG. `python -m graphunified`, `python -m graphunified_assets` and
`python -m graphunified_query` are the same command (use them in a clone that was not installed).
Every `--help` shows the defaults and an example; `graphunified --version` prints the version.

## A home owns its input folder

The first `graphunified index --input FOLDER --home HOME` records `FOLDER` in `HOME/input.json`.
From then on `graphunified index --home HOME`, `status`, the Dagster UI's sensor (`make ui`)
and `tune` read that folder; documents leave the index only when they leave the folder.

- An `--input` (or `storage.input_dir` in `HOME/settings.yaml`, or `GRAPHUNIFIED_INPUT`) that
  differs from the recorded folder is refused, naming how many documents it would remove. Pass
  `--replace-input` to switch the home to the new folder on purpose. A folder that holds every
  indexed document (the old one moved, or a home with nothing indexed yet) is taken and recorded.
- A home indexed before homes recorded their input is not emptied by the default folder
  (`data/sample`): `index` asks for `--input` with the folder its documents came from.
- `graphunified eval SET` indexes the set into a home of its own (`data/eval/<set>-<hash>`).
  With `--home HOME`, a home that indexes another folder is refused unless `--replace-input`.
- `ask` on a home with no index names the command that builds it.

## Commands

This part is generated from the parser (`{command}`); do not edit it by hand.
"""


def generate() -> str:
    """The page: the introduction, then each command's `--help` in the parser's order."""
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        parser, _ = build_parser()
        sections = [INTRO.format(command=COMMAND), _block("graphunified", parser.format_help())]
        commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        for name, command in commands.choices.items():
            sections.append(_block(f"graphunified {name}", command.format_help()))
    finally:
        if previous is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = previous
    return "\n".join(sections)


def _block(title: str, help_text: str) -> str:
    return f"### `{title}`\n\n```text\n{help_text.rstrip()}\n```\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__)
    parser.add_argument("--check", action="store_true", help="only check that docs/cli.md is up to date")
    args = parser.parse_args(argv)
    text = generate()
    if args.check:
        current = REFERENCE_PATH.read_text(encoding="utf-8") if REFERENCE_PATH.exists() else ""
        if current != text:
            print(f"error: {REFERENCE_PATH} is out of date; run `{COMMAND}`", file=sys.stderr)
            return 1
        print(f"{REFERENCE_PATH} is up to date")
        return 0
    REFERENCE_PATH.parent.mkdir(parents=True, exist_ok=True)
    REFERENCE_PATH.write_text(text, encoding="utf-8")
    print(f"wrote {REFERENCE_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
