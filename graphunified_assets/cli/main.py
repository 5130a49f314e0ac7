"""The pipeline's subcommands of `graphunified`: index, status, publish, export-/import-<tool>, …"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from graphunified_assets.cli import config as config_cli
from graphunified_assets.cli import tuning as tuning_cli
from graphunified_assets.lib.collector import collector_frozen, collector_paused
from graphunified_assets.ops.run_home import celery_queue
from graphunified_assets.ops.worker import HOME_ENV, start_worker, variables_help, worker_problems

if TYPE_CHECKING:  # the parser is built without Dagster (`graphunified ask` never loads it)
    from graphunified_assets.defs.resources import GraphUnifiedResource
    from graphunified_assets.ops.indexing import IndexReport


@dataclass(frozen=True)
class Interop:
    """Another tool's folder, in and out: `export-<key>` and `import-<key>` are declared from this."""

    tool: str
    exported: str  # what export-<key> writes
    folder_kind: str  # what import-<key> reads, in a word or two
    imported: str  # the same, said in full for the folder argument
    export_example: str
    import_example: str
    module: str  # defines export_<key>, import_<key> and the format error below (imported to run)
    format_error: str


INTEROP = {
    "graphrag": Interop(
        "GraphRAG",
        "a GraphRAG v3 output folder",
        "output folder (v1-v3)",
        "GraphRAG's output folder (v1, v2 or v3), or the project root holding output/",
        "out/graphrag",
        "ragtest/output",
        "graphunified_assets.ops.graphrag_io",
        "GraphRAGFormatError",
    ),
    "lightrag": Interop(
        "LightRAG",
        "a LightRAG working folder (kv stores, graphml, nano-vectordb stores)",
        "working folder",
        "LightRAG's working_dir (kv_store_*.json, graph_chunk_entity_relation.graphml)",
        "out/lightrag",
        "rag_storage",
        "graphunified_assets.ops.lightrag_io",
        "LightRAGFormatError",
    ),
}
COMMANDS = (
    "index",
    "status",
    *(f"{way}-{key}" for key in INTEROP for way in ("export", "import")),
    "publish",
    "worker",
)


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
    for key, interop in INTEROP.items():
        export_cmd = commands.add_parser(
            f"export-{key}",
            help=f"write the index as {interop.exported}",
            epilog=f"example:\n  graphunified export-{key} {interop.export_example} --home data",
        )
        export_cmd.add_argument("out", help=f"folder to write {interop.tool}'s files to (created if missing)")
        export_cmd.add_argument("--home", default="data", help="data home to export")
        import_cmd = commands.add_parser(
            f"import-{key}",
            help=f"import a {interop.tool} {interop.folder_kind} into a fresh home and index it",
            epilog=f"example:\n  graphunified import-{key} {interop.import_example} --home data/imported",
        )
        import_cmd.add_argument("folder", help=interop.imported)
        import_cmd.add_argument("--home", default="data", help="the fresh data home to create")
    publish_cmd = commands.add_parser(
        "publish",
        help="copy the published index to object storage (storage.publish_uri or --to)",
        epilog="example:\n  graphunified publish --home data --to s3://bucket/graphunified",
    )
    publish_cmd.add_argument("--home", default="data", help="data home to publish")
    publish_cmd.add_argument("--to", help="s3://bucket/prefix (default: settings.storage.publish_uri)")
    worker_cmd = commands.add_parser(
        "worker",
        help="run a Celery worker for one home's steps (GRAPHUNIFIED_EXECUTOR=celery)",
        epilog="example:\n  graphunified worker --check  # then: graphunified worker --concurrency 1\n\n"
        f"Its environment, checked before it starts (deploy/README.md):\n{variables_help()}",
    )
    worker_cmd.add_argument("--check", action="store_true", help="only check the environment, then exit")
    worker_cmd.add_argument(
        "--concurrency", type=int, default=1, help="steps this worker runs at once (each its own process)"
    )
    worker_cmd.add_argument("--name", help="the worker's name prefix (default: graphunified)")
    return (*COMMANDS, *tuning_cli.add_parsers(commands), *config_cli.add_parsers(commands))


def run(args: argparse.Namespace) -> int:
    """Run a pipeline subcommand parsed by the one parser."""
    from graphunified_assets.defs.resources import GraphUnifiedResource  # Dagster: only to run
    from graphunified_query.core.plugins import ANTHROPIC_KEY, VOYAGE_KEY
    from graphunified_query.core.settings.model import SettingsError

    if args.command in config_cli.COMMANDS:  # no home or settings needed
        return config_cli.run(args)
    if args.command == "worker":  # its home is the environment's: every step's process needs it
        return _worker(args)
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
        way, _, key = args.command.partition("-")
        if key in INTEROP:
            run_interop = _export if way == "export" else _import
            return run_interop(
                INTEROP[key], key, resource, Path(args.out if way == "export" else args.folder)
            )
        if args.command == "publish":
            return _publish(resource, args.to)
        if args.command in tuning_cli.COMMANDS:
            return tuning_cli.run(args, resource)
        return _status(resource)
    except SettingsError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _index(resource: GraphUnifiedResource, *, refresh: bool = False, replace_input: bool = False) -> int:
    if resource.settings.logging.format != "json":  # JSON logs start with the next record
        # Loading Dagster and the models took 17-140 s without a word (bench/index_silence.py).
        print(f"index {resource.layout.home}: loading Dagster and the models", flush=True)
    with collector_paused(collect=False):  # ~330K objects, none garbage: frozen next
        import dagster

        from graphunified_assets.ops.indexing import index  # dagster import is slow; only when needed

    warnings.filterwarnings("ignore", category=dagster.BetaWarning)  # BackfillPolicy is beta
    with collector_frozen():  # the imports and what the command holds throughout; each run adds its own
        return _index_input(resource, index, refresh=refresh, replace_input=replace_input)


def _index_input(
    resource: GraphUnifiedResource, index: Callable[..., IndexReport], *, refresh: bool, replace_input: bool
) -> int:
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
    # `index` has just published the generation or found it whole, and recorded the files.
    _status(resource, echo, checked=True, table_times=report.verified.table_times)
    return 0


def _worker(args: argparse.Namespace) -> int:
    problems = worker_problems(os.environ)
    if problems:
        for problem in problems:
            print(f"error: worker: {problem}", file=sys.stderr)
        return 2
    if args.check:
        print(f"worker environment complete; queue {celery_queue(os.environ[HOME_ENV])}")
        return 0
    return start_worker(os.environ, concurrency=args.concurrency, name=args.name)


def _export(interop: Interop, key: str, resource: GraphUnifiedResource, out: Path) -> int:
    from graphunified_query.core.progress import Progress
    from graphunified_query.core.stores.parquet import StoreError

    export = getattr(importlib.import_module(interop.module), f"export_{key}")
    if out.exists() and not out.is_dir():
        print(f"error: {out} is a file; pass a folder to write {interop.tool}'s files to", file=sys.stderr)
        return 2
    try:
        report = export(resource.layout.home, out, Progress(f"export-{key}", "files"))
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
    from graphunified_assets.ops.indexing import RunHistoryUnreachable, prepare_instance
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
    except (StoreError, HomeLocked, RunHistoryUnreachable) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(json.dumps(report.as_dict(), indent=2))
    return 0


def _import(interop: Interop, key: str, resource: GraphUnifiedResource, folder: Path) -> int:
    import dagster

    module = importlib.import_module(interop.module)
    format_error: type[Exception] = getattr(module, interop.format_error)
    warnings.filterwarnings("ignore", category=dagster.BetaWarning)
    try:
        report = getattr(module, f"import_{key}")(folder, resource)
    except (format_error, FileExistsError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except RuntimeError as error:  # a failed Dagster run: its message says where to look
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(report.summary())
    return 0


def _status(
    resource: GraphUnifiedResource,
    echo: Callable[[str], None] = print,
    *,
    checked: bool = False,
    table_times: Callable[[str], Mapping[str, int]] | None = None,
) -> int:
    from graphunified_assets.ops.home_status import print_status

    print_status(resource.layout, resource.input_path, echo, checked=checked, table_times=table_times)
    return 0
