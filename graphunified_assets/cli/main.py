"""The pipeline's subcommands of `graphunified`: index, status, publish, export-/import-graphrag, …"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from graphunified_assets.cli import config as config_cli
from graphunified_assets.cli import tuning as tuning_cli
from graphunified_query.core.plugins import ANTHROPIC_KEY, VOYAGE_KEY
from graphunified_query.core.settings.model import SettingsError

if TYPE_CHECKING:  # the parser is built without Dagster (`graphunified ask` never loads it)
    from graphunified_assets.defs.resources import GraphUnifiedResource


COMMANDS = ("index", "status", "export-graphrag", "import-graphrag", "publish")


def main(argv: Sequence[str] | None = None) -> int:
    """Any `graphunified` command: the one parser is graphunified/cli.py's (kept for callers of this)."""
    from graphunified.cli import main as graphunified_main

    return graphunified_main(argv)


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> tuple[str, ...]:
    """Declare the pipeline's subcommands on the one parser; their names."""
    index_cmd = commands.add_parser(
        "index",
        help="index new/changed documents, remove deleted ones",
        epilog="example:\n  graphunified index --input docs/ --home data  # later runs: index --home data",
    )
    index_cmd.add_argument(
        "--input", help="input folder; recorded by the first index (default: the recorded folder)"
    )
    index_cmd.add_argument(
        "--replace-input",
        action="store_true",
        help="switch the home to --input: documents missing from it are removed from the index",
    )
    index_cmd.add_argument("--home", default="data", help="data home holding tables, caches and runs")
    index_cmd.add_argument(
        "--refresh",
        action="store_true",
        help="rebuild graph, communities, reports and indexes even if no document changed "
        "(after changing settings or upgrading)",
    )
    status_cmd = commands.add_parser(
        "status", help="what is indexed and what failed", epilog="example:\n  graphunified status --home data"
    )
    status_cmd.add_argument("--home", default="data", help="data home")
    status_cmd.add_argument(
        "--input", help="input folder whose next `index` to preview (default: the recorded one)"
    )
    export_cmd = commands.add_parser(
        "export-graphrag",
        help="write the index as a GraphRAG v3 output folder",
        epilog="example:\n  graphunified export-graphrag out/graphrag --home data",
    )
    export_cmd.add_argument("out", help="folder to write the GraphRAG tables to (created if missing)")
    export_cmd.add_argument("--home", default="data", help="data home to export")
    import_cmd = commands.add_parser(
        "import-graphrag",
        help="import a GraphRAG output folder (v1-v3) into a fresh home and index it",
        epilog="example:\n  graphunified import-graphrag ragtest/output --home data/imported",
    )
    import_cmd.add_argument("folder", help="GraphRAG's output folder (or the project root holding output/)")
    import_cmd.add_argument("--home", default="data", help="the fresh data home to create")
    publish_cmd = commands.add_parser(
        "publish",
        help="copy the published index to object storage (storage.publish_uri or --to)",
        epilog="example:\n  graphunified publish --home data --to s3://bucket/graphunified",
    )
    publish_cmd.add_argument("--home", default="data", help="data home to publish")
    publish_cmd.add_argument("--to", help="s3://bucket/prefix (default: settings.storage.publish_uri)")
    return (*COMMANDS, *tuning_cli.add_parsers(commands), *config_cli.add_parsers(commands))


def run(args: argparse.Namespace) -> int:
    """Run a pipeline subcommand parsed by the one parser."""
    from graphunified_assets.defs.resources import GraphUnifiedResource  # Dagster: only to run

    if args.command in config_cli.COMMANDS:  # no home or settings needed
        return config_cli.run(args)
    resource = GraphUnifiedResource(
        home=args.home,
        input_dir=getattr(args, "input", None),
        # README: exporting the keys before `index` selects Voyage/Claude; read only from the environment.
        voyage_api_key=os.environ.get(VOYAGE_KEY) or None,
        anthropic_api_key=os.environ.get(ANTHROPIC_KEY) or None,
    )
    try:
        if args.command == "index":
            return _index(resource, refresh=args.refresh, replace_input=args.replace_input)
        if args.command == "export-graphrag":
            return _export_graphrag(resource, Path(args.out))
        if args.command == "import-graphrag":
            return _import_graphrag(resource, Path(args.folder))
        if args.command == "publish":
            return _publish(resource, args.to)
        if args.command in tuning_cli.COMMANDS:
            return tuning_cli.run(args, resource)
        return _status(resource)
    except SettingsError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _index(resource: GraphUnifiedResource, *, refresh: bool = False, replace_input: bool = False) -> int:
    import dagster

    warnings.filterwarnings("ignore", category=dagster.BetaWarning)  # BackfillPolicy is beta

    from graphunified_assets.ops.indexing import index  # dagster import is slow; only when needed
    from graphunified_assets.ops.input_guard import adopt_input, input_problem
    from graphunified_assets.ops.logs import cli_error, configure_logging

    echo, fail = configure_logging(resource.settings.logging), cli_error(resource.settings.logging)

    choice = resource.input_choice()
    if not choice.path.is_dir():
        recorded = choice.path == choice.recorded
        fail(
            f"the recorded input folder {choice.path} ({resource.layout.input_record}) does not exist; "
            "restore it, or pass --input DIR --replace-input"
            if recorded
            else f"input folder {choice.path} does not exist; pass --input DIR"
        )
        return 2
    if problem := input_problem(resource, replace=replace_input):
        fail(problem)
        return 2
    adopt_input(resource)
    try:
        tuning_cli.reextract_changed(resource, echo)  # tuned extraction settings: re-extract all
        report = index(resource, refresh=refresh, echo=echo)
    except RuntimeError as error:  # a failed run: its message says where to look and what to do
        fail(str(error))
        return 1
    echo(f"done in {report.seconds:.1f}s ({report.runs} Dagster runs); home: {resource.layout.home}")
    _status(resource, echo)
    return 0


def _export_graphrag(resource: GraphUnifiedResource, out: Path) -> int:
    from graphunified_assets.ops.graphrag_io import export_graphrag
    from graphunified_query.core.stores.parquet import StoreError

    if out.exists() and not out.is_dir():
        print(f"error: {out} is a file; pass a folder to write the GraphRAG tables to", file=sys.stderr)
        return 2
    try:
        report = export_graphrag(resource.layout.home, out)
    except StoreError as error:  # no index yet: the message names the file and the command
        print(f"error: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        print(
            f"error: cannot write to {out} ({error.strerror}); check the folder and free space",
            file=sys.stderr,
        )
        return 1
    print(report.summary())
    return 0


def _publish(resource: GraphUnifiedResource, to: str | None) -> int:
    """What the `remote_snapshot` asset does after each refresh, on demand (e.g. after an outage)."""
    import json

    from graphunified_assets.ops.home_lock import HomeLocked, home_lock, refuse_foreign_runs
    from graphunified_assets.ops.indexing import prepare_instance
    from graphunified_assets.ops.object_mirror import mirror
    from graphunified_query.core.layout import refresh_command
    from graphunified_query.core.stores.object_store import ObjectFiles, ObjectStore
    from graphunified_query.core.stores.parquet import StoreError
    from graphunified_query.core.stores.publication import current

    layout, storage = resource.layout, resource.settings.storage
    uri = to or storage.publish_uri
    if not uri:
        print("error: pass --to s3://bucket/prefix or set storage.publish_uri", file=sys.stderr)
        return 2
    try:
        with home_lock(layout, command=f"python -m graphunified_assets publish --home {layout.home}"):
            # A refresh launched from the UI may publish and mirror meanwhile: wait for it instead.
            refuse_foreign_runs(prepare_instance(resource), layout.home)
            generation = current(layout, rebuild_hint=refresh_command(layout.home))
            report = mirror(layout, generation, ObjectFiles(ObjectStore.at(uri, storage, os.environ)))
    except (StoreError, HomeLocked) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(json.dumps(report.as_dict(), indent=2))
    return 0


def _import_graphrag(resource: GraphUnifiedResource, folder: Path) -> int:
    import dagster

    from graphunified_assets.ops.graphrag_io import GraphRAGFormatError, import_graphrag

    warnings.filterwarnings("ignore", category=dagster.BetaWarning)
    try:
        report = import_graphrag(folder, resource)
    except (GraphRAGFormatError, FileExistsError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except RuntimeError as error:  # a failed Dagster run: its message says where to look
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(report.summary())
    return 0


def _status(resource: GraphUnifiedResource, echo: Callable[[str], None] = print) -> int:
    from graphunified_assets.ops.home_status import print_status

    print_status(resource.layout, resource.input_path, echo)
    return 0
