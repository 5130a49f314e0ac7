"""chunk_vectors' corpus table and mean chunk tokens, summed from the per-document record of an
update (`chunk_sources`), say what the DuckDB query over every document file and the chunks' own
mean said."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from graphunified_assets.lib.vectors.chunk_rows import row_contributions, text_contributions
from graphunified_assets.lib.vectors.chunk_sources import STAMPED, ChunkSources, SourceChange, stamps_now

DOCUMENTS = pa.table(
    {
        "id": ["a", "b", "c", "d", "e"],
        "format": ["md", "pdf", "md", "md", "txt"],
        "text": ["héllo", "a longer text", "x", None, "gone soon"],
    }
)
CHUNKS = pa.table(
    {
        "id": ["a1", "a2", "b1", "c1", "e1"],
        "document_id": ["a", "a", "b", "c", "e"],
        "n_tokens": pa.array([3, None, 7, 2, 9], pa.int64()),
    }
)


def _record(documents: pa.Table, chunks: pa.Table, previous: ChunkSources, read: list[str]) -> ChunkSources:
    """``previous`` after an update that read ``read``'s rows of ``documents`` and ``chunks``."""
    live = documents.column("id").to_pylist()
    now = stamps_now(live, {table: {} for table in STAMPED})
    change = SourceChange(rows=read, stale=[], texts=read)

    def of(rows: pa.Table, column: str) -> pa.Table:
        return rows.filter(pc.is_in(rows.column(column), pa.array(read, pa.string())))

    contributions = row_contributions(read, of(chunks, "document_id"), None, None)
    return previous.updated(now, change, contributions, text_contributions(read, of(documents, "id")))


def test_corpus_statistics_equal_the_sql_over_the_files(tmp_path: Path) -> None:
    built = _record(DOCUMENTS, CHUNKS, ChunkSources.empty(), DOCUMENTS.column("id").to_pylist())
    # An update: "b" rewritten (another format and text), "e" removed; the others as recorded.
    documents = pa.table(
        {
            "id": ["a", "b", "c", "d"],
            "format": ["md", "html", "md", "md"],
            "text": ["héllo", "<p>b</p>", "x", None],
        }
    )
    chunks = CHUNKS.filter(pc.not_equal(CHUNKS.column("document_id"), "e"))
    chunks = chunks.set_column(2, "n_tokens", pa.array([3, None, 4, 2], pa.int64()))
    updated = _record(documents, chunks, built, ["b"])
    pq.write_table(documents, tmp_path / "docs.parquet")
    rows = duckdb.sql(
        "select format, count(*), sum(length(text)), round(avg(length(text))) "
        f"from read_parquet('{tmp_path / 'docs.parquet'}') group by format order by format"
    ).fetchall()
    expected = ["| format | documents | characters | mean characters |", "|---|---|---|---|"]
    expected += [f"| {f} | {n} | {c} | {m:.0f} |" for f, n, c, m in rows]
    assert updated.corpus() == "\n".join(expected)
    assert updated.mean_chunk_tokens() == pc.mean(chunks.column("n_tokens")).as_py()
    assert built.mean_chunk_tokens() == pc.mean(CHUNKS.column("n_tokens")).as_py()


def test_no_documents_read_as_before() -> None:
    empty = ChunkSources.empty()
    assert empty.corpus() == "no documents"
    assert empty.mean_chunk_tokens() == 0.0
