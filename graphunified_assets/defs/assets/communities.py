"""`communities`: hierarchical Leiden over the entity graph (GraphRAG's `communities` table)."""

import dagster as dg

from graphunified_assets.defs.catalog import logic_version
from graphunified_assets.defs.observability import markdown_table, numeric, stage_timing
from graphunified_assets.defs.partitions import after_documents_change
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.graph import communities as community_tables
from graphunified_assets.lib.graph import leiden
from graphunified_assets.lib.graph.communities import communities_table
from graphunified_assets.lib.graph.graph_seen import GraphSeen, changed_since, graph_seen
from graphunified_assets.lib.graph.graph_state import file_identity
from graphunified_assets.lib.graph.leiden import (
    LeidenParameters,
    clustering_table,
    detect_communities,
    parameters_metadata,
    previous_clustering,
)
from graphunified_query.core.artifacts import COMMUNITIES, ENTITIES, RELATIONSHIPS
from graphunified_query.core.stores.parquet import read_table, write_table_atomic
from graphunified_query.core.tables import INDEXED_AT, stamp_indexed_at

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
    graph = (layout.table_path(ENTITIES), layout.table_path(RELATIONSHIPS))
    files = tuple(tuple(file_identity(path)) for path in graph)  # before the reads: see `graph_seen`
    entities = read_table(graph[0], columns=["id", "description", "text_unit_ids", INDEXED_AT.name])
    relationships = read_table(
        graph[1], columns=["id", "source_id", "target_id", "weight", "description", INDEXED_AT.name]
    )
    path = layout.table_path(COMMUNITIES)
    previous = read_table(path) if path.exists() else None
    state_path = layout.table_path(CLUSTERING_STATE)
    state = read_table(state_path) if state_path.exists() else None
    # The entities whose rows changed since the previous table was made: its other rows are reused.
    seen = GraphSeen.from_metadata(state.schema.metadata) if state is not None else None
    changed = changed_since(seen, entities, relationships, files)
    edges = relationships
    parameters = LeidenParameters(
        settings.max_cluster_size, settings.max_level, settings.resolution, settings.seed
    )
    if not graphunified.builds(COMMUNITIES):  # no enabled strategy reads them: none, and no state
        edges, state = relationships.slice(0, 0), None
    found, clustering = detect_communities(
        edges, parameters, previous=previous_clustering(state, parameters) if previous is not None else None
    )
    table, reused = communities_table(
        found, relationships=relationships, entities=entities, previous=previous, changed=changed
    )
    write_table_atomic(path, stamp_indexed_at(table))
    # After the table: a state older than the table only makes the next update compute more.
    recorded = {**graph_seen(entities, relationships, files).metadata(), **parameters_metadata(parameters)}
    write_table_atomic(state_path, clustering_table(clustering).replace_schema_metadata(recorded))
    before = set(previous.column("content_hash").to_pylist()) if previous is not None else set()
    unchanged = len(before & set(table.column("content_hash").to_pylist()))
    levels = table.group_by("level").aggregate([("level", "count")]).sort_by("level").to_pylist()
    context.log.info(f"communities: {table.num_rows} ({unchanged} unchanged, {reused} rows reused)")
    return dg.MaterializeResult(
        metadata={
            **numeric(
                {
                    "rows": table.num_rows,
                    "unchanged": unchanged,
                    "changed": table.num_rows - unchanged,
                    # Rows taken from the last table: no changed graph row touches them.
                    "reused": reused,
                }
            ),
            "levels": markdown_table(
                ["level", "communities"], [(r["level"], r["level_count"]) for r in levels]
            ),
            **stage_timing(),
        }
    )
