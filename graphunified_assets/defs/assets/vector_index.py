"""`chunk_vectors`: the LanceDB chunk index every dense retriever searches, plus its checks.

An update changes only the rows of documents whose files changed since the table was written (the
record of `lib/vectors/chunk_sources.py`): their rows are deleted and their new ones appended
(`lance_slices.apply_change`), no other document's files are read. Loading every document's
chunks and embeddings and rewriting the table took ~1.2 s of each one-document update at 12.6K
documents. Without a record, when most documents changed, or when the new rows would not fit the
table (another model or schema), the table is rewritten whole from every document's files.
"""

import dagster as dg
import lancedb
import pyarrow as pa
import pyarrow.compute as pc

from graphunified_assets.defs.io_manager import no_rows_failure
from graphunified_assets.defs.observability import stage_timing
from graphunified_assets.defs.partitions import DOCUMENTS_PARTITIONS, after_documents_change
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.ingest.pruning import prune_partition_files
from graphunified_assets.lib.vectors import lance_slices
from graphunified_assets.lib.vectors.chunk_rows import attach_vectors, row_contributions, text_contributions
from graphunified_assets.lib.vectors.chunk_sources import (
    SOURCES_FILE,
    STAMPED,
    ChunkSources,
    SourceChange,
    files_present,
    present_files,
    stamps_now,
)
from graphunified_assets.lib.vectors.lance_slices import apply_change, stored_columns, stored_rows
from graphunified_assets.ops.partition_reads import (
    DocumentFile,
    consolidated_copy,
    live_row_count,
    read_documents,
)
from graphunified_query.core.artifacts import CHUNK_EMBEDDINGS, CHUNK_VECTORS, CHUNKS, DOCUMENTS, EXTRACTIONS
from graphunified_query.core.indexes.manifest import listed_fingerprint, write_manifest
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.providers import EmbeddingModelMismatch
from graphunified_query.core.stores.parquet import read_partitions

PER_DOCUMENT_TABLES = (DOCUMENTS, CHUNKS, CHUNK_EMBEDDINGS, EXTRACTIONS)
TEXT_COLUMNS = ["id", "format", "text"]  # of the documents: the corpus table's


@dg.asset(
    group_name="vectors",
    kinds={"lancedb"},
    # Not inputs: Dagster would load every document's rows; an update reads the changed ones.
    deps=["chunks", "chunk_embeddings"],
    automation_condition=after_documents_change,
)
def chunk_vectors(
    context: dg.AssetExecutionContext, graphunified: GraphUnifiedResource
) -> dg.MaterializeResult:
    """LanceDB table of every chunk's vector with its text; removed documents are pruned. An update
    writes only the rows of new, rewritten and removed documents."""
    layout = graphunified.layout
    live = context.instance.get_dynamic_partitions(DOCUMENTS_PARTITIONS)
    pruned = prune_partition_files(layout, PER_DOCUMENT_TABLES, set(live))
    # Stamped before any file is read: one rewritten meanwhile is read again by the next update.
    listings = {name: layout.partition_stats(name) for name in STAMPED}
    now = stamps_now(live, listings)
    for name in (CHUNKS, CHUNK_EMBEDDINGS):  # as loading them as inputs said
        present = files_present(now, name)
        if present < len(live):
            context.log.warning(
                f"{len(live) - present} partition(s) of {name} are not materialized; skipping them"
            )
        if not present:
            raise no_rows_failure(name, layout)
    db = lancedb.connect(str(layout.lancedb))
    path = layout.cache / SOURCES_FILE
    previous = ChunkSources.load(path)
    written = _update(layout, db, previous, now) if previous is not None else None
    build = "update" if written is not None else "rewrite"
    sources, read = written or _rewrite(layout, db, now)
    sources.save(path)
    model = next(iter(sources.models()), "")
    manifest = write_manifest(
        layout.index_path(CHUNK_VECTORS),
        {
            name: listed_fingerprint(layout.partition_dir(name), listings[name])
            for name in (CHUNKS, CHUNK_EMBEDDINGS)
        },
        model=model,
    )
    return dg.MaterializeResult(
        metadata={
            "rows": db.open_table(CHUNK_VECTORS).count_rows(),
            "documents": len(live),
            "pruned_documents": len(pruned),
            "model": model,
            "corpus": dg.MetadataValue.md(sources.corpus()),
            "mean_chunk_tokens": sources.mean_chunk_tokens(),
            "build": build,
            "documents_read": read,  # documents whose chunks and embeddings were read
            **stage_timing(),
            "built_from": dg.MetadataValue.json(manifest["built_from"]),
        }
    )


def _update(
    layout: HomeLayout, db: lancedb.DBConnection, sources: ChunkSources, now: pa.Table
) -> tuple[ChunkSources, int] | None:
    """The rows of changed documents replaced → (the record after, documents read); None when
    the table is to be rewritten whole."""
    change = sources.change(now)
    touched = set(change.rows) | set(change.stale)
    if len(touched) > lance_slices.REWRITE_SHARE * now.num_rows:
        return None  # most documents changed: one rewrite costs less and leaves one fragment
    # Each document's rows, counted (8 ms at 12.6K passages): a table missing, damaged (an
    # `index --refresh` repairs it) or not the one the record describes is rewritten.
    stored = stored_rows(db, CHUNK_VECTORS, ["document_id"])
    if stored is None or not sources.holds(stored.column("document_id")):
        return None
    table = db.open_table(CHUNK_VECTORS)
    chunks = _read(layout, CHUNKS, now, change.rows)
    embeddings = _read(layout, CHUNK_EMBEDDINGS, now, change.rows)
    rows = attach_vectors(chunks, embeddings) if chunks is not None and embeddings is not None else None
    models = set(pc.unique(embeddings.column("model")).to_pylist()) if embeddings is not None else set()
    if len(sources.models() | models) > 1:
        return None  # another model than the table's: rewritten, or refused if documents mix them
    if rows is not None and not rows.schema.equals(table.schema, check_metadata=False):
        return None  # other columns or types: the table is written whole
    apply_change(table, "document_id", change.stale, rows)
    texts = _read(layout, DOCUMENTS, now, change.texts, TEXT_COLUMNS)
    contributions = row_contributions(change.rows, chunks, embeddings, rows)
    updated = sources.updated(now, change, contributions, text_contributions(change.texts, texts))
    return updated, len(change.rows)


def _read(
    layout: HomeLayout, table: str, now: pa.Table, documents: list[str], columns: list[str] | None = None
) -> pa.Table | None:
    """The present files of ``documents`` in ``table``, read directly (few); None for none."""
    present = present_files(now, table, documents)
    if not present:
        return None
    rows = read_partitions([layout.partition_path(table, document) for document, _ in present])
    return rows.select(columns) if columns is not None else rows


def _rewrite(layout: HomeLayout, db: lancedb.DBConnection, now: pa.Table) -> tuple[ChunkSources, int]:
    """The table written whole from every live document's files, read through their consolidated
    copies → (the record of them, documents read)."""
    live = now.column("document_id").to_pylist()
    files = {name: _files(layout, name, now) for name in STAMPED}
    chunks = read_documents(files[CHUNKS], "document_id", consolidated_copy(layout.cache, CHUNKS))
    chunks = chunks.filter(pc.is_in(chunks.column("document_id"), pa.array(sorted(live), pa.string())))
    copy = consolidated_copy(layout.cache, CHUNK_EMBEDDINGS)
    embeddings = read_documents(files[CHUNK_EMBEDDINGS], "document_id", copy)
    models = set(embeddings.column("model").to_pylist())
    if len(models) > 1:
        raise EmbeddingModelMismatch(
            f"chunk_embeddings mixes models {sorted(models)}; re-embed every document with one model "
            "(delete <home>/tables/chunk_embeddings and run `python -m graphunified_assets index`)."
        )
    rows = attach_vectors(chunks, embeddings)
    db.create_table(CHUNK_VECTORS, data=rows, mode="overwrite")
    # The documents' text alone, their consolidated copy left as it is: reading and rewriting it
    # whole took 0.2-0.4 s at 12.6K documents.
    copy = consolidated_copy(layout.cache, DOCUMENTS)
    texts = read_documents(files[DOCUMENTS], "id", copy, TEXT_COLUMNS) if files[DOCUMENTS] else None
    change = SourceChange(rows=live, stale=[], texts=live)
    contributions = row_contributions(live, chunks, embeddings, rows)
    built = ChunkSources.empty().updated(now, change, contributions, text_contributions(live, texts))
    return built, len(live)


def _files(layout: HomeLayout, table: str, now: pa.Table) -> list[DocumentFile]:
    return [DocumentFile(d, layout.partition_path(table, d), stamp) for d, stamp in present_files(now, table)]


@dg.asset_check(asset=chunk_vectors, description="Every chunk of every live document has exactly one vector.")
def vectors_match_chunks(
    context: dg.AssetCheckExecutionContext, graphunified: GraphUnifiedResource
) -> dg.AssetCheckResult:
    layout = graphunified.layout
    n_chunks = live_row_count(layout, CHUNKS, _live(context))
    n_vectors = lancedb.connect(str(layout.lancedb)).open_table(CHUNK_VECTORS).count_rows()
    return dg.AssetCheckResult(
        passed=n_chunks == n_vectors, metadata={"chunks": n_chunks, "vectors": n_vectors}
    )


@dg.asset_check(asset=chunk_vectors, description="One embedding model and dimension across the index.")
def one_embedding_model(graphunified: GraphUnifiedResource) -> dg.AssetCheckResult:
    # The index's model column and its vector type: the chunk embeddings' vectors, which the
    # index copies, took 0.2-0.5 s to read at 12.6K passages.
    db = lancedb.connect(str(graphunified.layout.lancedb))
    dimension = db.open_table(CHUNK_VECTORS).schema.field("vector").type.list_size  # a fixed-size list
    counted = stored_columns(db, CHUNK_VECTORS, ["model"]).group_by("model").aggregate([("model", "count")])
    rows = [(r["model"], dimension, r["model_count"]) for r in counted.to_pylist()]
    return dg.AssetCheckResult(
        passed=len(rows) <= 1, metadata={"models": dg.MetadataValue.md("\n".join(f"- {r}" for r in rows))}
    )


def _live(context: dg.AssetCheckExecutionContext) -> list[str]:
    # Read through the consolidated copies: a glob over 12.6K files took seconds per check.
    return context.instance.get_dynamic_partitions(DOCUMENTS_PARTITIONS)
