"""Asset: the published generation, copied to object storage when `storage.publish_uri` is set."""

import os
from collections.abc import Iterator

import dagster as dg

from graphunified_assets.defs.observability import stage_timing
from graphunified_assets.defs.partitions import after_documents_change
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.ops.object_mirror import mirror
from graphunified_query.core.layout import refresh_command
from graphunified_query.core.stores.object_store import ObjectFiles, ObjectStore
from graphunified_query.core.stores.publication import current


@dg.asset(
    group_name="publish",
    kinds={"s3", "parquet", "lancedb"},
    deps=["published_snapshot"],
    automation_condition=after_documents_change,
    # Without a publish_uri the step is skipped: the UI must not show a copy that never happened.
    output_required=False,
)
def remote_snapshot(
    context: dg.AssetExecutionContext, graphunified: GraphUnifiedResource
) -> Iterator[dg.MaterializeResult]:
    """Copies the published generation to `storage.publish_uri` (s3://bucket/prefix) so that
    `ask --home s3://…` and `serve` work on other machines: Parquet through pyarrow's S3
    filesystem, LanceDB tables opened by LanceDB at their recorded versions, `CURRENT` last.
    Unchanged files are copied server-side, LanceDB files only once. Skipped (not materialized)
    while `storage.publish_uri` is not set."""
    settings, layout = graphunified.settings, graphunified.layout
    uri = settings.storage.publish_uri
    if uri is None:
        context.log.info("skipped: storage.publish_uri is not set, so there is nothing to copy")
        return
    generation = current(layout, rebuild_hint=refresh_command(layout.home))
    files = ObjectFiles(ObjectStore.at(uri, settings.storage, os.environ))
    report = mirror(layout, generation, files)
    context.log.info(
        f"generation {report.generation} at {uri}: {report.uploaded_files} files uploaded "
        f"({report.uploaded_bytes} bytes), {report.copied_files} copied in the store, "
        f"{report.lance_files} LanceDB files new"
    )
    yield dg.MaterializeResult(
        metadata={
            "published_to": dg.MetadataValue.url(uri),
            "generation": report.generation,
            "uploaded_files": report.uploaded_files,
            "uploaded_bytes": report.uploaded_bytes,
            "copied_files": report.copied_files,
            "copied_bytes": report.copied_bytes,
            "lance_files_uploaded": report.lance_files,
            "lance_bytes_uploaded": report.lance_bytes,
            "pruned_generations": dg.MetadataValue.json(list(report.pruned_generations)),
            **stage_timing(),
        }
    )
