"""`raw_documents`: the input files as Dagster sees them — one data version (content hash) each.

Observing it (the sensor does, for new and changed files; the UI's "Observe" button does for
all) tells Dagster which `documents` partitions are stale, so the UI shows exactly what an
edit invalidated.
"""

import dagster as dg

from graphunified_assets.lib.sources import scan_input
from graphunified_assets.partitions import documents_partitions

RAW_DOCUMENTS = dg.AssetKey("raw_documents")


@dg.observable_source_asset(
    partitions_def=documents_partitions,
    group_name="ingest",
    required_resource_keys={"graphunified"},
    description="Input files; each partition's data version is the document's content hash.",
)
def raw_documents(context: dg.OpExecutionContext) -> dg.DataVersionsByPartition:
    scan = scan_input(context.resources.graphunified.input_path)
    live = context.instance.get_dynamic_partitions(documents_partitions.name)
    return dg.DataVersionsByPartition(
        {key: dg.DataVersion(scan.documents[key].content_hash) for key in live if key in scan.documents}
    )


def observations(hashes: dict[str, str]) -> list[dg.AssetObservation]:
    """Observation events carrying content hashes as data versions, for sensors and the CLI."""
    return [
        dg.AssetObservation(asset_key=RAW_DOCUMENTS, partition=key, tags={"dagster/data_version": value})
        for key, value in hashes.items()
    ]
