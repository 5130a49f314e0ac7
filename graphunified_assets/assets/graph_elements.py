"""`entities`, `relationships`, `facts`: corpus-wide tables after entity resolution."""

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc

from graphunified_assets.lib.graph_elements import build_graph_elements
from graphunified_assets.partitions import after_documents_change, documents_partitions
from graphunified_assets.resources import GraphUnifiedResource
from graphunified_query.parquet_store import write_table_atomic
from graphunified_query.tables import ENTITIES, FACTS, RELATIONSHIPS


def _table_spec(name: str, description: str) -> dg.AssetSpec:
    return dg.AssetSpec(
        name,
        group_name="graph",
        kinds={"parquet"},
        deps=["extractions"],
        description=description,
        automation_condition=after_documents_change,
    )


@dg.multi_asset(
    specs=[
        _table_spec(ENTITIES, "Resolved entities (GraphRAG `entities` columns plus merged_from)."),
        _table_spec(RELATIONSHIPS, "Weighted, undirected relationships between resolved entities."),
        _table_spec(FACTS, "Subject-predicate-object facts with the chunks that state them."),
    ],
    ins={"extractions": dg.AssetIn()},
    pool="llm",  # Claude description summaries share the provider limits with extraction
)
def graph_elements(
    context: dg.AssetExecutionContext, graphunified: GraphUnifiedResource, extractions: pa.Table
):
    """Resolve every chunk's mentions into one entity per real-world thing, then aggregate."""
    live = pa.array(sorted(context.instance.get_dynamic_partitions(documents_partitions.name)), pa.string())
    rows = extractions.filter(pc.is_in(extractions.column("document_id"), live)).to_pylist()
    embedder = graphunified.embedder()
    elements = build_graph_elements(
        rows,
        summarize_above=graphunified.settings.extraction.summarize_above_fragments,
        embed=lambda texts: embedder.embed(texts),  # name neighbours for resolution; cached
        summarize=graphunified.summarizer(),
    )
    layout = graphunified.layout
    for name, table in (
        (ENTITIES, elements.entities),
        (RELATIONSHIPS, elements.relationships),
        (FACTS, elements.facts),
    ):
        write_table_atomic(layout.table_path(name), table)
    merges = {f"merged_{rule}": count for rule, count in elements.merges.items()}
    yield dg.MaterializeResult(asset_key=ENTITIES, metadata={"rows": elements.entities.num_rows, **merges})
    yield dg.MaterializeResult(asset_key=RELATIONSHIPS, metadata={"rows": elements.relationships.num_rows})
    yield dg.MaterializeResult(asset_key=FACTS, metadata={"rows": elements.facts.num_rows})
