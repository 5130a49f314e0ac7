"""Freshness of what readers see: does the published snapshot cover the newest indexed document?

`ask` and `serve` read the published generation, not the tables being built; documents indexed
after the last publication are invisible to them until the global stage runs again. Measured
relative to the newest `documents` materialization (not a wall-clock window: an idle corpus is
not stale). Runs with each publication and on demand from the asset's page ("Execute").
"""

import dagster as dg

from graphunified_assets.defs.assets.documents import documents
from graphunified_assets.defs.assets.strategy_indexes import published_snapshot


@dg.asset_check(
    asset=published_snapshot,
    description="The published snapshot is newer than the newest indexed document, so `ask` and "
    "`serve` see every document; fails while documents wait for the global refresh.",
    blocking=False,
)
def covers_newest_document(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
    instance = context.instance
    published = instance.get_latest_materialization_event(published_snapshot.key)
    newest = instance.get_latest_materialization_event(documents.key)
    if published is None:
        return dg.AssetCheckResult(
            passed=False,
            metadata={"published_at": "never: run refresh_indexes (or `index`) to publish"},
        )
    if newest is None:
        return dg.AssetCheckResult(passed=True, metadata={"newest_document_at": "no document indexed yet"})
    lag = newest.timestamp - published.timestamp
    return dg.AssetCheckResult(
        passed=lag <= 0,
        metadata={
            "published_at": dg.MetadataValue.timestamp(published.timestamp),
            "newest_document_at": dg.MetadataValue.timestamp(newest.timestamp),
            "newest_document_partition": newest.asset_materialization.partition or "",
            "seconds_behind": dg.MetadataValue.float(round(max(lag, 0.0), 3)),
        },
    )
