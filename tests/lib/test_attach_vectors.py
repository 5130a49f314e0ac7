"""chunk_vectors' rows: each chunk with its embedding row, looked up in Arrow, as a dict over the
embedding ids gave them (the last of a repeated id; chunks without one left out, in chunk order)."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from graphunified_assets.lib.vectors.chunk_rows import attach_vectors

_IDS = st.sampled_from(["a", "b", "c", "d"])  # few, so ids repeat and some have no vector


@settings(max_examples=200, deadline=None)
@given(chunk_ids=st.lists(_IDS, max_size=6), embedding_ids=st.lists(_IDS, max_size=6))
def test_attached_rows_equal_a_dict_lookup(chunk_ids: list[str], embedding_ids: list[str]) -> None:
    n = len(chunk_ids)
    chunks = pa.table(
        {
            "id": pa.array(chunk_ids, pa.string()),
            "document_id": pa.array(["doc"] * n, pa.string()),
            "text": pa.array([f"text {i}" for i in range(n)], pa.string()),
            "section": pa.array([""] * n, pa.string()),
            "chunk_index": pa.array(range(n), pa.int64()),
            "risk_level": pa.array(["high", None, ""][:n] + ["low"] * (n - 3), pa.string()),
        }
    )
    vectors = [[float(i), 1.0] for i in range(len(embedding_ids))]
    embeddings = pa.table(
        {
            "id": pa.array(embedding_ids, pa.string()),
            "vector": pa.array(vectors, pa.list_(pa.float32(), 2)),
            "model": pa.array([f"m{i}" for i in range(len(embedding_ids))], pa.string()),
        }
    )
    row_of = {chunk_id: i for i, chunk_id in enumerate(embedding_ids)}
    expected = [(i, row_of[chunk_id]) for i, chunk_id in enumerate(chunk_ids) if chunk_id in row_of]
    attached = attach_vectors(chunks, embeddings)
    assert attached.column_names == [
        "id",
        "document_id",
        "text",
        "section",
        "chunk_index",
        "risk_flags",
        "risk_level",
        "vector",
        "model",
    ]
    assert attached.column("text").to_pylist() == [f"text {i}" for i, _ in expected]
    assert attached.column("vector").to_pylist() == [vectors[j] for _, j in expected]
    assert attached.column("model").to_pylist() == [f"m{j}" for _, j in expected]
    assert attached.column("vector").type == pa.list_(pa.float32(), 2)
    levels = [(["high", None, ""][i] if i < 3 else "low") or "low" for i, _ in expected]
    assert attached.column("risk_level").to_pylist() == levels
