"""Strategy indexes built from the shared tables (BM25, the PPR graph matrix), and the snapshot
that publishes every finished global table and index as one generation for readers.

Each writes a manifest naming the upstream versions it was built from, so the query side can
tell whether the indexes it loads belong together.
"""

import json

import dagster as dg
import lancedb
import pyarrow as pa

from graphunified_assets.defs.observability import stage_timing
from graphunified_assets.defs.partitions import after_documents_change
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.indexes.bm25_tokens import chunk_tokens
from graphunified_assets.lib.vectors.lance_slices import optimize_due, stored_columns
from graphunified_query.core.artifacts import (
    BM25_FOLDER,
    BUILT_FOR_FILE,
    CHUNK_VECTORS,
    ENTITIES,
    GRAPH_EDGES,
    PPR_FILE,
    REPORT_VECTORS,
)
from graphunified_query.core.chunk_order import in_chunk_order
from graphunified_query.core.indexes.bm25 import BM25Index
from graphunified_query.core.indexes.manifest import file_fingerprint, write_manifest
from graphunified_query.core.indexes.ppr_graph import PPRGraph
from graphunified_query.core.stores.lance_versions import release_unused_versions
from graphunified_query.core.stores.parquet import read_table, write_text_atomic
from graphunified_query.core.stores.publication import publish, published_lance_versions
from graphunified_query.core.tables import contextual_text

BM25_INDEX = "bm25_index"
BM25_TOKENS = "bm25_tokens.parquet"  # in the home's cache folder
PPR_GRAPH = "ppr_graph"


def _chunk_rows(graphunified: GraphUnifiedResource) -> tuple[pa.Table, int]:
    """The chunks' id, text and section in `in_chunk_order`: the BM25 ids and the PageRank nodes
    are in their order, which an update's appended rows would change otherwise."""
    db = lancedb.connect(str(graphunified.layout.lancedb))
    version = db.open_table(CHUNK_VECTORS).version  # the rows below are at least this version's
    rows = stored_columns(db, CHUNK_VECTORS, ["id", "text", "section", "document_id", "chunk_index"])
    return in_chunk_order(rows).select(["id", "text", "section"]), version


@dg.asset(
    group_name="indexes", kinds={"numpy"}, deps=[CHUNK_VECTORS], automation_condition=after_documents_change
)
def bm25_index(graphunified: GraphUnifiedResource) -> dg.MaterializeResult:
    """bm25s over every live chunk (rank-bm25's k1/b from settings, Snowball stemming)."""
    settings = graphunified.settings.graph
    chunks, version = _chunk_rows(graphunified)
    if not graphunified.builds(BM25_FOLDER):  # no enabled strategy reads it: an empty index
        chunks = chunks.schema.empty_table()
    texts = [
        contextual_text(section, text)
        for section, text in zip(
            chunks.column("section").to_pylist(), chunks.column("text").to_pylist(), strict=True
        )
    ]
    tokens = chunk_tokens(graphunified.layout.cache / BM25_TOKENS, texts)  # new texts' alone tokenized
    index = BM25Index.build(chunks.column("id").to_pylist(), tokens, k1=settings.bm25_k1, b=settings.bm25_b)
    folder = graphunified.layout.index_path(BM25_FOLDER)
    index.save(folder)
    manifest = write_manifest(
        folder, {CHUNK_VECTORS: f"lance-v{version}"}, k1=settings.bm25_k1, b=settings.bm25_b
    )
    return dg.MaterializeResult(
        metadata={
            "chunks": len(index.ids),
            "built_from": dg.MetadataValue.json(manifest["built_from"]),
            **stage_timing(),
        }
    )


@dg.asset(
    group_name="indexes",
    kinds={"scipy"},
    deps=["graph", CHUNK_VECTORS],
    automation_condition=after_documents_change,
)
def ppr_graph(graphunified: GraphUnifiedResource) -> dg.MaterializeResult:
    """The sparse entity–passage matrix HippoRAG's Personalized PageRank walks."""
    layout = graphunified.layout
    entity_ids = read_table(layout.table_path(ENTITIES), columns=["id"]).column("id")
    chunks, version = _chunk_rows(graphunified)
    edges = read_table(layout.table_path(GRAPH_EDGES), columns=["source", "target", "weight"])
    if not graphunified.builds(PPR_FILE):  # no enabled strategy reads it: an empty graph
        entity_ids, chunks, edges = entity_ids[:0], chunks.schema.empty_table(), edges.schema.empty_table()
    graph = PPRGraph.from_edges(entity_ids, chunks.column("id"), edges)
    path = layout.index_path(PPR_FILE)
    graph.save(path)
    manifest = write_manifest(
        path,
        {
            GRAPH_EDGES: file_fingerprint(layout.table_path(GRAPH_EDGES)),
            ENTITIES: file_fingerprint(layout.table_path(ENTITIES)),
            CHUNK_VECTORS: f"lance-v{version}",
        },
    )
    return dg.MaterializeResult(
        metadata={
            "nodes": len(graph.node_ids),
            "entities": graph.n_entities,
            "edges": graph.n_edges,
            "built_from": dg.MetadataValue.json(manifest["built_from"]),
            **stage_timing(),
        }
    )


@dg.asset(
    group_name="publish",
    kinds={"parquet", "lancedb"},
    deps=[
        CHUNK_VECTORS,
        "graph_vectors",
        REPORT_VECTORS,
        BM25_INDEX,
        PPR_GRAPH,
        "chunk_similarity",
        "communities",
    ],
    automation_condition=after_documents_change,
)
def published_snapshot(
    context: dg.AssetExecutionContext, graphunified: GraphUnifiedResource
) -> dg.MaterializeResult:
    """Publishes the finished global tables and indexes as one generation for readers (`ask`,
    `serve`): hard links plus the LanceDB versions, switched in by one atomic rename, so a
    reader never mixes a rebuild's old and new files. Then releases the LanceDB versions no
    kept generation reads."""
    layout = graphunified.layout
    # What this build served: the query side refuses a strategy whose artifacts were written empty.
    enabled = {"enabled": graphunified.settings.enabled_strategies}
    write_text_atomic(layout.index_path(BUILT_FOR_FILE), json.dumps(enabled) + "\n")
    db = lancedb.connect(str(layout.lancedb))
    versions = {
        path.name.removesuffix(".lance"): db.open_table(path.name.removesuffix(".lance")).version
        for path in sorted(layout.lancedb.glob("*.lance"))
    }
    generation = publish(layout, versions, run_id=context.run_id)
    # Slice updates append small fragments sharing the data of earlier versions: optimizing
    # (compaction rewrites the whole table) waits until they add up.
    in_use = published_lance_versions(layout)
    due = {table: kept for table, kept in in_use.items() if optimize_due(db, layout.lancedb, table)}
    released = release_unused_versions(db, due)
    return dg.MaterializeResult(
        metadata={
            "generation": generation.number,
            "files": len(generation.files),
            "lance_versions": dg.MetadataValue.json(versions),
            "lance_versions_released": sum(released.values()),
            "lance_tables_optimized": len(due),
            **stage_timing(),
        }
    )
