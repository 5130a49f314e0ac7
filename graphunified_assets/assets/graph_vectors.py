"""`graph_vectors`: LanceDB indexes of entities, relationships and facts for the graph retrievers.

Each table streams through in slices of ``SLICE_ROWS``: rows are read, embedded (each distinct
text once; unchanged texts from the embedding cache) and written to LanceDB slice by slice, so the
step holds one slice's Python rows and vectors instead of every row of the three tables (the
12.6K-passage build's peak). Only tables large enough for inverted lists keep their whole float32
matrix, which the lists are built from.
"""

from collections.abc import Iterator

import dagster as dg
import lancedb
import numpy as np
import pyarrow as pa

from graphunified_assets.lib.distinct_embedding import embed_rows
from graphunified_assets.lib.relationship_vectors import relationship_text, relationship_vectors
from graphunified_assets.observability import stage_timing
from graphunified_assets.partitions import after_documents_change
from graphunified_assets.resources import GraphUnifiedResource
from graphunified_query.indexes import ivf
from graphunified_query.indexes.manifest import file_fingerprint, write_manifest
from graphunified_query.parquet_store import read_table
from graphunified_query.providers import CachedEmbedder
from graphunified_query.tables import ENTITIES, FACTS, RELATIONSHIPS

# What each row is embedded as: the name carries the match, the description the context.
_TEXTS = {
    ENTITIES: lambda row: f"{row['title']}: {row['description']}",
    RELATIONSHIPS: relationship_text,
    FACTS: lambda row: row["text"],
}
VECTOR_TABLES = {ENTITIES: "entity_vectors", RELATIONSHIPS: "relationship_vectors", FACTS: "fact_vectors"}
SLICE_ROWS = 16_384  # rows per slice: ~25 MB of vectors, a few tens of MB of Python rows


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
    db = lancedb.connect(str(graphunified.layout.lancedb))
    metadata: dict[str, object] = {"model": embedder.model_name}
    calls_before, embedded_before = embedder.provider_calls, embedder.texts_embedded
    counter = _Counter(embedder)
    for source, target in VECTOR_TABLES.items():
        table = read_table(graphunified.layout.table_path(source))
        keep_matrix = table.num_rows >= ivf.MIN_ROWS
        slices = _slices(table, source, counter, embedder.model_name, keyword_weight)
        matrix = _write(db, target, slices, table.num_rows if keep_matrix else 0)
        if matrix is None:  # no rows: an empty table of the model's size
            empty = np.zeros((0, embedder.dimension), np.float32)
            db.create_table(target, data=_batch(pa.array([], pa.string()), [], empty, ""), mode="overwrite")
        lists_path = graphunified.layout.index_path(ivf.ivf_file(target))
        if keep_matrix:
            previous = ivf.load_previous(lists_path)  # an update re-clusters from these centroids
            ivf.save(lists_path, ivf.build(matrix, table.column("id").to_pylist(), previous=previous))
            metadata[f"{target}_lists"] = round(ivf.LISTS_PER_SQRT_ROWS * table.num_rows**0.5)
        else:
            lists_path.unlink(missing_ok=True)  # small tables are searched exactly
        metadata[target] = table.num_rows
        context.log.info(f"{target}: {table.num_rows} rows")
    metadata.update(
        {
            "texts_requested": counter.requested,  # one per row (three per relationship)
            "texts_distinct": counter.distinct,  # what reached the cache, once per slice
            "texts_embedded": embedder.texts_embedded - embedded_before,  # what the model computed
            "provider_calls": embedder.provider_calls - calls_before,
        }
    )
    layout = graphunified.layout
    manifest = write_manifest(
        layout.index_path("graph_vectors"),
        {source: file_fingerprint(layout.table_path(source)) for source in VECTOR_TABLES},
        model=embedder.model_name,
    )
    metadata["built_from"] = dg.MetadataValue.json(manifest["built_from"])
    metadata.update(stage_timing())
    return dg.MaterializeResult(metadata=metadata)


class _Counter:
    """The embedder as the slices call it, counting the texts they ask for."""

    def __init__(self, embedder: CachedEmbedder) -> None:
        self.embedder = embedder
        self.requested = 0
        self.distinct = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.distinct += len(texts)
        return self.embedder.embed(texts)


def _write(
    db: lancedb.DBConnection,
    target: str,
    slices: Iterator[tuple[pa.RecordBatch, np.ndarray]],
    keep_rows: int,
) -> np.ndarray | None:
    """Streams the slices into one new version of ``target``; returns every vector when
    ``keep_rows`` (the table's row count: inverted lists are built from them), else only the first
    slice's, or None when there are no rows. Kept vectors go straight into one preallocated
    matrix: stacking the slices at the end held each of them twice (316K relationships: 485 MB)."""
    first = next(slices, None)
    if first is None:
        return None
    matrix = np.empty((keep_rows, first[1].shape[1]), np.float32) if keep_rows else first[1]
    filled = 0

    def keep(vectors: np.ndarray) -> None:
        nonlocal filled
        if keep_rows:
            matrix[filled : filled + len(vectors)] = vectors
            filled += len(vectors)

    def batches() -> Iterator[pa.RecordBatch]:
        keep(first[1])
        yield first[0]
        for batch, vectors in slices:
            keep(vectors)
            yield batch

    db.create_table(
        target, data=pa.RecordBatchReader.from_batches(first[0].schema, batches()), mode="overwrite"
    )
    return matrix


def _slices(
    table: pa.Table, source: str, counter: _Counter, model: str, keyword_weight: float
) -> Iterator[tuple[pa.RecordBatch, np.ndarray]]:
    """(LanceDB batch, its float32 vectors) per ``SLICE_ROWS`` rows of ``table``;
    ``keyword_weight`` > 0 adds relationships' LightRAG keywords to their vectors."""
    for start in range(0, table.num_rows, SLICE_ROWS):
        part = table.slice(start, SLICE_ROWS)
        rows = part.to_pylist()
        if source == RELATIONSHIPS:
            texts = [relationship_text(row, keywords=keyword_weight > 0) for row in rows]
            counter.requested += 3 * len(rows)  # description, source name, target name
            vectors = relationship_vectors(rows, counter.embed, keyword_weight=keyword_weight)
        else:
            texts = [_TEXTS[source](row) for row in rows]
            counter.requested += len(rows)
            vectors = embed_rows(texts, counter.embed)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        yield _batch(part.column("id").combine_chunks(), texts, vectors, model), vectors


def _batch(ids: pa.Array, texts: list[str], vectors: np.ndarray, model: str) -> pa.RecordBatch:
    flat = pa.array(vectors.ravel(), pa.float32())
    return pa.RecordBatch.from_pydict(
        {
            "id": ids,
            "text": pa.array(texts, pa.string()),
            "vector": pa.FixedSizeListArray.from_arrays(flat, vectors.shape[1]),
            "model": pa.array([model] * len(texts), pa.string()),
        }
    )
