"""`graph_vectors`: LanceDB indexes of entities, relationships and facts for the graph retrievers.

Each table streams through in slices of ``SLICE_ROWS``: rows are read, embedded (each distinct
text once; unchanged texts from the embedding cache) and written to LanceDB slice by slice, so the
step holds one slice's Python rows and vectors instead of every row of the three tables (the
12.6K-passage build's peak). A table large enough for a faiss index gets it from its stored
vectors afterwards, a slice at a time (`_clustered`).

An update (same model and composition settings as the manifest records) writes slices instead:
each row's text, composed column by column, is compared with the stored table's, only new and
changed rows are computed, and the table gets one delete and one append (`lib/lance_slices.py`).
The faiss index of a large table removes the stale rows and adds the computed ones by id
(`core/indexes/ann.py`); it is re-trained only once the table has moved 10 % from its size.
"""

import copy
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import lancedb
import numpy as np
import pyarrow as pa

from graphunified_assets.defs.observability import Metadata, stage_timing
from graphunified_assets.defs.partitions import after_documents_change
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.vectors.composed_vectors import (
    ENTITY_EXPONENT,
    NAME_WEIGHT,
    description_vectors,
    entity_pieces,
    entity_vectors,
)
from graphunified_assets.lib.vectors.distinct_embedding import embed_rows
from graphunified_assets.lib.vectors.graph_vector_texts import ROW_TEXTS, column_texts
from graphunified_assets.lib.vectors.lance_slices import (
    SliceChange,
    apply_change,
    plan_change,
    stored_rows,
    vector_matrix,
)
from graphunified_assets.lib.vectors.relationship_vectors import (
    PAIR_WEIGHT,
    relationship_text,
    relationship_vectors,
)
from graphunified_assets.ops.index_progress import embed_in_tenths, work_progress
from graphunified_query.core.artifacts import (
    ENTITIES,
    FACTS,
    GRAPH_VECTORS_MANIFEST,
    RELATIONSHIPS,
    VECTOR_TABLES,
    ann_file,
)
from graphunified_query.core.indexes import ann
from graphunified_query.core.indexes.manifest import file_fingerprint, read_manifest, write_manifest
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.progress import Progress
from graphunified_query.core.providers import CachedEmbedder
from graphunified_query.core.stores.parquet import read_table

# The graph tables embedded here; the reports' vectors are `strategy_indexes.report_vectors`'.
GRAPH_VECTOR_TABLES = {k: v for k, v in VECTOR_TABLES.items() if k in (ENTITIES, RELATIONSHIPS, FACTS)}
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
    metadata: Metadata = {"model": embedder.model_name}
    calls_before, embedded_before = embedder.provider_calls, embedder.texts_embedded
    composed = graphunified.composed_vectors() & {ENTITIES, RELATIONSHIPS}
    vectorizer = _Vectorizer(embedder, keyword_weight=keyword_weight, composed=composed)
    layout = graphunified.layout
    # Same composition settings as the stored vectors: only changed rows are computed. Whatever
    # else decides how rows become vectors belongs here too (a change rewrites every table).
    composition = {
        "keyword_weight": keyword_weight,
        "pair_weight": PAIR_WEIGHT,
        "composed": sorted(composed),  # tables composed from their sentences, the others whole
        "entity_exponent": ENTITY_EXPONENT,
        "name_weight": NAME_WEIGHT,
    }
    previous = read_manifest(layout.index_path(GRAPH_VECTORS_MANIFEST)) or {}
    same_settings = previous.get("model") == embedder.model_name and all(
        previous.get(name) == value for name, value in composition.items()
    )
    # Every row is computed: the model sees the whole step's texts at once. Per table, the distinct
    # texts it adds (its texts_embedded on a cold build; the model ran before the tables' loop).
    progress = work_progress(graphunified.settings.logging, "graph texts embedded", "texts")
    added = _prefetch(vectorizer, layout, progress) if not same_settings else {}
    for source, target in GRAPH_VECTOR_TABLES.items():
        embedded_before_table = embedder.texts_embedded
        table = read_table(layout.table_path(source))
        lists_path = layout.index_path(ann_file(target))
        update = _updated(db, target, table, source, vectorizer) if same_settings else None
        if update is None:
            slices = _slices(table, source, vectorizer)
            if not _write(db, target, slices):  # no rows: an empty table of the model's size
                empty = np.zeros((0, embedder.dimension), np.float32)
                db.create_table(
                    target, data=_batch(pa.array([], pa.string()), [], empty, ""), mode="overwrite"
                )
            metadata[f"{target}_computed"] = table.num_rows
            metadata[f"{target}_lists"] = _clustered(lists_path, table, db, target)
        else:
            change, computed = update
            metadata[f"{target}_computed"] = len(change.compute)
            metadata[f"{target}_deleted"] = len(change.stale)
            metadata[f"{target}_lists"] = _updated_lists(lists_path, table, change, computed, db, target)
        metadata[target] = table.num_rows
        metadata[f"{target}_texts"] = added.get(source, embedder.texts_embedded - embedded_before_table)
        context.log.info(f"{target}: {table.num_rows} rows")
    metadata.update(
        {
            "texts_requested": vectorizer.requested,  # per row: its texts (three per relationship)
            "texts_distinct": vectorizer.distinct,  # what reached the cache, once per slice
            "texts_embedded": embedder.texts_embedded - embedded_before,  # what the model computed
            "provider_calls": embedder.provider_calls - calls_before,
        }
    )
    manifest = write_manifest(
        layout.index_path(GRAPH_VECTORS_MANIFEST),
        {source: file_fingerprint(layout.table_path(source)) for source in GRAPH_VECTOR_TABLES},
        model=embedder.model_name,
        **composition,
    )
    metadata["built_from"] = dg.MetadataValue.json(manifest["built_from"])
    metadata.update(stage_timing())
    return dg.MaterializeResult(metadata=metadata)


class _Vectorizer:
    """How this run turns rows into vectors: the embedder (counting the texts asked for), its model
    and the composition settings the manifest records."""

    def __init__(self, embedder: CachedEmbedder, *, keyword_weight: float, composed: frozenset[str]) -> None:
        self.embedder = embedder
        self.model = embedder.model_name
        self.keyword_weight = keyword_weight  # > 0: relationships' LightRAG keywords join their vectors
        self.composed = composed  # tables composed from their sentences (`embedding.composed_vectors`)
        self.requested = 0
        self.distinct = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.distinct += len(texts)
        return self.embedder.embed(texts)

    def batch(self, part: pa.Table, source: str) -> tuple[pa.RecordBatch, np.ndarray]:
        """Rows of ``source`` → their LanceDB batch and its float32 vectors."""
        texts, vectors = self.vectors(part.to_pylist(), source)
        return _batch(part.column("id").combine_chunks(), texts, vectors, self.model), vectors

    def vectors(self, rows: list[dict], source: str) -> tuple[list[str], np.ndarray]:
        """Rows → (their texts, their float32 vectors)."""
        if source == RELATIONSHIPS:
            texts = [relationship_text(row, keywords=self.keyword_weight > 0) for row in rows]
            self.requested += 3 * len(rows)  # description, source name, target name
            describe = (lambda t: description_vectors(t, self.embed)) if source in self.composed else None
            vectors = relationship_vectors(
                rows, self.embed, keyword_weight=self.keyword_weight, describe=describe
            )
        elif source in self.composed:  # entities, from the name and its sentences
            texts = [ROW_TEXTS[source](row) for row in rows]
            self.requested += sum(len(entity_pieces(row)) for row in rows)
            vectors = entity_vectors(rows, self.embed)
        else:
            texts = [ROW_TEXTS[source](row) for row in rows]
            self.requested += len(rows)
            vectors = embed_rows(texts, self.embed)
        return texts, np.ascontiguousarray(vectors, dtype=np.float32)


def _prefetch(vectorizer: _Vectorizer, layout: HomeLayout, progress: Progress) -> dict[str, int]:
    """Embeds every distinct text the three tables ask for in one call, so the model's batches
    are sorted by token count across the whole step; the slices then read them from the cache.
    Per slice and per part of a row (descriptions, names, keywords), each call's batches mixed
    lengths (60 passages: padded/real 1.08 in this step). The texts are found by running the
    slices' own composition with zero vectors, so no second list of what gets embedded exists.
    Returns the distinct texts each table added."""
    wanted: dict[str, None] = {}  # insertion-ordered set
    added: dict[str, int] = {}

    def record(texts: list[str]) -> np.ndarray:
        wanted.update(dict.fromkeys(texts))
        return np.zeros((len(texts), vectorizer.embedder.dimension), np.float32)

    dry = copy.copy(vectorizer)
    dry.embed = record  # type: ignore[method-assign]
    for source in GRAPH_VECTOR_TABLES:
        before = len(wanted)
        table = read_table(layout.table_path(source))
        for start in range(0, table.num_rows, SLICE_ROWS):
            dry.vectors(table.slice(start, SLICE_ROWS).to_pylist(), source)
        added[source] = len(wanted) - before
    embed_in_tenths(vectorizer.embedder.embed, wanted, progress)
    return added


def _write(
    db: lancedb.DBConnection, target: str, slices: Iterator[tuple[pa.RecordBatch, np.ndarray]]
) -> bool:
    """Streams the slices into one new version of ``target``; False when there are no rows. No
    vectors are kept: the faiss index reads them back from the table (`_clustered`)."""
    first = next(slices, None)
    if first is None:
        return False

    def batches() -> Iterator[pa.RecordBatch]:
        yield first[0]
        for batch, _ in slices:
            yield batch

    db.create_table(
        target, data=pa.RecordBatchReader.from_batches(first[0].schema, batches()), mode="overwrite"
    )
    return True


def _slices(
    table: pa.Table, source: str, vectorizer: _Vectorizer
) -> Iterator[tuple[pa.RecordBatch, np.ndarray]]:
    """(LanceDB batch, its float32 vectors) per ``SLICE_ROWS`` rows of ``table``."""
    for start in range(0, table.num_rows, SLICE_ROWS):
        yield vectorizer.batch(table.slice(start, SLICE_ROWS), source)


def _updated(
    db: lancedb.DBConnection,
    target: str,
    table: pa.Table,
    source: str,
    vectorizer: _Vectorizer,
) -> tuple[SliceChange, dict[str, np.ndarray]] | None:
    """Writes only the rows whose text changed (deleting the stale ones) → the change and each
    computed row's vector by id; None when the table must be rewritten (nothing stored, another
    model, most rows changed)."""
    if table.num_rows == 0:
        return None
    stored = stored_rows(db, target, ["id", "text", "model"])
    ids = table.column("id")
    change = plan_change(
        ids, column_texts(table, source, vectorizer.keyword_weight), stored, key="id", model=vectorizer.model
    )
    if change is None:
        return None
    batch, computed = None, {}
    if len(change.compute):
        part = table.take(pa.array(change.compute))
        batch, vectors = vectorizer.batch(part, source)
        computed = dict(zip(part.column("id").to_pylist(), vectors, strict=True))
    apply_change(db.open_table(target), "id", change.stale, batch)
    return change, computed


def _clustered(path: Path, table: pa.Table, db: lancedb.DBConnection, target: str) -> int:
    """The faiss index of ``target``, trained afresh on a sample of its stored vectors and filled
    from them slice by slice → its lists; none for a table searched exactly. The step never holds
    every vector twice: a matrix of the 316K relationship vectors is 485 MB, and so is the index."""
    if table.num_rows < ann.MIN_ROWS:
        ann.remove(path)
        return 0
    positions = ann.sample_positions(table.num_rows)
    picked, offset = [], 0
    for batch in _stored_batches(db, target):  # the sample, in one pass
        wanted = positions[(positions >= offset) & (positions < offset + batch.num_rows)] - offset
        picked.append(vector_matrix(batch.take(pa.array(wanted))))
        offset += batch.num_rows
    parts = ((batch.column("id").to_pylist(), vector_matrix(batch)) for batch in _stored_batches(db, target))
    built = ann.build_from(np.concatenate(picked), parts, table.column("id").to_pylist())
    ann.save(path, built)
    return built.lists


def _stored_batches(db: lancedb.DBConnection, target: str) -> Iterator[pa.RecordBatch]:
    query = db.open_table(target).search().select(["id", "vector"]).limit(None)
    yield from query.to_batches(SLICE_ROWS)


def _updated_lists(
    path: Path,
    table: pa.Table,
    change: SliceChange,
    computed: dict[str, np.ndarray],
    db: lancedb.DBConnection,
    target: str,
) -> int:
    """The faiss index after a slice update: kept when it holds these rows, the stale rows removed
    and the computed ones added by id, or re-trained from the stored vectors → its lists."""
    if table.num_rows < ann.MIN_ROWS:
        return _clustered(path, table, db, target)
    ids = table.column("id").to_pylist()
    if (kept := ann.lists_holding(path, ids)) is not None:  # no row changed
        return kept
    previous = ann.load_previous(path)
    found = ann.updated(previous, ids, change.stale, computed) if previous is not None else None
    if found is None:
        return _clustered(path, table, db, target)
    ann.save(path, found)
    return found.lists


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
