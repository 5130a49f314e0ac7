"""`raw_documents`: the input files as Dagster sees them — one data version (content hash) each.

An external asset: nothing in Dagster produces the files. The sensor (each tick, for new and
changed files) and `index` report an observation per document carrying its content hash as the
data version, which tells Dagster which `documents` partitions are stale, so the UI shows exactly
what an edit invalidated.
"""

import dagster as dg

from graphunified_assets.defs.catalog import INGEST
from graphunified_assets.defs.partitions import documents_partitions

RAW_DOCUMENTS = dg.AssetKey("raw_documents")

raw_documents = dg.AssetSpec(
    RAW_DOCUMENTS,
    partitions_def=documents_partitions,
    group_name=INGEST,
    kinds={"file"},
    description="Input files (txt, md, jsonl, pdf); each partition's data version is the document's "
    "content hash, observed by new_documents_sensor and `index`.",
)


def observations(hashes: dict[str, str]) -> list[dg.AssetObservation]:
    """Observation events carrying content hashes as data versions, for sensors and the CLI."""
    return [
        dg.AssetObservation(asset_key=RAW_DOCUMENTS, partition=key, tags={"dagster/data_version": value})
        for key, value in hashes.items()
    ]
