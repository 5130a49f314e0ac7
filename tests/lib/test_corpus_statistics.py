"""chunk_vectors' corpus table, now computed in Arrow from the consolidated documents copy, says
what the DuckDB query over every document file said."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from graphunified_assets.defs.assets.vector_index import _corpus_statistics


def test_corpus_statistics_equal_the_sql_over_the_files(tmp_path: Path) -> None:
    documents = pa.table(
        {
            "id": ["a", "b", "c", "d"],
            "format": ["md", "pdf", "md", "md"],
            "text": ["héllo", "a longer text", "x", None],
        }
    )
    pq.write_table(documents, tmp_path / "docs.parquet")
    rows = duckdb.sql(
        "select format, count(*), sum(length(text)), round(avg(length(text))) "
        f"from read_parquet('{tmp_path / 'docs.parquet'}') group by format order by format"
    ).fetchall()
    expected = ["| format | documents | characters | mean characters |", "|---|---|---|---|"]
    expected += [f"| {f} | {n} | {c} | {m:.0f} |" for f, n, c, m in rows]
    assert _corpus_statistics(documents) == "\n".join(expected)
