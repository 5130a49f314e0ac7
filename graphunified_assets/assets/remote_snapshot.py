"""Asset: the published generation, copied to object storage when `storage.publish_uri` is set."""

import os

import dagster as dg

from graphunified_assets.object_mirror import mirror
from graphunified_assets.observability import stage_timing
from graphunified_assets.partitions import after_documents_change
from graphunified_assets.resources import GraphUnifiedResource
from graphunified_query.layout import refresh_command
from graphunified_query.object_store import ObjectFiles, ObjectStore
from graphunified_query.publication import current


@dg.asset(
    group_name="indexes",
    kinds={"s3", "parquet", "lancedb"},
    deps=["published_snapshot"],
    automation_condition=after_documents_change,
)
def remote_snapshot(
    context: dg.AssetExecutionContext, graphunified: GraphUnifiedResource
) -> dg.MaterializeResult:
    """Copies the published generation to `storage.publish_uri` (s3://bucket/prefix) so that
    `ask --home s3://…` and `serve` work on other machines: Parquet through pyarrow's S3
    filesystem, LanceDB tables opened by LanceDB at their recorded versions, `CURRENT` last.
    Unchanged files are copied server-side, LanceDB files only once. Without a publish_uri it
    records that nothing was copied."""
    settings, layout = graphunified.settings, graphunified.layout
    uri = settings.storage.publish_uri
    if uri is None:
        return dg.MaterializeResult(metadata={"published_to": "nowhere: storage.publish_uri is not set"})
    generation = current(layout, rebuild_hint=refresh_command(layout.home))
    files = ObjectFiles(ObjectStore.at(uri, settings.storage, os.environ))
    report = mirror(layout, generation, files)
    context.log.info(
        f"generation {report.generation} at {uri}: {report.uploaded_files} files uploaded "
        f"({report.uploaded_bytes} bytes), {report.copied_files} copied in the store, "
        f"{report.lance_files} LanceDB files new"
    )
    return dg.MaterializeResult(
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
