"""One dynamic partition per input document, keyed by its stable document id."""

from __future__ import annotations

from typing import Any

import dagster as dg

from graphunified_assets.defs.catalog import deliberate_beta

DOCUMENTS_PARTITIONS = "documents"  # their name, which the instance's partition calls take
documents_partitions = dg.DynamicPartitionsDefinition(name=DOCUMENTS_PARTITIONS)

# Per-document assets run many partitions in one run: Dagster would otherwise start one run
# (a process, seconds of overhead) per document, which would dominate indexing time.
batched_backfill = dg.BackfillPolicy.multi_run(max_partitions_per_run=2000)

# Global assets rebuild once after a batch of documents lands, not once per document; a
# document that failed (and so has no rows) must not hold them back, hence no missing-deps clause.
after_documents_change = dg.AutomationCondition.eager().without(~dg.AutomationCondition.any_deps_missing())


def per_document_asset(*, table: str, group_name: str, **kwargs: Any) -> Any:
    """`@dg.asset` for a per-document table: one partition per document, batched runs, and the
    per-document Parquet IO manager (``table`` names the folder under ``<home>/tables``)."""
    metadata = {"table": table, **kwargs.pop("metadata", {})}
    with deliberate_beta("backfill_policy"):
        return dg.asset(
            partitions_def=documents_partitions,
            backfill_policy=batched_backfill,
            group_name=group_name,
            io_manager_key="document_tables",
            metadata=metadata,
            kinds={"parquet"},
            **kwargs,
        )
