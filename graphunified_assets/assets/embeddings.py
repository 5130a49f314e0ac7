"""`chunk_embeddings`: one vector per chunk, from the content-hash embedding cache or the model."""

import time

import dagster as dg
import numpy as np
import pyarrow as pa

from graphunified_assets.partitions import per_document_asset
from graphunified_assets.resources import GraphUnifiedResource
from graphunified_query.tables import CHUNK_EMBEDDINGS, chunk_embeddings_schema, contextual_text

PROGRESS_EVERY = 512  # texts between progress log lines


@per_document_asset(table=CHUNK_EMBEDDINGS, group_name="embed", pool="models")
def chunk_embeddings(
    context: dg.AssetExecutionContext, graphunified: GraphUnifiedResource, chunks: pa.Table
) -> pa.Table:
    """Chunk vectors (L2-normalized); unchanged text is served from the cache, never re-embedded."""
    embedder = graphunified.embedder()
    texts = [
        contextual_text(section, text)
        for section, text in zip(
            chunks.column("section").to_pylist(), chunks.column("text").to_pylist(), strict=True
        )
    ]
    calls_before, embedded_before = embedder.provider_calls, embedder.texts_embedded
    started = time.perf_counter()
    parts = []
    for start in range(0, len(texts), PROGRESS_EVERY):
        parts.append(embedder.embed(texts[start : start + PROGRESS_EVERY]))
        done = min(start + PROGRESS_EVERY, len(texts))
        context.log.info(f"embedded {done}/{len(texts)} chunks ({time.perf_counter() - started:.1f}s)")
    vectors = np.vstack(parts) if parts else np.zeros((0, embedder.dimension), dtype=np.float32)
    embedded = embedder.texts_embedded - embedded_before
    context.add_output_metadata(
        {
            "model": embedder.model_name,
            "dimension": embedder.dimension,
            "chunks": len(texts),
            "texts_embedded": embedded,
            "cache_hits": len(texts) - embedded,
            "provider_calls": embedder.provider_calls - calls_before,
            "seconds": round(time.perf_counter() - started, 2),
        }
    )
    return embeddings_table(chunks, vectors, embedder.model_name)


def embeddings_table(chunks: pa.Table, vectors: np.ndarray, model: str) -> pa.Table:
    dimension = vectors.shape[1]
    flat = pa.array(vectors.astype(np.float32).ravel(), type=pa.float32())
    return pa.Table.from_arrays(
        [
            chunks.column("id"),
            chunks.column("document_id"),
            pa.FixedSizeListArray.from_arrays(flat, dimension),
            pa.array([model] * len(vectors), type=pa.string()),
        ],
        schema=chunk_embeddings_schema(dimension),
    )
