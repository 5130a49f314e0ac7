"""`chunk_similarity`: the SIMILAR_TO edges between close chunks that `expanded` retrieval walks."""

import dagster as dg
import lancedb
import numpy as np
import pyarrow as pa

from graphunified_assets.defs.observability import stage_timing
from graphunified_assets.defs.partitions import after_documents_change
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.vectors.similarity_memory import (
    SIMILARITY_MEMORY,
    SimilarityMemory,
    vector_digests,
)
from graphunified_assets.lib.vectors.similarity_update import updated_choices
from graphunified_query.core.artifacts import CHUNK_SIMILARITY_FILE, CHUNK_VECTORS
from graphunified_query.core.indexes.chunk_similarity import edges_table
from graphunified_query.core.indexes.manifest import write_manifest
from graphunified_query.core.indexes.neighbour_choices import ChunkSpace, choose
from graphunified_query.core.providers.fused_embedder import primary_vectors
from graphunified_query.core.stores.parquet import write_table_atomic


@dg.asset(
    group_name="indexes", kinds={"numpy"}, deps=[CHUNK_VECTORS], automation_condition=after_documents_change
)
def chunk_similarity(graphunified: GraphUnifiedResource) -> dg.MaterializeResult:
    """Each chunk's nearest chunks above the cosine threshold (exact kNN by blocked matmul); an
    update computes again only the rows its new, changed and removed chunks can change."""
    settings = graphunified.settings.graph
    threshold, neighbours = settings.chunk_similarity_threshold, settings.chunk_similarity_neighbours
    layout = graphunified.layout
    table = lancedb.connect(str(layout.lancedb)).open_table(CHUNK_VECTORS)
    rows = table.search().select(["id", "vector"]).limit(None).to_arrow()  # not the texts
    embedder = graphunified.embedder()
    # The threshold is a cosine of the first model's (fused vectors: its segment).
    vectors = primary_vectors(embedder, _matrix(rows.column("vector")))
    space = ChunkSpace.of(rows.column("id"), vectors)
    digests = vector_digests(vectors)
    key = {
        "threshold": str(threshold),
        "neighbours": str(neighbours),
        "model": embedder.model_name,
        "dimension": str(vectors.shape[1]),
    }
    memory_path = layout.cache / SIMILARITY_MEMORY
    memory = SimilarityMemory.load(memory_path, key)
    update = (
        None
        if memory is None
        else updated_choices(space, digests, memory, threshold=threshold, neighbours=neighbours)
    )
    choices, recomputed = update or (
        choose(space, np.arange(len(space)), threshold=threshold, neighbours=neighbours),
        len(space),
    )
    edges = edges_table(space, choices, threshold=threshold, neighbours=neighbours)
    path = layout.index_path(CHUNK_SIMILARITY_FILE)
    write_table_atomic(path, edges)
    SimilarityMemory(space.ids, digests, choices).save(memory_path, key)
    manifest = write_manifest(
        path, {CHUNK_VECTORS: f"lance-v{table.version}"}, threshold=threshold, neighbours=neighbours
    )
    return dg.MaterializeResult(
        metadata={
            "chunks": rows.num_rows,
            "edges": edges.num_rows,
            "threshold": threshold,
            "build": "update" if update else "full",
            "rows_computed": recomputed,  # against every chunk
            **stage_timing(),
            "built_from": dg.MetadataValue.json(manifest["built_from"]),
        }
    )


def _matrix(column: pa.ChunkedArray) -> np.ndarray:
    """A fixed-size-list vector column as an (n, dimension) float32 matrix."""
    vectors = column.combine_chunks()
    dimension = vectors.type.list_size
    return np.asarray(vectors.flatten().to_numpy(zero_copy_only=False), np.float32).reshape(-1, dimension)
