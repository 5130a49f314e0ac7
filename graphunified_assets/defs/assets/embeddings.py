"""`chunk_embeddings`: one vector per chunk, from the content-hash embedding cache or the model."""

import itertools
import time

import dagster as dg
import numpy as np
import pyarrow as pa

from graphunified_assets.defs.failure_metadata import failure_metadata, record_failures
from graphunified_assets.defs.io_manager import without_partitions
from graphunified_assets.defs.observability import embedding_usage
from graphunified_assets.defs.partitions import per_document_asset
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.ingest.index_state import IndexState
from graphunified_assets.ops.index_progress import work_progress
from graphunified_query.core.artifacts import CHUNK_EMBEDDINGS
from graphunified_query.core.providers import CachedEmbedder
from graphunified_query.core.providers.embedding import EmbeddingError
from graphunified_query.core.tables import chunk_embeddings_schema, contextual_text

# Texts per embedding call: a tenth of the step's (a progress line each), 32 to 512 (bigger
# batches gain nothing on the local model and stall the progress line).
SLICE_MIN, SLICE_MAX = 32, 512
STAGE = "embed"  # the failures table's stage for documents whose chunks could not be embedded


@per_document_asset(table=CHUNK_EMBEDDINGS, group_name="embed", pool="models")
def chunk_embeddings(
    context: dg.AssetExecutionContext, graphunified: GraphUnifiedResource, chunks: pa.Table
) -> pa.Table:
    """Chunk vectors (L2-normalized); unchanged text is served from the cache, never re-embedded.

    A document whose chunks the provider cannot embed after its retries is left out (no file),
    recorded in the failures table and reported in the metadata; the others complete.
    """
    embedder = graphunified.embedder()
    texts = [
        contextual_text(section, text)
        for section, text in zip(
            chunks.column("section").to_pylist(), chunks.column("text").to_pylist(), strict=True
        )
    ]
    calls_before, embedded_before = embedder.provider_calls, embedder.texts_embedded
    started = time.perf_counter()
    documents = chunks.column("document_id").to_pylist()
    rows: list[np.ndarray | None] = [None] * len(texts)
    failed: dict[str, str] = {}
    progress = work_progress(graphunified.settings.logging, "chunks embedded", "chunks")
    step = min(max(len(texts) // 10, SLICE_MIN), SLICE_MAX)
    for start in range(0, len(texts), step):
        end = min(start + step, len(texts))
        for offset, vector in _embed_slice(embedder, texts[start:end], documents[start:end], failed):
            rows[start + offset] = vector
        progress(end, len(texts), f"{len(failed)} document(s) failed" if failed else "")
    # The run's own log keeps the step's outcome (the UI's run view, json logs with run and step).
    done = sum(1 for row in rows if row is not None)  # what was embedded, not just tried
    lost = f", {len(failed)} document(s) failed" if failed else ""
    context.log.info(f"embedded {done}/{len(texts)} chunks{lost} ({time.perf_counter() - started:.1f}s)")
    state = IndexState(graphunified.layout.index_state)
    record_failures(context, state, STAGE, failed, what="embedding")
    # A document that failed in one slice is dropped whole, even if its other chunks embedded.
    kept = [i for i, document_id in enumerate(documents) if document_id not in failed]
    # With which model: another one makes these documents pending (`plan_update`). Every
    # document of the run, also one without chunks (it has nothing to re-embed either).
    state.mark_embedded([k for k in context.partition_keys if k not in failed], embedder.model_name)
    embedded = embedder.texts_embedded - embedded_before
    context.add_output_metadata(
        {
            "model": embedder.model_name,
            "dimension": embedder.dimension,
            "chunks": len(kept),
            "texts_embedded": embedded,
            "cache_hits": len(texts) - embedded,
            "provider_calls": embedder.provider_calls - calls_before,
            "seconds": round(time.perf_counter() - started, 2),
            **embedding_usage(),
            **failure_metadata(failed),
        }
    )
    if not failed:
        return embeddings_table(chunks, _stacked(rows, embedder.dimension), embedder.model_name)
    vectors = _stacked([rows[i] for i in kept], 1)
    table = embeddings_table(chunks.take(pa.array(kept, pa.int64())), vectors, embedder.model_name)
    return without_partitions(table, failed)


def _stacked(rows: list[np.ndarray | None], dimension: int) -> np.ndarray:
    """The rows as one matrix; every one was embedded (a failed document's rows are left out first)."""
    vectors = [row for row in rows if row is not None]
    if len(vectors) != len(rows):
        raise RuntimeError(
            f"{len(rows) - len(vectors)} chunk(s) of documents that did not fail have no vector"
        )
    return np.vstack(vectors) if vectors else np.zeros((0, dimension), dtype=np.float32)


def _embed_slice(
    embedder: CachedEmbedder, texts: list[str], documents: list[str], failed: dict[str, str]
) -> list[tuple[int, np.ndarray]]:
    """(row, vector) for the slice's rows; when the provider fails for good, each document is tried
    on its own, and those that still fail go into ``failed`` with the error instead of rows."""
    try:
        return list(enumerate(embedder.embed(texts)))
    except EmbeddingError as error:
        if len(set(documents)) == 1:
            failed[documents[0]] = str(error)
            return []
    rows: list[tuple[int, np.ndarray]] = []
    for document_id, group in itertools.groupby(range(len(texts)), key=documents.__getitem__):
        indexes = list(group)
        try:
            rows.extend(zip(indexes, embedder.embed([texts[i] for i in indexes]), strict=True))
        except EmbeddingError as error:
            failed[document_id] = str(error)
    return rows


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
