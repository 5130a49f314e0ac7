"""`entities`, `relationships`, `facts`: corpus-wide tables after entity resolution."""

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc

from graphunified_assets.lib.graph_elements import build_graph_elements
from graphunified_assets.observability import llm_usage, markdown_table, numeric, stage_timing
from graphunified_assets.partitions import after_documents_change, documents_partitions
from graphunified_assets.resources import GraphUnifiedResource
from graphunified_query.parquet_store import write_table_atomic
from graphunified_query.providers.fused_embedder import primary_embedder
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
    summarizer = graphunified.summarizer()
    elements = build_graph_elements(
        rows,
        summarize_above=graphunified.settings.extraction.summarize_above_fragments,
        # Name neighbours for resolution (cached); its cosine threshold is the first model's.
        embed=lambda texts: primary_embedder(embedder).embed(texts),
        summarize=summarizer,
    )
    layout = graphunified.layout
    for name, table in (
        (ENTITIES, elements.entities),
        (RELATIONSHIPS, elements.relationships),
        (FACTS, elements.facts),
    ):
        write_table_atomic(layout.table_path(name), table)
    merges = {f"merged_{rule}": count for rule, count in elements.merges.items()}
    types = (
        pc.value_counts(elements.entities.column("type")).to_pylist() if elements.entities.num_rows else []
    )
    timing = stage_timing()  # one step builds all three tables
    yield dg.MaterializeResult(
        asset_key=ENTITIES,
        metadata={
            **numeric(
                {
                    "rows": elements.entities.num_rows,
                    "documents": len(live),
                    "mentions_merged": sum(elements.merges.values()),
                    **merges,
                }
            ),
            "merges": markdown_table(["rule", "mentions merged"], sorted(elements.merges.items())),
            "types": markdown_table(
                ["type", "entities"], sorted(((t["values"], t["counts"]) for t in types), key=lambda r: -r[1])
            ),
            **llm_usage(getattr(summarizer, "client", None)),
            **timing,
        },
    )
    yield dg.MaterializeResult(
        asset_key=RELATIONSHIPS, metadata={**numeric({"rows": elements.relationships.num_rows}), **timing}
    )
    yield dg.MaterializeResult(
        asset_key=FACTS, metadata={**numeric({"rows": elements.facts.num_rows}), **timing}
    )
