"""The graph checks read only the columns they compare, never the vectors."""

from __future__ import annotations

from pathlib import Path

import lancedb
import numpy as np
import pyarrow as pa

from graphunified_assets.defs.assets.graph_checks import stored_columns


def test_stored_columns_reads_the_named_columns_of_every_row(tmp_path: Path) -> None:
    db = lancedb.connect(str(tmp_path / "lancedb"))
    vectors = np.arange(3000 * 8, dtype=np.float32).reshape(3000, 8)
    rows = pa.table(
        {
            "id": [f"r{i}" for i in range(3000)],
            "model": ["m"] * 2999 + ["other"],
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), 8),
        }
    )
    db.create_table("relationship_vectors", rows)
    models = stored_columns(db, "relationship_vectors", ["model"])
    assert models.column_names == ["model"]  # the vectors are not read
    assert models.num_rows == 3000 and set(models.column("model").to_pylist()) == {"m", "other"}
    ids = stored_columns(db, "relationship_vectors", ["id"]).column("id").to_pylist()
    assert sorted(ids) == sorted(rows.column("id").to_pylist())
    db.create_table("empty", rows.schema.empty_table())
    assert stored_columns(db, "empty", ["model"]).num_rows == 0
