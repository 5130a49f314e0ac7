"""`chunk_similarity`: the SIMILAR_TO edges between close chunks that `expanded` retrieval walks."""

import dagster as dg
import lancedb
import numpy as np
import pyarrow as pa

from graphunified_assets.defs.observability import stage_timing
from graphunified_assets.defs.partitions import after_documents_change
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_query.core.artifacts import CHUNK_SIMILARITY_FILE, CHUNK_VECTORS
from graphunified_query.core.indexes.chunk_similarity import similarity_edges
from graphunified_query.core.indexes.manifest import write_manifest
from graphunified_query.core.providers.fused_embedder import primary_vectors
from graphunified_query.core.stores.parquet import write_table_atomic


@dg.asset(
    group_name="indexes", kinds={"numpy"}, deps=[CHUNK_VECTORS], automation_condition=after_documents_change
)
def chunk_similarity(graphunified: GraphUnifiedResource) -> dg.MaterializeResult:
    """Each chunk's nearest chunks above the cosine threshold (exact kNN by blocked matmul)."""
    settings = graphunified.settings.graph
    layout = graphunified.layout
    table = lancedb.connect(str(layout.lancedb)).open_table(CHUNK_VECTORS)
    rows = table.to_arrow().select(["id", "vector"])
    edges = similarity_edges(
        rows.column("id").to_pylist(),
        # The threshold is a cosine of the first model's (fused vectors: its segment).
        primary_vectors(graphunified.embedder(), _matrix(rows.column("vector"))),
        threshold=settings.chunk_similarity_threshold,
        neighbours=settings.chunk_similarity_neighbours,
    )
    path = layout.index_path(CHUNK_SIMILARITY_FILE)
    write_table_atomic(path, edges)
    manifest = write_manifest(
        path,
        {CHUNK_VECTORS: f"lance-v{table.version}"},
        threshold=settings.chunk_similarity_threshold,
        neighbours=settings.chunk_similarity_neighbours,
    )
    return dg.MaterializeResult(
        metadata={
            "chunks": rows.num_rows,
            "edges": edges.num_rows,
            "threshold": settings.chunk_similarity_threshold,
            **stage_timing(),
            "built_from": dg.MetadataValue.json(manifest["built_from"]),
        }
    )


def _matrix(column: pa.ChunkedArray) -> np.ndarray:
    """A fixed-size-list vector column as an (n, dimension) float32 matrix."""
    vectors = column.combine_chunks()
    dimension = vectors.type.list_size
    return np.asarray(vectors.flatten().to_numpy(zero_copy_only=False), np.float32).reshape(-1, dimension)
