"""Jobs: per-document indexing (partitioned) and the global index refresh."""

from __future__ import annotations

import dagster as dg

from graphunified_assets.defs.catalog import GLOBAL_GROUPS, PER_DOCUMENT_GROUPS

INDEX_DOCUMENTS = "index_documents"
REFRESH_INDEXES = "refresh_indexes"
# Dagster prints run logs to the console only through loggers named in the run config; this
# names `console` with its defaults (Dagster's colored logger, or JSON lines: graphunified_assets.ops.logs).
CONSOLE_LOGS: dict[str, dict[str, dict[str, object]]] = {"loggers": {"console": {}}}

# Partitioned by documents: Dagster infers it from the selected assets.
index_documents_job = dg.define_asset_job(
    INDEX_DOCUMENTS,
    selection=dg.AssetSelection.groups(*PER_DOCUMENT_GROUPS),
    config=CONSOLE_LOGS,
    description="Parse, chunk, embed and extract the selected documents (one run covers a key range).",
)

refresh_indexes_job = dg.define_asset_job(
    REFRESH_INDEXES,
    selection=dg.AssetSelection.groups(*GLOBAL_GROUPS),
    config=CONSOLE_LOGS,
    description="Rebuild the global indexes from every document's tables; prunes removed documents.",
)
