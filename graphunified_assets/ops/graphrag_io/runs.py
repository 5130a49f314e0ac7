"""The Dagster runs that index an imported home, in process against the home's own instance.

Two runs, as `index` does it: one over the document partitions (chunk embeddings), one for
the global indexes. The selection is exactly the assets that read the imported tables, plus
the checks of those tables, so the UI shows whether GraphRAG's data meets our invariants.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pyarrow as pa

from graphunified_assets.defs.assets.strategy_indexes import BM25_INDEX, PPR_GRAPH
from graphunified_assets.defs.build import build_definitions
from graphunified_assets.defs.partitions import DOCUMENTS_PARTITIONS, documents_partitions
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.defs.sensors import partition_range_tags
from graphunified_assets.ops.indexing import prepare_instance, run_job
from graphunified_query.core.artifacts import (
    CHUNK_EMBEDDINGS,
    CHUNK_VECTORS,
    CHUNKS,
    COMMUNITIES,
    COMMUNITY_REPORTS,
    DOCUMENTS,
    ENTITIES,
    FACTS,
    RELATIONSHIPS,
    REPORT_VECTORS,
)

EMBEDDINGS_JOB = "graphrag_import_embeddings"
INDEXES_JOB = "graphrag_import_indexes"
IMPORTED_TABLES = (ENTITIES, RELATIONSHIPS, FACTS, COMMUNITIES, COMMUNITY_REPORTS)
INDEX_ASSETS = (CHUNK_VECTORS, "graph", "graph_vectors", BM25_INDEX, PPR_GRAPH, REPORT_VECTORS)

_embeddings_job = dg.define_asset_job(
    EMBEDDINGS_JOB,
    selection=dg.AssetSelection.assets(CHUNK_EMBEDDINGS),
    partitions_def=documents_partitions,
    description="Embed the text units of imported GraphRAG documents.",
)
_indexes_job = dg.define_asset_job(
    INDEXES_JOB,
    selection=dg.AssetSelection.assets(*INDEX_ASSETS) | dg.AssetSelection.checks_for_assets(*IMPORTED_TABLES),
    description="Build the query indexes over imported GraphRAG tables (never re-derives the graph).",
)


def build_indexes(
    resource: GraphUnifiedResource,
    tables: dict[str, pa.Table],
    *,
    source: Path,
    echo: Callable[[str], None],
) -> list[str]:
    """Register the documents as partitions, record the imported tables, run both jobs."""
    defs = dg.Definitions.merge(
        build_definitions(resource), dg.Definitions(jobs=[_embeddings_job, _indexes_job])
    )
    instance = prepare_instance(resource)
    keys = tables[DOCUMENTS].column("id").to_pylist()
    wanted = set(keys)
    for stale in instance.get_dynamic_partitions(DOCUMENTS_PARTITIONS):
        if stale not in wanted:  # left by an earlier home in the same place; its tables are gone
            instance.delete_dynamic_partition(DOCUMENTS_PARTITIONS, stale)
    instance.add_dynamic_partitions(DOCUMENTS_PARTITIONS, keys)
    for name in IMPORTED_TABLES:
        # Materializations the UI can show, though no run produced them; no per-document events,
        # which would cost one instance write per document.
        metadata = {"rows": tables[name].num_rows, "imported_from": dg.MetadataValue.path(str(source))}
        instance.report_runless_asset_event(dg.AssetMaterialization(name, metadata=metadata))
    live = instance.get_dynamic_partitions(DOCUMENTS_PARTITIONS)
    echo(f"embedding {tables[CHUNKS].num_rows} text units of {len(live)} documents")
    run_ids = [_run(defs, EMBEDDINGS_JOB, instance, partition_range_tags(live[0], live[-1]))]
    echo("building the query indexes")
    run_ids.append(_run(defs, INDEXES_JOB, instance, {}))
    return run_ids


def _run(defs: dg.Definitions, job_name: str, instance: dg.DagsterInstance, tags: dict[str, str]) -> str:
    return run_job(defs, job_name, instance, tags, then="import again into a fresh --home")
