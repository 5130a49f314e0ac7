"""`python -m graphunified_assets index|status`: drive the pipeline from a terminal."""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence

from graphunified_assets.lib.index_state import IndexState
from graphunified_assets.resources import GraphUnifiedResource
from graphunified_query.settings import SettingsError


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m graphunified_assets", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    index_cmd = commands.add_parser("index", help="index new/changed documents, remove deleted ones")
    index_cmd.add_argument("--input", help="input folder (default: settings.storage.input_dir)")
    index_cmd.add_argument("--home", default="data", help="data home holding tables, caches and runs")
    status_cmd = commands.add_parser("status", help="what is indexed and what failed")
    status_cmd.add_argument("--home", default="data")
    args = parser.parse_args(argv)
    resource = GraphUnifiedResource(home=args.home, input_dir=getattr(args, "input", None))
    try:
        if args.command == "index":
            return _index(resource)
        return _status(resource)
    except SettingsError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _index(resource: GraphUnifiedResource) -> int:
    import dagster

    from graphunified_assets.indexing import index  # dagster import is slow; only when needed

    warnings.filterwarnings("ignore", category=dagster.BetaWarning)  # BackfillPolicy is beta

    if not resource.input_path.is_dir():
        print(f"error: input folder {resource.input_path} does not exist; pass --input DIR", file=sys.stderr)
        return 2
    try:
        report = index(resource)
    except RuntimeError as error:  # a failed run: its message says where to look and what to do
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"done in {report.seconds:.1f}s ({report.runs} Dagster runs); home: {resource.layout.home}")
    _status(resource)
    return 0


def _status(resource: GraphUnifiedResource) -> int:
    state = IndexState(resource.layout.index_state)
    indexed = state.indexed_hashes()
    print(f"{len(indexed)} documents indexed in {resource.layout.home}")
    for failure in state.failures():
        print(f"  failed [{failure.stage}] {failure.source}: {failure.reason}")
    return 0
