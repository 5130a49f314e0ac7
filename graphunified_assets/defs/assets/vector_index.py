"""`chunk_vectors`: the LanceDB chunk index every dense retriever searches, plus its checks."""

import dagster as dg
import lancedb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphunified_assets.defs.observability import stage_timing
from graphunified_assets.defs.partitions import DOCUMENTS_PARTITIONS, after_documents_change
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.ingest.pruning import prune_partition_files
from graphunified_assets.lib.vectors.lance_slices import stored_columns
from graphunified_assets.ops.partition_reads import live_row_count, read_live
from graphunified_query.core.artifacts import CHUNK_EMBEDDINGS, CHUNK_VECTORS, CHUNKS, DOCUMENTS, EXTRACTIONS
from graphunified_query.core.indexes.manifest import file_fingerprint, write_manifest
from graphunified_query.core.positions import last_positions
from graphunified_query.core.providers import EmbeddingModelMismatch
from graphunified_query.core.tables import RISK_COLUMNS, with_chunk_risk

PER_DOCUMENT_TABLES = (DOCUMENTS, CHUNKS, CHUNK_EMBEDDINGS, EXTRACTIONS)


@dg.asset(group_name="vectors", kinds={"lancedb"}, automation_condition=after_documents_change)
def chunk_vectors(
    context: dg.AssetExecutionContext,
    graphunified: GraphUnifiedResource,
    chunks: pa.Table,
    chunk_embeddings: pa.Table,
) -> dg.MaterializeResult:
    """LanceDB table of every chunk's vector with its text; removed documents are pruned."""
    layout = graphunified.layout
    live = set(context.instance.get_dynamic_partitions(DOCUMENTS_PARTITIONS))
    pruned = prune_partition_files(layout, PER_DOCUMENT_TABLES, live)
    chunks = chunks.filter(pc.is_in(chunks.column("document_id"), pa.array(sorted(live), pa.string())))
    models = set(chunk_embeddings.column("model").to_pylist())
    if len(models) > 1:
        raise EmbeddingModelMismatch(
            f"chunk_embeddings mixes models {sorted(models)}; re-embed every document with one model "
            "(delete <home>/tables/chunk_embeddings and run `python -m graphunified_assets index`)."
        )
    joined = _attach_vectors(chunks, chunk_embeddings)
    table = lancedb.connect(str(layout.lancedb)).create_table(CHUNK_VECTORS, data=joined, mode="overwrite")
    manifest = write_manifest(
        layout.index_path(CHUNK_VECTORS),
        {name: file_fingerprint(layout.partition_dir(name)) for name in (CHUNKS, CHUNK_EMBEDDINGS)},
        model=next(iter(models), ""),
    )
    # The two columns alone, the documents' consolidated copy left as it is: reading and rewriting
    # it whole took 0.2-0.4 s of each update at 12.6K documents.
    documents = read_live(layout, DOCUMENTS, live, column="id", columns=["format", "text"])
    return dg.MaterializeResult(
        metadata={
            "rows": table.count_rows(),
            "documents": len(live),
            "pruned_documents": len(pruned),
            "model": next(iter(models), ""),
            "corpus": dg.MetadataValue.md(_corpus_statistics(documents)),
            "mean_chunk_tokens": float(pc.mean(chunks.column("n_tokens")).as_py() or 0.0),
            **stage_timing(),
            "built_from": dg.MetadataValue.json(manifest["built_from"]),
        }
    )


def _corpus_statistics(documents: pa.Table) -> str:
    """Per-format document counts and sizes, as a Markdown table for the UI."""
    if not documents.num_rows:
        return "no documents"
    sizes = documents.select(["format"]).append_column("chars", pc.utf8_length(documents.column("text")))
    rows = sizes.group_by("format").aggregate(
        [("chars", "count", pc.CountOptions(mode="all")), ("chars", "sum"), ("chars", "mean")]
    )
    lines = ["| format | documents | characters | mean characters |", "|---|---|---|---|"]
    for row in sorted(rows.to_pylist(), key=lambda r: str(r["format"])):
        lines.append(
            f"| {row['format']} | {row['chars_count']} | {row['chars_sum']} | {row['chars_mean']:.0f} |"
        )
    return "\n".join(lines)


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


def _attach_vectors(chunks: pa.Table, embeddings: pa.Table) -> pa.Table:
    """Chunks with their vectors (Arrow's join cannot carry fixed-size-list columns) and risk flags,
    which the query side filters on; chunks indexed before flags existed carry "low"."""
    rows = last_positions(chunks.column("id"), embeddings.column("id"))  # a repeated id: its last row
    chunk_rows = pa.array(np.flatnonzero(rows >= 0), pa.int64())  # chunks without a vector are left out
    vector_rows = pa.array(rows[rows >= 0], pa.int64())
    columns = ["id", "document_id", "text", "section", "chunk_index", *RISK_COLUMNS]
    base = with_chunk_risk(chunks).select(columns).take(chunk_rows)
    vectors = embeddings.select(["vector", "model"]).take(vector_rows)
    return base.append_column("vector", vectors.column("vector")).append_column(
        "model", vectors.column("model")
    )
