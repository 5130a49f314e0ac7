"""`import_graphrag`: a Microsoft GraphRAG output folder as a data home every strategy can query.

The GraphRAG tables become ours (`convert`, `communities`), are written where the pipeline
would have written them, and the home's Dagster instance learns the documents as partitions.
Then Dagster builds what the query side needs: chunk embeddings per document, and the global
indexes (chunk and graph vectors, graph edges, BM25, the PPR matrix, report vectors). The
assets that derive entities, relationships, facts, communities and reports from our own
extractions are never run, so the imported graph stays GraphRAG's.

Limitation: an imported home has no input folder behind it. `index` against any input folder
treats the imported documents as deleted (they are not in it) and rebuilds the graph from its
own extractions, replacing the imported one. Query an imported home; do not index into it.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa

from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.ingest.index_state import IndexState
from graphunified_assets.ops.graphrag_io.communities import communities_table, reports_table
from graphunified_assets.ops.graphrag_io.convert import (
    chunk_ids_by_document,
    chunks_table,
    documents_table,
    entities_table,
    readable_document_ids,
    relationships_table,
    title_degrees,
)
from graphunified_assets.ops.graphrag_io.read import GraphRAGFormatError, GraphRAGTables, read_graphrag
from graphunified_query.core.artifacts import (
    CHUNKS,
    COMMUNITIES,
    COMMUNITY_REPORTS,
    DOCUMENTS,
    ENTITIES,
    FACTS,
    RELATIONSHIPS,
)
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.stores.parquet import write_table_atomic
from graphunified_query.core.tables import FACTS_SCHEMA, stamp_indexed_at


@dataclass(frozen=True)
class ImportReport:
    folder: Path
    version: str  # GraphRAG's "v1"-"v3", or the other tool's layout (LightRAG's "working folder")
    rows: dict[str, int]  # our tables as written
    skipped_text_units: int  # their document is not in documents.parquet
    dropped_relationships: int  # an endpoint title is not in entities.parquet
    run_ids: list[str]
    seconds: float
    tool: str = "GraphRAG"

    def summary(self) -> str:
        counts = ", ".join(f"{n} {table}" for table, n in self.rows.items() if table != FACTS)
        dropped = [
            f"{n} {what}"
            for n, what in (
                (self.skipped_text_units, "text units without a document"),
                (self.dropped_relationships, "relationships with an unknown endpoint"),
            )
            if n
        ]
        skipped = f" (skipped {', '.join(dropped)})" if dropped else ""
        return f"imported {self.tool} {self.version} tables: {counts}{skipped} in {self.seconds:.1f}s"


def import_graphrag(
    folder: Path, resource: GraphUnifiedResource, *, echo: Callable[[str], None] = print
) -> ImportReport:
    """Import ``folder`` (GraphRAG v3, v2 or v1 output) into the fresh home ``resource.home``."""
    _require_fresh(resource.layout)
    return import_tables(read_graphrag(Path(folder)), resource, echo=echo)


def import_tables(
    source: GraphRAGTables,
    resource: GraphUnifiedResource,
    *,
    echo: Callable[[str], None] = print,
    tool: str = "GraphRAG",
) -> ImportReport:
    """GraphRAG-v3-shaped tables (read from GraphRAG, or converted from another tool's folder)
    into the fresh home ``resource.home``, then the query indexes built over them."""
    started = time.perf_counter()
    layout = resource.layout
    _require_fresh(layout)
    try:
        tables, skipped, dropped = convert_tables(source)
    except (TypeError, ValueError, KeyError, AttributeError, pa.ArrowException) as error:
        # A column of an unexpected type (numbers where GraphRAG writes text, say): name the cause.
        raise GraphRAGFormatError(
            f"{source.folder}: a column does not have {tool}'s type ({type(error).__name__}: {error}); "
            f"re-export the folder with {tool} or fix that column"
        ) from None
    echo(f"{source.folder}: {tool} {source.version} output, {tables[DOCUMENTS].num_rows} documents")
    _write(layout, tables)
    documents = tables[DOCUMENTS].select(["id", "content_hash"]).to_pylist()
    IndexState(layout.index_state).mark_indexed({d["id"]: d["content_hash"] for d in documents})
    from graphunified_assets.ops.graphrag_io.runs import build_indexes  # loads the asset graph: slow

    run_ids = build_indexes(resource, tables, source=source.folder, echo=echo)
    rows = {name: table.num_rows for name, table in tables.items()}
    seconds = time.perf_counter() - started
    return ImportReport(source.folder, source.version, rows, skipped, dropped, run_ids, seconds, tool)


def convert_tables(source: GraphRAGTables) -> tuple[dict[str, pa.Table], int, int]:
    """Our tables from GraphRAG's, with the counts of text units and relationships left out."""
    given = dict(source.tables)
    given[DOCUMENTS], given[CHUNKS] = readable_document_ids(given[DOCUMENTS], given[CHUNKS])
    document_ids = {str(i) for i in given[DOCUMENTS].column("id").to_pylist()}
    if not document_ids:
        raise GraphRAGFormatError(f"{source.folder}: documents table is empty; nothing to import")
    chunks, skipped = chunks_table(given[CHUNKS], document_ids)
    degrees = title_degrees(given[RELATIONSHIPS])
    entities = entities_table(given[ENTITIES], degrees)
    relationships, dropped = relationships_table(given[RELATIONSHIPS], entities, degrees)
    communities = communities_table(given[COMMUNITIES], entities, relationships)
    tables = {
        DOCUMENTS: documents_table(given[DOCUMENTS], chunk_ids_by_document(chunks)),
        CHUNKS: chunks,
        ENTITIES: entities,
        RELATIONSHIPS: relationships,
        FACTS: FACTS_SCHEMA.empty_table(),  # GraphRAG's claims (covariates) are not facts
        COMMUNITIES: communities,
        COMMUNITY_REPORTS: reports_table(given[COMMUNITY_REPORTS], communities),
    }
    return tables, skipped, dropped


def _require_fresh(layout: HomeLayout) -> None:
    if layout.tables.is_dir() and any(layout.tables.iterdir()):
        raise FileExistsError(
            f"{layout.home} already holds an index ({layout.tables}); import into a fresh --home"
        )


def _write(layout: HomeLayout, tables: dict[str, pa.Table]) -> None:
    """Per-document files for documents and text units (one per document, even if empty)."""
    at = datetime.now(UTC)
    tables = {name: stamp_indexed_at(table, at) for name, table in tables.items()}
    document_ids = tables[DOCUMENTS].column("id").to_pylist()
    for name, column in ((DOCUMENTS, "id"), (CHUNKS, "document_id")):
        rows: defaultdict[str, list[int]] = defaultdict(list)
        for i, document_id in enumerate(tables[name].column(column).to_pylist()):
            rows[document_id].append(i)
        for document_id in document_ids:
            part = tables[name].take(pa.array(rows[document_id], pa.int64()))
            write_table_atomic(layout.partition_path(name, document_id), part, durable=False)
    for name in (ENTITIES, RELATIONSHIPS, FACTS, COMMUNITIES, COMMUNITY_REPORTS):
        write_table_atomic(layout.table_path(name), tables[name])
