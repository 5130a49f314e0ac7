"""`graph_vectors`: LanceDB indexes of entities, relationships and facts for the graph retrievers."""

import dagster as dg
import lancedb
import numpy as np
import pyarrow as pa

from graphunified_assets.lib.relationship_vectors import relationship_text, relationship_vectors
from graphunified_assets.observability import stage_timing
from graphunified_assets.partitions import after_documents_change
from graphunified_assets.resources import GraphUnifiedResource
from graphunified_query.indexes import ivf
from graphunified_query.indexes.manifest import file_fingerprint, write_manifest
from graphunified_query.parquet_store import read_table
from graphunified_query.tables import ENTITIES, FACTS, RELATIONSHIPS

# What each row is embedded as: the name carries the match, the description the context.
_TEXTS = {
    ENTITIES: lambda row: f"{row['title']}: {row['description']}",
    RELATIONSHIPS: relationship_text,
    FACTS: lambda row: row["text"],
}
VECTOR_TABLES = {ENTITIES: "entity_vectors", RELATIONSHIPS: "relationship_vectors", FACTS: "fact_vectors"}


@dg.asset(
    group_name="indexes",
    kinds={"lancedb"},
    deps=[ENTITIES, RELATIONSHIPS, FACTS],
    automation_condition=after_documents_change,
    pool="models",
)
def graph_vectors(
    context: dg.AssetExecutionContext, graphunified: GraphUnifiedResource
) -> dg.MaterializeResult:
    """Entity, relationship and fact vectors; unchanged descriptions come from the embedding cache."""
    embedder = graphunified.embedder()
    keyword_weight = graphunified.settings.graph.relationship_keyword_weight  # LightRAG's keywords
    texts_of = {**_TEXTS, RELATIONSHIPS: lambda row: relationship_text(row, keywords=keyword_weight > 0)}
    db = lancedb.connect(str(graphunified.layout.lancedb))
    metadata: dict[str, object] = {"model": embedder.model_name}
    for source, target in VECTOR_TABLES.items():
        table = read_table(graphunified.layout.table_path(source))
        rows = table.to_pylist()
        texts = [texts_of[source](row) for row in rows]
        if not texts:
            vectors = np.zeros((0, embedder.dimension), np.float32)
        elif source == RELATIONSHIPS:
            vectors = relationship_vectors(rows, embedder.embed, keyword_weight=keyword_weight)
        else:
            vectors = embedder.embed(texts)
        dimension = vectors.shape[1] if len(texts) else embedder.dimension  # cached rows fix the size
        flat = pa.array(vectors.astype(np.float32).ravel(), pa.float32())
        indexed = pa.table(
            {
                "id": table.column("id"),
                "text": pa.array(texts, pa.string()),
                "vector": pa.FixedSizeListArray.from_arrays(flat, dimension),
                "model": pa.array([embedder.model_name] * len(texts), pa.string()),
            }
        )
        db.create_table(target, data=indexed, mode="overwrite")
        lists_path = graphunified.layout.index_path(ivf.ivf_file(target))
        if indexed.num_rows >= ivf.MIN_ROWS:
            ivf.save(lists_path, ivf.build(vectors, table.column("id").to_pylist()))
            metadata[f"{target}_lists"] = round(ivf.LISTS_PER_SQRT_ROWS * indexed.num_rows**0.5)
        else:
            lists_path.unlink(missing_ok=True)  # small tables are searched exactly
        metadata[target] = indexed.num_rows
        context.log.info(f"{target}: {indexed.num_rows} rows")
    metadata["texts_embedded"] = embedder.texts_embedded
    layout = graphunified.layout
    manifest = write_manifest(
        layout.index_path("graph_vectors"),
        {source: file_fingerprint(layout.table_path(source)) for source in VECTOR_TABLES},
        model=embedder.model_name,
    )
    metadata["built_from"] = dg.MetadataValue.json(manifest["built_from"])
    metadata.update(stage_timing())
    return dg.MaterializeResult(metadata=metadata)
