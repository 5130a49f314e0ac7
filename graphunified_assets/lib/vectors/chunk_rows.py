"""`chunk_vectors`' rows made from chunks and their embeddings, and what each document's files add
to the step's record (`chunk_sources`): its rows, model, chunk tokens and text characters."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphunified_query.core.positions import last_positions
from graphunified_query.core.tables import RISK_COLUMNS, with_chunk_risk

ROW_COLUMNS = ["id", "document_id", "text", "section", "chunk_index", *RISK_COLUMNS]


def attach_vectors(chunks: pa.Table, embeddings: pa.Table) -> pa.Table:
    """Chunks with their vectors (Arrow's join cannot carry fixed-size-list columns) and risk flags,
    which the query side filters on; chunks indexed before flags existed carry "low"."""
    rows = last_positions(chunks.column("id"), embeddings.column("id"))  # a repeated id: its last row
    chunk_rows = pa.array(np.flatnonzero(rows >= 0), pa.int64())  # chunks without a vector are left out
    vector_rows = pa.array(rows[rows >= 0], pa.int64())
    base = with_chunk_risk(chunks).select(ROW_COLUMNS).take(chunk_rows)
    vectors = embeddings.select(["vector", "model"]).take(vector_rows)
    return base.append_column("vector", vectors.column("vector")).append_column(
        "model", vectors.column("model")
    )


def row_contributions(
    documents: Sequence[str], chunks: pa.Table | None, embeddings: pa.Table | None, rows: pa.Table | None
) -> pa.Table:
    """Per document of ``documents``: its embeddings' model ("" without any), its ``rows``
    (`attach_vectors`), its ``chunks``' n_tokens summed and counted (None: no such rows)."""
    found = pa.table({"document_id": pa.array(documents, pa.string())})
    model = _per_document(found, embeddings, [("model", "min")], {"model_min": ""})
    vectors = _per_document(found, rows, [("document_id", "count")], {"document_id_count": 0})
    tokens = _per_document(
        found, chunks, [("n_tokens", "sum"), ("n_tokens", "count")], {"n_tokens_sum": 0, "n_tokens_count": 0}
    )
    return (
        found.append_column("model", model["model_min"])
        .append_column("vectors", vectors["document_id_count"])
        .append_column("tokens", tokens["n_tokens_sum"])
        .append_column("tokens_counted", tokens["n_tokens_count"])
    )


def text_contributions(documents: Sequence[str], texts: pa.Table | None) -> pa.Table:
    """Per document of ``documents``: the format, number and summed text characters of its
    documents rows (``texts``: id, format, text; None: none read)."""
    found = pa.table({"document_id": pa.array(documents, pa.string())})
    if texts is not None:
        texts = pa.table(
            {
                "document_id": texts.column("id"),
                "format": texts.column("format"),
                "chars": pc.cast(pc.utf8_length(texts.column("text")), pa.int64()),
            }
        )
    aggregates: list[tuple[Any, ...]] = [("format", "min"), ("chars", "sum"), ("chars", "count")]
    aggregates.append(("document_id", "count", pc.CountOptions(mode="all")))  # rows, text or not
    sums = _per_document(
        found,
        texts,
        aggregates,
        {"format_min": None, "document_id_count": 0, "chars_sum": 0, "chars_count": 0},
    )
    return pa.table(
        {
            "document_id": found.column("document_id"),
            "format": sums["format_min"],
            "document_rows": sums["document_id_count"],
            "chars": sums["chars_sum"],
            "chars_counted": sums["chars_count"],
        }
    )


def _per_document(
    found: pa.Table, rows: pa.Table | None, aggregates: list[tuple[Any, ...]], defaults: dict[str, object]
) -> dict[str, pa.ChunkedArray]:
    """``aggregates`` of ``rows`` grouped by document_id, in ``found``'s document order; a
    document without rows (or a null aggregate) gets its ``defaults``."""
    if rows is None or rows.num_rows == 0:
        return {
            name: pa.chunked_array([pa.array([value] * found.num_rows, _type(value))])
            for name, value in defaults.items()
        }
    grouped = rows.group_by("document_id", use_threads=False).aggregate(aggregates)
    at = pc.index_in(found.column("document_id"), value_set=grouped.column("document_id"))
    columns = {}
    for name, value in defaults.items():
        column = grouped.column(name).take(at)
        columns[name] = pc.fill_null(column, value) if value is not None else column
    return columns


def _type(value: object) -> pa.DataType:
    return pa.string() if value is None or isinstance(value, str) else pa.int64()
