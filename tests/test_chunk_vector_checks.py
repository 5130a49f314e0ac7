"""chunk_vectors' asset checks, on small homes that pass and fail them: one model and dimension in
the index (its model column and vector type), and as many vectors as the live documents' chunks."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import lancedb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphunified_assets.defs.assets.vector_index import one_embedding_model, vectors_match_chunks
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.ops import partition_reads
from graphunified_assets.ops.partition_reads import consolidated_copy, document_files, read_documents
from graphunified_query.core.artifacts import CHUNK_VECTORS, CHUNKS


def _index(resource: GraphUnifiedResource, models: list[str]) -> None:
    vectors = pa.array([[0.5] * 4 for _ in models], pa.list_(pa.float32(), 4))
    rows = pa.table({"id": [f"c{i}" for i in range(len(models))], "vector": vectors, "model": models})
    lancedb.connect(str(resource.layout.lancedb)).create_table(CHUNK_VECTORS, data=rows, mode="overwrite")


@pytest.mark.parametrize(
    ("models", "passed", "listed"),
    [
        (["m1", "m2", "m1"], False, "- ('m1', 4, 2)\n- ('m2', 4, 1)"),
        (["m1", "m1"], True, "- ('m1', 4, 2)"),
        ([], True, ""),
    ],
)
def test_one_embedding_model_lists_each_model_of_the_index(
    tmp_path: Path, models: list[str], passed: bool, listed: str
) -> None:
    resource = GraphUnifiedResource(home=str(tmp_path), input_dir=str(tmp_path))
    _index(resource, models)
    result = one_embedding_model(graphunified=resource)
    assert result.passed is passed and result.metadata["models"] == dg.MetadataValue.md(listed)


def test_vectors_match_chunks_counts_the_live_documents_chunk_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(partition_reads, "CONSOLIDATE_FROM", 2)
    resource = GraphUnifiedResource(home=str(tmp_path), input_dir=str(tmp_path))
    layout = resource.layout
    layout.partition_dir(CHUNKS).mkdir(parents=True)

    def chunks(document: str, rows: int) -> None:
        table = pa.table({"id": [f"{document}#{i}" for i in range(rows)], "document_id": [document] * rows})
        pq.write_table(table, layout.partition_path(CHUNKS, document))

    live = ["a", "b", "c", "d"]
    for document, rows in zip([*live, "removed"], [2, 3, 1, 4, 5], strict=True):
        chunks(document, rows)
    read_documents(
        document_files(layout, CHUNKS, live), "document_id", consolidated_copy(layout.cache, CHUNKS)
    )
    chunks("b", 1)  # rewritten since: its own footer counts
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("documents", live)
        context = dg.build_asset_check_context(instance=instance)
        for vectors, passed in ((8, True), (9, False)):
            _index(resource, ["m"] * vectors)
            result = vectors_match_chunks(context, graphunified=resource)
            assert result.passed is passed
            assert result.metadata["chunks"] == dg.MetadataValue.int(8)
            assert result.metadata["vectors"] == dg.MetadataValue.int(vectors)
