"""Index an input folder in process against the persistent Dagster instance of a data home.

The same asset graph as the UI runs here, so every run shows up in `dagster dev` afterwards.
"""

from __future__ import annotations

import os
import shutil
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
from dagster._core.definitions.reconstruct import build_reconstructable_job

from graphunified_assets.defs.assets.raw_documents import observations
from graphunified_assets.defs.build import build_definitions
from graphunified_assets.defs.executors import RELEASE_AFTER_STEPS, runs_in_process
from graphunified_assets.defs.jobs import INDEX_DOCUMENTS, REFRESH_INDEXES
from graphunified_assets.defs.partitions import DOCUMENTS_PARTITIONS
from graphunified_assets.defs.resources import GraphUnifiedResource, default_resource
from graphunified_assets.defs.sensors import DOWNSTREAM_TABLES, partition_range_tags, run_ranges
from graphunified_assets.lib.collector import collector_frozen
from graphunified_assets.lib.extraction.cache_purge import purge_removed
from graphunified_assets.lib.extraction.estimate import estimate_extraction
from graphunified_assets.lib.freed_memory import release_freed_memory
from graphunified_assets.lib.ingest.chunking import chunking_key
from graphunified_assets.lib.ingest.index_state import IndexState
from graphunified_assets.lib.ingest.readers import read_documents
from graphunified_assets.lib.ingest.sources import InputProblem, scan_input
from graphunified_assets.lib.ingest.update_plan import UpdatePlan, plan_update
from graphunified_assets.ops.child_process import ChildKilled, in_child
from graphunified_assets.ops.home_lock import (
    HomeLock,
    fail_own_runs,
    home_lock,
    refuse_foreign_runs,
    run_tags,
)
from graphunified_assets.ops.index_progress import progress_run_config
from graphunified_assets.ops.instance_tuning import share_migration_scripts
from graphunified_assets.ops.run_home import home_tags
from graphunified_assets.ops.store_check import check_sqlite_files, check_store, checked_files
from graphunified_assets.ops.verified_files import VerifiedFiles, record_verified
from graphunified_query.core.artifacts import DOCUMENTS, LANCE_TABLES
from graphunified_query.core.layout import HomeLayout, partition_file_stem
from graphunified_query.core.providers.registry import OFFLINE
from graphunified_query.core.stores.published_check import published_damage

# The console logger (text or JSON lines, per settings.logging) at INFO: step-level DEBUG drowns progress.
_CONSOLE = {"console": {"config": {"log_level": "INFO"}}}
# The instance template is the repository-root dagster.yaml, copied into each home's DAGSTER_HOME.
INSTANCE_TEMPLATE = Path(__file__).resolve().parents[2] / "dagster.yaml"
# From this many new or changed documents on, each run starts in a fresh process: the per-document
# run leaves freed memory resident (~235 MB after 1,000 passages, 2.8 GB after 12.6K), while a
# fresh interpreter costs seconds of imports, which a small update would pay on every `index`.
FRESH_PROCESS_DOCUMENTS = 500
CHECKED_TABLES = (DOCUMENTS, *DOWNSTREAM_TABLES)  # the per-document tables `index` checks first


@dataclass(frozen=True)
class IndexReport:
    plan: UpdatePlan
    problems: list[InputProblem]
    run_ids: list[str]
    seconds: float
    verified: VerifiedFiles  # the files as the finished `index` recorded them

    @property
    def runs(self) -> int:
        return len(self.run_ids)


def prepare_instance(resource: GraphUnifiedResource) -> dg.DagsterInstance:
    """The data home's own Dagster instance (runs, events), created on first use."""
    dagster_home = resource.layout.dagster_home
    dagster_home.mkdir(parents=True, exist_ok=True)
    config = dagster_home / "dagster.yaml"
    if not config.exists() and INSTANCE_TEMPLATE.exists():
        shutil.copyfile(INSTANCE_TEMPLATE, config)
    else:
        add_run_monitoring(config)
    os.environ["DAGSTER_HOME"] = str(dagster_home)
    share_migration_scripts()  # before the run storage, which Dagster opens before our event log
    try:
        return dg.DagsterInstance.get()
    except Exception as error:  # dagster-postgres is an extra: its errors are told by their module
        if type(error).__module__.split(".")[0] not in _DATABASE_CLIENTS:
            raise
        cause = str(error.__cause__ or error).strip().splitlines()[0]  # the driver's own reason
        raise RunHistoryUnreachable(
            f"the run history that {config} configures cannot be opened ({cause}); "
            "start its database server, or correct the storage block of that file"
        ) from error


# The packages whose errors mean "the configured run-history database did not answer".
_DATABASE_CLIENTS = frozenset({"dagster_postgres", "sqlalchemy", "psycopg2", "psycopg"})


class RunHistoryUnreachable(RuntimeError):
    """The home's Dagster instance cannot open its run storage (e.g. its Postgres is down)."""


def add_run_monitoring(config: Path) -> None:
    """A home made before run monitoring was in the template gains the template's block, appended
    (the rest of the file, the user's, is kept as it is); one that sets run_monitoring is left alone."""
    import yaml

    try:
        current = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
        template = INSTANCE_TEMPLATE.read_text(encoding="utf-8")
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return  # Dagster itself names what is wrong with the file
    if not isinstance(current, dict) or "run_monitoring" in current:
        return
    lines = template.splitlines()
    start = lines.index("run_monitoring:")
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith(" ")), len(lines))
    block = "\n".join(lines[start:end])
    with config.open("a", encoding="utf-8") as file:
        file.write(
            f"\n# Added by graph-unified: runs whose process died are failed, their slots freed.\n{block}\n"
        )


def index(
    resource: GraphUnifiedResource, *, echo: Callable[[str], None] = print, refresh: bool = False
) -> IndexReport:
    """Index new/changed documents, drop removed ones; ``refresh`` re-runs the global stage regardless
    (after changing graph or query settings, or upgrading): cached texts cost nothing.

    Holds the home's index lock throughout: a second `index` of the same home is refused with a
    message naming this one (`HomeLocked`), and a killed one leaves nothing stuck.
    """
    started = time.perf_counter()
    layout = resource.layout
    with home_lock(layout, command=f"python -m graphunified_assets index --home {layout.home}") as lock:
        return _index(resource, lock, echo=echo, refresh=refresh, started=started)


def _index(
    resource: GraphUnifiedResource,
    lock: HomeLock,
    *,
    echo: Callable[[str], None],
    refresh: bool,
    started: float,
) -> IndexReport:
    layout = resource.layout
    instance = prepare_instance(resource)
    for run_id in refuse_foreign_runs(instance, layout.home):
        echo(f"marked Dagster run {run_id} as failed: the process running it was stopped or killed")
    verified = VerifiedFiles.take(layout)  # taken away: an `index` that fails leaves no record
    check = check_store(layout, CHECKED_TABLES, verified)
    for message in [*check_sqlite_files(layout, verified), *check.messages()]:
        echo(message)
    echo("loading the embedding model and reading the input folder")
    model = resource.embedder().model_name  # a model that cannot load stops here, before any run
    scan = scan_input(resource.input_path, layout.input_scan)
    for problem in scan.problems:
        echo(f"skipped {problem.source}: {problem.reason}")
    state = IndexState(layout.index_state)
    state.replace_failures("scan", [(p.source, p.reason) for p in scan.problems])
    if refresh:
        state.retry_parse_failures()  # after an upgrade a parser may read what it could not
    live = list(instance.get_dynamic_partitions(DOCUMENTS_PARTITIONS))
    plan = plan_update(
        {k: d.content_hash for k, d in scan.documents.items()},
        state.indexed_hashes(),
        live,
        layout=layout,
        downstream_tables=DOWNSTREAM_TABLES,
        chunking=chunking_key(resource.settings.chunking),
        model=model,
        modified=verified.table_times,  # as just checked
    )
    echo(f"{resource.input_path}: {plan.summary()}")
    keep_freed = not refresh and _small_update(plan, len(live))  # `index --refresh` rebuilds indexes whole
    if plan.pending and resource.uses_claude():
        pending = [scan.documents[k] for k in plan.pending]
        parsed, _ = read_documents(pending, resource.input_path)
        estimate = estimate_extraction((d.text for d in parsed), resource.settings)
        echo(estimate.describe(resource.settings.llm.budget_usd))
    offline = resource.llm_provider() == OFFLINE
    if plan.removed and offline and (purged := purge_removed(resource.extractor(), layout, plan.removed)):
        echo(f"forgot {purged} cached extraction(s) of removed documents")  # before their files go
    ranges = run_ranges(plan, live, max_documents=resource.settings.automation.max_documents_per_run)
    unfinished = layout.refresh_pending.exists()
    if unfinished:
        echo("the last global refresh did not finish; it is redone")
    refresh = refresh or unfinished or bool(check.damaged_globals) or bool(ranges) or bool(plan.removed)
    if not refresh and (damage := published_damage(layout)):
        echo(f"{damage}; the global refresh rebuilds it")
        refresh = True
    if not refresh and (unsearchable := _parsed_not_searchable(layout, state)):
        # A document run with no refresh after it (a sensor run, a stopped `index`): `status`
        # counts these as "parsed but not searchable", so `index` must not say "nothing to refresh".
        echo(f"{len(unsearchable)} parsed but not searchable; the global refresh makes them searchable")
        refresh = True
    if refresh or _global_outputs_missing(layout):
        layout.refresh_pending.touch()  # before any change: a crash from here on redoes the refresh
    if plan.new:
        instance.add_dynamic_partitions(DOCUMENTS_PARTITIONS, list(plan.new))
    for key in plan.removed:
        if key in live:
            instance.delete_dynamic_partition(DOCUMENTS_PARTITIONS, key)
    hashes = {k: d.content_hash for k, d in scan.documents.items()}
    for observation in observations({k: hashes[k] for k in plan.pending}):
        instance.report_runless_asset_event(observation)
    run_ids = []
    here = _runner(resource, instance, fresh=False, keep_freed=keep_freed)
    run = _runner(resource, instance, fresh=True) if len(plan.pending) >= FRESH_PROCESS_DOCUMENTS else here
    for start, end in ranges:
        echo(f"indexing documents {start!r} .. {end!r}")
        refuse_foreign_runs(instance, layout.home)  # the UI's queue may have started one meanwhile
        lock.note_run(f"{INDEX_DOCUMENTS} {start!r}..{end!r}")
        run_ids.append(run(INDEX_DOCUMENTS, partition_range_tags(start, end)))
    if layout.refresh_pending.exists():
        echo("refreshing global indexes")
        refuse_foreign_runs(instance, layout.home)
        lock.note_run(REFRESH_INDEXES)
        # The last run runs here: this process ran none before it (a large update's ran in
        # children), and a child of its own would hold a second copy of every import beside this
        # one (~0.25 GB of the 12.6K build's peak).
        release_freed_memory()  # what planning and the partition bookkeeping left
        run_ids.append(here(REFRESH_INDEXES, {}))
        layout.refresh_pending.unlink()
    rewritten = {f"{partition_file_stem(key)}.parquet" for key in plan.pending}
    recorded = record_verified(layout, checked_files(layout, CHECKED_TABLES), verified.as_checked(rewritten))
    return IndexReport(plan, scan.problems, run_ids, time.perf_counter() - started, recorded)


def _parsed_not_searchable(layout: HomeLayout, state: IndexState) -> set[str]:
    """Indexed documents the published generation lacks; called once `published_damage` found it whole."""
    from graphunified_assets.ops.home_status import searchable_documents

    failed = {f.source for f in state.failures()}
    parsed = set(state.indexed_hashes()) - failed
    return parsed - searchable_documents(layout, checked=True) if parsed else set()


def _global_outputs_missing(layout: HomeLayout) -> bool:
    """An interrupted or older build (one before report points): some index the query side needs
    is not there yet."""
    return not all((layout.lancedb / f"{name}.lance").exists() for name in LANCE_TABLES)


def _runner(
    resource: GraphUnifiedResource, instance: dg.DagsterInstance, *, fresh: bool, keep_freed: bool = False
) -> Callable[[str, dict[str, str]], str]:
    """How this `index` executes a job with tags: each in a fresh process (``fresh``: a large
    update's document runs), else in this one (``keep_freed``: see `run_job`)."""
    home = home_tags(resource.layout)  # the run carries its home to every step, wherever it runs
    if fresh:
        return lambda job_name, tags: run_in_child(resource, instance, job_name, {**tags, **home})
    defs = build_definitions(resource)
    return lambda job_name, tags: run_job(defs, job_name, instance, {**tags, **home}, keep_freed=keep_freed)


def _small_update(plan: UpdatePlan, live: int) -> bool:
    """At most a tenth of the corpus new, changed or removed: the refresh's steps then work on
    whole-corpus tables of about the same size, step after step."""
    return 10 * (len(plan.pending) + len(plan.removed)) <= live


def run_in_child(
    resource: GraphUnifiedResource, instance: dg.DagsterInstance, job_name: str, tags: dict[str, str]
) -> str:
    """``run_job`` in a fresh process (graphunified_assets/ops/child_process.py says why): the next run
    starts from an interpreter holding nothing of this one. Its runs carry this process's tags, so
    a killed `index` is recognised by the pid of the process holding the lock."""
    fields = {name: getattr(resource, name) for name in type(resource).model_fields}
    try:
        return in_child(
            f"the Dagster run of {job_name}", execute_job, fields, job_name, {**tags, **run_tags()}
        )
    except ChildKilled as error:
        failed = fail_own_runs(instance, str(error))  # else it stays "started" and blocks the UI's queue
        runs = f" (Dagster run {', '.join(failed)} marked failed)" if failed else ""
        raise RuntimeError(f"{error}{runs}; re-run `index`: finished documents are not redone") from None


def execute_job(fields: Mapping[str, Any], job_name: str, tags: dict[str, str]) -> str:
    """The child's side of `run_in_child`: resource, definitions and instance rebuilt from plain data.

    ``fields`` are the resource's own, read off its ``model_fields``: a new field travels unlisted."""
    warnings.filterwarnings("ignore", category=dg.BetaWarning)  # as the CLI does: BackfillPolicy is beta
    resource = GraphUnifiedResource(**fields)
    return run_job(build_definitions(resource), job_name, prepare_instance(resource), tags)


def code_location_job(job_name: str, home: str, input_dir: str | None) -> dg.JobDefinition:
    """``job_name`` of the code location for ``home``: what a step process rebuilds (`run_job`)."""
    return build_definitions(default_resource(home, input_dir)).resolve_job_def(job_name)


def run_job(
    defs: dg.Definitions,
    job_name: str,
    instance: dg.DagsterInstance,
    tags: dict[str, str],
    *,
    then: str = "re-run `index`: finished documents are not redone",
    keep_freed: bool = False,
) -> str:
    """Execute a job with GRAPHUNIFIED_EXECUTOR's executor, as the UI's runs are (in this process
    by default); a failed run is an error naming its failed steps and what to do.

    In this process each step gives the memory it freed back to the system (`freed_memory`), so
    that a step's peak does not sit on what earlier steps kept; ``keep_freed`` (a small update)
    leaves it for the next step to reuse. Its steps' working sets are alike (0.3-0.7 GB at 12.6K
    passages): given back, each step faulted its pages in again, 1.17M page faults against
    0.84M and 2-4 s of a one-passage update, for a peak 0.1 GB lower."""
    run_id, failed = _execute(defs, job_name, instance, {**run_tags(), **tags}, keep_freed=keep_freed)
    if failed is not None:
        raise RuntimeError(
            f"Dagster run {run_id} of {job_name} failed at {failed}; inspect it with `make ui` "
            f"(Runs tab), then {then}."
        )
    return run_id


def _execute(
    defs: dg.Definitions,
    job_name: str,
    instance: dg.DagsterInstance,
    tags: dict[str, str],
    *,
    keep_freed: bool,
) -> tuple[str, list[str | None] | None]:
    """The run's id, and its failed steps when it failed."""
    job_def = defs.resolve_job_def(job_name)
    # `index` alone counts the run's steps out loud (with the steps' own progress, no long silence).
    run_config = {"loggers": {**_CONSOLE, **progress_run_config(job_def)}}
    if runs_in_process():
        job_def = job_def if keep_freed else job_def.with_hooks(RELEASE_AFTER_STEPS)
        with collector_frozen():  # the definitions, the model and the plan outlive every step
            result = job_def.execute_in_process(
                instance=instance, run_config=run_config, tags=tags, raise_on_error=False
            )
        return result.run_id, None if result.success else [
            e.step_key for e in result.all_events if e.is_step_failure
        ]
    # Steps in other processes (or on other machines) rebuild the job: it must be reconstructable.
    resource = (defs.resources or {})["graphunified"]
    args: Any = (job_name, resource.home, resource.input_dir)
    job = build_reconstructable_job(__name__, code_location_job.__name__, args)
    with dg.execute_job(job, instance=instance, run_config=run_config, tags=tags) as run:
        return run.run_id, None if run.success else _failed_steps(run.all_events)


def _failed_steps(events: Sequence[dg.DagsterEvent]) -> list[str | None]:
    return [e.step_key for e in events if e.is_step_failure]
