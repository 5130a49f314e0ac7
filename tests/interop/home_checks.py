"""What an imported home must hold, for every tool's import (GraphRAG, LightRAG)."""

from __future__ import annotations

from pathlib import Path

import lancedb
import pyarrow.parquet as pq

from graphunified_query.core.indexes.bm25 import BM25Index
from graphunified_query.core.indexes.ppr_graph import PPRGraph
from graphunified_query.core.layout import HomeLayout


def our_rows(home: Path, table: str) -> int:
    layout = HomeLayout.at(home)
    if table in ("documents", "text_units"):
        return sum(pq.read_metadata(p).num_rows for p in layout.partition_dir(table).glob("*.parquet"))
    return pq.read_metadata(layout.table_path(table)).num_rows


def assert_query_indexes(home: Path) -> None:
    """Every file the query side opens exists, one vector per row of its table."""
    layout = HomeLayout.at(home)
    db = lancedb.connect(str(layout.lancedb))
    expected = {
        "chunk_vectors": our_rows(home, "text_units"),
        "entity_vectors": our_rows(home, "entities"),
        "relationship_vectors": our_rows(home, "relationships"),
        "fact_vectors": 0,  # GraphRAG has no facts
        "report_vectors": our_rows(home, "community_reports"),
    }
    assert {name: db.open_table(name).count_rows() for name in expected} == expected
    assert len(BM25Index.load(layout.index_path("bm25")).ids) == expected["chunk_vectors"]
    graph = PPRGraph.load(layout.index_path("ppr_graph.npz"))
    assert graph.n_entities == expected["entity_vectors"] and graph.n_edges > 0
    assert pq.read_metadata(layout.table_path("graph_edges")).num_rows > 0
