"""Jobs: per-document indexing (partitioned) and the global index refresh."""

from __future__ import annotations

import dagster as dg

from graphunified_assets.partitions import documents_partitions

INDEX_DOCUMENTS = "index_documents"
REFRESH_INDEXES = "refresh_indexes"

index_documents_job = dg.define_asset_job(
    INDEX_DOCUMENTS,
    selection=dg.AssetSelection.groups("ingest", "embed"),
    partitions_def=documents_partitions,
    description="Parse, chunk and embed the selected documents (one run covers a range of documents).",
)

refresh_indexes_job = dg.define_asset_job(
    REFRESH_INDEXES,
    selection=dg.AssetSelection.groups("indexes"),
    description="Rebuild the global indexes from every document's tables; prunes removed documents.",
)
