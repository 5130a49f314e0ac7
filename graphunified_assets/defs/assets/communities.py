"""`communities`: hierarchical Leiden over the entity graph (GraphRAG's `communities` table)."""

import dagster as dg

from graphunified_assets.defs.catalog import logic_version
from graphunified_assets.defs.observability import markdown_table, numeric, stage_timing
from graphunified_assets.defs.partitions import after_documents_change
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.graph import communities as community_tables
from graphunified_assets.lib.graph import leiden
from graphunified_assets.lib.graph.communities import communities_table
from graphunified_assets.lib.graph.leiden import (
    LeidenParameters,
    clustering_table,
    detect_communities,
    read_clustering,
)
from graphunified_query.core.artifacts import COMMUNITIES, ENTITIES, RELATIONSHIPS
from graphunified_query.core.stores.parquet import read_table, write_table_atomic
from graphunified_query.core.tables import stamp_indexed_at

CLUSTERING_STATE = "community_clustering"


@dg.asset(
    group_name="graph",
    code_version=logic_version(leiden, community_tables),
    kinds={"parquet"},
    deps=[ENTITIES, RELATIONSHIPS],
    automation_condition=after_documents_change,
)
def communities(
    context: dg.AssetExecutionContext, graphunified: GraphUnifiedResource
) -> dg.MaterializeResult:
    """Re-clusters only the top-level communities an update touched; the rest keep their members."""
    layout = graphunified.layout
    settings = graphunified.settings.graph
    # What clustering and the community table read: not the relationships' chunk lists and keywords.
    entities = read_table(layout.table_path(ENTITIES), columns=["id", "description", "text_unit_ids"])
    relationships = read_table(
        layout.table_path(RELATIONSHIPS), columns=["id", "source_id", "target_id", "weight", "description"]
    )
    path = layout.table_path(COMMUNITIES)
    previous = read_table(path) if path.exists() else None
    state_path = layout.table_path(CLUSTERING_STATE)
    previous_clustering = read_clustering(read_table(state_path)) if state_path.exists() else None
    edges = relationships
    if not graphunified.builds(COMMUNITIES):  # no enabled strategy reads them: none, and no state
        edges, previous_clustering = relationships.slice(0, 0), None
    parameters = LeidenParameters(
        settings.max_cluster_size, settings.max_level, settings.resolution, settings.seed
    )
    found, clustering = detect_communities(
        edges, parameters, previous=previous_clustering if previous is not None else None
    )
    table = communities_table(found, relationships=relationships, entities=entities, previous=previous)
    write_table_atomic(path, stamp_indexed_at(table))
    write_table_atomic(state_path, clustering_table(clustering))
    before = set(previous.column("content_hash").to_pylist()) if previous is not None else set()
    unchanged = len(before & set(table.column("content_hash").to_pylist()))
    levels = table.group_by("level").aggregate([("level", "count")]).sort_by("level").to_pylist()
    context.log.info(f"communities: {table.num_rows} ({unchanged} unchanged)")
    return dg.MaterializeResult(
        metadata={
            **numeric(
                {"rows": table.num_rows, "unchanged": unchanged, "changed": table.num_rows - unchanged}
            ),
            "levels": markdown_table(
                ["level", "communities"], [(r["level"], r["level_count"]) for r in levels]
            ),
            **stage_timing(),
        }
    )
