"""`community_reports`: one report per community for global search; unchanged ones are reused."""

import dagster as dg
import lancedb
import pyarrow.compute as pc

from graphunified_assets.defs.catalog import logic_version
from graphunified_assets.defs.failure_metadata import failure_metadata
from graphunified_assets.defs.observability import Metadata, llm_usage, stage_timing
from graphunified_assets.defs.partitions import after_documents_change
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.ingest.index_state import IndexState
from graphunified_assets.lib.reports import build, extractive
from graphunified_assets.lib.reports import context as report_context
from graphunified_assets.lib.reports.build import build_reports
from graphunified_assets.lib.reports.context import ENTITY_COLUMNS, RELATIONSHIP_COLUMNS
from graphunified_assets.lib.reports.extractive import ExtractiveReporter
from graphunified_assets.lib.vectors.lance_slices import stored_columns
from graphunified_query.core.artifacts import (
    CHUNK_VECTORS,
    COMMUNITIES,
    COMMUNITY_REPORTS,
    ENTITIES,
    RELATIONSHIPS,
)
from graphunified_query.core.stores.parquet import read_table, write_table_atomic
from graphunified_query.core.tables import stamp_indexed_at

STAGE = "report"  # the failures table's stage for communities whose report fell back to extractive


@dg.asset(
    group_name="graph",
    code_version=logic_version(build, report_context, extractive),
    kinds={"parquet"},
    deps=[COMMUNITIES, ENTITIES, RELATIONSHIPS, CHUNK_VECTORS],
    automation_condition=after_documents_change,
    pool="llm",
)
def community_reports(
    context: dg.AssetExecutionContext, graphunified: GraphUnifiedResource
) -> dg.MaterializeResult:
    """Claude reports when configured (validated, repaired once), else extractive ones."""
    layout = graphunified.layout
    communities = read_table(layout.table_path(COMMUNITIES))
    if not graphunified.builds(COMMUNITY_REPORTS):  # no enabled strategy reads them: no model calls
        communities = communities.schema.empty_table()
    path = layout.table_path(COMMUNITY_REPORTS)
    previous = read_table(path) if path.exists() else None
    largest = int(pc.max(communities.column("size")).as_py() or 1) if communities.num_rows else 1
    extractive = ExtractiveReporter(largest_community=largest)
    reporter = graphunified.reporter() or extractive
    chunks = stored_columns(lancedb.connect(str(layout.lancedb)), CHUNK_VECTORS, ["id", "text"])
    chunk_text = dict(zip(chunks.column("id").to_pylist(), chunks.column("text").to_pylist(), strict=True))
    build = build_reports(
        communities,
        entities=read_table(layout.table_path(ENTITIES), columns=ENTITY_COLUMNS),
        relationships=read_table(layout.table_path(RELATIONSHIPS), columns=RELATIONSHIP_COLUMNS),
        reporter=reporter,
        fallback=extractive,
        previous=previous,
        chunk_text=chunk_text.get,
        concurrency=graphunified.settings.llm.concurrency if reporter is not extractive else 1,
        max_context_chars=graphunified.settings.graph.report_max_input_tokens * 4,
        condense_above_tokens=graphunified.settings.llm.summarize_above_tokens,
    )
    write_table_atomic(path, stamp_indexed_at(build.table))
    for failure in build.failures:
        context.log.warning(f"community report fell back to extractive: {failure}")
    # A fallback keeps the community searchable now, and is never reused as a Claude report, so
    # the next run that rebuilds reports asks Claude again; until then `status` lists it.
    failed = dict(failure.partition(": ")[::2] for failure in build.failures)
    IndexState(layout.index_state).replace_failures(STAGE, failed.items())
    metadata: Metadata = {
        **failure_metadata(failed, label="report"),
        "rows": build.table.num_rows,
        "generated": build.generated,
        "reused": build.reused,
        "fallbacks": len(build.failures),
        "generator": reporter.name,
        **llm_usage(getattr(reporter, "client", None)),  # zeros offline: the UI plots a flat line
        **stage_timing(),
    }
    client = getattr(reporter, "client", None)
    if client is not None:
        metadata.update(client.ledger.as_metadata())
    return dg.MaterializeResult(metadata=metadata)
