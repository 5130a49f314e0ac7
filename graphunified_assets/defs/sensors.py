"""The new-documents sensor: registers added, changed and removed input files as partitions."""

import hashlib
from collections.abc import Iterable, Sequence

import dagster as dg

from graphunified_assets.defs.assets.raw_documents import observations
from graphunified_assets.defs.catalog import OWNERS, deliberate_beta
from graphunified_assets.defs.jobs import (
    CONSOLE_LOGS,
    INDEX_DOCUMENTS,
    REFRESH_INDEXES,
    index_documents_job,
    refresh_indexes_job,
)
from graphunified_assets.defs.partitions import DOCUMENTS_PARTITIONS, documents_partitions
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.ingest.chunking import chunking_key
from graphunified_assets.lib.ingest.index_state import IndexState
from graphunified_assets.lib.ingest.sources import scan_input
from graphunified_assets.lib.ingest.update_plan import (
    UpdatePlan,
    capped_ranges,
    configured_model,
    contiguous_ranges,
    plan_update,
)
from graphunified_assets.ops.input_guard import adopt_input, input_problem
from graphunified_assets.ops.run_home import home_tags
from graphunified_query.core.artifacts import CHUNK_EMBEDDINGS, CHUNKS, EXTRACTIONS
from graphunified_query.core.settings.model import SettingsError

DOWNSTREAM_TABLES = (CHUNKS, CHUNK_EMBEDDINGS, EXTRACTIONS)
MAX_RUNS_PER_TICK = 4


def partition_range_tags(start: str, end: str) -> dict[str, str]:
    return {"dagster/asset_partition_range_start": start, "dagster/asset_partition_range_end": end}


def run_ranges(plan: UpdatePlan, live: Sequence[str], *, max_documents: int) -> list[tuple[str, str]]:
    """Key ranges covering the pending documents, new ones appended after the live partitions,
    each of at most ``max_documents`` keys (`automation.max_documents_per_run`; 0: no cap): a
    large update fans out into runs that are each their own retry unit."""
    ordered = [*live, *plan.new]
    ranges = contiguous_ranges(ordered, set(plan.pending), max_ranges=MAX_RUNS_PER_TICK)
    return capped_ranges(ranges, ordered, max_documents=max_documents)


def watch_input(context: dg.SensorEvaluationContext, graphunified: GraphUnifiedResource) -> dg.SensorResult:
    """One tick of `new_documents_sensor` (declared below, with its owners): plan, then request."""
    try:
        problem = input_problem(graphunified)  # another folder than the home's: remove nothing
    except SettingsError as error:  # a damaged settings.yaml or input.json: said, not a stack trace
        problem = str(error)
    if problem:
        context.log.error(problem)
        return dg.SensorResult(skip_reason=problem)
    scan = scan_input(graphunified.input_path, graphunified.layout.input_scan)
    live = list(context.instance.get_dynamic_partitions(DOCUMENTS_PARTITIONS))
    hashes = {k: d.content_hash for k, d in scan.documents.items()}
    plan = plan_update(
        hashes,
        IndexState(graphunified.layout.index_state).indexed_hashes(),
        live,
        layout=graphunified.layout,
        downstream_tables=DOWNSTREAM_TABLES,
        chunking=chunking_key(graphunified.settings.chunking),
        model=configured_model(graphunified.settings.embedding, graphunified.environ()),
    )
    for issue in scan.problems:
        context.log.warning(f"{issue.source}: {issue.reason}")
    # Run keys name the content, so a tick that sees the same pending work (its run still going)
    # requests nothing new, while an edited document gets a fresh run.
    home = home_tags(graphunified.layout)  # the runs write to this home, whichever worker runs a step
    cap = graphunified.settings.automation.max_documents_per_run
    requests = [
        dg.RunRequest(
            job_name=INDEX_DOCUMENTS,
            run_key=f"{start}..{end}:{_digest(f'{k}={hashes[k]}' for k in plan.pending)}",
            tags={**partition_range_tags(start, end), **home},
            run_config=CONSOLE_LOGS,  # a ranged run gets no partitioned default config
        )
        for start, end in run_ranges(plan, live, max_documents=cap)
    ]
    partition_requests: list[dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest] = []
    if plan.new:
        partition_requests.append(documents_partitions.build_add_request(list(plan.new)))
    removed_live = [k for k in plan.removed if k in set(live)]
    if removed_live:
        partition_requests.append(documents_partitions.build_delete_request(removed_live))
    if plan.removed:
        requests.append(
            dg.RunRequest(
                job_name=REFRESH_INDEXES,
                run_key=f"prune:{_digest(plan.removed)}",
                run_config=CONSOLE_LOGS,
                tags=home,
            )
        )
    if requests:
        adopt_input(graphunified)  # the UI's first indexing records the folder, as `index` does
        context.log.info(plan.summary())
    return dg.SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=partition_requests,
        asset_events=observations({k: hashes[k] for k in plan.pending}),
    )


with deliberate_beta("owners"):
    new_documents_sensor = dg.sensor(
        name="new_documents_sensor",
        jobs=[index_documents_job, refresh_indexes_job],
        minimum_interval_seconds=30,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Watches the input folder; indexes new or changed documents and removes deleted ones.",
        owners=OWNERS,
    )(watch_input)


def _digest(items: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(sorted(items)).encode()).hexdigest()[:16]
